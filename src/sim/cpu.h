// A simulated CPU's execution context: the running task's coroutines with interrupt handlers stacked on top,
// the interrupt flag, and delivery of pending interrupts at step boundaries.
#pragma once

#include <algorithm>
#include <coroutine>
#include <cstdint>
#include <exception>
#include <string>
#include <vector>

#include "sim/halt_scaling.h"
#include "sim/ids.h"
#include "sim/rng.h"
#include "sim/source_site.h"
#include "sim/task.h"
#include "sim/time.h"

namespace tlbsim::sim {

class Cpu;
class Scheduler;

// Runs the handler of an interrupt vector on the CPU that took it. Implemented by the kernel layer.
// Contract: the handler runs with interrupts disabled; when its task finishes, the interrupted code resumes.
class IrqHandler {
 public:
  virtual ~IrqHandler() = default;
  virtual Task<void> handle_irq(Cpu& cpu, int vector) = 0;
};

enum class CpuState : std::uint8_t {
  kIdle,         // no task started yet
  kRunning,      // inside resume(): model code is executing
  kStepPending,  // waiting for the current step to complete
  kParked,       // spinning on a cache line until another CPU writes it
  kHalted,       // halted until an interrupt arrives
  kFinished,     // the task returned
  kFailed,       // the task threw
};

const char* to_string(CpuState s);

inline constexpr int kMaxIrqVectors = 64;
inline constexpr LineId kNoLine{~std::uint32_t{0}};

// What a CPU was suspended on, and since when: one interval of its time (for `tlbsim run --profile`).
struct Suspension {
  enum class Kind : std::uint8_t {
    kStep,  // a step: compute, or an access to `line`
    kSpin,  // parked, spinning on `line` until another CPU writes it
    kPoll,  // parked quiescent: an idle CPU polling `line` for work
    kHalt,  // halted until an interrupt
  };
  SimTime since{};
  Kind kind = Kind::kStep;
  std::coroutine_handle<> leaf;  // the suspended task frame; null when none
  SourceSite site;
  LineId line = kNoLine;
  bool in_irq = false;
  bool user = false;  // a step in user mode (Cpu::user_delay)
};

// Told of each interval a CPU spent suspended, when the interval ends (the CPU resumes). Contract: the CPU's
// frames named by the suspension are alive during the call.
class CpuObserver {
 public:
  virtual void on_interval(const Cpu& cpu, const Suspension& s, SimTime end) = 0;

 protected:
  ~CpuObserver() = default;
};

// Contract: every awaited step goes through suspend_step (or park/halt), so the scheduler sees each step
// boundary; at most one step of a CPU is outstanding at any time.
class Cpu final : private RootObserver {
 public:
  Cpu(CpuId id, Scheduler& sched);
  Cpu(const Cpu&) = delete;
  Cpu& operator=(const Cpu&) = delete;
  ~Cpu();

  CpuId id() const { return id_; }
  // The machine's step spread (hw::TimingParams): from now on each delay and each halt's wake latency is drawn
  // around its cost from `rng`. Contract: 0 <= s < 1; s == 0 (the default) draws nothing and keeps costs exact.
  // `rng` is also the stream of draw() (an idle state's drawn exit latency), which a spread of 0 leaves in use.
  void set_step_spread(double s, Rng rng) {
    step_spread_ = s;
    spread_rng_ = rng;
  }
  // `cost` times 1 + s * u, u uniform in [-1, 1); `cost` itself when the spread is 0.
  Duration spread(Duration cost) {
    if (step_spread_ == 0.0 || cost.count() == 0) return cost;
    const double f = 1.0 + step_spread_ * (2.0 * spread_rng_.uniform() - 1.0);
    return Duration(static_cast<Duration::rep>(static_cast<double>(cost.count()) * f));
  }
  // A draw from the CPU's stream: the piecewise linear distribution whose 10th, 50th and 90th percentiles are p10,
  // p50 and p90 (its inverse CDF is linear between them and goes on with the same slopes to 0 and 1), floored at 0.
  Duration draw(Duration p10, Duration p50, Duration p90) {
    const double u = spread_rng_.uniform() - 0.5;
    const auto lo = static_cast<double>(p10.count()), mid = static_cast<double>(p50.count()),
               hi = static_cast<double>(p90.count());
    const double x = mid + u * (u < 0 ? mid - lo : hi - mid) / 0.4;
    return Duration(static_cast<Duration::rep>(std::max(0.0, x)));
  }
  Scheduler& scheduler() { return sched_; }
  SimTime now() const { return *clock_; }
  CpuState state() const { return state_; }

