#include "sim/cpu.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "sim/timed_scheduler.h"

namespace tlbsim::sim {
namespace {

SimTime at_ns(std::int64_t ns) { return kTimeZero + nanoseconds(ns); }

// Records when each interrupt was taken, and spends 5 ns in the handler.
class RecordingHandler final : public IrqHandler {
 public:
  struct Taken {
    int vector;
    SimTime at;
    bool irqs_disabled;
  };
  std::vector<Taken> taken;
  Task<void> handle_irq(Cpu& cpu, int vector) override {
    taken.push_back({vector, cpu.now(), cpu.irqs_disabled()});
    co_await cpu.delay(nanoseconds(5));
  }
};

Task<void> steps(Cpu& cpu, std::vector<SimTime>& boundaries) {
  co_await cpu.delay(nanoseconds(50));
  boundaries.push_back(cpu.now());
  co_await cpu.delay(nanoseconds(50));
  boundaries.push_back(cpu.now());
}

TEST(Cpu, InterruptIsTakenAtTheNextStepBoundary) {
  TimedScheduler s(1, 1);
  RecordingHandler h;
  Cpu& cpu = s.cpu(CpuId{0});
  cpu.set_irq_handler(&h);
  std::vector<SimTime> boundaries;
  cpu.start(steps(cpu, boundaries));
  s.send_irq(CpuId{0}, 3, at_ns(10));
  s.run(at_ns(1000));
  ASSERT_EQ(h.taken.size(), 1u);
  EXPECT_EQ(h.taken[0].vector, 3);
  EXPECT_EQ(h.taken[0].at, at_ns(50));  // not at 10: the 50 ns step was in progress
  EXPECT_TRUE(h.taken[0].irqs_disabled);
  // The interrupted code resumes after the handler's 5 ns.
  EXPECT_EQ(boundaries, (std::vector<SimTime>{at_ns(55), at_ns(105)}));
  EXPECT_FALSE(cpu.irqs_disabled());
  EXPECT_EQ(cpu.irqs_taken(), 1u);
}

Task<void> irqs_off_region(Cpu& cpu, std::vector<SimTime>& marks) {
  cpu.local_irq_disable();
  co_await cpu.delay(nanoseconds(100));
  co_await cpu.delay(nanoseconds(100));
  marks.push_back(cpu.now());
  co_await cpu.local_irq_enable();
  marks.push_back(cpu.now());
}

TEST(Cpu, DisabledInterruptsAreDeferredUntilEnabled) {
  TimedScheduler s(1, 1);
  RecordingHandler h;
  Cpu& cpu = s.cpu(CpuId{0});
  cpu.set_irq_handler(&h);
  std::vector<SimTime> marks;
  cpu.start(irqs_off_region(cpu, marks));
  s.send_irq(CpuId{0}, 1, at_ns(10));
  s.run(at_ns(1000));
  ASSERT_EQ(h.taken.size(), 1u);
  EXPECT_EQ(h.taken[0].at, at_ns(200));  // at local_irq_enable, not at the 100 ns boundary
  EXPECT_EQ(marks, (std::vector<SimTime>{at_ns(200), at_ns(205)}));
}

// Halts (after carrying `carried`, a barrier's cost), takes interrupt 2 sent at 100 ns; returns when the handler
// ran and when the task resumed.
Task<void> idle_once(Cpu& cpu, SimTime& woke, Duration carried = Duration{0}) {
  cpu.carry(carried);
  co_await cpu.safe_halt(nanoseconds(30));
  woke = cpu.now();
}
std::pair<SimTime, SimTime> halt_then_irq(Duration carried) {
  TimedScheduler s(1, 1);
  RecordingHandler h;
  Cpu& cpu = s.cpu(CpuId{0});
  cpu.set_irq_handler(&h);
  SimTime woke{};
  cpu.start(idle_once(cpu, woke, carried));
  s.send_irq(CpuId{0}, 2, at_ns(100));
  s.run(at_ns(1000));
  EXPECT_EQ(h.taken.size(), 1u);
  return {h.taken.empty() ? SimTime{} : h.taken[0].at, woke};
}

TEST(Cpu, HaltedCpuWakesOnInterruptAfterExitLatency) {
  EXPECT_EQ(halt_then_irq(Duration{0}), std::make_pair(at_ns(130), at_ns(135)));
}

// With a HaltLengthScaling the exit drawn at the halt (1000 ns here, exact) is scaled by how long the CPU halted:
// by 0.5 up to 200 ns halted, by 1 from 1200 ns, linearly between. Returns when the interrupt's handler ran.
Task<void> scaled_idle(Cpu& cpu, HaltLengthScaling scaling) {
  co_await cpu.safe_halt(nanoseconds(1000), Duration{0}, Duration{0}, scaling);
}
SimTime scaled_halt_then_irq(SimTime irq_at, HaltLengthScaling scaling = {nanoseconds(200), nanoseconds(1200), 0.5}) {
  TimedScheduler s(1, 1);
  RecordingHandler h;
  Cpu& cpu = s.cpu(CpuId{0});
  cpu.set_irq_handler(&h);
  cpu.start(scaled_idle(cpu, scaling));
  s.send_irq(CpuId{0}, 2, irq_at);
  s.run(at_ns(10000));
  EXPECT_EQ(h.taken.size(), 1u);
  return h.taken.empty() ? SimTime{} : h.taken[0].at;
}

TEST(Cpu, AHaltedCpusExitScalesWithHowLongItHalted) {
  EXPECT_EQ(scaled_halt_then_irq(at_ns(100)), at_ns(100 + 500));     // short: half the exit
  EXPECT_EQ(scaled_halt_then_irq(at_ns(700)), at_ns(700 + 750));     // halfway between: three quarters
  EXPECT_EQ(scaled_halt_then_irq(at_ns(3000)), at_ns(3000 + 1000));  // long: the whole exit
}

// A brief point below the short one: 0.1 of the exit up to 100 ns halted, rising linearly to the short point's 0.5
// at 200 ns; above the short point the scale runs on to 1 as before.
TEST(Cpu, ABriefHaltsExitIsScaledByItsOwnPoint) {
  const HaltLengthScaling three{nanoseconds(200), nanoseconds(1200), 0.5, nanoseconds(100), 0.1};
  EXPECT_EQ(scaled_halt_then_irq(at_ns(50), three), at_ns(50 + 100));    // brief: a tenth of the exit
  EXPECT_EQ(scaled_halt_then_irq(at_ns(150), three), at_ns(150 + 300));  // between brief and short: 0.3
  EXPECT_EQ(scaled_halt_then_irq(at_ns(200), three), at_ns(200 + 500));  // the short point
  EXPECT_EQ(scaled_halt_then_irq(at_ns(700), three), at_ns(700 + 750));  // between short and long, as without it
}

// A carried cost (a barrier's) ends the CPU's next step that much later, or delays its next wake-up from a halt.
Task<void> carried_then_step(Cpu& cpu, std::vector<SimTime>& done) {
  cpu.carry(nanoseconds(7));
  cpu.carry(nanoseconds(3));
  co_await cpu.delay(nanoseconds(50));
  done.push_back(cpu.now());
  co_await cpu.delay(nanoseconds(50));  // nothing carried any more
  done.push_back(cpu.now());
}

TEST(Cpu, ACarriedCostEndsTheNextStepLater) {
  TimedScheduler s(1, 1);
  Cpu& cpu = s.cpu(CpuId{0});
  std::vector<SimTime> done;
  cpu.start(carried_then_step(cpu, done));
  s.run(at_ns(1000));
  EXPECT_EQ(done, (std::vector<SimTime>{at_ns(60), at_ns(110)}));
}

TEST(Cpu, ACarriedCostDelaysTheWakeFromAHalt) {
  // 30 ns exit latency + 10 ns carried.
  EXPECT_EQ(halt_then_irq(nanoseconds(10)), std::make_pair(at_ns(140), at_ns(145)));
}

TEST(Cpu, HaltWithNoInterruptIsQuiescentNotDeadlock) {
  TimedScheduler s(1, 1);
  Cpu& cpu = s.cpu(CpuId{0});
  SimTime woke{};
  cpu.start(idle_once(cpu, woke));
  EXPECT_EQ(s.run(at_ns(1000)).reason, StopReason::kQuiescent);
  EXPECT_EQ(cpu.state(), CpuState::kHalted);
}

struct ParkAwaiter {
  Cpu& cpu;
  std::uint32_t* gen;
  bool await_ready() const noexcept { return false; }
  void await_suspend(std::coroutine_handle<> h) { *gen = cpu.park(h, LineId{7}, sim::SourceSite::current()); }
  void await_resume() const noexcept {}
};

Task<void> spin_forever(Cpu& cpu, std::uint32_t& gen) { co_await ParkAwaiter{cpu, &gen}; }

TEST(Cpu, DeadlockDumpsEveryCpu) {
  TimedScheduler s(2, 1);
  s.set_line_namer([](LineId l) { return "mm.tlb_gen#" + std::to_string(l.get()); });
  std::uint32_t gen = 0;
  s.cpu(CpuId{0}).start(spin_forever(s.cpu(CpuId{0}), gen));
  try {
    s.run(at_ns(1000));
    FAIL() << "expected a deadlock";
  } catch (const DeadlockError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("deadlock"), std::string::npos) << what;
    EXPECT_NE(what.find("cpu0"), std::string::npos) << what;
    EXPECT_NE(what.find("spinning on mm.tlb_gen#7"), std::string::npos) << what;
    EXPECT_NE(what.find("cpu1"), std::string::npos) << what;
    EXPECT_NE(what.find("cpu_test.cpp"), std::string::npos) << what;  // where it is stuck
  }
}

Task<void> busy(Cpu& cpu) {
  for (;;) co_await cpu.delay(nanoseconds(100));
}

TEST(Cpu, LongSpinIsReportedAsStall) {
  TimedScheduler s(2, 1);
  s.set_stall_limit(microseconds(10));
  std::uint32_t gen = 0;
  s.cpu(CpuId{0}).start(spin_forever(s.cpu(CpuId{0}), gen));
  s.cpu(CpuId{1}).start(busy(s.cpu(CpuId{1})));
  try {
    s.run(kTimeZero + milliseconds(100));
    FAIL() << "expected a stall";
  } catch (const DeadlockError& e) {
    EXPECT_NE(std::string(e.what()).find("stall: cpu0"), std::string::npos) << e.what();
  }
}

TEST(Cpu, WakeParkedOnlyForTheCurrentPark) {
  TimedScheduler s(2, 1);
  std::uint32_t gen = 0;
  Cpu& cpu = s.cpu(CpuId{0});
  cpu.start(spin_forever(cpu, gen));
  s.cpu(CpuId{1}).start(busy(s.cpu(CpuId{1})));  // keeps the run alive, so the spin is no deadlock
  EXPECT_EQ(s.run(at_ns(50)).reason, StopReason::kTimeLimit);
  ASSERT_EQ(cpu.state(), CpuState::kParked);
  EXPECT_FALSE(cpu.wake_parked(gen + 1));
  EXPECT_TRUE(cpu.wake_parked(gen));
  EXPECT_FALSE(cpu.wake_parked(gen));  // already woken
  s.run(at_ns(100));
  EXPECT_EQ(cpu.state(), CpuState::kFinished);
}

TEST(Cpu, ParkedCpuWithInterruptsEnabledTakesAnInterrupt) {
  TimedScheduler s(1, 1);
  RecordingHandler h;
  std::uint32_t gen = 0;
  Cpu& cpu = s.cpu(CpuId{0});
  cpu.set_irq_handler(&h);
  cpu.start(spin_forever(cpu, gen));
  s.send_irq(CpuId{0}, 4, at_ns(20));
  s.run(at_ns(100));
  ASSERT_EQ(h.taken.size(), 1u);
  EXPECT_EQ(h.taken[0].at, at_ns(20));
}

// A drawn wake-up latency (an idle state's exit with its percentiles): the CPU's stream gives the same draws for
// the same seed, and many draws have about the 10th, 50th and 90th percentiles they were drawn from, none negative.
TEST(Cpu, DrawsFollowTheirPercentilesFromTheCpusStream) {
  const auto draws = [](std::uint64_t seed) {
    TimedScheduler s(1, 1);
    Cpu& cpu = s.cpu(CpuId{0});
    cpu.set_step_spread(0, Rng(seed));
    std::vector<std::int64_t> out;
    for (int i = 0; i < 20000; ++i) {
      out.push_back(cpu.draw(nanoseconds(10000), nanoseconds(20000), nanoseconds(60000)).count());
    }
    return out;
  };
  const std::vector<std::int64_t> a = draws(3), b = draws(3), c = draws(4);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  std::vector<std::int64_t> sorted = a;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_GE(sorted.front(), 0);
  EXPECT_NEAR(static_cast<double>(sorted[2000]), 10'000'000.0, 500'000.0);
  EXPECT_NEAR(static_cast<double>(sorted[10000]), 20'000'000.0, 500'000.0);
  EXPECT_NEAR(static_cast<double>(sorted[18000]), 60'000'000.0, 1'500'000.0);
}

}  // namespace
}  // namespace tlbsim::sim

namespace tlbsim::sim {
namespace {

Task<void> ten_steps(Cpu& cpu, std::vector<SimTime>& done) {
  for (int i = 0; i < 10; ++i) {
    co_await cpu.delay(nanoseconds(1000));
    done.push_back(cpu.now());
  }
}

std::vector<SimTime> spread_steps(double spread, std::uint64_t seed) {
  TimedScheduler s(1, 1);
  Cpu& cpu = s.cpu(CpuId{0});
  if (spread > 0) cpu.set_step_spread(spread, Rng(seed));
  std::vector<SimTime> done;
  cpu.start(ten_steps(cpu, done));
  s.run(kTimeZero + milliseconds(1));
  return done;
}

// A machine's step spread draws each step's duration from 1 -+ spread of its cost, from the CPU's own seeded
// stream: the same stream gives the same times, another stream other times, and spread 0 the exact costs.
TEST(Cpu, StepSpreadDrawsEachStepAroundItsCostFromTheCpusStream) {
  const std::vector<SimTime> exact = spread_steps(0, 1);
  ASSERT_EQ(exact.size(), 10u);
  for (std::size_t i = 0; i < exact.size(); ++i) EXPECT_EQ(exact[i], at_ns(1000 * static_cast<std::int64_t>(i + 1)));
  const std::vector<SimTime> a = spread_steps(0.2, 7), b = spread_steps(0.2, 7), c = spread_steps(0.2, 8);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  SimTime prev = kTimeZero;
  std::set<std::int64_t> lengths;
  for (SimTime t : a) {
    const std::int64_t ps = (t - prev).count();
    EXPECT_GE(ps, 800'000);
    EXPECT_LT(ps, 1'200'000);
    lengths.insert(ps);
    prev = t;
  }
  EXPECT_GT(lengths.size(), 5u);
}

}  // namespace
}  // namespace tlbsim::sim
