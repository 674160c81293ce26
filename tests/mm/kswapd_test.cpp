// kswapd (mm/kswapd.cpp): v4.14's watermarks, when an allocation wakes kswapd and onto which CPU, the CFS slice
// it runs for on a busy CPU, and when it goes back to sleep.
#include <gtest/gtest.h>

#include "kernel/scenario.h"
#include "mm/vmscan.h"

namespace tlbsim::kernel {
namespace {

using testing::Scenario;

TEST(Kswapd, WatermarksFollowSetupPerZoneWmarks) {
  Scenario s;
  // tmp = max(min / 4, managed * watermark_scale_factor / 10000): a quarter of min for a small node...
  const PgData small(s.sys.coherence(), 16384, 256, SpinlockKind::kTestAndSet);
  EXPECT_EQ(small.watermark_low, 256u + 64u);
  EXPECT_EQ(small.watermark_high, 256u + 128u);
  // ...and 0.1% of the node once that is larger.
  const PgData big(s.sys.coherence(), 1'000'000, 100, SpinlockKind::kTestAndSet);
  EXPECT_EQ(big.watermark_low, 100u + 1000u);
  EXPECT_EQ(big.watermark_high, 100u + 2000u);
}

TEST(Kswapd, SliceIsHalfOfTheScaledSchedLatency) {
  Scenario eight_cpus;  // small-2s2c: 8 CPUs, factor 1 + ilog2(8) = 4: 24 ms of latency, 12 ms each
  EXPECT_EQ(Vmscan(eight_cpus.k, {64, 64}, {8, 8}).kswapd_slice(), sim::milliseconds(12));
  Scenario power9(KernelConfig{}, "power9-2s16c-smt4");  // 128 CPUs: the factor stops at 8 CPUs
  EXPECT_EQ(Vmscan(power9.k, {64, 64}, {8, 8}).kswapd_slice(), sim::milliseconds(12));
  hw::Machine m = hw::load_machine("small-2s2c");
  m.topology.sockets = 1;
  m.topology.threads_per_core = 1;
  m.topology.sockets_per_group = 1;
  Scenario two_cpus(m, KernelConfig{});
  ASSERT_EQ(two_cpus.k.ncpus(), 2u);
  EXPECT_EQ(Vmscan(two_cpus.k, {64}, {8}).kswapd_slice(), sim::milliseconds(6));  // factor 2: 12 ms, 6 each
}

TEST(Kswapd, AnAllocationAtTheLowWatermarkWakesKswapdOntoTheWakersCpuOnly) {
  Scenario s;
  Vmscan vm(s.k, {1000, 1000}, {100, 100});  // low 125, high 150
  PgData& node0 = vm.node(0);
  ASSERT_EQ(vm.node_of(CpuId{1}), 0u);
  node0.nr_used = 1000 - 125;
  vm.wakeup_kswapd(s.cpu(1), node0);
  EXPECT_TRUE(node0.kswapd.runnable);
  EXPECT_EQ(node0.kswapd.cpu, CpuId{1});
  EXPECT_TRUE(vm.kswapd_due(s.cpu(1))) << "it preempts the waker at its next preemption point";
  EXPECT_FALSE(vm.kswapd_due(s.cpu(0))) << "and no other CPU of the node";
  // Awake already: a second waker does not move it.
  vm.wakeup_kswapd(s.cpu(0), node0);
  EXPECT_EQ(node0.kswapd.cpu, CpuId{1});
  EXPECT_FALSE(vm.node(1).kswapd.runnable) << "each node has its own kswapd";
}

TEST(Kswapd, ABalancedOrHopelessNodeDoesNotWakeIt) {
  Scenario s;
  Vmscan vm(s.k, {1000, 1000}, {100, 100});
  PgData& node0 = vm.node(0);
  node0.nr_used = 1000 - 151;  // free above high: pgdat_balanced
  vm.wakeup_kswapd(s.cpu(0), node0);
  EXPECT_FALSE(node0.kswapd.runnable);
  node0.nr_used = 1000 - 100;
  node0.kswapd.kswapd_failures = 16;  // MAX_RECLAIM_RETRIES balance_pgdat runs reclaimed nothing
  vm.wakeup_kswapd(s.cpu(0), node0);
  EXPECT_FALSE(node0.kswapd.runnable);
  node0.kswapd.kswapd_failures = 15;
  vm.wakeup_kswapd(s.cpu(0), node0);
  EXPECT_TRUE(node0.kswapd.runnable);
}

TEST(Kswapd, OnABalancedNodeItGoesBackToSleepAtOnce) {
  Scenario s;
  Vmscan vm(s.k, {1000, 1000}, {100, 100});
  PgData& node0 = vm.node(0);
  node0.nr_used = 1000 - 125;
  vm.wakeup_kswapd(s.cpu(0), node0);
  node0.nr_used = 0;  // balanced before it ran (another reclaimer freed enough)
  s.run_on(0, vm.kswapd_run(s.cpu(0)));
  EXPECT_FALSE(node0.kswapd.runnable);
  EXPECT_EQ(vm.stats.pageoutrun, 1u);
  EXPECT_EQ(vm.stats.pgscan_kswapd, 0u);
}

TEST(Kswapd, WithNothingToIsolateItYieldsItsCpuForASliceAndCountsAFailure) {
  Scenario s;
  Vmscan vm(s.k, {1000, 1000}, {100, 100});
  PgData& node0 = vm.node(0);
  node0.nr_used = 1000 - 100;  // below low, and the LRU is empty
  vm.wakeup_kswapd(s.cpu(0), node0);
  s.run_on(0, vm.kswapd_run(s.cpu(0)));
  EXPECT_TRUE(node0.kswapd.runnable);
  EXPECT_EQ(node0.kswapd.kswapd_failures, 1u);
  EXPECT_FALSE(vm.kswapd_due(s.cpu(0)));
  EXPECT_EQ(node0.kswapd.turn, s.cpu(0).cpu.now() + vm.kswapd_slice());
}

}  // namespace
}  // namespace tlbsim::kernel
