#include "sim/task.h"

#include <gtest/gtest.h>

#include <stdexcept>

#include "sim/timed_scheduler.h"

namespace tlbsim::sim {
namespace {

Task<int> leaf(Cpu& cpu, int x) {
  co_await cpu.delay(nanoseconds(1));
  co_return x * 2;
}

Task<int> middle(Cpu& cpu, int x) {
  int a = co_await leaf(cpu, x);
  int b = co_await leaf(cpu, x + 1);
  co_return a + b;
}

Task<void> root(Cpu& cpu, int& out) { out = co_await middle(cpu, 10); }

TEST(Task, NestedTasksReturnValuesAndTakeTime) {
  const std::size_t frames_before = FramePool::live_frames();
  {
    TimedScheduler s(1, 1);
    int out = 0;
    s.cpu(CpuId{0}).start(root(s.cpu(CpuId{0}), out));
    const RunResult r = s.run(kTimeZero + milliseconds(1));
    EXPECT_EQ(out, 42);
    EXPECT_EQ(r.reason, StopReason::kAllFinished);
    EXPECT_EQ(r.end, kTimeZero + nanoseconds(2));
  }
  EXPECT_EQ(FramePool::live_frames(), frames_before);
}

Task<int> thrower(Cpu& cpu) {
  co_await cpu.delay(nanoseconds(1));
  throw std::runtime_error("BUG: modeled kernel bug");
}

Task<void> catcher(Cpu& cpu, std::string& caught) {
  try {
    co_await thrower(cpu);
  } catch (const std::runtime_error& e) {
    caught = e.what();
  }
}

TEST(Task, ExceptionsPropagateToTheAwaiter) {
  TimedScheduler s(1, 1);
  std::string caught;
  s.cpu(CpuId{0}).start(catcher(s.cpu(CpuId{0}), caught));
  s.run(kTimeZero + milliseconds(1));
  EXPECT_EQ(caught, "BUG: modeled kernel bug");
}

Task<void> uncaught(Cpu& cpu) { co_await thrower(cpu); }

TEST(Task, AnUncaughtExceptionStopsTheRun) {
  TimedScheduler s(1, 1);
  s.cpu(CpuId{0}).start(uncaught(s.cpu(CpuId{0})));
  EXPECT_THROW(s.run(kTimeZero + milliseconds(1)), std::runtime_error);
  EXPECT_EQ(s.cpu(CpuId{0}).state(), CpuState::kFailed);
}

Task<void> forever(Cpu& cpu) {
  for (;;) co_await middle(cpu, 1);
}

TEST(Task, FramesOfUnfinishedTasksAreReleasedWithTheScheduler) {
  const std::size_t frames_before = FramePool::live_frames();
  {
    TimedScheduler s(2, 1);
    s.cpu(CpuId{0}).start(forever(s.cpu(CpuId{0})));
    s.cpu(CpuId{1}).start(forever(s.cpu(CpuId{1})));
    EXPECT_EQ(s.run(kTimeZero + microseconds(1)).reason, StopReason::kTimeLimit);
    EXPECT_GT(FramePool::live_frames(), frames_before);
  }
  EXPECT_EQ(FramePool::live_frames(), frames_before);
}

}  // namespace
}  // namespace tlbsim::sim
