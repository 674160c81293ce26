#include "sim/cpu.h"

#include <fmt/format.h>

#include <bit>
#include <stdexcept>
#include <utility>

#include "sim/scheduler.h"

namespace tlbsim::sim {

const char* to_string(CpuState s) {
  switch (s) {
    case CpuState::kIdle: return "idle";
    case CpuState::kRunning: return "running";
    case CpuState::kStepPending: return "step-pending";
    case CpuState::kParked: return "spinning";
    case CpuState::kHalted: return "halted";
    case CpuState::kFinished: return "finished";
    case CpuState::kFailed: return "failed";
  }
  return "?";
}

Cpu::Cpu(CpuId id, Scheduler& sched) : id_(id), sched_(sched), clock_(sched.clock()) { irq_stack_.reserve(4); }

Cpu::~Cpu() {
  // A run that stops at its time limit leaves tasks suspended mid-step. Destroying a root destroys the Task
  // temporaries in its frame, and through them every frame it awaits; innermost (handler) roots go first.
  for (auto it = roots_.rbegin(); it != roots_.rend(); ++it) it->destroy();
}


void Cpu::start(Task<void> task) {
  if (state_ != CpuState::kIdle && state_ != CpuState::kFinished) {
    throw std::logic_error(fmt::format("cpu{}: start() while a task is running", id_.get()));
  }
  auto h = task.release();
  h.promise().root = this;
  roots_.push_back(h);
  started_ = true;
  leaf_ = h;
  site_ = SourceSite{"", "(task starts)", 0};
  note_suspension(Suspension::Kind::kStep, h, site_, kNoLine);
  state_ = CpuState::kStepPending;
  sched_.step_ready(*this, now());
}

void Cpu::suspend_step(std::coroutine_handle<> h, SimTime done, const SourceSite& site, LineId line, bool user) {
  leaf_ = h;
  site_ = site;
  note_suspension(Suspension::Kind::kStep, h, site, line, user);
  state_ = CpuState::kStepPending;
  sched_.step_ready(*this, done + std::exchange(carried_, Duration{0}));
}

std::uint32_t Cpu::park(std::coroutine_handle<> h, LineId line, const SourceSite& site, bool quiescent,
                        Duration wake_latency) {
  park_quiescent_ = quiescent;
  park_wake_latency_ = wake_latency + std::exchange(carried_, Duration{0});
  leaf_ = h;
  site_ = site;
  note_suspension(quiescent ? Suspension::Kind::kPoll : Suspension::Kind::kSpin, h, site, line);
  parked_line_ = line;
  park_since_ = now();
  state_ = CpuState::kParked;
  return park_gen_;
}

bool Cpu::wake_parked(std::uint32_t gen) {
  if (state_ != CpuState::kParked || gen != park_gen_) return false;
  ++park_gen_;
  state_ = CpuState::kStepPending;
  sched_.step_ready(*this, now() + park_wake_latency_);
  return true;
}

void Cpu::halt(std::coroutine_handle<> h, Duration wake_latency, const SourceSite& site,
               const HaltLengthScaling& scaling) {
  leaf_ = h;
  site_ = site;
  note_suspension(Suspension::Kind::kHalt, h, site, kNoLine);
  irqs_enabled_ = true;
  const Duration carried = std::exchange(carried_, Duration{0});
  halt_wake_latency_ = wake_latency;
  halt_carried_ = carried;
  halt_since_ = now();
  halt_scaling_ = scaling;
  if (pending_irqs_ != 0) {
    state_ = CpuState::kStepPending;
    sched_.step_ready(*this, now() + carried);
    return;
  }
  state_ = CpuState::kHalted;
}

void Cpu::raise_irq(int vector) {
  if (vector < 0 || vector >= kMaxIrqVectors) throw std::out_of_range(fmt::format("irq vector {}", vector));
  pending_irqs_ |= std::uint64_t{1} << vector;
  switch (state_) {
    case CpuState::kHalted: {
      state_ = CpuState::kStepPending;
      Duration exit = halt_wake_latency_;
      if (halt_scaling_.long_halt.count() > 0) {
        const double f = halt_scaling_.at(now() - halt_since_);
        exit = Duration{static_cast<Duration::rep>(static_cast<double>(exit.count()) * f + 0.5)};
      }
      sched_.step_ready(*this, now() + halt_carried_ + exit);
      break;
    }
    case CpuState::kParked:
      if (irqs_enabled_) {
        ++park_gen_;
        state_ = CpuState::kStepPending;
        sched_.step_ready(*this, now() + park_wake_latency_);
      }
      break;
    case CpuState::kIdle:
    case CpuState::kFinished:
      if (irq_handler_ != nullptr && irqs_enabled_) {
        // A CPU with no task takes the interrupt at once; afterwards resume() finds no leaf and stays idle.
        state_ = CpuState::kStepPending;
        leaf_ = {};
        sched_.step_ready(*this, now());
      }
      break;
    default:
      break;  // taken at the next step boundary
  }
}

std::coroutine_handle<> Cpu::begin_irq() {
  const int vector = std::countr_zero(pending_irqs_);
  pending_irqs_ &= ~(std::uint64_t{1} << vector);
  irq_stack_.push_back({leaf_, irqs_enabled_});
  leaf_ = {};
  irqs_enabled_ = false;
  ++irqs_taken_;
  Task<void> handler = irq_handler_->handle_irq(*this, vector);
  auto h = handler.release();
  h.promise().root = this;
  roots_.push_back(h);
  return h;
}

void Cpu::resume() {
  if (suspension_open_) {
    suspension_open_ = false;
    if (observer_ != nullptr) observer_->on_interval(*this, suspension_, now());
  }
  state_ = CpuState::kRunning;
  ++steps_;
  if (irqs_enabled_ && pending_irqs_ != 0 && irq_handler_ != nullptr) {
    begin_irq().resume();
    return;
  }
  auto h = leaf_;
  leaf_ = {};
  if (!h) {
    state_ = started_ ? CpuState::kFinished : CpuState::kIdle;  // woke with nothing to run
    return;
  }
  h.resume();
}

std::coroutine_handle<> Cpu::on_root_done(std::coroutine_handle<> finished, std::exception_ptr error) noexcept {
  roots_.pop_back();  // the finishing root is always the innermost one
  finished.destroy();
  if (error) {
    failure_ = error;
    state_ = CpuState::kFailed;
    return std::noop_coroutine();
  }
  if (irq_stack_.empty()) {
    state_ = CpuState::kFinished;
    return std::noop_coroutine();
  }
  Interrupted back = irq_stack_.back();
  irq_stack_.pop_back();
  irqs_enabled_ = back.irqs_enabled;
  leaf_ = back.leaf;
  if (irqs_enabled_ && pending_irqs_ != 0) return begin_irq();
  if (!leaf_) {
    state_ = started_ ? CpuState::kFinished : CpuState::kIdle;
    return std::noop_coroutine();
  }
  return std::exchange(leaf_, {});
}

std::string Cpu::describe() const {
  std::string s = fmt::format("cpu{:<4} {:<12} irqs {:<3} pending {:#x} irq-depth {} steps {}", id_.get(),
                              to_string(state_), irqs_enabled_ ? "on" : "off", pending_irqs_, irq_stack_.size(),
                              steps_);
  if (site_.line != 0) {
    s += fmt::format(" at {} ({}:{})", site_.function_name(), site_.file_name(), site_.line);
  }
  if (state_ == CpuState::kParked) {
    s += fmt::format(" {} {} since {}", park_quiescent_ ? "idle, polling" : "spinning on", sched_.line_name(parked_line_),
                     format_duration(park_since_.time_since_epoch()));
  }
  return s;
}

}  // namespace tlbsim::sim
