// The exploring scheduler: instead of simulated time, a Chooser decides which enabled action runs next (a CPU's
// step, an interrupt's arrival, a timer, a speculative hardware action). The checker drives the same model code
// through it.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "sim/rng.h"
#include "sim/scheduler.h"

namespace tlbsim::sim {

// One thing that can happen next.
struct Action {
  // kDrain: a CPU's oldest buffered store commits (x86-TSO). kPropagate: write `arg` of location `vector` reaches
  // `cpu` (POWER). kValue: a load of `cpu` reads the arg-th newest write it may read (POWER), offered alone.
  enum class Kind : std::uint8_t { kStep, kIrq, kTimer, kHardware, kDrain, kPropagate, kValue } kind;
  CpuId cpu;             // the CPU that steps, takes the interrupt, or whose hardware acts
  int vector = 0;        // kIrq; kPropagate: the location
  SimTime time;          // when the timed scheduler would run it (advisory here)
  TimerHandler* timer = nullptr;
  // kTimer: the timer's argument. kDrain: how many choices in a row passed this CPU's store buffer over (0: its
  // oldest store was just buffered, or the one before it just committed).
  std::uint32_t arg = 0;
  // kPropagate: the CPU that made the write. A strategy that runs one CPU at a time (PCT) counts the propagation
  // among that CPU's actions, as it counts a store buffer's commits among its own CPU's.
  CpuId by{};
  // kPropagate: it was offered at the previous choice point too and passed over (held); a fresh one was not.
  bool held = false;
  CpuId owner() const { return kind == Kind::kPropagate ? by : cpu; }

  // "cpu1", "irq1@cpu0", "timer3", "hw@cpu1", "sb@cpu1", "pr2.1@cpu0", "rv1@cpu1": names the action in schedule
  // files, stable across runs.
  std::string label() const;
  bool same_as(const Action& o) const {
    return kind == o.kind && cpu == o.cpu && vector == o.vector && (kind == Kind::kDrain || arg == o.arg);
  }
};

// Picks the next action. Contract: returns an index below actions.size(); actions is never empty.
class Chooser {
 public:
  virtual ~Chooser() = default;
  virtual std::size_t choose(const std::vector<Action>& actions) = 0;
};

// Chooses uniformly at random from a seeded stream: the random-walk strategy.
class RandomChooser final : public Chooser {
 public:
  explicit RandomChooser(std::uint64_t seed) : rng_(seed) {}
  std::size_t choose(const std::vector<Action>& actions) override {
    return static_cast<std::size_t>(rng_.below(actions.size()));
  }

 private:
  Rng rng_;
};

// What the hardware may do on its own between steps (a speculative page walk filling the TLB).
// Contract: can_act is side-effect free; act runs outside any CPU's model code.
class HardwareAgent {
 public:
  virtual ~HardwareAgent() = default;
  virtual bool can_act(CpuId cpu) const = 0;
  virtual void act(CpuId cpu) = 0;
};

// A weak memory model's own actions: a store-buffer commit (x86-TSO), a write reaching a CPU (POWER). Contract:
// enabled() appends the actions possible now and is side-effect free; run() runs outside any CPU's model code.
class MemoryActions {
 public:
  virtual ~MemoryActions() = default;
  virtual void enabled(std::vector<Action>& out) const = 0;
  virtual void run(const Action& a) = 0;
};

// Sees each action before and after it runs (the checker's replay trace).
class ActionObserver {
 public:
  virtual ~ActionObserver() = default;
  virtual void before(const Action& a) = 0;
  virtual void after(const Action& a) = 0;
};

// Contract: every enabled action is offered to the chooser in a deterministic order (by insertion, then the
// hardware actions by CPU); the run ends when no action is enabled, after `max_actions`, or when the stop
// predicate holds after an action. now() is the largest time of any action run so far.
class ExploringScheduler final : public Scheduler {
 public:
  ExploringScheduler(std::size_t n_cpus, Chooser& chooser, std::uint64_t max_actions = 1'000'000);

  void step_ready(Cpu& cpu, SimTime done) override;
  void send_irq(CpuId target, int vector, SimTime arrival) override;
  void add_timer(SimTime at, TimerHandler& handler, std::uint32_t arg) override;
  // `until` bounds the advisory time as in the timed scheduler.
  RunResult run(SimTime until) override;

  void set_chooser(Chooser& chooser) { chooser_ = &chooser; }
  // Offers hardware actions for every CPU the agent allows, at most `budget` of them in the whole run.
  void set_hardware(HardwareAgent* agent, std::uint32_t budget) {
    hardware_ = agent;
    hardware_budget_ = budget;
  }
  // Offers the memory model's actions (store-buffer commits, propagations); none by default (sequential consistency).
  void set_memory_actions(MemoryActions* actions) { memory_ = actions; }
  // A load's choice among n values (kValue actions): asks the chooser, and records it in the schedule.
  std::size_t choose_value(CpuId cpu, std::size_t n) override;
  void set_observer(ActionObserver* o) { observer_ = o; }
  // Stops the run after the first action for which `stop()` returns true.
  void set_stop(std::function<bool()> stop) { stop_ = std::move(stop); }
  bool stopped() const { return stopped_; }

  // Choices made so far (indices into the enabled list at each point): a replayable schedule.
  const std::vector<std::uint32_t>& schedule() const { return schedule_; }

 private:
  Chooser* chooser_;
  std::uint64_t max_actions_;
  std::vector<Action> enabled_;
  std::vector<Action> offered_;
  std::vector<std::uint32_t> schedule_;
  HardwareAgent* hardware_ = nullptr;
  std::uint32_t hardware_budget_ = 0;
  ActionObserver* observer_ = nullptr;
  MemoryActions* memory_ = nullptr;
  std::vector<Action> memory_scratch_;
  std::vector<bool> draining_;              // per CPU, at this choice: a store-buffer commit of it is offered
  std::vector<std::uint32_t> passed_over_;  // per CPU: choices since its buffer last committed or filled
  std::vector<Action> propagations_, prev_propagations_;  // offered at this choice point and at the previous one
  std::function<bool()> stop_;
  bool stopped_ = false;
};

// Replays a recorded schedule, then falls back to choosing the first action.
class ReplayChooser final : public Chooser {
 public:
  explicit ReplayChooser(std::vector<std::uint32_t> schedule) : schedule_(std::move(schedule)) {}
  std::size_t choose(const std::vector<Action>& actions) override {
    const std::size_t c = next_ < schedule_.size() ? schedule_[next_] : 0;
    ++next_;
    return c < actions.size() ? c : 0;
  }

 private:
  std::vector<std::uint32_t> schedule_;
  std::size_t next_ = 0;
};

}  // namespace tlbsim::sim
