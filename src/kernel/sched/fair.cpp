// Models the EEVDF policy of the fair class, kernel/sched/fair.c of Linux v6.13 (update_curr / update_deadline,
// avg_vruntime, entity_eligible, update_entity_lag, place_entity, pick_eevdf). The callers (schedule,
// try_to_wake_up, the tick, load balancing) choose this policy where KernelConfig::sched_eevdf() holds;
// docs/model.md ("EEVDF") lists what is left out.
#include "kernel/sched/fair.h"

#include <algorithm>

#include "kernel/sched/sched.h"

namespace tlbsim::kernel {

namespace {

// normalized_sysctl_sched_base_slice (kernel/sched/fair.c, v6.6+).
constexpr sim::Duration kSchedBaseSlice = sim::microseconds(750);

// Calls `f` for each entity of `r`'s cfs_rq: the queued tasks, then `curr` if given.
template <typename F>
void for_each_entity(const Rq& r, const TaskStruct* curr, F&& f) {
  for (const TaskStruct* t : r.queue) f(*t);
  if (curr != nullptr) f(*curr);
}

// The entities' count, the least vruntime and the sum of each vruntime's key above it (cfs_rq->avg_vruntime and
// avg_load, keyed on the least vruntime instead of min_vruntime: the same sums, rebased).
struct VruntimeSum {
  std::int64_t n = 0;
  sim::Duration base{0};
  std::int64_t keys = 0;  // in picoseconds
};

VruntimeSum sum_vruntime(const Rq& r, const TaskStruct* curr) {
  VruntimeSum s;
  bool first = true;
  for_each_entity(r, curr, [&](const TaskStruct& t) {
    if (first || t.vruntime < s.base) s.base = t.vruntime;
    first = false;
  });
  for_each_entity(r, curr, [&](const TaskStruct& t) {
    ++s.n;
    s.keys += (t.vruntime - s.base).count();
  });
  return s;
}

// vruntime_eligible(): (v - base) * load <= the sum of keys, without the division's rounding.
bool eligible_in(const VruntimeSum& s, const TaskStruct& se) { return (se.vruntime - s.base).count() * s.n <= s.keys; }

}  // namespace

std::int64_t sched_tunable_scaling(std::uint32_t ncpus) {
  std::int64_t log = 0;
  for (std::uint32_t n = std::min<std::uint32_t>(ncpus, 8); n > 1; n >>= 1) ++log;
  return 1 + log;
}

sim::Duration eevdf_base_slice(std::uint32_t ncpus) { return kSchedBaseSlice * sched_tunable_scaling(ncpus); }

TaskStruct* fair_curr(Rq& r) { return r.curr != nullptr && !r.curr->is_idle && r.curr->on_rq.value ? r.curr : nullptr; }

sim::Duration avg_vruntime(const Rq& r, const TaskStruct* curr) {
  const VruntimeSum s = sum_vruntime(r, curr);
  if (s.n == 0) return curr != nullptr ? curr->vruntime : sim::Duration{0};
  return s.base + sim::Duration{s.keys / s.n};  // keys are not negative: the division floors, as the kernel's does
}

bool entity_eligible(const Rq& r, const TaskStruct* curr, const TaskStruct& se) {
  return eligible_in(sum_vruntime(r, curr), se);
}

bool update_curr(Rq& r, sim::SimTime now, sim::Duration slice) {
  TaskStruct* curr = r.curr;
  if (curr == nullptr || curr->is_idle) return false;
  const sim::Duration delta = now - r.curr_exec_start;
  if (delta <= sim::Duration{0}) return false;
  r.curr_exec_start = now;
  curr->vruntime += delta;  // calc_delta_fair at NICE_0_LOAD
  // update_deadline(): the request is consumed once vruntime reaches the deadline; a new slice is issued.
  if (curr->vruntime < curr->deadline) return false;
  curr->deadline = curr->vruntime + slice;
  return !r.queue.empty();  // cfs_rq->nr_running > 1: resched_curr
}

void update_entity_lag(const Rq& r, const TaskStruct* curr, TaskStruct& se, sim::Duration limit) {
  se.vlag = std::clamp(avg_vruntime(r, curr) - se.vruntime, -limit, limit);
}

void place_entity(Rq& r, TaskStruct& se, bool initial, sim::Duration slice) {
  TaskStruct* curr = fair_curr(r);
  const sim::Duration V = avg_vruntime(r, curr);
  const auto load = static_cast<std::int64_t>(r.queue.size()) + (curr != nullptr ? 1 : 0);
  sim::Duration lag{0};
  // PLACE_LAG: inflate the lag so that it survives the entity's own weight joining the average.
  if (load > 0 && se.vlag != sim::Duration{0}) lag = se.vlag * (load + 1) / load;
  se.vruntime = V - lag;
  if (se.rel_deadline) {  // PLACE_REL_DEADLINE
    se.deadline += se.vruntime;
    se.rel_deadline = false;
    return;
  }
  const sim::Duration vslice = initial ? slice / 2 : slice;  // PLACE_DEADLINE_INITIAL
  se.deadline = se.vruntime + vslice;
}

TaskStruct* pick_eevdf(Rq& r, TaskStruct* curr) {
  const std::size_t n = r.queue.size() + (curr != nullptr ? 1 : 0);
  if (n == 0) return nullptr;
  if (n == 1) return curr != nullptr ? curr : r.queue.front();
  const VruntimeSum sum = sum_vruntime(r, curr);
  TaskStruct* keep = curr != nullptr && eligible_in(sum, *curr) ? curr : nullptr;
  // RUN_TO_PARITY: once picked, run until no longer eligible or until a new slice is issued.
  if (keep != nullptr && keep->vprot == keep->deadline) return keep;
  // The earliest deadline among the eligible; equal deadlines in the order queued (the rbtree's rb_add).
  TaskStruct* best = nullptr;
  for (TaskStruct* t : r.queue) {
    if ((best == nullptr || t->deadline < best->deadline) && eligible_in(sum, *t)) best = t;
  }
  if (keep != nullptr && (best == nullptr || keep->deadline < best->deadline)) best = keep;
  // Some entity is always eligible (V is their mean); the fallback only guards the arithmetic.
  return best != nullptr ? best : r.queue.front();
}

// ---- The fair class's side of schedule() and try_to_wake_up() under EEVDF.

sim::Task<TaskStruct*> Sched::pick_next_task_fair(PerCpu& pc, Rq& r, TaskStruct& current, bool prev_runnable) {
  hw::Memory& mem = k.mem();
  if (!prev_runnable) {
    // try_to_block_task -> dequeue_entity(DEQUEUE_SLEEP): with DELAY_DEQUEUE a task that is not eligible stays
    // queued (put_prev_entity puts it back in the tree) until it is picked or woken. A dying task's special state
    // (DEQUEUE_SPECIAL) is never delayed.
    if (k.config().sched_delay_dequeue() && current.state != TaskState::TASK_DEAD &&
        !entity_eligible(r, &current, current)) {
      current.sched_delayed = true;
      r.queue.push_back(&current);
    } else {
      update_entity_lag(r, &current, current, lag_limit());
      co_await mem.write(pc.cpu, current.on_rq, false);
    }
  }
  TaskStruct* curr = prev_runnable && !current.is_idle ? &current : nullptr;
  for (;;) {
    if (r.queue.empty()) {
      if (curr != nullptr) co_return curr;
      // The idle task rescheduled with nothing queued stays idle; newidle balancing runs on the way to idle, as in
      // the CFS path (docs/model.md, "Scheduler tick").
      if (!prev_runnable) co_await newidle_balance(pc, r);
      if (r.queue.empty()) co_return r.idle;
    }
    TaskStruct* se = pick_eevdf(r, curr);
    if (se->sched_delayed) {
      // pick_next_entity -> dequeue_entities(DEQUEUE_SLEEP | DEQUEUE_DELAYED), then pick again.
      update_entity_lag(r, curr, *se, lag_limit());
      std::erase(r.queue, se);
      se->sched_delayed = false;
      if (se->vlag > sim::Duration{0}) se->vlag = sim::Duration{0};  // DELAY_ZERO
      co_await mem.write(pc.cpu, se->on_rq, false);
      continue;
    }
    if (se != &current) {
      std::erase(r.queue, se);
      if (curr != nullptr) r.queue.push_back(&current);  // put_prev_entity
      se->vprot = se->deadline;                          // set_next_entity: RUN_TO_PARITY's protection
    }
    co_return se;
  }
}

sim::Task<void> Sched::requeue_delayed(PerCpu& w, Rq& r, TaskStruct& p) {
  TaskStruct* curr = fair_curr(r);
  update_entity_lag(r, curr, p, lag_limit());
  if (p.vlag > sim::Duration{0}) {  // DELAY_ZERO: back at V with zero lag
    std::erase(r.queue, &p);
    p.vlag = sim::Duration{0};
    place_entity(r, p, false, base_slice());
    r.queue.push_back(&p);
  }
  p.sched_delayed = false;
  // ttwu_runnable -> wakeup_preempt (check_preempt_wakeup_fair: update_curr, then pick_eevdf), unless p is still
  // on its CPU.
  const bool on_cpu = co_await k.mem().read(w.cpu, p.on_cpu);
  if (on_cpu || r.need_resched.value) co_return;
  const bool preempt = update_curr(r, w.cpu.now(), base_slice()) || pick_eevdf(r, curr) == &p;
  if (preempt) co_await k.mem().write(w.cpu, r.need_resched, true);
}

}  // namespace tlbsim::kernel
