// Scenario tests of mremap (mm/mremap.cpp): which release flushes where, what a move does to the other CPU's TLB,
// and the file's i_mmap that reclaim walks afterwards.
#include "mm/mremap.h"

#include <gtest/gtest.h>

#include <stdexcept>

#include "kernel/options.h"
#include "kernel/scenario.h"
#include "mm/huge_memory.h"
#include "mm/memory.h"
#include "model/profile.h"

namespace tlbsim::kernel {
namespace {

using testing::Scenario;

KernelConfig profile(const char* name, bool fix = false) {
  KernelConfig cfg = load_kernel_profile(name).config;
  if (fix) cfg.set(Option::move_ptes_flush_present, true);
  return cfg;
}

TEST(Mremap, EachEraHasItsReleasesFlushPlacement) {
  const MremapEra v33 = mremap_era(profile("linux-3.3"));
  EXPECT_FALSE(v33.batched_pending || v33.flush_dirty_under_ptl || v33.flush_present_under_ptl);
  EXPECT_TRUE(v33.latency_limit);
  const MremapEra v414 = mremap_era(profile("linux-4.14-ppc"));
  EXPECT_TRUE(v414.batched_pending && v414.flush_dirty_under_ptl && v414.latency_limit);
  EXPECT_FALSE(v414.flush_present_under_ptl) << "v4.14 predates eb66ae030829 (v4.19)";
  for (const char* later : {"linux-5.17", "linux-6.2-ppc", "linux-6.13"}) {
    const MremapEra e = mremap_era(profile(later));
    EXPECT_TRUE(e.batched_pending && e.flush_present_under_ptl) << later;
    EXPECT_FALSE(e.latency_limit) << later;
  }
  KernelConfig fixed = profile("linux-3.3");
  fixed.set(Option::move_ptes_flush_present, true);
  EXPECT_TRUE(mremap_era(fixed).flush_present_under_ptl);
  // 97113eb39fa7 (v5.14): the rmap locks around every PMD and PUD table move.
  EXPECT_FALSE(mremap_era(profile("linux-4.14-ppc")).rmap_locks_for_table_moves);
  EXPECT_TRUE(mremap_era(profile("linux-5.17")).rmap_locks_for_table_moves);
  EXPECT_TRUE(mremap_era(profile("linux-6.2-ppc")).rmap_locks_for_table_moves);
}

sim::Task<void> enter_and_touch(PerCpu& self, MmStruct& mm, std::uint64_t addr, std::uint64_t pages, bool write) {
  self.cpu.local_irq_disable();
  co_await self.k.arch().switch_mm_irqs_off(self, mm);
  co_await self.cpu.local_irq_enable();
  for (std::uint64_t i = 0; i < pages; ++i) co_await user_access(self, mm, addr + i * kPageSize, write);
}
sim::Task<void> map_pages(PerCpu& self, MmStruct& mm, std::uint64_t pages, std::uint64_t& addr) {
  addr = co_await sys_mmap(self, mm, pages * kPageSize, false, nullptr, 0);
}
sim::Task<void> move(PerCpu& self, MmStruct& mm, std::uint64_t from, std::uint64_t len, std::uint64_t to) {
  co_await sys_mremap(self, mm, from, len, to);
}
sim::Task<void> hugepage(PerCpu& self, MmStruct& mm, std::uint64_t addr, std::uint64_t len) {
  co_await sys_madvise_hugepage(self, mm, addr, len);
}
sim::Task<void> read_or_segv(PerCpu& self, MmStruct& mm, std::uint64_t addr, bool& segv) {
  try {
    co_await user_access(self, mm, addr, false);
  } catch (const Sigsegv&) {
    segv = true;
  }
}

// Two CPUs run one mm and have both written the first `moved` pages of a private anonymous mapping one page longer,
// so that moving them leaves the old VMA's last page (and its page table) in place.
struct Moved {
  Moved(const char* name, std::uint64_t moved, bool fix = false)
      : s(profile(name, fix), profile(name).arch == Arch::kPowerpc ? "power9-2s16c-smt4" : "small-2s2c"),
        mm(s.k.new_mm()),
        pages(moved) {
    s.oracle().set_user_context(CpuId{0}, mm.id());
    s.oracle().set_user_context(CpuId{1}, mm.id());
    s.run_on(0, map_pages(s.cpu(0), mm, moved + 1, addr));
    s.run_on(0, enter_and_touch(s.cpu(0), mm, addr, moved, true));
    s.run_on(1, enter_and_touch(s.cpu(1), mm, addr, moved, true));
    to = mm.get_unmapped_area(moved * kPageSize, 2 << 20);  // a fresh page table of its own
  }
  std::uint64_t remote_flushes() { return s.k.counters().get(VmTlbEvent::NR_TLB_REMOTE_FLUSH); }
  void run() { s.run_on(0, move(s.cpu(0), mm, addr, pages * kPageSize, to)); }
  Scenario s;
  MmStruct& mm;
  std::uint64_t pages;
  std::uint64_t addr = 0, to = 0;
};

TEST(Mremap, TheMovedPageIsMappedAtItsNewAddressAndTheOldOneFaults) {
  for (const char* name : {"linux-3.3", "linux-4.14-ppc", "linux-5.17", "linux-6.2-ppc", "linux-6.13"}) {
    Moved t(name, 1);
    const Pfn pfn = t.mm.pgd.lookup(vpn_of(t.addr))->pfn;
    ASSERT_TRUE(t.s.cpu(1).tlb.peek(Asid{t.s.cpu(1).hw_tag}, vpn_of(t.addr)).has_value()) << name;
    t.run();
    EXPECT_FALSE(t.s.cpu(1).tlb.peek(Asid{t.s.cpu(1).hw_tag}, vpn_of(t.addr)).has_value())
        << name << ": cpu1 still caches the old address after mremap returned";
    EXPECT_FALSE(t.mm.pgd.lookup(vpn_of(t.addr)).has_value()) << name;
    ASSERT_TRUE(t.mm.pgd.lookup(vpn_of(t.to)).has_value()) << name;
    EXPECT_EQ(t.mm.pgd.lookup(vpn_of(t.to))->pfn, pfn) << name << ": the page moves, it is not copied";
    ASSERT_NE(t.mm.find_vma(t.to), nullptr) << name;
    EXPECT_EQ(t.mm.find_vma(t.addr), nullptr) << name << ": do_munmap removed the old range";
    ASSERT_NE(t.mm.find_vma(t.addr + kPageSize), nullptr) << name << ": the rest of the old VMA stays";
    bool segv = false;
    t.s.run_on(1, read_or_segv(t.s.cpu(1), t.mm, t.addr, segv));
    EXPECT_TRUE(segv) << name;
    EXPECT_TRUE(t.s.oracle().violations().empty()) << name;
  }
}

TEST(Mremap, OnX86OneFlushRequestUnlessTheFixFlushesEachLatencyLimitedExtent) {
  // 128 written pages in one page table. v3.3: two extents of LATENCY_LIMIT (64 pages), one flush_tlb_range after
  // both. v5.17/v6.13: one extent to the PMD boundary, flushed under its PTE locks. v3.3 with the later fix
  // (move_ptes_flush_present): each 64-page extent flushes under its lock, two requests.
  struct Case {
    const char* profile;
    bool fix;
    std::uint64_t requests;
  };
  for (const Case c : {Case{"linux-3.3", false, 1}, Case{"linux-3.3", true, 2}, Case{"linux-5.17", false, 1},
                       Case{"linux-6.13", false, 1}}) {
    Moved t(c.profile, 128, c.fix);
    const std::uint64_t before = t.remote_flushes();
    t.run();
    EXPECT_EQ(t.remote_flushes() - before, c.requests) << c.profile << (c.fix ? " with the fix" : "");
    EXPECT_TRUE(t.s.oracle().violations().empty()) << c.profile;
  }
}

TEST(Mremap, AFileMappingMovesInTheFilesIMmap) {
  Scenario s(profile("linux-5.17"));
  MmStruct& mm = s.k.new_mm();
  File& f = s.k.new_file(4 * kPageSize);
  const std::uint64_t from = mm.get_unmapped_area(4 * kPageSize);
  mm.insert_vma(Vma{from, from + 4 * kPageSize, false, true, &f, 0, nullptr});
  ASSERT_EQ(f.i_mmap.size(), 1u);
  const std::uint64_t to = mm.get_unmapped_area(2 * kPageSize);
  s.run_on(0, move(s.cpu(0), mm, from + 2 * kPageSize, 2 * kPageSize, to));
  // The old VMA keeps its first two pages; the new one maps file pages 2 and 3 at `to`.
  ASSERT_EQ(f.i_mmap.size(), 2u);
  EXPECT_EQ(f.i_mmap[0].start, from);
  EXPECT_EQ(f.i_mmap[0].end, from + 2 * kPageSize);
  EXPECT_EQ(f.i_mmap[1].start, to);
  EXPECT_EQ(f.i_mmap[1].pgoff, 2u);
  EXPECT_EQ(f.i_mmap[1].vpn_of_index(3), vpn_of(to + kPageSize));
  EXPECT_FALSE(f.i_mmap[1].vpn_of_index(1).has_value());
}

TEST(Mremap, OverlappingOrUnmappedRangesAreTheCallersError) {
  // Each call throws before it starts (a fresh machine each: the thrown task is not resumed).
  {
    Moved t("linux-5.17", 2);
    EXPECT_THROW(t.s.run_on(0, move(t.s.cpu(0), t.mm, t.addr, 2 * kPageSize, t.addr + kPageSize)),
                 std::invalid_argument)
        << "overlapping ranges";
  }
  {
    Moved t("linux-5.17", 2);
    EXPECT_THROW(t.s.run_on(0, move(t.s.cpu(0), t.mm, t.to, kPageSize, t.to + (4 << 20))), std::invalid_argument)
        << "nothing mapped at the old address";
  }
  {
    Moved t("linux-5.17", 2);
    EXPECT_THROW(t.s.run_on(0, move(t.s.cpu(0), t.mm, t.addr, 4 * kPageSize, t.to)), std::invalid_argument)
        << "4 pages run past the 3-page VMA";
  }
}

// MREMAP_FIXED onto a mapped destination: mremap_to unmaps it first (do_munmap, its own gather and flush), so the
// page the other CPU wrote there is flushed from its TLB before it is freed, and the moved page takes its place.
TEST(Mremap, AMappedDestinationIsUnmappedAndFlushedFirstInEveryEra) {
  for (const char* kernel : {"linux-3.3", "linux-5.17", "linux-6.13", "linux-6.18"}) {
    Moved t(kernel, 1);
    const std::uint64_t dest = t.addr + kPageSize;  // the VMA's last page, written by cpu1 below
    t.s.run_on(1, enter_and_touch(t.s.cpu(1), t.mm, dest, 1, true));
    const Pfn old_dest = t.mm.pgd.lookup(vpn_of(dest))->pfn;
    const Pfn page = t.mm.pgd.lookup(vpn_of(t.addr))->pfn;
    ASSERT_TRUE(t.s.cpu(1).tlb.peek(Asid{t.s.cpu(1).hw_tag}, vpn_of(dest)).has_value()) << kernel;
    t.s.run_on(0, move(t.s.cpu(0), t.mm, t.addr, kPageSize, dest));
    ASSERT_TRUE(t.mm.pgd.lookup(vpn_of(dest)).has_value()) << kernel;
    EXPECT_EQ(t.mm.pgd.lookup(vpn_of(dest))->pfn, page) << kernel << ": the moved page is at the destination";
    EXPECT_NE(page, old_dest) << kernel;
    EXPECT_FALSE(t.mm.pgd.lookup(vpn_of(t.addr)).has_value()) << kernel;
    // (cpu1's hardware may have walked the moved page's new PTE speculatively: only the old frame is wrong there.)
    const auto e = t.s.cpu(1).tlb.peek(Asid{t.s.cpu(1).hw_tag}, vpn_of(dest));
    EXPECT_TRUE(!e || e->pfn != old_dest) << kernel << ": the destination's old translation is flushed from cpu1";
    EXPECT_GE(t.remote_flushes(), 2U) << kernel << ": one flush for the destination's zap, one for the move";
    EXPECT_TRUE(t.s.oracle().violations().empty()) << kernel;
  }
}

// move_ptes moves every non-none entry: a migration entry arrives at the new address, beside the present page.
TEST(Mremap, AMigrationEntryMovesToTheNewAddress) {
  for (const char* kernel : {"linux-3.3", "linux-6.13"}) {
    Moved t(kernel, 2);
    const Vpn second = vpn_of(t.addr + kPageSize);
    const Pte migrating = *t.mm.pgd.lookup(second);
    t.mm.pgd.clear(second);
    t.mm.pgd.set(second, Pte{migrating.pfn, false, migrating.writable, true, true});  // make_migration_entry
    t.run();
    const auto moved = t.mm.pgd.migration_entry(vpn_of(t.to + kPageSize));
    ASSERT_TRUE(moved.has_value()) << kernel;
    EXPECT_EQ(moved->pfn, migrating.pfn) << kernel;
    EXPECT_FALSE(t.mm.pgd.migration_entry(second).has_value()) << kernel;
    EXPECT_TRUE(t.mm.pgd.lookup(vpn_of(t.to)).has_value()) << kernel << ": the present page moved as well";
  }
}

// move_normal_pmd: a whole aligned 2 MiB moves by its PTE table (the same table page now at the new address) on x86
// from v5.1 and powerpc from v5.14; v3.3 and v4.14 move the PTEs one by one into a new table.
TEST(Mremap, AWholeAlignedPmdMovesByItsTableWhereTheEraHasMoveNormalPmd) {
  EXPECT_FALSE(mremap_era(profile("linux-3.3")).move_normal_pmd);
  EXPECT_FALSE(mremap_era(profile("linux-4.14-ppc")).move_normal_pmd);
  EXPECT_TRUE(mremap_era(profile("linux-5.17")).move_normal_pmd);
  EXPECT_TRUE(mremap_era(profile("linux-6.2-ppc")).move_normal_pmd);
  for (const auto& [kernel, moves_table] : {std::pair{"linux-6.13", true}, std::pair{"linux-3.3", false}}) {
    Scenario s(profile(kernel));
    MmStruct& mm = s.k.new_mm();
    const std::uint64_t x = mm.get_unmapped_area(kHpagePmdSize, kHpagePmdSize);
    mm.insert_vma(Vma{x, x + kHpagePmdSize, true, false, nullptr, 0, nullptr});
    const std::uint64_t y = mm.get_unmapped_area(kHpagePmdSize, kHpagePmdSize);
    s.oracle().set_user_context(CpuId{0}, mm.id());
    s.oracle().set_user_context(CpuId{1}, mm.id());
    s.run_on(0, enter_and_touch(s.cpu(0), mm, x, 2, true));
    s.run_on(1, enter_and_touch(s.cpu(1), mm, x, 1, false));
    const Pfn table = mm.pgd.table(vpn_of(x))->frame;
    const Pfn page = mm.pgd.lookup(vpn_of(x))->pfn;
    s.run_on(0, move(s.cpu(0), mm, x, kHpagePmdSize, y));
    ASSERT_NE(mm.pgd.table(vpn_of(y)), nullptr) << kernel;
    EXPECT_EQ(mm.pgd.table(vpn_of(y))->frame == table, moves_table) << kernel;
    EXPECT_EQ(mm.pgd.lookup(vpn_of(y))->pfn, page) << kernel;
    EXPECT_EQ(mm.pgd.table(vpn_of(x)), nullptr) << kernel;
    EXPECT_FALSE(s.cpu(1).tlb.peek(Asid{s.cpu(1).hw_tag}, vpn_of(x)).has_value())
        << kernel << ": the old range flushed";
    EXPECT_TRUE(s.oracle().violations().empty()) << kernel;
  }
}

// A 1 GiB-aligned 1 GiB anonymous mapping whose first page both CPUs wrote, and whose page 512 MiB in cpu0 wrote
// (two PTE tables under one PUD), and a destination `to` (1 GiB-aligned, or 2 MiB past that).
struct MovedGib {
  MovedGib(const char* kernel, bool aligned)
      : s(profile(kernel), Scenario::machine_for(profile(kernel))), mm(s.k.new_mm()) {
    x = mm.get_unmapped_area(kPudSize, kPudSize);
    mm.insert_vma(Vma{x, x + kPudSize, true, false, nullptr, 0, nullptr});
    s.oracle().set_user_context(CpuId{0}, mm.id());
    s.oracle().set_user_context(CpuId{1}, mm.id());
    mm.mm_users.value = 2;  // two threads (powerpc v6.2 trims a single-threaded mm's mask)
    s.run_on(0, enter_and_touch(s.cpu(0), mm, x, 1, true));
    s.run_on(0, enter_and_touch(s.cpu(0), mm, x + kPudSize / 2, 1, true));
    s.run_on(1, enter_and_touch(s.cpu(1), mm, x, 1, true));
    to = mm.get_unmapped_area(2 * kPudSize, kPudSize) + (aligned ? 0 : kHpagePmdSize);
  }
  std::uint64_t remote_flushes() { return s.k.counters().get(VmTlbEvent::NR_TLB_REMOTE_FLUSH); }
  std::uint64_t cpu1_flushes() {
    const hw::TlbCounters& c = s.cpu(1).tlb.counters();
    return c.flush_tag + c.flush_all;
  }
  Scenario s;
  MmStruct& mm;
  std::uint64_t x = 0, to = 0;
};

// move_normal_pud: a whole aligned 1 GiB moves by its PUD (the same PTE tables, at the same offsets, under the new
// address) with one flush of the old 1 GiB, on x86 and arm64 from v5.11 and powerpc from v5.14; v3.3 and v4.14 move
// the PTEs one by one into new tables. A destination 2 MiB past a PUD boundary moves by PMDs instead
// (move_normal_pmd), one flush for each of the two tables.
TEST(Mremap, AWholeAlignedPudMovesByItsTablesWhereTheEraHasMoveNormalPud) {
  EXPECT_FALSE(mremap_era(profile("linux-3.3")).move_normal_pud);
  EXPECT_FALSE(mremap_era(profile("linux-4.14-ppc")).move_normal_pud);
  for (const char* later : {"linux-5.17", "linux-6.2-ppc", "linux-6.5-arm64", "linux-6.13"}) {
    EXPECT_TRUE(mremap_era(profile(later)).move_normal_pud) << later;
  }
  struct Case {
    const char* kernel;
    bool moves_tables;
  };
  for (const Case c : {Case{"linux-3.3", false}, Case{"linux-4.14-ppc", false}, Case{"linux-5.17", true},
                       Case{"linux-6.2-ppc", true}, Case{"linux-6.6-arm64", true}, Case{"linux-6.13", true}}) {
    MovedGib t(c.kernel, true);
    const Pfn first = t.mm.pgd.table(vpn_of(t.x))->frame;
    const Pfn middle = t.mm.pgd.table(vpn_of(t.x + kPudSize / 2))->frame;
    const Pfn page = t.mm.pgd.lookup(vpn_of(t.x))->pfn;
    ASSERT_TRUE(t.s.cpu(1).tlb.peek(Asid{t.s.cpu(1).hw_tag}, vpn_of(t.x)).has_value()) << c.kernel;
    const std::uint64_t before = t.remote_flushes();
    const std::uint64_t cpu1_before = t.cpu1_flushes();
    t.s.run_on(0, move(t.s.cpu(0), t.mm, t.x, kPudSize, t.to));
    ASSERT_NE(t.mm.pgd.table(vpn_of(t.to)), nullptr) << c.kernel;
    ASSERT_NE(t.mm.pgd.table(vpn_of(t.to + kPudSize / 2)), nullptr) << c.kernel;
    if (c.moves_tables) {
      EXPECT_EQ(t.cpu1_flushes() - cpu1_before, 1U) << c.kernel << ": one whole-mm flush reached cpu1, not one per PMD";
    }
    EXPECT_EQ(t.mm.pgd.table(vpn_of(t.to))->frame == first, c.moves_tables) << c.kernel;
    EXPECT_EQ(t.mm.pgd.table(vpn_of(t.to + kPudSize / 2))->frame == middle, c.moves_tables) << c.kernel;
    EXPECT_EQ(t.mm.pgd.lookup(vpn_of(t.to))->pfn, page) << c.kernel;
    EXPECT_EQ(t.mm.pgd.table(vpn_of(t.x)), nullptr) << c.kernel;
    EXPECT_FALSE(t.s.cpu(1).tlb.peek(Asid{t.s.cpu(1).hw_tag}, vpn_of(t.x)).has_value())
        << c.kernel << ": the old range flushed";
    if (c.moves_tables && profile(c.kernel).arch == Arch::kX86) {
      EXPECT_EQ(t.remote_flushes() - before, 1U) << c.kernel << ": one flush of the 1 GiB, not one per PMD";
    }
    EXPECT_TRUE(t.s.oracle().violations().empty()) << c.kernel;
  }
  for (const char* kernel : {"linux-5.17", "linux-6.13", "linux-6.2-ppc", "linux-6.6-arm64"}) {
    MovedGib t(kernel, false);
    const Pfn first = t.mm.pgd.table(vpn_of(t.x))->frame;
    const std::uint64_t before = t.remote_flushes();
    const std::uint64_t cpu1_before = t.cpu1_flushes();
    t.s.run_on(0, move(t.s.cpu(0), t.mm, t.x, kPudSize, t.to));
    EXPECT_EQ(t.cpu1_flushes() - cpu1_before, 2U) << kernel;
    ASSERT_NE(t.mm.pgd.table(vpn_of(t.to)), nullptr) << kernel;
    EXPECT_EQ(t.mm.pgd.table(vpn_of(t.to))->frame, first) << kernel << ": moved by its PMD";
    if (profile(kernel).arch == Arch::kX86) {
      EXPECT_EQ(t.remote_flushes() - before, 2U) << kernel << ": one move_normal_pmd flush per table";
    }
    EXPECT_TRUE(t.s.oracle().violations().empty()) << kernel;
  }
}

// A THP inside the 1 GiB moves with its PUD: the same THP and deposit at the same offset under the new address.
TEST(Mremap, AThpMovesWithItsPud) {
  for (const char* kernel : {"linux-6.13", "linux-6.6-arm64", "linux-6.2-ppc"}) {
    Scenario s(profile(kernel), Scenario::machine_for(profile(kernel)));
    MmStruct& mm = s.k.new_mm();
    const std::uint64_t x = mm.get_unmapped_area(kPudSize, kPudSize);
    mm.insert_vma(Vma{x, x + kPudSize, true, false, nullptr, 0, nullptr});
    s.oracle().set_user_context(CpuId{0}, mm.id());
    s.oracle().set_user_context(CpuId{1}, mm.id());
    mm.mm_users.value = 2;
    const std::uint64_t thp = x + 3 * kHpagePmdSize;
    s.run_on(0, hugepage(s.cpu(0), mm, x, kPudSize));  // one VMA: MADV_HUGEPAGE of part of it would split it
    s.run_on(0, enter_and_touch(s.cpu(0), mm, thp, 1, true));
    s.run_on(1, enter_and_touch(s.cpu(1), mm, thp + kPageSize, 1, false));
    const HugePmd before = *mm.pgd.huge_pmd(vpn_of(thp));
    const std::uint64_t to = mm.get_unmapped_area(kPudSize, kPudSize);
    s.run_on(0, move(s.cpu(0), mm, x, kPudSize, to));
    const HugePmd* moved = mm.pgd.huge_pmd(vpn_of(to + 3 * kHpagePmdSize));
    ASSERT_NE(moved, nullptr) << kernel;
    EXPECT_EQ(moved->page, before.page) << kernel;
    EXPECT_EQ(moved->deposit, before.deposit) << kernel;
    EXPECT_EQ(mm.pgd.huge_pmd(vpn_of(thp)), nullptr) << kernel;
    EXPECT_FALSE(s.cpu(1).tlb.peek(Asid{s.cpu(1).hw_tag}, vpn_of(thp + kPageSize)).has_value()) << kernel;
    EXPECT_TRUE(s.oracle().violations().empty()) << kernel;
  }
}

// From v4.19 every flush of a move happens under the page-table locks (eb66ae030829) and move_page_tables has none
// of its own; before, its flush at the end covers every extent that move_ptes was called on. A page that was never
// touched, beside one that was (so its page table exists), moves with no flush on v5.17 and v6.13, one on v3.3.
TEST(Mremap, ARangeWithNothingPresentIsFlushedOnlyBeforeV419) {
  for (const auto& [kernel, requests] :
       {std::pair{"linux-3.3", 1U}, std::pair{"linux-5.17", 0U}, std::pair{"linux-6.13", 0U}}) {
    Moved t(kernel, 1);  // two pages mapped, the first written on both CPUs
    const std::uint64_t before = t.remote_flushes();
    t.s.run_on(0, move(t.s.cpu(0), t.mm, t.addr + kPageSize, kPageSize, t.to));
    EXPECT_EQ(t.remote_flushes() - before, requests) << kernel;
    EXPECT_TRUE(t.mm.pgd.lookup(vpn_of(t.addr)).has_value()) << kernel;
    EXPECT_TRUE(t.s.oracle().violations().empty()) << kernel;
  }
}

// A 2 MiB-aligned MADV_HUGEPAGE mapping whose THP cpu0 wrote and cpu1 read (a 2 MiB TLB entry), and a destination
// `to` (2 MiB-aligned, or one page past that).
struct MovedThp {
  MovedThp(const char* kernel, bool aligned)
      : s(profile(kernel), Scenario::machine_for(profile(kernel))), mm(s.k.new_mm()) {
    x = mm.get_unmapped_area(kHpagePmdSize, kHpagePmdSize);
    mm.insert_vma(Vma{x, x + kHpagePmdSize, true, false, nullptr, 0, nullptr});
    s.oracle().set_user_context(CpuId{0}, mm.id());
    s.oracle().set_user_context(CpuId{1}, mm.id());
    mm.mm_users.value = 2;  // two threads: powerpc v6.2 would otherwise trim cpu1 from a single-threaded mm's mask
    s.run_on(0, hugepage(s.cpu(0), mm, x, kHpagePmdSize));
    s.run_on(0, enter_and_touch(s.cpu(0), mm, x, 1, true));
    s.run_on(1, enter_and_touch(s.cpu(1), mm, x + kPageSize, 1, false));
    to = mm.get_unmapped_area(2 * kHpagePmdSize, kHpagePmdSize) + (aligned ? 0 : kPageSize);
  }
  bool cpu1_caches_old() { return s.cpu(1).tlb.peek(Asid{s.cpu(1).hw_tag}, vpn_of(x + kPageSize)).has_value(); }
  Scenario s;
  MmStruct& mm;
  std::uint64_t x = 0, to = 0;
};

// move_huge_pmd: an aligned THP moves by its PMD (the same THP and deposit at the new address, no split); the old
// 2 MiB is flushed from cpu1 by each era's flush: the whole mm on x86 (flush_tlb_range of 512 pages, above the
// ceiling), a 2 MiB invalidation on powerpc v6.2 and arm64 (flush_pmd_tlb_range, v6.0). (do_munmap of the old range
// afterwards frees the emptied page tables, which on powerpc flushes the whole PID as well.)
TEST(Mremap, AnAlignedThpMovesWholeByItsPmd) {
  struct Case {
    const char* kernel;
    bool full_flush;
  };
  for (const Case c : {Case{"linux-3.3", true}, Case{"linux-5.17", true}, Case{"linux-6.13", true},
                       Case{"linux-6.2-ppc", false}, Case{"linux-6.6-arm64", false}}) {
    MovedThp t(c.kernel, true);
    const HugePmd before = *t.mm.pgd.huge_pmd(vpn_of(t.x));
    ASSERT_TRUE(t.cpu1_caches_old()) << c.kernel;
    const hw::TlbCounters tlb0 = t.s.cpu(1).tlb.counters();
    t.s.run_on(0, move(t.s.cpu(0), t.mm, t.x, kHpagePmdSize, t.to));
    const HugePmd* moved = t.mm.pgd.huge_pmd(vpn_of(t.to));
    ASSERT_NE(moved, nullptr) << c.kernel << ": the THP was split";
    EXPECT_EQ(moved->page, before.page) << c.kernel;
    EXPECT_EQ(moved->deposit, before.deposit) << c.kernel << ": the deposited table moves with the PMD";
    EXPECT_EQ(t.mm.pgd.table(vpn_of(t.to)), nullptr) << c.kernel;
    EXPECT_EQ(t.mm.pgd.huge_pmd(vpn_of(t.x)), nullptr) << c.kernel;
    EXPECT_FALSE(t.cpu1_caches_old()) << c.kernel << ": the old 2 MiB is flushed from cpu1";
    const hw::TlbCounters& tlb1 = t.s.cpu(1).tlb.counters();
    if (c.full_flush) {
      EXPECT_GT(tlb1.flush_tag + tlb1.flush_all, tlb0.flush_tag + tlb0.flush_all) << c.kernel;
    } else {
      EXPECT_GT(tlb1.invlpg, tlb0.invlpg) << c.kernel << ": one 2 MiB invalidation reached cpu1";
    }
    EXPECT_TRUE(t.s.oracle().violations().empty()) << c.kernel;
  }
}

// A THP whose destination is not 2 MiB-aligned is split, and its 512 PTEs move one by one.
TEST(Mremap, AThpMovedToAnUnalignedAddressIsSplitFirst) {
  for (const char* kernel : {"linux-3.3", "linux-6.13"}) {
    MovedThp t(kernel, false);
    const Pfn page = t.mm.pgd.huge_pmd(vpn_of(t.x))->page;
    t.s.run_on(0, move(t.s.cpu(0), t.mm, t.x, kHpagePmdSize, t.to));
    EXPECT_EQ(t.mm.pgd.huge_pmd(vpn_of(t.to)), nullptr) << kernel;
    ASSERT_TRUE(t.mm.pgd.lookup(vpn_of(t.to + 7 * kPageSize)).has_value()) << kernel;
    EXPECT_EQ(t.mm.pgd.lookup(vpn_of(t.to + 7 * kPageSize))->pfn, Pfn{page.get() + 7}) << kernel;
    EXPECT_FALSE(t.cpu1_caches_old()) << kernel;
    EXPECT_TRUE(t.s.oracle().violations().empty()) << kernel;
  }
}

}  // namespace
}  // namespace tlbsim::kernel
