// Page-cache reclaim (mm/vmscan.cpp) against v4.14 mm/vmscan.c, mm/filemap.c and mm/workingset.c: the locks a
// page's trip through the page cache takes, and the eviction clock each reclaimed page ticks.
#include "mm/vmscan.h"

#include <gtest/gtest.h>

#include <string>

#include "kernel/scenario.h"

namespace tlbsim::kernel {
namespace {

using testing::Scenario;

std::uint64_t rmws_on(Scenario& s, const std::string& name) {
  std::uint64_t n = 0;
  for (const auto& [line, st] : s.sys.coherence().stats_by_name()) {
    if (line == name) n += st.rmws;
  }
  return n;
}

// One reader's file of `pages` pages, mapped by its own mm and cached on node 0, every page scanned once already
// (its PTE old), so that reclaim frees each page at its first scan.
struct CachedFile {
  CachedFile(Scenario& s, Vmscan& vm, std::uint64_t pages, std::uint32_t node = 0)
      : mm(s.k.new_mm()), file(s.k.new_file(pages * kPageSize)) {
    const std::uint64_t mapped = std::max<std::uint64_t>(pages, 1) * kPageSize;  // mmap maps at least a page
    const std::uint64_t addr = mm.get_unmapped_area(mapped);
    mm.insert_vma(Vma{addr, addr + mapped, false, true, &file, 0, nullptr});
    vm.add_file(file);
    for (std::uint64_t i = 0; i < pages; ++i) vm.prefill(file, i, node, true);
  }
  MmStruct& mm;
  File& file;
};

sim::Task<void> reclaim(Vmscan& vm, PerCpu& self, std::uint64_t& reclaimed) {
  reclaimed = co_await vm.try_to_free_pages(self);
}

TEST(Vmscan, ShrinkInactiveListRetakesLruLockEvenWhenItKeptNoPage) {
  // v4.14 shrink_inactive_list takes spin_lock_irq(&pgdat->lru_lock) after shrink_page_list in every case (the
  // PGSTEAL counters and reclaim_stat are updated under it), not only to put kept pages back.
  Scenario s;
  Vmscan vm(s.k, {1000, 1000}, {100, 100});
  CachedFile f(s, vm, SWAP_CLUSTER_MAX);
  const std::uint64_t lock_rmws_before = s.sys.coherence().stats(vm.node(0).lru_lock.line()).rmws;
  std::uint64_t reclaimed = 0;
  s.run_on(0, reclaim(vm, s.cpu(0), reclaimed));
  ASSERT_EQ(reclaimed, SWAP_CLUSTER_MAX) << "every page freed";
  EXPECT_TRUE(vm.node(0).inactive_file.empty());
  // The priority loop over a list of 32: 32 >> 5 = 1 page, then 31 >> 4 = 1, 30 >> 3 = 3, 27 >> 2 = 6,
  // 21 >> 1 = 10 and 11 at priority 0: six batches, each isolating under the lock and retaking it after
  // shrink_page_list; an uncontended acquisition is one RMW.
  EXPECT_EQ(s.sys.coherence().stats(vm.node(0).lru_lock.line()).rmws - lock_rmws_before, 2u * 6);
  EXPECT_EQ(vm.stats.pgscan_direct, SWAP_CLUSTER_MAX);
}

TEST(Vmscan, DirectReclaimShrinksEveryNodeOfTheZonelist) {
  // do_try_to_free_pages -> shrink_zones: shrink_node on this CPU's node, then on the other, at each priority.
  Scenario s;
  Vmscan vm(s.k, {1000, 1000}, {100, 100});
  CachedFile near(s, vm, SWAP_CLUSTER_MAX, 0), far(s, vm, SWAP_CLUSTER_MAX, 1);
  std::uint64_t reclaimed = 0;
  s.run_on(0, reclaim(vm, s.cpu(0), reclaimed));
  // Each node's list of 32 gives 1, 1, 3, 6 and 10 pages at priorities 5 to 1: 2, 4, 10, 22 and 42 reclaimed in
  // all, and the loop ends after priority 1, the first to reach SWAP_CLUSTER_MAX.
  EXPECT_EQ(reclaimed, 42u);
  EXPECT_EQ(vm.node(0).inactive_file.size(), 11u);
  EXPECT_EQ(vm.node(1).inactive_file.size(), 11u);
  EXPECT_EQ(s.sys.coherence().stats(vm.node(1).lru_lock.line()).rmws, 2u * 5) << "five batches on node 1";
  EXPECT_EQ(vm.stats.allocstall, 1u);
}

TEST(Vmscan, DirectReclaimAtDefPriorityScansItsWholeShareDespiteReclaimingEnough) {
  // v4.14 shrink_node_memcg: at DEF_PRIORITY global direct reclaim sets scan_adjusted and does not stop at
  // nr_to_reclaim ("multiple streaming readers/writers ... best to do a batch of work at once"): a list of
  // 40 << 12 pages gives 40 pages to scan, in batches of 32 and 8, though the first batch already reclaimed 32.
  Scenario s;
  const std::uint64_t pages = std::uint64_t{40} << DEF_PRIORITY;
  Vmscan vm(s.k, {2 * pages, 1000}, {100, 100});
  CachedFile f(s, vm, pages, 0);
  std::uint64_t reclaimed = 0;
  s.run_on(0, reclaim(vm, s.cpu(0), reclaimed));
  EXPECT_EQ(reclaimed, 40u);
  EXPECT_EQ(vm.stats.pgscan_direct, 40u);
  EXPECT_EQ(vm.node(0).inactive_file.size(), pages - 40);
}

TEST(Vmscan, DirectReclaimBelowDefPriorityStopsANodeOnceItReclaimedEnough) {
  // Below DEF_PRIORITY the node's call stops at nr_to_reclaim (the anon lists are empty, so no proportional scan
  // follows). 50 << 11 pages: priority 12 scans 25 (all of its share, reclaiming 25); priority 11's share is
  // 102,375 >> 11 = 49, and the call stops after its first batch of 32. do_try_to_free_pages then has 57.
  Scenario s;
  const std::uint64_t pages = std::uint64_t{50} << 11;
  Vmscan vm(s.k, {2 * pages, 1000}, {100, 100});
  CachedFile f(s, vm, pages, 0);
  std::uint64_t reclaimed = 0;
  s.run_on(0, reclaim(vm, s.cpu(0), reclaimed));
  EXPECT_EQ(vm.stats.pgscan_direct, 25u + 32);
  EXPECT_EQ(reclaimed, 57u);
}

TEST(Vmscan, RemoveMappingTakesTheTreeLockAndTicksTheNodesInactiveAgeOncePerEvictedPage) {
  Scenario s;
  Vmscan vm(s.k, {1000, 1000}, {100, 100});
  CachedFile f(s, vm, SWAP_CLUSTER_MAX);
  std::uint64_t reclaimed = 0;
  s.run_on(0, reclaim(vm, s.cpu(0), reclaimed));
  ASSERT_EQ(reclaimed, SWAP_CLUSTER_MAX);
  EXPECT_TRUE(f.file.pages.empty()) << "__delete_from_page_cache of every page";
  EXPECT_EQ(vm.node(0).inactive_age.value, static_cast<long>(SWAP_CLUSTER_MAX)) << "workingset_eviction";
  EXPECT_EQ(vm.node(1).inactive_age.value, 0) << "the clock is the evicted page's node's";
  EXPECT_EQ(rmws_on(s, "mapping.tree_lock"), SWAP_CLUSTER_MAX) << "one uncontended acquisition per page";
  EXPECT_EQ(rmws_on(s, "lruvec.inactive_age"), SWAP_CLUSTER_MAX);
}

sim::Task<void> read_hole(Vmscan& vm, PerCpu& self, File& file, std::uint64_t index) {
  co_await vm.page_cache_read(self, file, index);
}

TEST(Vmscan, PageCacheReadInsertsThePageUnderTheTreeLock) {
  Scenario s;
  Vmscan vm(s.k, {1000, 1000}, {100, 100});
  CachedFile f(s, vm, 0);
  s.run_on(0, read_hole(vm, s.cpu(0), f.file, 7));
  EXPECT_TRUE(f.file.pages.contains(7));
  EXPECT_EQ(rmws_on(s, "mapping.tree_lock"), 1u) << "__add_to_page_cache_locked";
  EXPECT_EQ(vm.node(0).inactive_age.value, 0) << "an insertion is no eviction";
}

// get_page_from_freelist (v4.14) walks the zonelist with node_reclaim_mode 0: a node at its low watermark is passed
// over for the next, and nothing is reclaimed or woken while some node is above it.
TEST(Vmscan, AnAllocationPassesOverANodeAtItsLowWatermark) {
  Scenario s;
  Vmscan vm(s.k, {1000, 1000}, {100, 100});  // low 125
  ASSERT_EQ(vm.node_of(CpuId{0}), 0u);
  EXPECT_EQ(vm.zonelist(0), (std::vector<std::uint32_t>{0, 1}));
  EXPECT_EQ(vm.zonelist(1), (std::vector<std::uint32_t>{1, 0}));
  CachedFile f(s, vm, 0);
  vm.node(0).nr_used = 1000 - 125;
  s.run_on(0, read_hole(vm, s.cpu(0), f.file, 3));
  ASSERT_TRUE(f.file.pages.contains(3));
  EXPECT_EQ(vm.page(f.file.pages.at(3))->node, 1u) << "the page comes from the other node";
  EXPECT_EQ(vm.node(1).nr_used, 1u);
  EXPECT_FALSE(vm.node(0).kswapd.runnable);
  EXPECT_FALSE(vm.node(1).kswapd.runnable);
  EXPECT_EQ(vm.stats.allocstall, 0u);
}

// Nodes of 1000 pages (min 100, low 125) with `free0` and `free1` pages free: the node of the page that CPU 0's
// page-cache read gets.
std::uint32_t node_read_from(Scenario& s, Vmscan& vm, std::uint64_t free0, std::uint64_t free1) {
  CachedFile f(s, vm, 0);
  vm.node(0).nr_used = 1000 - free0;
  vm.node(1).nr_used = 1000 - free1;
  s.run_on(0, read_hole(vm, s.cpu(0), f.file, 3));
  return vm.page(f.file.pages.at(3))->node;
}

TEST(Vmscan, WithEveryNodeAtItsLowWatermarkTheSlowPathWakesEachKswapdOnItsOwnNode) {
  Scenario s;
  Vmscan vm(s.k, {1000, 1000}, {100, 100});
  EXPECT_EQ(node_read_from(s, vm, 125, 125), 0u) << "the retry at the min watermark takes this node";
  ASSERT_TRUE(vm.node(0).kswapd.runnable);
  ASSERT_TRUE(vm.node(1).kswapd.runnable);
  EXPECT_EQ(vm.node(0).kswapd.cpu, CpuId{0}) << "wake_affine: the waker's CPU";
  EXPECT_EQ(vm.node_of(vm.node(1).kswapd.cpu), 1u) << "kswapd1 is bound to node 1's CPUs";
  EXPECT_EQ(vm.stats.allocstall, 0u);
}

TEST(Vmscan, WithEveryNodeAtItsMinWatermarkTheAllocationReclaimsDirectly) {
  Scenario s;
  Vmscan vm(s.k, {1000, 1000}, {100, 100});
  EXPECT_EQ(node_read_from(s, vm, 100, 100), 0u) << "reclaim fell short (empty LRU): this CPU's node";
  EXPECT_EQ(vm.stats.allocstall, 1u);
}

sim::Task<void> read_holes(Vmscan& vm, PerCpu& self, File& file, std::uint64_t from, std::uint64_t to) {
  for (std::uint64_t i = from; i < to; ++i) co_await vm.page_cache_read(self, file, i);
}

TEST(Vmscan, APagevecOfTwoNodesPagesTakesEachNodesLruLockForItsRun) {
  // pagevec_lru_move_fn switches to the next page's pgdat->lru_lock only where the node changes.
  Scenario s;
  Vmscan vm(s.k, {1000, 1000}, {100, 100});
  CachedFile f(s, vm, 0);
  vm.node(0).nr_used = 1000 - 125;
  s.run_on(0, read_holes(vm, s.cpu(0), f.file, 0, 7));  // node 0 passed over: node 1's pages
  vm.node(0).nr_used = 0;
  const std::uint64_t rmws0 = s.sys.coherence().stats(vm.node(0).lru_lock.line()).rmws;
  const std::uint64_t rmws1 = s.sys.coherence().stats(vm.node(1).lru_lock.line()).rmws;
  s.run_on(0, read_holes(vm, s.cpu(0), f.file, 7, PAGEVEC_SIZE));  // the 14th page fills the pagevec
  EXPECT_EQ(vm.node(1).inactive_file.size(), 7u);
  EXPECT_EQ(vm.node(0).inactive_file.size(), PAGEVEC_SIZE - 7);
  EXPECT_EQ(s.sys.coherence().stats(vm.node(1).lru_lock.line()).rmws - rmws1, 1u);
  EXPECT_EQ(s.sys.coherence().stats(vm.node(0).lru_lock.line()).rmws - rmws0, 1u);
}

}  // namespace
}  // namespace tlbsim::kernel
