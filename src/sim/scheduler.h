// The scheduler interface: who decides which CPU takes the next step. The timed scheduler orders steps by
// simulated time; an exploring scheduler (the checker) chooses adversarially. Model code is the same for both.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/cpu.h"
#include "sim/ids.h"
#include "sim/time.h"

namespace tlbsim::sim {

// Fires at a requested simulated time (scheduler ticks, device events).
class TimerHandler {
 public:
  virtual ~TimerHandler() = default;
  virtual void on_timer(std::uint32_t arg) = 0;
};

enum class StopReason : std::uint8_t {
  kTimeLimit,    // simulated time reached the limit
  kAllFinished,  // every CPU's task returned
  kQuiescent,    // nothing left to do, but some CPUs are halted waiting for interrupts (no deadlock)
};

struct RunResult {
  StopReason reason;
  SimTime end;
  std::uint64_t events;
  std::uint64_t seeded_choices = 0;  // choices the seed made (tie sets ordered; the explorer's decisions)
};

// Thrown when no CPU can make progress (deadlock) or a CPU spins longer than the stall limit (livelock).
// what() holds a dump of every CPU's state.
class DeadlockError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Contract: owns the CPUs; step_ready/send_irq/add_timer may be called from model code while run() executes;
// run() returns or throws DeadlockError, or rethrows an exception thrown by model code.
class Scheduler {
 public:
  explicit Scheduler(std::size_t n_cpus);
  virtual ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  SimTime now() const { return now_; }
  std::size_t cpu_count() const { return cpus_.size(); }
  Cpu& cpu(CpuId id) { return *cpus_[id.get()]; }
  const Cpu& cpu(CpuId id) const { return *cpus_[id.get()]; }
  const SimTime* clock() const { return &now_; }
  std::uint64_t events() const { return events_; }

  // The CPU's current step completes at `done`.
  virtual void step_ready(Cpu& cpu, SimTime done) = 0;
  // Interrupt `vector` reaches `target` at `arrival`.
  virtual void send_irq(CpuId target, int vector, SimTime arrival) = 0;
  // `handler.on_timer(arg)` runs at `at`.
  virtual void add_timer(SimTime at, TimerHandler& handler, std::uint32_t arg) = 0;
  // Runs until simulated time `until` or until nothing is left.
  virtual RunResult run(SimTime until) = 0;
  // Which of n values a load reads, under a memory model that lets it choose (0: the newest). The timed scheduler
  // never runs one; the exploring scheduler asks its chooser.
  virtual std::size_t choose_value(CpuId /*cpu*/, std::size_t /*n*/) { return 0; }
  // The CPU whose code or hardware is running now, for state that records who wrote it (the checker's page-table
  // stores under POWER); nullopt outside a CPU's action, and always under the timed scheduler.
  std::optional<CpuId> running_cpu() const { return running_; }

  // Names cache lines in dumps (installed by the hardware model).
  void set_line_namer(std::function<std::string(LineId)> namer) { line_namer_ = std::move(namer); }
  std::string line_name(LineId line) const;
  // A spin on one line longer than this is reported as a stall. Zero disables the check.
  void set_stall_limit(Duration limit) { stall_limit_ = limit; }
  // More than this many events in a row at one simulated instant is reported as a livelock: steps that cost no
  // time (a latency that rounded to zero picoseconds) would otherwise loop forever. Zero disables the check.
  void set_livelock_limit(std::uint64_t events) { livelock_limit_ = events; }
  // Called from run() every few tens of thousands of events with the current time and event count (to report
  // progress on long runs); it must not change simulated state.
  void set_progress(std::function<void(SimTime now, std::uint64_t events)> hook) { progress_ = std::move(hook); }
  // Every CPU's state, one line each.
  std::string dump_state() const;

 protected:
  // Resumes a CPU and rethrows what its model code threw.
  void resume_cpu(Cpu& cpu);
  // Throws DeadlockError if a parked CPU has spun past the stall limit.
  void check_stalls() const;
  // Classifies the end of events: all finished, quiescent, or deadlocked (throws).
  StopReason classify_idle_end() const;

  SimTime now_{};
  std::uint64_t events_ = 0;
  Duration stall_limit_ = milliseconds(100);
  std::uint64_t livelock_limit_ = std::uint64_t{1} << 24;
  std::uint64_t events_at_now_ = 0;  // events run at now_ so far
  std::optional<CpuId> running_;
  std::vector<std::optional<Cpu>> cpus_;  // contiguous: the hot per-CPU state of many CPUs stays in cache
  std::function<std::string(LineId)> line_namer_;
  std::function<void(SimTime, std::uint64_t)> progress_;
};

}  // namespace tlbsim::sim
