// Models the periodic scheduler tick of Linux v6.1 with CONFIG_NO_HZ_IDLE (kernel/time/tick-sched.c:
// tick_nohz_idle_exit / tick_nohz_idle_stop_tick, tick_sched_timer), scheduler_tick's check_preempt_tick
// (kernel/sched/fair.c) and trigger_load_balance's idle balancing through a NOHZ kick (nohz_balancer_kick,
// kick_ilb, nohz_idle_balance), reduced as docs/model.md ("Scheduler tick") lists: the tick stops at every idle
// entry, the kicked CPU pulls one queued task for each idle CPU, and busy CPUs do not balance among themselves.
#include <algorithm>
#include <array>

#include "kernel/sched/sched.h"

namespace tlbsim::kernel {

namespace {

// sysctl_sched_latency and sysctl_sched_min_granularity (6 ms and 0.75 ms, scaled by 1 + ilog2(min(ncpus, 8)),
// SCHED_TUNABLESCALING_LOG) and sched_nr_latency (8): kernel/sched/fair.c.
constexpr sim::Duration kSchedLatency = sim::microseconds(6000);
constexpr sim::Duration kSchedMinGranularity = sim::microseconds(750);
constexpr std::size_t kSchedNrLatency = 8;

// sched_slice() of one of `nr_running` equal-weight tasks: __sched_period(nr_running) / nr_running.
sim::Duration sched_slice(std::size_t nr_running, std::uint32_t ncpus) {
  const std::int64_t factor = sched_tunable_scaling(ncpus);
  const sim::Duration period = nr_running > kSchedNrLatency
                                   ? kSchedMinGranularity * factor * static_cast<std::int64_t>(nr_running)
                                   : kSchedLatency * factor;
  return period / static_cast<std::int64_t>(nr_running);
}

}  // namespace

void Sched::tick_nohz_idle_exit(CpuId c, sim::SimTime now) {
  if (tick_period_.count() == 0) return;
  // tick_nohz_restart_sched_tick: the tick resumes on the next jiffy boundary (ticks are aligned on every CPU).
  const sim::SimTime next{(now.time_since_epoch() / tick_period_ + 1) * tick_period_};
  arm_tick(c, next);
}

void Sched::arm_tick(CpuId c, sim::SimTime at) {
  Rq& r = rq(c);
  r.tick_running = true;
  r.tick_next = at;
  if (std::find(r.tick_events.begin(), r.tick_events.end(), at) != r.tick_events.end()) return;
  r.tick_events.push_back(at);
  k.sys().scheduler().add_timer(at, *this, c.get());
}

void Sched::on_timer(std::uint32_t cpu) {
  // The tick's hrtimer expires: raise the local timer interrupt, unless the tick was stopped (or moved) since
  // this event was queued.
  Rq& r = rq(CpuId{cpu});
  const sim::SimTime now = k.sys().scheduler().now();
  std::erase(r.tick_events, now);
  if (r.tick_running && r.tick_next == now) k.sys().scheduler().send_irq(CpuId{cpu}, LOCAL_TIMER_VECTOR, now);
}

sim::Task<void> Sched::timer_interrupt(PerCpu& self) {
  co_await run_expired_timers(self);
  Rq& r = rq(self.id);
  const sim::SimTime now = self.cpu.now();
  if (tick_period_.count() == 0 || !r.tick_running || now < r.tick_next) co_return;
  // tick_sched_timer: hrtimer_forward to the first tick after now, then the tick's work.
  sim::SimTime next = r.tick_next;
  while (next <= now) next += tick_period_;
  arm_tick(self.id, next);
  co_await scheduler_tick(self);
}

sim::Task<void> Sched::scheduler_tick(PerCpu& self) {
  Rq& r = rq(self.id);
  hw::Memory& mem = k.mem();
  co_await r.lock.lock(mem, self.cpu);
  // task_tick_fair -> entity_tick. CFS (check_preempt_tick, only with another task queued): curr has used up its
  // slice of the scheduling period. EEVDF (update_curr): curr has consumed the request its deadline was issued for.
  bool resched = false;
  if (eevdf()) {
    resched = update_curr(r, self.cpu.now(), base_slice());
  } else if (r.curr != r.idle && !r.queue.empty()) {
    resched = self.cpu.now() - r.exec_start >= sched_slice(r.queue.size() + 1, k.ncpus());
  }
  if (resched && !r.need_resched.value) co_await mem.write(self.cpu, r.need_resched, true);  // resched_curr
  co_await r.lock.unlock(mem, self.cpu);
  co_await nohz_balancer_kick(self, r);  // trigger_load_balance
}

sim::Task<void> Sched::nohz_balancer_kick(PerCpu& self, Rq& r) {
  if (r.queue.empty()) co_return;  // rq->nr_running < 2: nothing this CPU could give away
  const sim::SimTime now = self.cpu.now();
  if (now < nohz_next_balance_) co_return;
  hw::Memory& mem = k.mem();
  // find_new_ilb: the first CPU of nohz.idle_cpus_mask that is still idle.
  co_await mem.touch(self.cpu, nohz_idle_cpus_line_, hw::Access::kLoad);
  Rq* ilb = nullptr;
  for (std::uint32_t c = 0; c < k.ncpus() && ilb == nullptr; ++c) {
    Rq& o = rq(CpuId{c});
    if (c != self.id.get() && o.curr == o.idle && o.queue.empty() && !o.tick_running) ilb = &o;
  }
  if (ilb == nullptr) co_return;
  co_await mem.touch(self.cpu, ilb->lock_line(), hw::Access::kLoad);  // idle_cpu(ilb_cpu)
  // nohz.next_balance: the idle CPUs' next balance, at least a jiffy away (rq->next_balance is in jiffies).
  nohz_next_balance_ = now + tick_period_;
  if (ilb->nohz_kick) co_return;  // already kicked (atomic_fetch_or on nohz_flags)
  ilb->nohz_kick = true;
  // kick_ilb -> smp_call_function_single_async: set_nr_if_polling wakes the polling idle CPU without an IPI.
  co_await mem.write(self.cpu, ilb->need_resched, true);
}

sim::Task<Rq*> Sched::find_busiest_queue(PerCpu& pc, CpuId to) {
  hw::Memory& mem = k.mem();
  for (const std::span<const CpuId> level : sched_domains(to)) {
    Rq* busiest = nullptr;
    std::size_t most = 0;
    for (CpuId c : level) {
      Rq& other = rq(c);
      co_await mem.touch(pc.cpu, other.lock_line(), hw::Access::kLoad);
      const auto movable = std::count_if(other.queue.begin(), other.queue.end(), [to](const TaskStruct* t) {
        return t->allowed_on(to) && !t->sched_delayed;  // can_migrate_task; a delayed task is asleep
      });
      // A runqueue is busy when it has a task queued behind a running one (nr_running >= 2); one whose CPU is idle
      // with a task just queued is about to run it.
      if (movable > 0 && other.curr != other.idle && other.queue.size() > most) {
        most = other.queue.size();
        busiest = &other;
      }
    }
    if (busiest != nullptr) co_return busiest;
  }
  co_return nullptr;
}

sim::Task<bool> Sched::pull_one_task(PerCpu& pc, Rq& busiest, CpuId to) {
  hw::Memory& mem = k.mem();
  // rq_lock_irqsave: no local timer interrupt may take a runqueue lock while this CPU holds one.
  const bool irqs_were_on = co_await busiest.lock.lock_irqsave(mem, pc.cpu, k.arch().spin_lock_flags_enables_irqs());
  // load_balance(CPU_IDLE) at the domain of `to` that spans busiest's CPU: can_migrate_task lets a cache-hot task
  // go once the domain's nr_balance_failed exceeds its cache_nice_tries (sd_init: 1 for the LLC and the package,
  // 2 across NUMA nodes; SMT siblings are never hot).
  std::size_t level = 0;
  for (const auto& cpus : sched_domains(to)) {
    if (std::any_of(cpus.begin(), cpus.end(), [&](CpuId c) { return &rq(c) == &busiest; })) break;
    ++level;
  }
  constexpr std::array<std::uint32_t, kSchedDomainLevels> kCacheNiceTries = {0, 1, 1, 2};
  level = std::min(level, kSchedDomainLevels - 1);
  Rq::SchedDomainStats& sd = rq(to).sd[level];
  const bool allow_hot = sd.nr_balance_failed > kCacheNiceTries[level];
  TaskStruct* pulled = detach_task(busiest, to, pc.cpu.now(), allow_hot);
  co_await busiest.lock.unlock(mem, pc.cpu);
  sd.nr_balance_failed = pulled == nullptr ? sd.nr_balance_failed + 1 : 0;
  if (pulled == nullptr) {
    if (irqs_were_on) co_await pc.cpu.local_irq_enable();
    co_return false;
  }
  Rq& target = rq(to);
  co_await target.lock.lock(mem, pc.cpu);
  pulled->cpu = to;
  attach_task(target, *pulled);
  ++stats.sched_migrations;
  // attach_task -> check_preempt_curr: an idle target polls need_resched.
  if (target.curr == target.idle && to != pc.id) co_await resched_idle(pc, to);
  co_await target.lock.unlock(mem, pc.cpu);
  if (irqs_were_on) co_await pc.cpu.local_irq_enable();
  co_return true;
}

sim::Task<void> Sched::nohz_idle_balance(PerCpu& pc) {
  // _nohz_idle_balance: balance on behalf of every idle CPU, the kicked one last (for_each_cpu_wrap from the
  // next CPU). Stops once no runqueue has a queued task (a host-side shortcut: the remaining idle CPUs would
  // find nothing to pull).
  const std::uint32_t n = k.ncpus();
  for (std::uint32_t i = 1; i <= n; ++i) {
    const CpuId c{(pc.id.get() + i) % n};
    Rq& r = rq(c);
    if (r.curr != r.idle || !r.queue.empty()) continue;  // idle_cpu(balance_cpu)
    bool any_queued = false;
    for (std::uint32_t j = 0; j < n && !any_queued; ++j) any_queued = !rq(CpuId{j}).queue.empty();
    if (!any_queued) co_return;
    Rq* busiest = co_await find_busiest_queue(pc, c);
    if (busiest != nullptr) co_await pull_one_task(pc, *busiest, c);
  }
}

}  // namespace tlbsim::kernel
