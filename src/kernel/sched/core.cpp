// Models kernel/sched/core.c of Linux v6.1 (context_switch, finish_task_switch, schedule, try_to_wake_up) and
// kernel/sched/idle.c's polling idle loop, reduced to what TLB and mm switching depend on (docs/model.md).
#include <algorithm>
#include <stdexcept>

#include "kernel/barrier.h"
#include "kernel/fork.h"
#include "kernel/options.h"
#include "kernel/sched/sched.h"
#include "trace/tracer.h"

namespace tlbsim::kernel {

namespace {

// switch_to(prev, next): the CPU leaves prev's stack for next's. prev resumes here when it is switched to again.
struct SwitchTo {
  TaskStruct& prev;
  TaskStruct& next;
  bool await_ready() const noexcept { return false; }
  std::coroutine_handle<> await_suspend(std::coroutine_handle<> h) noexcept {
    prev.resume_point = h;
    return std::exchange(next.resume_point, {});
  }
  void await_resume() const noexcept {}
};

}  // namespace

TaskStruct::TaskStruct(hw::CoherenceModel& model, std::uint32_t p, std::string c, MmStruct* m, CpuId on,
                       SpinlockKind lock_kind)
    : pid(p), comm(std::move(c)), mm(m), cpu(on), pi_lock(model, "task_struct.pi_lock", lock_kind) {
  on_rq.line = on_cpu.line = model.add_line("task_struct.on_cpu");
}

TaskStruct::~TaskStruct() {
  if (body) body.destroy();
}

Sched::Sched(Kernel& kernel, bool tick)
    : k(kernel),
      timers_(kernel.ncpus()),
      rd_overload_{false, kernel.sys().coherence().add_line("root_domain.overload")},
      tick_period_(tick && kernel.config().HZ > 0 ? sim::milliseconds(1000) / kernel.config().HZ : sim::Duration{0}),
      nohz_idle_cpus_line_(kernel.sys().coherence().add_line("nohz.idle_cpus_mask")) {
  k.set_sched(this);
  stats.register_stats(k.stats());
  for (std::uint32_t c = 0; c < k.ncpus(); ++c) {
    rqs_.push_back(std::make_unique<Rq>(k.sys().coherence(), k.arch().spinlock_kind()));
    rqs_.back()->need_resched = {false, k.sys().coherence().add_line("thread_info.flags")};
  }
}

Sched::~Sched() {
  k.stats().drop(&stats);
  if (k.sched() == this) k.set_sched(nullptr);
}

void SchedStats::register_stats(Stats& s) const {
  s.registrar(this)
      .count("context_switches", "context switches (the idle task's included)", context_switches)
      .count("nonvoluntary_ctxt_switches", "switches away from a task still runnable (the tasks' nivcsw)", nivcsw)
      .count("sched_migrations", "tasks pulled by load balancing", sched_migrations)
      .list("idle_state_usage", "entries into each idle state (cpuidle usage), polling first", idle_state_usage);
}

void Sched::start() {
  // Each idle task holds a reference to init_mm, its active_mm (mmgrab_lazy_tlb(&init_mm) when idle starts).
  if (!k.config().on(Option::MMU_LAZY_TLB_SHOOTDOWN)) k.init_mm().mm_count.value += k.ncpus();
  for (std::uint32_t c = 0; c < k.ncpus(); ++c) {
    auto idle = std::make_unique<TaskStruct>(k.sys().coherence(), 0, "swapper/" + std::to_string(c), nullptr, CpuId{c},
                                             k.arch().spinlock_kind());
    idle->is_idle = true;
    idle->on_rq.value = idle->on_cpu.value = true;
    idle->active_mm = &k.init_mm();
    Rq& r = rq(CpuId{c});
    r.idle = idle.get();
    r.curr = idle.get();
    if (k.tracer() != nullptr) k.tracer()->set_task(k.percpu(CpuId{c}).cpu, idle->comm, idle->pid);
    k.percpu(CpuId{c}).cpu.start(idle_loop(*idle));
    tasks_.push_back(std::move(idle));
  }
}

TaskStruct& Sched::create_task(std::string comm, MmStruct* mm, CpuId cpu,
                               const std::function<sim::Task<void>(TaskStruct&)>& make_body, bool runnable) {
  tasks_.push_back(std::make_unique<TaskStruct>(k.sys().coherence(), next_pid_++, std::move(comm), mm, cpu,
                                                k.arch().spinlock_kind()));
  TaskStruct& t = *tasks_.back();
  t.active_mm = mm;
  sim::Task<void> main = task_main(t, make_body(t));
  auto h = main.release();
  h.promise().root = this;
  t.body = h;
  t.resume_point = t.body;
  if (runnable) {
    Rq& r = rq(cpu);
    t.on_rq.value = true;
    if (eevdf()) place_entity(r, t, true, base_slice());
    r.queue.push_back(&t);
    if (r.curr == r.idle) r.need_resched.value = true;
  } else {
    t.state = TaskState::TASK_INTERRUPTIBLE;  // not yet runnable: wake_up_new_task makes it so
  }
  return t;
}

sim::Task<void> Sched::wake_up_new_task(TaskStruct& parent, TaskStruct& child) {
  co_await try_to_wake_up(parent, child, WF_FORK);
}

sim::Task<void> Sched::task_main(TaskStruct& t, sim::Task<void> body) {
  co_await finish_task_switch(t);  // schedule_tail(): the new task finishes the switch that started it
  co_await body;
  co_await do_task_dead(t);
}

sim::Task<void> Sched::idle_loop(TaskStruct& idle) {
  PerCpu& pc = cpu_of(idle);
  Rq& r = rq(idle.cpu);
  hw::Memory& mem = k.mem();
  const std::vector<hw::IdleState>& states = k.machine().idle_states;
  auto& usage = stats.idle_state_usage;
  if (usage.size() < states.size() + 1) usage.assign(states.size() + 1, 0);
  for (;;) {
    // do_idle(): with TIF_POLLING_NRFLAG set (POWER snooze, x86 mwait), a waker's write to need_resched wakes
    // this CPU without an IPI.
    const bool need = co_await mem.read(pc.cpu, r.need_resched);
    if (need) {
      if (std::exchange(r.nohz_kick, false)) co_await nohz_idle_balance(pc);  // the kick's SCHED_SOFTIRQ
      co_await schedule(idle);
      continue;
    }
    // cpuidle_idle_call(): the governor picks the deepest state whose target residency fits the predicted idle
    // time, predicted here as the length of this CPU's previous idle period (docs/model.md).
    int pick = -1;
    for (std::size_t i = 0; i < states.size(); ++i) {
      if (states[i].target_residency <= r.last_idle) pick = static_cast<int>(i);
    }
    ++usage[static_cast<std::size_t>(pick + 1)];
    if (k.tracer() != nullptr) {
      k.tracer()->begin(pc.cpu, pick >= 0 ? "idle: " + states[static_cast<std::size_t>(pick)].name : "idle: poll",
                        "idle");
    }
    // cpuidle_enter_state(): a state that loses the TLB is entered only after leaving the mm.
    if (pick >= 0 && states[static_cast<std::size_t>(pick)].flushes_tlb) co_await k.arch().leave_mm(pc);
    const sim::SimTime start = pc.cpu.now();
    const sim::Duration exit_latency =
        pick >= 0 ? states[static_cast<std::size_t>(pick)].exit_latency : sim::Duration{0};
    if (pick >= 0 && !states[static_cast<std::size_t>(pick)].polls) {
      // default_idle: clear TIF_POLLING_NRFLAG, test need_resched once more, then sti; hlt until an interrupt.
      r.polling = false;
      const hw::IdleState& st = states[static_cast<std::size_t>(pick)];
      if (!co_await mem.read(pc.cpu, r.need_resched)) {
        co_await pc.cpu.safe_halt(st.exit_latency, st.exit_latency_p10, st.exit_latency_p90, st.by_length());
      }
      r.polling = true;
    } else {
      co_await mem.idle_poll(pc.cpu, r.need_resched.line, exit_latency);
    }
    if (k.tracer() != nullptr) k.tracer()->end(pc.cpu);
    r.last_idle = pc.cpu.now() - start;
  }
}

sim::Task<void> Sched::schedule(TaskStruct& current) {
  PerCpu& pc = cpu_of(current);
  Rq& r = rq(current.cpu);
  hw::Memory& mem = k.mem();
  pc.cpu.local_irq_disable();
  co_await r.lock.lock(mem, pc.cpu);
  if (r.need_resched.value) co_await mem.write(pc.cpu, r.need_resched, false);  // clear_tsk_need_resched(prev)
  if (eevdf()) update_curr(r, pc.cpu.now(), base_slice());  // pick_task_fair: charge curr before the pick
  // prev_state: a task that is not TASK_RUNNING here leaves the runqueue (deactivate_task); a wake-up from now on
  // finds it off the runqueue and waits for p->on_cpu to clear before queueing it anywhere.
  const bool prev_runnable = current.is_idle || current.state == TaskState::TASK_RUNNING;
  TaskStruct* next = nullptr;
  if (eevdf()) {
    next = co_await pick_next_task_fair(pc, r, current, prev_runnable);
  } else {
    // CFS, reduced to round robin among the queued tasks (docs/model.md, "Preemption").
    if (!prev_runnable) co_await mem.write(pc.cpu, current.on_rq, false);
    if (r.queue.empty() && !prev_runnable) co_await newidle_balance(pc, r);
    if (!r.queue.empty()) {
      next = r.queue.front();
      r.queue.pop_front();
      if (prev_runnable && !current.is_idle) r.queue.push_back(&current);
    } else {
      next = prev_runnable ? &current : r.idle;
    }
  }
  if (next == &current) {
    co_await r.lock.unlock(mem, pc.cpu);
    co_await pc.cpu.local_irq_enable();
    co_return;
  }
  if (!prev_runnable) {
    ++current.nvcsw;
  } else if (!current.is_idle) {
    ++current.nivcsw;
    ++stats.nivcsw;
  }
  r.curr = next;
  next->cpu = current.cpu;
  r.exec_start = r.curr_exec_start = pc.cpu.now();
  current.exec_start = next->exec_start = pc.cpu.now();
  if (next->is_idle) {
    r.tick_running = false;  // tick_nohz_idle_stop_tick (docs/model.md: stopped at every idle entry)
  } else if (current.is_idle) {
    tick_nohz_idle_exit(pc.id, pc.cpu.now());
  }
  ++r.nr_switches;
  ++stats.context_switches;
  if (k.tracer() != nullptr) {
    // sched:sched_switch, with prev_state as ftrace prints it (R+: preempted while runnable).
    const char* prev_state = current.is_idle                                    ? "R"
                             : prev_runnable                                    ? "R+"
                             : current.state == TaskState::TASK_DEAD            ? "X"
                             : current.state == TaskState::TASK_UNINTERRUPTIBLE ? "D"
                                                                                : "S";
    k.tracer()->sched_switch(pc.cpu, current.comm, current.pid, prev_state, next->comm, next->pid);
  }
  co_await context_switch(r, current, *next);
}

sim::Task<void> Sched::context_switch(Rq& r, TaskStruct& prev, TaskStruct& next) {
  PerCpu& pc = cpu_of(prev);
  if (k.tracer() != nullptr) k.tracer()->begin(pc.cpu, "context_switch", "sched");
  // From here until the switch is done no user code runs on this CPU (prev's entries are reached again only
  // through switch_mm's generation check).
  k.events().set_user_context(pc.id, 0);
  // __schedule's bookkeeping, prepare_task_switch, switch_to's register and FPU state and finish_task_switch,
  // beyond the lines and locks modeled here (machine [kernel] context_switch; charged under the runqueue lock).
  if (const sim::Duration c = k.machine().kernel.context_switch; c > sim::Duration{0}) co_await pc.cpu.delay(c);
  co_await k.mem().write(pc.cpu, next.on_cpu, true);  // prepare_task_switch -> prepare_task
  if (next.mm == nullptr) {
    // To a kernel thread (or idle): keep the previous mm loaded, lazily.
    co_await k.arch().enter_lazy_tlb(pc, *prev.active_mm);
    next.active_mm = prev.active_mm;
    if (prev.mm != nullptr) {
      co_await mmgrab_lazy_tlb(pc, *prev.active_mm);  // from user: the kernel thread borrows a lazy reference
    } else {
      prev.active_mm = nullptr;  // from kernel: the borrowed reference passes on
    }
  } else {
    // To a user task.
    pc.cpu.local_irq_disable();
    co_await k.arch().switch_mm_irqs_off(pc, *next.mm);
    if (prev.mm == nullptr) {
      // From a kernel thread: drop its borrowed mm in finish_task_switch.
      r.prev_mm = prev.active_mm;
      prev.active_mm = nullptr;
    }
  }
  r.prev_task = &prev;
  if (!next.resume_point) {
    throw std::logic_error("BUG: switching cpu" + std::to_string(pc.id.get()) + " from " + prev.comm + "/" +
                           std::to_string(prev.pid) + " to " + next.comm + "/" + std::to_string(next.pid) +
                           ", which is not suspended (state " + std::to_string(static_cast<int>(next.state)) +
                           ", cpu " + std::to_string(next.cpu.get()) + ")");
  }
  k.events().set_user_context(pc.id, next.mm != nullptr ? next.mm->id() : 0);
  // switch_to -> __switch_to: the architecture's part (arm64: dsb(ish), completing this CPU's TLBIs in case prev
  // migrates).
  if (k.arch().has_switch_to()) co_await k.arch().switch_to(pc);
  if (k.tracer() != nullptr) k.tracer()->end(pc.cpu);
  co_await SwitchTo{prev, next};
  // prev runs again here, switched back in (perhaps much later) by some CPU's schedule().
  co_await finish_task_switch(prev);
}

sim::Task<void> Sched::finish_task_switch(TaskStruct& current) {
  PerCpu& pc = cpu_of(current);
  Rq& r = rq(current.cpu);
  MmStruct* mm = std::exchange(r.prev_mm, nullptr);
  TaskStruct* prev = std::exchange(r.prev_task, nullptr);
  // finish_task: prev may now be woken and run elsewhere (smp_store_release(&prev->on_cpu, 0)).
  if (prev != nullptr) {
    smp_store_release_fence(k.mem(), pc.cpu);
    co_await k.mem().write(pc.cpu, prev->on_cpu, false);
  }
  co_await r.lock.unlock(k.mem(), pc.cpu);  // finish_lock_switch
  co_await pc.cpu.local_irq_enable();
  if (mm != nullptr) co_await mmdrop_lazy_tlb_sched(pc, *mm);
}

sim::Task<void> Sched::resched_idle(PerCpu& waker, CpuId target) {
  Rq& r = rq(target);
  co_await k.mem().write(waker.cpu, r.need_resched, true);
  if (!r.polling && target != waker.id) {
    const CpuId t[] = {target};
    co_await k.sys().ipi().send(waker.cpu, t, RESCHEDULE_VECTOR);
  }
}

sim::Task<void> Sched::try_to_wake_up(TaskStruct& waker, TaskStruct& p, unsigned wake_flags) {
  PerCpu& w = cpu_of(waker);
  hw::Memory& mem = k.mem();
  // raw_spin_lock_irqsave(&p->pi_lock): powerpc before v5.16 spins with the caller's interrupts on.
  const bool irqs_were_on = co_await p.pi_lock.lock_irqsave(mem, w.cpu, k.arch().spin_lock_flags_enables_irqs());
  const auto done = [&]() -> sim::Task<void> {
    co_await p.pi_lock.unlock(mem, w.cpu);
    if (irqs_were_on) co_await w.cpu.local_irq_enable();
  };
  // ttwu_state_match: a task already running needs nothing (no runqueue lock is taken).
  if (p.state == TaskState::TASK_RUNNING) {
    co_await done();
    co_return;
  }
  const bool queued = co_await mem.read(w.cpu, p.on_rq);
  if (queued) {
    // ttwu_runnable: still on its runqueue, on the way to sleep; under the runqueue lock (which p's CPU may move
    // it away from while this CPU waits), it need only be marked running again.
    Rq* locked = nullptr;
    for (;;) {
      const CpuId seen = p.cpu;
      locked = &rq(seen);
      co_await locked->lock.lock(mem, w.cpu);
      if (p.cpu == seen) break;
      co_await locked->lock.unlock(mem, w.cpu);
    }
    const bool still = co_await mem.read(w.cpu, p.on_rq);
    if (still && p.sched_delayed) co_await requeue_delayed(w, *locked, p);
    if (still) p.state = TaskState::TASK_RUNNING;
    co_await locked->lock.unlock(mem, w.cpu);
    if (still) {
      co_await done();
      co_return;
    }
  }
  p.state = TaskState::TASK_RUNNING;  // TASK_WAKING, then running: claimed, under pi_lock
  // smp_cond_load_acquire(&p->on_cpu, !VAL): wait until its CPU has switched away from it.
  for (;;) {
    const bool on = co_await mem.read(w.cpu, p.on_cpu);
    if (!on) break;
    co_await mem.wait_for_write(w.cpu, p.on_cpu.line);
  }
  const CpuId target = co_await select_task_rq(waker, p, wake_flags);
  Rq& r = rq(target);
  co_await r.lock.lock(mem, w.cpu);  // ttwu_queue -> ttwu_do_activate
  // select_task_rq's and enqueue_task's bookkeeping and check_preempt, beyond the lines and locks modeled here
  // (machine [kernel] try_to_wake_up; all of it charged under the runqueue lock).
  if (const sim::Duration c = k.machine().kernel.try_to_wake_up; c > sim::Duration{0}) co_await w.cpu.delay(c);
  p.cpu = target;
  update_avg_idle(r, w.cpu.now());
  const bool fork = (wake_flags & WF_FORK) != 0;
  // enqueue_entity: update_curr, then place_entity (ENQUEUE_INITIAL for a new task).
  const bool deadline_resched = eevdf() && update_curr(r, w.cpu.now(), base_slice());
  if (eevdf()) place_entity(r, p, fork, base_slice());
  r.queue.push_back(&p);
  co_await mem.write(w.cpu, p.on_rq, true);  // activate_task
  co_await mark_overloaded(w, r);
  // check_preempt_curr -> resched_curr: the target's idle task polls need_resched, so setting it wakes the CPU
  // without an IPI. CFS (v6.1): a task that slept preempts a running one (check_preempt_wakeup:
  // GENTLE_FAIR_SLEEPERS places it up to sysctl_sched_latency / 2 behind min_vruntime, past wakeup_gran); a new
  // one does not (START_DEBIT). EEVDF (check_preempt_wakeup_fair): the woken task preempts only if pick_eevdf()
  // would now pick it.
  bool preempt = r.curr == r.idle;
  if (!preempt && eevdf()) {
    preempt = deadline_resched || pick_eevdf(r, fair_curr(r)) == &p;
  } else if (!preempt) {
    preempt = !fork;
  }
  if (preempt && r.curr == r.idle) {
    co_await resched_idle(w, target);
  } else if (preempt && !r.need_resched.value) {
    co_await mem.write(w.cpu, r.need_resched, true);
  }
  co_await r.lock.unlock(mem, w.cpu);
  co_await done();
}

sim::Task<void> Sched::exit_to_user_mode(TaskStruct& current) {
  if (need_resched(current)) co_await schedule(current);
}

sim::Task<void> Sched::wait_event(TaskStruct& current, WaitQueue& wq, const std::function<bool()>& cond) {
  return wait_event_on(current, wq, wq.waiters, cond);
}

sim::Task<void> Sched::wait_event_exclusive(TaskStruct& current, WaitQueue& wq, const std::function<bool()>& cond) {
  return wait_event_on(current, wq, wq.exclusive, cond);
}

sim::Task<void> Sched::wait_event_on(TaskStruct& current, WaitQueue& wq, std::deque<TaskStruct*>& list,
                                     const std::function<bool()>& cond) {
  hw::Memory& mem = k.mem();
  for (;;) {
    PerCpu& pc = cpu_of(current);
    co_await wq.lock.lock(mem, pc.cpu);  // prepare_to_wait[_exclusive]: (re)queued unless still queued
    if (std::find(list.begin(), list.end(), &current) == list.end()) list.push_back(&current);
    current.state = TaskState::TASK_INTERRUPTIBLE;
    co_await wq.lock.unlock(mem, pc.cpu);
    if (cond()) break;
    co_await schedule(current);
  }
  PerCpu& pc = cpu_of(current);
  current.state = TaskState::TASK_RUNNING;  // finish_wait
  co_await wq.lock.lock(mem, pc.cpu);
  std::erase(list, &current);
  co_await wq.lock.unlock(mem, pc.cpu);
}

sim::Task<void> Sched::wake_up(TaskStruct& waker, WaitQueue& wq, unsigned wake_flags) {
  hw::Memory& mem = k.mem();
  PerCpu& pc = cpu_of(waker);
  co_await wq.lock.lock(mem, pc.cpu);
  std::vector<TaskStruct*> woken(wq.waiters.begin(), wq.waiters.end());
  // nr_exclusive = 1: try_to_wake_up of a task already running returns 0 and the walk goes on to the next.
  const auto asleep = std::find_if(wq.exclusive.begin(), wq.exclusive.end(),
                                   [](const TaskStruct* t) { return t->state == TaskState::TASK_INTERRUPTIBLE; });
  if (asleep != wq.exclusive.end()) {
    woken.push_back(*asleep);
    wq.exclusive.erase(asleep);
  }
  co_await wq.lock.unlock(mem, pc.cpu);
  for (TaskStruct* t : woken) co_await try_to_wake_up(waker, *t, wake_flags);
}

sim::Task<void> Sched::sleep(TaskStruct& current, sim::Duration d) {
  PerCpu& pc = cpu_of(current);
  const sim::SimTime expires = pc.cpu.now() + d;
  current.state = TaskState::TASK_INTERRUPTIBLE;
  timers_[pc.id.get()].push_back(Hrtimer{expires, &current});
  k.sys().scheduler().send_irq(pc.id, LOCAL_TIMER_VECTOR, expires);
  while (current.state != TaskState::TASK_RUNNING) co_await schedule(current);
}

sim::Task<void> Sched::run_expired_timers(PerCpu& self) {
  auto& list = timers_[self.id.get()];
  std::vector<TaskStruct*> due;
  const sim::SimTime now = self.cpu.now();
  std::erase_if(list, [&](const Hrtimer& h) {
    if (h.expires > now) return false;
    due.push_back(h.task);
    return true;
  });
  for (TaskStruct* t : due) co_await try_to_wake_up(*rq(self.id).curr, *t);
}

sim::Task<void> Sched::do_task_dead(TaskStruct& current) {
  current.state = TaskState::TASK_DEAD;
  co_await schedule(current);
  throw std::logic_error("BUG: a dead task was scheduled again");
}

std::coroutine_handle<> Sched::on_root_done(std::coroutine_handle<>, std::exception_ptr error) noexcept {
  // Bodies end in do_task_dead(), so a root only finishes by throwing; the frame stays owned by its TaskStruct.
  for (const auto& t : tasks_) {
    if (t->body && t->body.done())
      k.percpu(t->cpu).cpu.fail(error ? error
                                      : std::make_exception_ptr(std::logic_error("BUG: task " + std::to_string(t->pid) +
                                                                                 " returned from its body")));
  }
  return std::noop_coroutine();
}

sim::Duration Sched::lag_limit() const {
  const sim::Duration tick_nsec = std::chrono::duration_cast<sim::Duration>(std::chrono::seconds(1)) / hz();
  return std::max(2 * base_slice(), tick_nsec);
}

std::uint64_t Sched::context_switches() const {
  std::uint64_t n = 0;
  for (const auto& r : rqs_) n += r->nr_switches;
  return n;
}

}  // namespace tlbsim::kernel
