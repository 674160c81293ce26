#include "sim/scheduler.h"

#include <fmt/format.h>

namespace tlbsim::sim {

Scheduler::Scheduler(std::size_t n_cpus) {
  cpus_ = std::vector<std::optional<Cpu>>(n_cpus);
  for (std::size_t i = 0; i < n_cpus; ++i) cpus_[i].emplace(CpuId{static_cast<std::uint32_t>(i)}, *this);
}

Scheduler::~Scheduler() = default;

std::string Scheduler::line_name(LineId line) const {
  if (line_namer_) return line_namer_(line);
  return fmt::format("line#{}", line.get());
}

std::string Scheduler::dump_state() const {
  std::string out = fmt::format("simulated time {}, {} events\n", format_duration(now_.time_since_epoch()), events_);
  for (const auto& c : cpus_) {
    out += "  ";
    out += c->describe();
    out += '\n';
  }
  return out;
}

void Scheduler::resume_cpu(Cpu& cpu) {
  cpu.resume();
  if (cpu.failed()) std::rethrow_exception(cpu.failure());
}

void Scheduler::check_stalls() const {
  if (stall_limit_.count() == 0) return;
  for (const auto& c : cpus_) {
    if (c->state() == CpuState::kParked && !c->parked_quiescent() && now_ - c->parked_since() > stall_limit_) {
      throw DeadlockError(fmt::format("stall: cpu{} has spun on {} for more than {} with no write to it\n{}",
                                      c->id().get(), line_name(c->parked_line()), format_duration(stall_limit_),
                                      dump_state()));
    }
  }
}

StopReason Scheduler::classify_idle_end() const {
  bool any_halted = false;
  for (const auto& c : cpus_) {
    switch (c->state()) {
      case CpuState::kParked:
        if (c->parked_quiescent()) {
          any_halted = true;
          break;
        }
        [[fallthrough]];
      case CpuState::kStepPending:
      case CpuState::kRunning:
        throw DeadlockError(fmt::format("deadlock: no CPU can make progress (cpu{} is {})\n{}", c->id().get(),
                                        to_string(c->state()), dump_state()));
      case CpuState::kHalted: any_halted = true; break;
      default: break;
    }
  }
  return any_halted ? StopReason::kQuiescent : StopReason::kAllFinished;
}

}  // namespace tlbsim::sim
