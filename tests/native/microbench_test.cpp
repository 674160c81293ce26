// Host microbenchmarks that calibrate derives machine costs from: each gives a plausible spread on this host.
#include "native/microbench.h"

#include <gtest/gtest.h>

#include "native/host.h"

namespace tlbsim::native {
namespace {

// The waker's FUTEX_WAKE finds its sleeper asleep, on the waker's own CPU and on another one, and takes longer
// than a null system call would need to be noticed (a positive time, ordered spread).
TEST(Microbench, AFutexWakeFindsItsSleeperAsleepOnEitherCpu) {
  if (!native_supported()) GTEST_SKIP() << "microbenchmarks need Linux";
  const HostTopology host = read_host_topology();
  ASSERT_FALSE(host.cpus.empty());
  const std::uint32_t a = host.cpus.front().cpu;
  const BenchScale s{3, 0.1};
  const auto local = wake_call_ns(a, a, s);
  ASSERT_TRUE(local.has_value());
  EXPECT_GT(local->median, 0.0);
  EXPECT_GE(local->p90, local->p10);
  if (host.cpus.size() < 2) GTEST_SKIP() << "one CPU: no remote wake-up";
  const auto remote = wake_call_ns(a, host.cpus.back().cpu, s);
  ASSERT_TRUE(remote.has_value());
  EXPECT_GT(remote->median, 0.0);
}

}  // namespace
}  // namespace tlbsim::native
