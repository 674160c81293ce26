#include "sim/exploring_scheduler.h"

#include <algorithm>

#include <fmt/format.h>

namespace tlbsim::sim {

std::string Action::label() const {
  switch (kind) {
    case Kind::kStep: return fmt::format("cpu{}", cpu.get());
    case Kind::kIrq: return fmt::format("irq{}@cpu{}", vector, cpu.get());
    case Kind::kTimer: return fmt::format("timer{}", arg);
    case Kind::kHardware: return fmt::format("hw@cpu{}", cpu.get());
    case Kind::kDrain:
      return fmt::format("sb@cpu{}", cpu.get());
  }
  return "?";
}

ExploringScheduler::ExploringScheduler(std::size_t n_cpus, Chooser& chooser, std::uint64_t max_actions)
    : Scheduler(n_cpus), chooser_(&chooser), max_actions_(max_actions), passed_over_(n_cpus, 0) {
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
  stopped_ = false;
  auto buffered = [this] {
    if (buffers_ == nullptr) return false;
    for (std::uint32_t c = 0; c < cpu_count(); ++c) {
      if (buffers_->pending(CpuId{c})) return true;
    }
    return false;
  };
  while (!enabled_.empty() || buffered()) {
    if (events_ >= max_actions_) return {StopReason::kTimeLimit, now_, events_};
    offered_ = enabled_;
    if (hardware_ != nullptr && hardware_budget_ > 0) {
      for (std::uint32_t c = 0; c < cpu_count(); ++c) {
        if (hardware_->can_act(CpuId{c})) offered_.push_back(Action{Action::Kind::kHardware, CpuId{c}, 0, now_});
      }
    }
    const std::size_t n_scheduled = offered_.size();
    if (buffers_ != nullptr) {
      for (std::uint32_t c = 0; c < cpu_count(); ++c) {
        if (buffers_->pending(CpuId{c})) {
          offered_.push_back(Action{Action::Kind::kDrain, CpuId{c}, 0, now_, nullptr, passed_over_[c]});
        } else {
          passed_over_[c] = 0;
        }
      }
    }
    const std::size_t pick = chooser_->choose(offered_);
    schedule_.push_back(static_cast<std::uint32_t>(pick));
    const Action a = offered_[pick];
    for (std::size_t i = n_scheduled; i < offered_.size(); ++i) {
      const std::uint32_t c = offered_[i].cpu.get();
      passed_over_[c] = i == pick ? 0 : passed_over_[c] + 1;
    }
    if (a.kind == Action::Kind::kStep || a.kind == Action::Kind::kIrq || a.kind == Action::Kind::kTimer) {
      enabled_.erase(enabled_.begin() + static_cast<std::ptrdiff_t>(pick));
    }
    if (a.time > until) return {StopReason::kTimeLimit, now_, events_};
    now_ = std::max(now_, a.time);
    ++events_;
    if (observer_ != nullptr) observer_->before(a);
    switch (a.kind) {
      case Action::Kind::kStep: resume_cpu(cpu(a.cpu)); break;
      case Action::Kind::kIrq: cpu(a.cpu).raise_irq(a.vector); break;
      case Action::Kind::kTimer: a.timer->on_timer(a.arg); break;
      case Action::Kind::kHardware:
        --hardware_budget_;
        hardware_->act(a.cpu);
        break;
      case Action::Kind::kDrain:
        buffers_->commit_oldest(a.cpu);
        break;
    }
    if (observer_ != nullptr) observer_->after(a);
    if (stop_ && stop_()) {
      stopped_ = true;
      return {StopReason::kAllFinished, now_, events_};
    }
  }
  return {classify_idle_end(), now_, events_};
}

}  // namespace tlbsim::sim
