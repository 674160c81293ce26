#include "hw/coherence.h"

#include <gtest/gtest.h>

#include "hw/test_machine.h"

namespace tlbsim::hw {
namespace {

using sim::kTimeZero;
using sim::nanoseconds;

class CoherenceTest : public ::testing::Test {
 protected:
  Topology topo{testing::small_topology()};
  CoherenceModel model{topo, testing::round_latencies()};
  LineId line = model.add_line("mm.tlb_gen");
};

TEST_F(CoherenceTest, FirstLoadComesFromMemoryThenHits) {
  EXPECT_EQ(model.access(CpuId{0}, line, Access::kLoad, kTimeZero), kTimeZero + nanoseconds(90));
  const auto t = kTimeZero + nanoseconds(100);
  EXPECT_EQ(model.access(CpuId{0}, line, Access::kLoad, t), t + nanoseconds(1));
  EXPECT_EQ(model.stats(line).transfers, 1u);
  EXPECT_EQ(model.stats(line).hits, 1u);
}

TEST_F(CoherenceTest, TransferCostFollowsTopologyDistance) {
  auto t = kTimeZero + nanoseconds(1000);
  model.access(CpuId{0}, line, Access::kRmw, kTimeZero);                              // cpu0 owns it
  EXPECT_EQ(model.access(CpuId{4}, line, Access::kRmw, t), t + nanoseconds(10 + 5));  // SMT sibling
  t += nanoseconds(1000);
  EXPECT_EQ(model.access(CpuId{5}, line, Access::kRmw, t), t + nanoseconds(40 + 5));  // same LLC
  t += nanoseconds(1000);
  EXPECT_EQ(model.access(CpuId{2}, line, Access::kRmw, t), t + nanoseconds(120 + 5));  // other socket
  EXPECT_EQ(model.stats(line).remote_transfers, 1u);
}

TEST_F(CoherenceTest, SmtSiblingsShareTheCoresL1dForLoadsButNotForOwnership) {
  auto t = kTimeZero + nanoseconds(1000);
  model.access(CpuId{0}, line, Access::kRmw, kTimeZero);  // cpu0 owns it (M)
  // cpu4, cpu0's sibling, loads from the core's L1D: a hit, and cpu0 keeps M.
  EXPECT_EQ(model.access(CpuId{4}, line, Access::kLoad, t), t + nanoseconds(1));
  EXPECT_EQ(model.owner(line), 0);
  EXPECT_EQ(model.stats(line).transfers, 1u);
  // cpu1 (other core, same LLC) pulls a shared copy; then cpu5, cpu1's sibling, hits too and becomes a sharer.
  t += nanoseconds(1000);
  EXPECT_EQ(model.access(CpuId{1}, line, Access::kLoad, t), t + nanoseconds(40));
  t += nanoseconds(1000);
  EXPECT_EQ(model.access(CpuId{5}, line, Access::kLoad, t), t + nanoseconds(1));
  EXPECT_TRUE(model.holds(CpuId{5}, line));
  EXPECT_EQ(model.stats(line).transfers, 2u);
  // Ownership still moves between siblings at the SMT transfer cost (the CAS ping-pong figure).
  t += nanoseconds(1000);
  model.access(CpuId{0}, line, Access::kRmw, t);
  t += nanoseconds(1000);
  EXPECT_EQ(model.access(CpuId{4}, line, Access::kRmw, t), t + nanoseconds(10 + 5));
}

TEST_F(CoherenceTest, ASiblingsLoadWaitsForTheTransferBringingTheLineToItsCore) {
  model.access(CpuId{2}, line, Access::kRmw, kTimeZero);  // the other socket owns it
  const auto t = kTimeZero + nanoseconds(1000);
  const auto arrives = model.access(CpuId{0}, line, Access::kRmw, t);  // cpu0 takes it: 120 + 5 ns
  EXPECT_EQ(model.access(CpuId{4}, line, Access::kLoad, t + nanoseconds(1)), arrives + nanoseconds(1));
}

TEST_F(CoherenceTest, WriteInvalidatesSharersAndPaysTheFarthest) {
  auto t = kTimeZero + nanoseconds(1000);
  model.access(CpuId{0}, line, Access::kLoad, kTimeZero);
  model.access(CpuId{1}, line, Access::kLoad, t);
  t += nanoseconds(1000);
  model.access(CpuId{2}, line, Access::kLoad, t);
  EXPECT_EQ(model.sharer_count(line), 3u);
  t += nanoseconds(1000);
  // cpu1 writes: invalidating cpu0 (same LLC) and cpu2 (remote) waits for the remote acknowledgement.
  EXPECT_EQ(model.access(CpuId{1}, line, Access::kStore, t), t + nanoseconds(120 + 1));
  EXPECT_EQ(model.owner(line), 1);
  EXPECT_FALSE(model.holds(CpuId{0}, line));
  EXPECT_FALSE(model.holds(CpuId{2}, line));
  // The old sharer now misses.
  t += nanoseconds(1000);
  EXPECT_EQ(model.access(CpuId{0}, line, Access::kLoad, t), t + nanoseconds(40));
}

TEST_F(CoherenceTest, TransfersOfOneLineAreSerialized) {
  model.access(CpuId{0}, line, Access::kRmw, kTimeZero);
  const auto t = kTimeZero + nanoseconds(1000);
  const auto a = model.access(CpuId{1}, line, Access::kRmw, t);
  const auto b = model.access(CpuId{4}, line, Access::kRmw, t);  // same request time: queues behind cpu1
  EXPECT_EQ(a, t + nanoseconds(45));
  EXPECT_EQ(b, a + nanoseconds(45));
  EXPECT_EQ(model.stats(line).wait, nanoseconds(45));
}

TEST_F(CoherenceTest, UpgradeOfTheOnlySharedCopyCostsAnLlcRequest) {
  model.access(CpuId{3}, line, Access::kLoad, kTimeZero);
  const auto t = kTimeZero + nanoseconds(1000);
  EXPECT_EQ(model.access(CpuId{3}, line, Access::kRmw, t), t + nanoseconds(40 + 5));
}

TEST_F(CoherenceTest, StatisticsAreGroupedByName) {
  const LineId other = model.add_line("mm_cpumask");
  const LineId third = model.add_line("mm.tlb_gen");
  model.access(CpuId{0}, line, Access::kLoad, kTimeZero);
  model.access(CpuId{0}, other, Access::kLoad, kTimeZero);
  model.access(CpuId{0}, third, Access::kStore, kTimeZero);
  const auto by_name = model.stats_by_name();
  ASSERT_EQ(by_name.size(), 2u);
  EXPECT_EQ(by_name[0].first, "mm.tlb_gen");
  EXPECT_EQ(by_name[0].second.loads + by_name[0].second.stores, 2u);
  EXPECT_EQ(by_name[1].first, "mm_cpumask");
}

}  // namespace
}  // namespace tlbsim::hw
