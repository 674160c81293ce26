#include "sim/timed_scheduler.h"

#include <fmt/format.h>

namespace tlbsim::sim {

TimedScheduler::TimedScheduler(std::size_t n_cpus, std::uint64_t seed) : Scheduler(n_cpus), queue_(seed) {
  queue_.reserve(n_cpus * 2 + 16);
}

void TimedScheduler::step_ready(Cpu& cpu, SimTime done) {
  release_held();
  held_ = true;
  held_cpu_ = cpu.id().get();
  held_done_ = done;
}

void TimedScheduler::send_irq(CpuId target, int vector, SimTime arrival) {
  release_held();
  queue_.push(arrival, EventPriority::kIrq, EventKind::kIrqArrive, target.get(), static_cast<std::uint16_t>(vector));
}

void TimedScheduler::add_timer(SimTime at, TimerHandler& handler, std::uint32_t arg) {
  std::uint32_t slot;
  if (!free_timers_.empty()) {
    slot = free_timers_.back();
    free_timers_.pop_back();
    timers_[slot] = {&handler, arg};
  } else {
    slot = static_cast<std::uint32_t>(timers_.size());
    timers_.push_back({&handler, arg});
  }
  release_held();
  queue_.push(at, EventPriority::kTimer, EventKind::kTimer, slot);
}

RunResult TimedScheduler::run(SimTime until) {
  constexpr std::uint64_t kStallCheckMask = (1u << 16) - 1;
  for (;;) {
    Event ev;
    if (held_ && held_done_ <= until && queue_.precedes_all(held_done_, EventPriority::kStep)) {
      held_ = false;  // the step just asked for runs next: no other event comes before it
      ev = Event{held_done_, EventPriority::kStep, EventKind::kCpuStep, 0, held_cpu_};
    } else {
      release_held();
      if (queue_.empty()) break;
      if (queue_.top_time() > until) {
        now_ = until;
        return {StopReason::kTimeLimit, now_, events_, queue_.tie_sets()};
      }
      ev = queue_.pop();
    }
    if (ev.time != now_) {
      now_ = ev.time;
      events_at_now_ = 0;
    } else if (++events_at_now_ > livelock_limit_ && livelock_limit_ != 0) {
      throw DeadlockError(fmt::format(
          "livelock: {} events in a row at simulated time {} without time advancing (steps that cost no time)\n{}",
          events_at_now_, format_duration(now_ - kTimeZero), dump_state()));
    }
    // Tie sets are drained in random CPU order; load the state of CPUs about to run ahead of time.
    if (const std::uint32_t soon = queue_.target_ahead(1); soon < cpus_.size()) cpus_[soon]->prefetch_frame();
    if (const std::uint32_t later = queue_.target_ahead(4); later < cpus_.size()) cpus_[later]->prefetch();
    ++events_;
    switch (ev.kind) {
      case EventKind::kCpuStep: resume_cpu(cpu(CpuId{ev.target})); break;
      case EventKind::kIrqArrive: cpu(CpuId{ev.target}).raise_irq(ev.arg); break;
      case EventKind::kTimer: {
        TimerSlot slot = timers_[ev.target];
        free_timers_.push_back(ev.target);
        slot.handler->on_timer(slot.arg);
        break;
      }
    }
    if ((events_ & kStallCheckMask) == 0) {
      check_stalls();
      if (progress_) progress_(now_, events_);
    }
  }
  return {classify_idle_end(), now_, events_, queue_.tie_sets()};
}

}  // namespace tlbsim::sim
