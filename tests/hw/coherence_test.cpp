#include "hw/coherence.h"

#include <gtest/gtest.h>

#include <vector>

#include "hw/test_machine.h"
#include "sim/rng.h"

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

// The nearest sharer (a load miss's source) and the farthest (a store's slowest invalidation) are found by domain
// masks; they must be the distances topo.distance gives, on machines with SMT, LLC domains and socket groups.
TEST(CoherenceModelSharers, LoadAndStoreCostsFollowTheNearestAndFarthestSharerByDistance) {
  TopologyParams power8;  // 16 sockets of 12 SMT8 cores, core pairs sharing an LLC, drawers of 4 sockets
  power8.sockets = 16;
  power8.cores_per_socket = 12;
  power8.threads_per_core = 8;
  power8.cores_per_llc = 2;
  power8.sockets_per_group = 4;
  power8.numbering = CpuNumbering::kSmtConsecutive;
  TopologyParams milan;  // one socket of 32 SMT2 cores, 8 to a CCX
  milan.cores_per_socket = 32;
  milan.threads_per_core = 2;
  milan.cores_per_llc = 8;
  for (const TopologyParams& params : {testing::small_topology(), power8, milan}) {
    const Topology topo{params};
    const CoherenceLatencies lat = testing::round_latencies();
    CoherenceModel model{topo, lat};
    sim::Rng rng(7);
    const std::uint32_t n = topo.cpu_count();
    auto t = kTimeZero;
    for (int round = 0; round < 200; ++round) {
      const CpuId self{static_cast<std::uint32_t>(rng.below(n))};
      const std::size_t k = 1 + rng.below(round % 2 == 0 ? 3 : 40);
      std::vector<CpuId> sharers;
      for (std::size_t i = 0; i < k; ++i) sharers.push_back(CpuId{static_cast<std::uint32_t>(rng.below(n))});
      // A load by `self`, from the nearest sharer outside its core (a sibling's copy would be a hit).
      const LineId loaded = model.add_line("test.load");
      Distance nearest = Distance::kFar;
      bool any = false;
      for (CpuId c : sharers) {
        if (topo.core_of(c) == topo.core_of(self)) continue;
        t += nanoseconds(10000);
        model.access(c, loaded, Access::kLoad, t);
        nearest = std::min(nearest, topo.distance(self, c));
        any = true;
      }
      if (any) {
        t += nanoseconds(10000);
        EXPECT_EQ(model.access(self, loaded, Access::kLoad, t), t + lat.transfer(nearest))
            << topo.summary() << ": load by cpu" << self.get() << ", round " << round;
      }
      // A store by `self` invalidates every other sharer; the farthest acknowledgement decides.
      const LineId stored = model.add_line("test.store");
      Distance farthest = Distance::kSame;
      for (CpuId c : sharers) {
        t += nanoseconds(10000);
        model.access(c, stored, Access::kLoad, t);
        farthest = std::max(farthest, topo.distance(self, c));
      }
      if (farthest == Distance::kSame) continue;  // only self: an upgrade, not a transfer
      t += nanoseconds(10000);
      EXPECT_EQ(model.access(self, stored, Access::kStore, t), t + lat.transfer(farthest) + lat.l1_hit)
          << topo.summary() << ": store by cpu" << self.get() << ", round " << round;
    }
  }
}

}  // namespace
}  // namespace tlbsim::hw
