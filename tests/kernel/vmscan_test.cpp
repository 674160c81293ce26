// Page-cache reclaim (kernel/vmscan.cpp) against v4.14 mm/vmscan.c, mm/filemap.c and mm/workingset.c: the locks a
// page's trip through the page cache takes, and the eviction clock each reclaimed page ticks.
#include <gtest/gtest.h>

#include <string>

#include "kernel/scenario.h"
#include "kernel/vmscan.h"

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
  CachedFile(Scenario& s, Vmscan& vm, std::uint64_t pages) : mm(s.k.new_mm()), file(s.k.new_file(pages * kPageSize)) {
    const std::uint64_t addr = mm.get_unmapped_area(pages * kPageSize);
    mm.vmas.push_back(Vma{addr, addr + pages * kPageSize, false, true, &file, 0});
    vm.add_mapping(file, mm, addr, 0);
    for (std::uint64_t i = 0; i < pages; ++i) vm.prefill(file, i, 0, true);
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
  ASSERT_EQ(reclaimed, SWAP_CLUSTER_MAX) << "one batch, every page freed";
  EXPECT_TRUE(vm.node(0).inactive_file.empty());
  // An uncontended acquisition is one RMW: isolate_lru_pages' and the one after shrink_page_list.
  EXPECT_EQ(s.sys.coherence().stats(vm.node(0).lru_lock.line()).rmws - lock_rmws_before, 2u);
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

}  // namespace
}  // namespace tlbsim::kernel
