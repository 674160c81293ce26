#include "sim/timed_scheduler.h"

#include <gtest/gtest.h>

#include <string>

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

}  // namespace
}  // namespace tlbsim::sim
