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
  EventQueue queue_;
  std::vector<TimerSlot> timers_;
  std::vector<std::uint32_t> free_timers_;
};

}  // namespace tlbsim::sim
