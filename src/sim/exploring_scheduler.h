// The exploring scheduler: instead of simulated time, a Chooser decides which enabled action runs next (a CPU's
// step, an interrupt's arrival, a timer). The checker drives the same model code through it.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/rng.h"
#include "sim/scheduler.h"

namespace tlbsim::sim {

// One thing that can happen next.
struct Action {
  enum class Kind : std::uint8_t { kStep, kIrq, kTimer } kind;
  CpuId cpu;             // the CPU that steps or takes the interrupt
  int vector = 0;        // kIrq
  SimTime time;          // when the timed scheduler would run it (advisory here)
  TimerHandler* timer = nullptr;
  std::uint32_t arg = 0;
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

// Contract: every enabled action is offered to the chooser in a deterministic order (by insertion); the run
// ends when no action is enabled or after `max_actions`. now() is the largest time of any action run so far.
class ExploringScheduler final : public Scheduler {
 public:
  ExploringScheduler(std::size_t n_cpus, Chooser& chooser, std::uint64_t max_actions = 1'000'000);

  void step_ready(Cpu& cpu, SimTime done) override;
  void send_irq(CpuId target, int vector, SimTime arrival) override;
  void add_timer(SimTime at, TimerHandler& handler, std::uint32_t arg) override;
  // `until` bounds the advisory time as in the timed scheduler.
  RunResult run(SimTime until) override;

  // Choices made so far (indices into the enabled list at each point): a replayable schedule.
  const std::vector<std::uint32_t>& schedule() const { return schedule_; }

 private:
  Chooser& chooser_;
  std::uint64_t max_actions_;
  std::vector<Action> enabled_;
  std::vector<std::uint32_t> schedule_;
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
