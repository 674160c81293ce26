// The discrete-event scheduler: steps complete in simulated-time order.
#pragma once

#include <vector>

#include "sim/event_queue.h"
#include "sim/scheduler.h"

namespace tlbsim::sim {

// Contract: events at equal (time, priority) run in an order fixed by the seed; the same inputs and seed give
// the same sequence of steps.
class TimedScheduler final : public Scheduler {
 public:
  TimedScheduler(std::size_t n_cpus, std::uint64_t seed);

  void step_ready(Cpu& cpu, SimTime done) override;
  void send_irq(CpuId target, int vector, SimTime arrival) override;
  void add_timer(SimTime at, TimerHandler& handler, std::uint32_t arg) override;
  RunResult run(SimTime until) override;

 private:
  struct TimerSlot {
    TimerHandler* handler;
    std::uint32_t arg;
  };
  // Pushes the held step, if any: before any other push, so that the queue sees pushes in their order.
  void release_held() {
    if (held_) {
      held_ = false;
      queue_.push(held_done_, EventPriority::kStep, EventKind::kCpuStep, held_cpu_);
    }
  }

  EventQueue queue_;
  // The last step_ready() of an event, held back from the queue: when it is the earliest pending event, run()
  // runs it next without the push and pop, which would have given the same order (a key below every other is a
  // tie set of one, which draws nothing from the seed). Any other push releases it first.
  bool held_ = false;
  std::uint32_t held_cpu_ = 0;
  SimTime held_done_{};
  std::vector<TimerSlot> timers_;
  std::vector<std::uint32_t> free_timers_;
};

}  // namespace tlbsim::sim
