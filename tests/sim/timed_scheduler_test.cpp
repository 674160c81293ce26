#include "sim/timed_scheduler.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "sim/cpu.h"

namespace tlbsim::sim {
namespace {

// A spin loop whose steps cost no time: what a latency that rounded to zero picoseconds would make.
Task<void> spin_without_time(Cpu& cpu) {
  for (;;) co_await cpu.delay(Duration{0});
}

Task<void> steps_of(Cpu& cpu, Duration cost, int n) {
  for (int i = 0; i < n; ++i) co_await cpu.delay(cost);
}

TEST(TimedScheduler, StepsThatCostNoTimeAreReportedAsALivelockNotAHang) {
  TimedScheduler s(2, 1);
  s.set_livelock_limit(10'000);
  s.cpu(CpuId{0}).start(spin_without_time(s.cpu(CpuId{0})));
  s.cpu(CpuId{1}).start(steps_of(s.cpu(CpuId{1}), nanoseconds(1), 5));
  try {
    s.run(kTimeZero + microseconds(1));
    FAIL() << "run() returned";
  } catch (const DeadlockError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("livelock"), std::string::npos) << what;
    EXPECT_NE(what.find("cpu0"), std::string::npos) << what;  // the dump of every CPU
  }
}

TEST(TimedScheduler, ManyEventsAtOneInstantBelowTheLimitRun) {
  TimedScheduler s(1, 1);
  s.set_livelock_limit(10'000);
  s.cpu(CpuId{0}).start(steps_of(s.cpu(CpuId{0}), Duration{0}, 9'000));
  EXPECT_NO_THROW(s.run(kTimeZero + microseconds(1)));
}

TEST(TimedScheduler, OnePicosecondStepsAdvanceTime) {
  TimedScheduler s(1, 1);
  s.set_livelock_limit(10);
  s.cpu(CpuId{0}).start(steps_of(s.cpu(CpuId{0}), Duration{1}, 100'000));
  const RunResult r = s.run(kTimeZero + microseconds(1));
  EXPECT_EQ(r.end, kTimeZero + Duration{100'000});
}

using Log = std::vector<std::pair<std::int64_t, std::uint32_t>>;  // (ps, cpu) of each step's end

Task<void> logged_steps(Cpu& cpu, Duration cost, int n, Log& log) {
  for (int i = 0; i < n; ++i) {
    co_await cpu.delay(cost);
    log.emplace_back((cpu.now() - kTimeZero).count(), cpu.id().get());
  }
}

// A CPU's next step that comes before every pending event runs without passing through the queue; steps must still
// end in time order, every one counted, whichever way each went.
TEST(TimedScheduler, StepsEndInTimeOrderWhetherOrNotTheyPassThroughTheQueue) {
  TimedScheduler s(2, 1);
  Log log;
  s.cpu(CpuId{0}).start(logged_steps(s.cpu(CpuId{0}), nanoseconds(1), 20, log));
  s.cpu(CpuId{1}).start(logged_steps(s.cpu(CpuId{1}), Duration{2'500}, 6, log));
  const RunResult r = s.run(kTimeZero + microseconds(1));
  ASSERT_EQ(log.size(), 26u);
  for (std::size_t i = 1; i < log.size(); ++i) EXPECT_LE(log[i - 1].first, log[i].first) << "step " << i;
  EXPECT_EQ(log[1], std::make_pair(std::int64_t{2'000}, 0u));
  EXPECT_EQ(log[2], std::make_pair(std::int64_t{2'500}, 1u));
  EXPECT_EQ(r.events, 28u);  // 26 steps and the two tasks' starts
  EXPECT_EQ(r.end, kTimeZero + nanoseconds(20));
}

// Stopping at a time limit between a CPU's step and the next changes nothing: the step waits in the queue.
TEST(TimedScheduler, AStepPastTheTimeLimitWaitsForTheNextRun) {
  Log whole;
  Log split;
  for (Log* log : {&whole, &split}) {
    TimedScheduler s(2, 7);
    s.cpu(CpuId{0}).start(logged_steps(s.cpu(CpuId{0}), Duration{700}, 30, *log));
    s.cpu(CpuId{1}).start(logged_steps(s.cpu(CpuId{1}), Duration{1'100}, 20, *log));
    if (log == &split) {
      EXPECT_EQ(s.run(kTimeZero + Duration{5'000}).reason, StopReason::kTimeLimit);
      EXPECT_EQ(log->size(), 11u);  // 7 of cpu0's (to 4.9 ns) and 4 of cpu1's (to 4.4 ns)
    }
    s.run(kTimeZero + microseconds(1));
  }
  EXPECT_EQ(whole, split);
}

// Two CPUs whose steps end at the same instants: the seed orders each pair, and different seeds order them
// differently.
TEST(TimedScheduler, StepsEndingTogetherAreOrderedByTheSeed) {
  std::vector<Log> logs;
  for (std::uint64_t seed = 1; seed <= 4; ++seed) {
    TimedScheduler s(2, seed);
    Log log;
    s.cpu(CpuId{0}).start(logged_steps(s.cpu(CpuId{0}), nanoseconds(1), 16, log));
    s.cpu(CpuId{1}).start(logged_steps(s.cpu(CpuId{1}), nanoseconds(1), 16, log));
    EXPECT_GE(s.run(kTimeZero + microseconds(1)).seeded_choices, 16u);
    logs.push_back(log);
  }
  EXPECT_TRUE(logs[0] != logs[1] || logs[0] != logs[2] || logs[0] != logs[3]);
}

}  // namespace
}  // namespace tlbsim::sim
