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
    case Kind::kPropagate:
      return fmt::format("pr{}.{}@cpu{}", vector, arg, cpu.get());
    case Kind::kValue:
      return fmt::format("rv{}@cpu{}", arg, cpu.get());
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
  auto weak_actions = [this] {
    memory_scratch_.clear();
    if (memory_ != nullptr) memory_->enabled(memory_scratch_);
    return !memory_scratch_.empty();
  };
  while (weak_actions() || !enabled_.empty()) {
    if (events_ >= max_actions_) return {StopReason::kTimeLimit, now_, events_};
    offered_ = enabled_;
    if (hardware_ != nullptr && hardware_budget_ > 0) {
      for (std::uint32_t c = 0; c < cpu_count(); ++c) {
        if (hardware_->can_act(CpuId{c})) offered_.push_back(Action{Action::Kind::kHardware, CpuId{c}, 0, now_});
      }
    }
    const std::size_t n_scheduled = offered_.size();
    draining_.assign(cpu_count(), false);
    propagations_.clear();
    for (Action m : memory_scratch_) {
      m.time = now_;
      if (m.kind == Action::Kind::kDrain) {
        m.arg = passed_over_[m.cpu.get()];
        draining_[m.cpu.get()] = true;
      } else if (m.kind == Action::Kind::kPropagate) {
        m.held = std::any_of(prev_propagations_.begin(), prev_propagations_.end(),
                             [&](const Action& p) { return p.same_as(m); });
        propagations_.push_back(m);
      }
      offered_.push_back(m);
    }
    prev_propagations_.swap(propagations_);
    for (std::uint32_t c = 0; c < cpu_count(); ++c) {
      if (!draining_[c]) passed_over_[c] = 0;
    }
    const std::size_t pick = chooser_->choose(offered_);
    schedule_.push_back(static_cast<std::uint32_t>(pick));
    const Action a = offered_[pick];
    for (std::size_t i = n_scheduled; i < offered_.size(); ++i) {
      if (offered_[i].kind != Action::Kind::kDrain) continue;
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
    if (a.kind == Action::Kind::kStep || a.kind == Action::Kind::kIrq || a.kind == Action::Kind::kHardware) {
      running_ = a.cpu;
    }
    switch (a.kind) {
      case Action::Kind::kStep: resume_cpu(cpu(a.cpu)); break;
      case Action::Kind::kIrq: cpu(a.cpu).raise_irq(a.vector); break;
      case Action::Kind::kTimer: a.timer->on_timer(a.arg); break;
      case Action::Kind::kHardware:
        --hardware_budget_;
        hardware_->act(a.cpu);
        break;
      case Action::Kind::kDrain:
      case Action::Kind::kPropagate:
        memory_->run(a);
        break;
      case Action::Kind::kValue:
        break;
    }
    running_.reset();
    if (observer_ != nullptr) observer_->after(a);
    if (stop_ && stop_()) {
      stopped_ = true;
      return {StopReason::kAllFinished, now_, events_};
    }
  }
  return {classify_idle_end(), now_, events_};
}

std::size_t ExploringScheduler::choose_value(CpuId cpu, std::size_t n) {
  if (n <= 1) return 0;
  std::vector<Action> values;
  for (std::size_t i = 0; i < n; ++i) {
    values.push_back(Action{Action::Kind::kValue, cpu, 0, now_, nullptr, static_cast<std::uint32_t>(i)});
  }
  const std::size_t pick = chooser_->choose(values);
  schedule_.push_back(static_cast<std::uint32_t>(pick));
  if (observer_ != nullptr) {
    observer_->before(values[pick]);
    observer_->after(values[pick]);
  }
  return pick;
}

}  // namespace tlbsim::sim
