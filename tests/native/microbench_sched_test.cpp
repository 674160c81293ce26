// The scheduler and pipe microbenchmarks calibrate derives [kernel] context_switch, try_to_wake_up, pipe_write and
// pipe_read from: each runs on one CPU and gives an ordered, positive spread.
#include "native/microbench_sched.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <thread>
#include <vector>

#include "native/host.h"

namespace tlbsim::native {
namespace {

std::uint32_t first_cpu() {
  const HostTopology host = read_host_topology();
  return host.cpus.empty() ? 0 : host.cpus.front().cpu;
}

// A write to an empty pipe and the read that empties it are each a system call: positive, ordered.
TEST(MicrobenchSched, PipeCallsAreTimedApart) {
  if (!native_supported()) GTEST_SKIP() << "microbenchmarks need Linux";
  const PipeCalls c = pipe_calls_ns(first_cpu(), {3, 0.05});
  EXPECT_GT(c.write.median, 0.0);
  EXPECT_GT(c.read.median, 0.0);
  EXPECT_GE(c.write.p90, c.write.p10);
  EXPECT_GE(c.read.p90, c.read.p10);
}

// Two threads on one CPU yielding in turn switch on nearly every yield, and a yield that switches costs more than
// the pipe's bare system calls would let one think is free.
TEST(MicrobenchSched, YieldsOfTwoThreadsOnOneCpuSwitch) {
  if (!native_supported()) GTEST_SKIP() << "microbenchmarks need Linux";
  const YieldSwitch y = yield_switch_ns(first_cpu(), {3, 0.05});
  EXPECT_GT(y.per_yield.median, 0.0);
  EXPECT_GT(y.switched, 0.5);
  EXPECT_LE(y.switched, 1.0);
}

// context_switch1's loop on one CPU: a half round trip holds a write, a read and a switch, so it is slower than
// the write and the read alone, for threads and for processes.
TEST(MicrobenchSched, PingPongOnOneCpuCostsMoreThanItsCalls) {
  if (!native_supported()) GTEST_SKIP() << "microbenchmarks need Linux";
  const std::uint32_t cpu = first_cpu();
  // Load from other tests only adds time to a sample: the lowest decile of five repetitions on each side is the
  // figure least disturbed by it (a median of three was not, on a loaded two-core CI machine).
  const PipeCalls c = pipe_calls_ns(cpu, {5, 0.05});
  for (bool processes : {false, true}) {
    const Spread half = pipe_pingpong_ns(cpu, processes, {5, 0.05});
    EXPECT_GT(half.p10, c.write.p10 + c.read.p10) << (processes ? "processes" : "threads");
  }
}

// ipi.send's probe: every signal sent to a thread running on another CPU is handled (with the handler) or dequeued
// (blocked) before the next, so both variants give a positive, ordered spread; and the handler's variant does the
// blocked one's work and more (signal_wake_up, kick_process and, with the task running elsewhere, the IPI).
TEST(MicrobenchSched, KickingARunningThreadCostsMoreThanQueueingABlockedSignal) {
  if (!native_supported()) GTEST_SKIP() << "microbenchmarks need Linux";
  // Other tests pin this thread to one CPU, and the host's CPUs are read within its affinity: a fresh thread first
  // allows itself every CPU.
  std::optional<Spread> quiet, kick;
  std::size_t cpus = 0;
  std::thread([&] {
    std::vector<std::uint32_t> all(std::max(1u, std::thread::hardware_concurrency()));
    for (std::uint32_t i = 0; i < all.size(); ++i) all[i] = i;
    (void)pin_this_thread(all);
    const HostTopology host = read_host_topology();
    cpus = host.cpus.size();
    if (cpus < 2) return;
    quiet = kick_ns(host.cpus[0].cpu, host.cpus[1].cpu, true, {5, 0.2});
    kick = kick_ns(host.cpus[0].cpu, host.cpus[1].cpu, false, {5, 0.2});
  }).join();
  if (cpus < 2) GTEST_SKIP() << "needs two CPUs";
  ASSERT_TRUE(quiet.has_value());
  ASSERT_TRUE(kick.has_value());
  EXPECT_GT(quiet->median, 0.0);
  EXPECT_GE(quiet->p90, quiet->p10);
  EXPECT_GE(kick->p90, kick->p10);
  EXPECT_GT(kick->median, quiet->median);
}

}  // namespace
}  // namespace tlbsim::native