  // Starts task code on this CPU at the current time. Contract: the CPU has no unfinished task.
  void start(Task<void> task);
  void set_irq_handler(IrqHandler* handler) { irq_handler_ = handler; }

  // --- awaitable steps, for model code ---
  struct DelayAwaiter {
    Cpu& cpu;
    Duration cost;
    SourceSite site;
    bool user = false;
    bool await_ready() const noexcept { return false; }
    void await_suspend(std::coroutine_handle<> h) {
      cpu.suspend_step(h, cpu.now() + cpu.spread(cost), site, kNoLine, user);
    }
    void await_resume() const noexcept {}
  };
  // A fixed compute cost: an instruction sequence whose time does not depend on shared state.
  DelayAwaiter delay(Duration cost, SourceSite site = SourceSite::current()) {
    return {*this, cost, site};
  }
  // The same, spent in user mode (a user access's TLB lookup or page walk): the profile's user time.
  DelayAwaiter user_delay(Duration cost, SourceSite site = SourceSite::current()) { return {*this, cost, site, true}; }

  struct HaltAwaiter {
    Cpu& cpu;
    Duration wake_latency;
    SourceSite site;
    Duration p10{0}, p90{0};  // the wake latency's percentiles, when it is drawn (p90 > 0)
    HaltLengthScaling by_length{};
    bool await_ready() const noexcept { return false; }
    void await_suspend(std::coroutine_handle<> h) {
      cpu.halt(h, p90.count() > 0 ? cpu.draw(p10, wake_latency, p90) : cpu.spread(wake_latency), site, by_length);
    }
    void await_resume() const noexcept {}
  };
  // sti; hlt: enables interrupts and waits for one; the CPU takes it wake_latency after arrival (C-state exit).
  HaltAwaiter safe_halt(Duration wake_latency, SourceSite site = SourceSite::current()) {
    return {*this, wake_latency, site};
  }
  // The same with a wake latency drawn around its median `wake_latency` from its 10th and 90th percentiles (draw).
  HaltAwaiter safe_halt(Duration wake_latency, Duration p10, Duration p90, SourceSite site = SourceSite::current()) {
    return {*this, wake_latency, site, p10, p90};
  }
  // The same, the drawn latency then scaled by how long the CPU stayed halted (HaltLengthScaling).
  HaltAwaiter safe_halt(Duration wake_latency, Duration p10, Duration p90, HaltLengthScaling by_length,
                        SourceSite site = SourceSite::current()) {
    return {*this, wake_latency, site, p10, p90, by_length};
  }

  struct IrqEnableAwaiter {
    Cpu& cpu;
    SourceSite site;
    bool await_ready() noexcept {
      cpu.irqs_enabled_ = true;
      return cpu.pending_irqs_ == 0;
    }
    void await_suspend(std::coroutine_handle<> h) { cpu.suspend_step(h, cpu.now(), site); }
    void await_resume() const noexcept {}
  };
  // local_irq_enable(): a step boundary where a pending interrupt is taken at once.
  IrqEnableAwaiter local_irq_enable(SourceSite site = SourceSite::current()) {
    return {*this, site};
  }
  void local_irq_disable() { irqs_enabled_ = false; }
  bool irqs_disabled() const { return !irqs_enabled_; }
  bool in_irq() const { return !irq_stack_.empty(); }

  // A cost that takes no step of its own (a barrier instruction's, hw::Memory::fence): it is added to the CPU's next
  // step, or to the wake-up of its next park or halt. Contract: kernel time (a user step that follows counts it as
  // user time).
  void carry(Duration d) { carried_ += d; }

