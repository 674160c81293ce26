#include "sim/exploring_scheduler.h"

#include <algorithm>

namespace tlbsim::sim {

ExploringScheduler::ExploringScheduler(std::size_t n_cpus, Chooser& chooser, std::uint64_t max_actions)
    : Scheduler(n_cpus), chooser_(chooser), max_actions_(max_actions) {
  set_stall_limit(Duration{0});  // advisory time says nothing about spinning here
}

void ExploringScheduler::step_ready(Cpu& cpu, SimTime done) {
  enabled_.push_back(Action{Action::Kind::kStep, cpu.id(), 0, done, nullptr, 0});
}

void ExploringScheduler::send_irq(CpuId target, int vector, SimTime arrival) {
  enabled_.push_back(Action{Action::Kind::kIrq, target, vector, arrival, nullptr, 0});
}

void ExploringScheduler::add_timer(SimTime at, TimerHandler& handler, std::uint32_t arg) {
  enabled_.push_back(Action{Action::Kind::kTimer, CpuId{0}, 0, at, &handler, arg});
}

RunResult ExploringScheduler::run(SimTime until) {
  while (!enabled_.empty()) {
    if (events_ >= max_actions_) return {StopReason::kTimeLimit, now_, events_};
    const std::size_t pick = chooser_.choose(enabled_);
    schedule_.push_back(static_cast<std::uint32_t>(pick));
    const Action a = enabled_[pick];
    enabled_.erase(enabled_.begin() + static_cast<std::ptrdiff_t>(pick));
    if (a.time > until) return {StopReason::kTimeLimit, now_, events_};
    now_ = std::max(now_, a.time);
    ++events_;
    switch (a.kind) {
      case Action::Kind::kStep: resume_cpu(cpu(a.cpu)); break;
      case Action::Kind::kIrq: cpu(a.cpu).raise_irq(a.vector); break;
      case Action::Kind::kTimer: a.timer->on_timer(a.arg); break;
    }
  }
  return {classify_idle_end(), now_, events_};
}

}  // namespace tlbsim::sim