  // --- used by awaiters in other layers ---
  // The current step (awaited at `site`, an access to `line` if it names one) completes at `done`.
  // Contract: done >= now().
  void suspend_step(std::coroutine_handle<> h, SimTime done, const SourceSite& site, LineId line = kNoLine,
                    bool user = false);
  // Park until wake_parked(gen) with the returned gen, or an interrupt if interrupts are enabled. A quiescent
  // park is an idle CPU polling for work (mwait / snooze): waiting forever there is idleness, not a deadlock.
  // A wake (by the write or an interrupt) takes effect `wake_latency` later (an idle state's exit latency).
  std::uint32_t park(std::coroutine_handle<> h, LineId line, const SourceSite& site, bool quiescent = false,
                     Duration wake_latency = Duration{0});
  bool parked_quiescent() const { return state_ == CpuState::kParked && park_quiescent_; }
  // Wakes a parked CPU at the current time if gen still names its current park. Returns whether it woke.
  bool wake_parked(std::uint32_t gen);

  // --- used by schedulers ---
  // Runs model code from the current step boundary until the next step (or the end of the task).
  void resume();
  // An interrupt reaches this CPU now.
  void raise_irq(int vector);
  bool failed() const { return state_ == CpuState::kFailed; }
  // Model code running on this CPU outside its own roots (a task's coroutine owned elsewhere) threw.
  void fail(std::exception_ptr error) {
    failure_ = std::move(error);
    state_ = CpuState::kFailed;
  }
  const std::exception_ptr& failure() const { return failure_; }

  // Hints the cache to load this CPU's state and its suspended frame (the scheduler knows who runs next).
  void prefetch() const { __builtin_prefetch(this); }
  void prefetch_frame() const {
    if (leaf_) __builtin_prefetch(leaf_.address());
  }

  // Told of every interval this CPU spends suspended (null: none, the default).
  void set_observer(CpuObserver* o) { observer_ = o; }
  // The interval in progress, while the CPU is suspended and observed; null otherwise.
  const Suspension* open_suspension() const {
    return observer_ != nullptr && suspension_open_ ? &suspension_ : nullptr;
  }

  // --- diagnostics ---
  std::uint64_t pending_irqs() const { return pending_irqs_; }
  std::size_t irq_depth() const { return irq_stack_.size(); }
  const SourceSite& last_site() const { return site_; }
  LineId parked_line() const { return parked_line_; }
  SimTime parked_since() const { return park_since_; }
  std::uint64_t steps() const { return steps_; }
  std::uint64_t irqs_taken() const { return irqs_taken_; }
  // One line describing the CPU's state, for deadlock and stall dumps.
  std::string describe() const;

 private:
  struct Interrupted {
    std::coroutine_handle<> leaf;
    bool irqs_enabled;
  };

  void halt(std::coroutine_handle<> h, Duration wake_latency, const SourceSite& site, const HaltLengthScaling& scaling);
  std::coroutine_handle<> begin_irq();
  std::coroutine_handle<> on_root_done(std::coroutine_handle<> finished, std::exception_ptr error) noexcept override;

  CpuId id_;
  double step_spread_ = 0;
  Rng spread_rng_{0};
  Scheduler& sched_;
  const SimTime* clock_;
  CpuState state_ = CpuState::kIdle;
  bool irqs_enabled_ = true;
  std::uint64_t pending_irqs_ = 0;
  std::coroutine_handle<> leaf_;
  std::vector<Interrupted> irq_stack_;
  std::vector<std::coroutine_handle<>> roots_;  // the task's root, then each running handler's root
  bool started_ = false;
  IrqHandler* irq_handler_ = nullptr;
  std::exception_ptr failure_;
  SourceSite site_;
  LineId parked_line_{0};
  std::uint32_t park_gen_ = 0;
  bool park_quiescent_ = false;
  Duration park_wake_latency_{0};
  Duration carried_{0};  // carry(): not yet added to a step
  SimTime park_since_{};
  Duration halt_wake_latency_{0};  // drawn at the halt, before the scaling by its length
  std::uint64_t steps_ = 0;
  std::uint64_t irqs_taken_ = 0;
  CpuObserver* observer_ = nullptr;
  Suspension suspension_;
  bool suspension_open_ = false;
  // Kept last, apart from the members every step touches: only a halt and its wake-up use them.
  Duration halt_carried_{0};
  SimTime halt_since_{};
  HaltLengthScaling halt_scaling_{};

  void note_suspension(Suspension::Kind kind, std::coroutine_handle<> h, const SourceSite& site, LineId line,
                       bool user = false) {
    if (observer_ == nullptr) return;
    suspension_ = Suspension{now(), kind, h, site, line, in_irq(), user};
    suspension_open_ = true;
  }
};

}  // namespace tlbsim::sim
