// Scenario tests of the fault and madvise paths (mm/memory.cpp): what fault-around charges for the pages of its
// window, and how often madvise(MADV_DONTNEED) flushes.
#include "mm/memory.h"

#include <gtest/gtest.h>

#include <optional>
#include <vector>

#include "arch/x86/mm/tlb.h"
#include "kernel/scenario.h"
#include "kernel/sched/sched.h"
#include "model/profile.h"

namespace tlbsim::kernel {
namespace {

using testing::Scenario;

// Maps a 16-page file (one fault-around window) privately and reads its pages in order, recording how long each
// read (each one a read fault) took.
sim::Task<void> read_window(PerCpu& self, MmStruct& mm, File& file, std::vector<sim::Duration>& took) {
  co_await x86::switch_mm(self, mm);
  const std::uint64_t addr = co_await sys_mmap(self, mm, 16 * kPageSize, false, &file, 0);
  for (std::uint64_t i = 0; i < 16; ++i) {
    const sim::SimTime t0 = self.cpu.now();
    co_await user_access(self, mm, addr + i * kPageSize, false);
    took.push_back(self.cpu.now() - t0);
  }
}

TEST(MmOps, FaultAroundVisitsEveryCachedPageOfItsWindowMappedOrNot) {
  // The file starts with no page cached, so read fault i caches and maps page i alone, and filemap_map_pages visits
  // pages 0..i-1, cached and already mapped: each costs fault_around_skip (the reference and page lock taken and
  // dropped again), so each fault takes one skip longer than the one before.
  Scenario s;
  MmStruct& mm = s.k.new_mm();
  File& file = s.k.new_file(16 * kPageSize);
  s.oracle().set_user_context(CpuId{0}, mm.id());
  std::vector<sim::Duration> took;
  s.run_on(0, read_window(s.cpu(0), mm, file, took));
  ASSERT_EQ(took.size(), 16u);
  const sim::Duration skip = s.machine.kernel.fault_around_skip;
  ASSERT_GT(skip, sim::Duration{0});
  for (std::size_t i = 2; i < took.size(); ++i) EXPECT_EQ(took[i] - took[i - 1], skip) << "fault " << i;
  EXPECT_EQ(s.k.counters().page_faults, 16u);
}

// A 16-page file whose pages 1-15 are in the page cache, none mapped yet.
File& file_with_pages_1_to_15_cached(Scenario& s) {
  File& file = s.k.new_file(16 * kPageSize);
  for (std::uint64_t i = 1; i < 16; ++i) file.pages.emplace(i, s.k.frames().alloc(FrameUse::kPageCache));
  return file;
}

// Maps the 16-page file and read-faults its page 0 (with any architecture's switch_mm); `addr` is set once mapped.
sim::Task<void> fault_page0(PerCpu& self, MmStruct& mm, File& file, std::optional<std::uint64_t>& addr) {
  self.cpu.local_irq_disable();
  co_await self.k.arch().switch_mm_irqs_off(self, mm);
  co_await self.cpu.local_irq_enable();
  addr = co_await sys_mmap(self, mm, 16 * kPageSize, false, &file, 0);
  co_await user_access(self, mm, *addr, false);
}

// CPU 0 read-faults page 0, so fault-around maps pages 1-15 one by one. CPU 1 plays reclaim's __remove_mapping:
// once page 4 is mapped (fault-around is then working on page 5), it deletes page 5 from the page cache.
sim::Task<void> remove_page5_after_page4_maps(PerCpu& self, MmStruct& mm, File& file,
                                              const std::optional<std::uint64_t>& addr) {
  for (int polls = 0; polls < 1'000'000; ++polls) {
    if (addr && mm.pgd.lookup(vpn_of(*addr + 4 * kPageSize))) {
      file.pages.erase(5);
      co_return;
    }
    co_await self.cpu.delay(sim::Duration{1000});  // 1 ns
  }
}

TEST(MmOps, FaultAroundSkipsAPageThatLeftTheCacheWhileItWorked) {
  // In the kernel the page lock, taken before the PTE test, keeps reclaim off a page fault-around is mapping; the
  // model looks the page up again after the work. Without that, page 5 would be mapped to a frame that is no longer
  // in the page cache (and the model would read a freed hash-map node).
  Scenario s;
  MmStruct& mm = s.k.new_mm();
  File& file = file_with_pages_1_to_15_cached(s);
  s.oracle().set_user_context(CpuId{0}, mm.id());
  std::optional<std::uint64_t> addr;
  s.cpu(0).cpu.start(fault_page0(s.cpu(0), mm, file, addr));
  s.run_on(1, remove_page5_after_page4_maps(s.cpu(1), mm, file, addr));
  ASSERT_TRUE(addr.has_value());
  EXPECT_FALSE(file.pages.contains(5));
  EXPECT_FALSE(mm.pgd.lookup(vpn_of(*addr + 5 * kPageSize)).has_value()) << "page 5 was mapped after it left the cache";
  for (std::uint64_t i : {0, 1, 4, 6, 15}) {
    EXPECT_TRUE(mm.pgd.lookup(vpn_of(*addr + i * kPageSize)).has_value()) << "page " << i;
  }
}

sim::Task<void> touch_unmapped(PerCpu& self, MmStruct& mm, bool& segv) {
  co_await x86::switch_mm(self, mm);
  try {
    co_await user_access(self, mm, 0x7000'0000'0000, false);
  } catch (const Sigsegv&) {
    segv = true;
  }
}

TEST(MmOps, ABadAreaFaultReleasesMmapLockBeforeTheSignal) {
  // do_page_fault -> bad_area: up_read(mmap_lock), then SIGSEGV. A leaked read hold would block every later
  // munmap or exit of the mm.
  Scenario s;
  MmStruct& mm = s.k.new_mm();
  s.oracle().set_user_context(CpuId{0}, mm.id());
  bool segv = false;
  s.run_on(0, touch_unmapped(s.cpu(0), mm, segv));
  EXPECT_TRUE(segv);
  EXPECT_EQ(mm.mmap_lock.value(), 0);
}

// Maps how many of a 16-page file's pages a read fault on page 0 leaves mapped, pages 1-15 being cached.
std::uint64_t pages_mapped_by_one_read_fault(KernelConfig cfg) {
  Scenario s(cfg, cfg.arch == kernel::Arch::kPowerpc ? "power9-2s16c-smt4" : "small-2s2c");
  MmStruct& mm = s.k.new_mm();
  File& file = file_with_pages_1_to_15_cached(s);
  s.oracle().set_user_context(CpuId{0}, mm.id());
  std::optional<std::uint64_t> addr;
  s.run_on(0, fault_page0(s.cpu(0), mm, file, addr));
  std::uint64_t mapped = 0;
  for (std::uint64_t i = 0; i < 16; ++i) mapped += mm.pgd.lookup(vpn_of(*addr + i * kPageSize)).has_value() ? 1 : 0;
  return mapped;
}

TEST(MmOps, FaultAroundNeedsAWindowOfMoreThanOnePage) {
  // do_read_fault calls do_fault_around only when fault_around_bytes >> PAGE_SHIFT > 1: with x86's 4 KiB pages the
  // window is 16 pages; powerpc64's 64 KiB pages make it 1, and v3.3 predates fault-around.
  KernelConfig x86;
  EXPECT_EQ(kernel::find_arch_mmu(x86.arch, x86.version)->page_size(), 4096u);
  EXPECT_EQ(kernel::fault_around_pages(x86.version, 4096), 16u);
  EXPECT_EQ(pages_mapped_by_one_read_fault(x86), 16u);
  KernelConfig ppc;
  ppc.arch = kernel::Arch::kPowerpc;
  ppc.version = {4, 14};
  EXPECT_EQ(kernel::find_arch_mmu(ppc.arch, ppc.version)->page_size(), 65536u);
  EXPECT_EQ(kernel::fault_around_pages(ppc.version, 65536), 1u);
  EXPECT_EQ(pages_mapped_by_one_read_fault(ppc), 1u);
  EXPECT_EQ(kernel::fault_around_pages({3, 3}, 4096), 1u);
}

// One CPU of a two-thread mm: it runs the mm (with any architecture's switch_mm) and writes one page of it.
sim::Task<void> run_mm_and_write(PerCpu& self, MmStruct& mm, std::uint64_t addr) {
  self.cpu.local_irq_disable();
  co_await self.k.arch().switch_mm_irqs_off(self, mm);
  co_await self.cpu.local_irq_enable();
  co_await user_access(self, mm, addr, true);
}
sim::Task<void> madvise_page(PerCpu& self, MmStruct& mm, std::uint64_t addr) {
  co_await sys_madvise_dontneed(self, mm, addr, kPageSize);
}
sim::Task<void> mmap_pages(PerCpu& self, MmStruct& mm, std::uint64_t pages, std::uint64_t& addr) {
  addr = co_await sys_mmap(self, mm, pages * kPageSize, false, nullptr, 0);
}

// Two CPUs run one mm, each having written its own page of a 4 MiB mapping: CPU 0 page 0, CPU 1 page 512, which
// lies in the next page-table page (so their zaps take different page-table locks).
struct TwoThreadMm {
  explicit TwoThreadMm(const char* profile) : s(load_kernel_profile(profile).config), mm(s.k.new_mm()) {
    s.oracle().set_user_context(CpuId{0}, mm.id());
    s.oracle().set_user_context(CpuId{1}, mm.id());
    s.run_on(0, mmap_pages(s.cpu(0), mm, 2 * kPtesPerTable, addr));
    s.run_on(0, run_mm_and_write(s.cpu(0), mm, page(0)));
    s.run_on(1, run_mm_and_write(s.cpu(1), mm, page(1)));
  }
  std::uint64_t page(std::uint32_t cpu) const { return addr + cpu * kPtesPerTable * kPageSize; }
  std::uint64_t remote_flushes() { return s.k.counters().get(VmTlbEvent::NR_TLB_REMOTE_FLUSH); }
  Scenario s;
  MmStruct& mm;
  std::uint64_t addr = 0;
};

TEST(MmOps, MadviseOfOnePageMakesOneFlushRequest) {
  // tlb_end_vma flushes nothing on x86 (an empty macro before v6.0, MMU_GATHER_MERGE_VMAS from v6.0): the page is
  // flushed once, by tlb_finish_mmu, and the other CPU running the mm gets one IPI.
  for (const char* profile : {"linux-3.3", "linux-5.17", "linux-6.13"}) {
    TwoThreadMm t(profile);
    t.s.run_on(0, madvise_page(t.s.cpu(0), t.mm, t.page(0)));
    EXPECT_EQ(t.remote_flushes(), 1u) << profile;
    EXPECT_EQ(t.s.k.counters().irq_tlb_count[1], 1u) << profile;
    EXPECT_TRUE(t.s.oracle().violations().empty()) << profile;
  }
}

TEST(MmOps, OverlappingMadvisesMakeOneFlushRequestEach) {
  // Both CPUs madvise their page at the same instant, so each gather sees the other (mm_tlb_flush_nested) and
  // tlb_finish_mmu flushes the whole mm: one request each. A flush at tlb_end_vma as well would make four.
  for (const char* profile : {"linux-5.17", "linux-6.13"}) {
    TwoThreadMm t(profile);
    t.s.cpu(0).cpu.start(madvise_page(t.s.cpu(0), t.mm, t.page(0)));
    t.s.run_on(1, madvise_page(t.s.cpu(1), t.mm, t.page(1)));
    EXPECT_EQ(t.remote_flushes(), 2u) << profile;
    EXPECT_EQ(t.s.k.counters().get(VmTlbEvent::NR_TLB_LOCAL_FLUSH_ALL), 2u) << profile << ": whole-mm flushes";
    EXPECT_TRUE(t.s.oracle().violations().empty()) << profile;
  }
}

// ---- munmap: VMA merging and splitting, free_pgtables' bounds and lazy CPUs; faults under per-VMA locks.

namespace mmap_paths {

sim::Task<void> munmap_range(PerCpu& self, MmStruct& mm, std::uint64_t addr, std::uint64_t len) {
  co_await sys_munmap(self, mm, addr, len);
}
sim::Task<void> map_and_write(PerCpu& self, MmStruct& mm, std::uint64_t pages, std::uint64_t& addr) {
  addr = co_await sys_mmap(self, mm, pages * kPageSize, false, nullptr, 0);
  for (std::uint64_t i = 0; i < pages; ++i) co_await user_access(self, mm, addr + i * kPageSize, true);
}
sim::Task<void> enter_mm(PerCpu& self, MmStruct& mm) {
  self.cpu.local_irq_disable();
  co_await self.k.arch().switch_mm_irqs_off(self, mm);
  co_await self.cpu.local_irq_enable();
}
// The CPU runs the mm, then a kernel thread: it keeps the mm loaded, lazily (enter_lazy_tlb).
sim::Task<void> run_mm_then_go_lazy(PerCpu& self, MmStruct& mm) {
  co_await enter_mm(self, mm);
  co_await self.k.arch().enter_lazy_tlb(self, mm);
}

TEST(MmOps, AnonymousMappingsPackTopDownMergeAndMunmapSplitsThemAgain) {
  // unmapped_area_topdown places each mapping at the top of the highest gap below mmap_base; mmap_region's
  // vma_merge extends the neighbour instead of making a second VMA; munmap of one of the two splits it again
  // (__split_vma), and the next mapping reuses the highest gap.
  for (const char* profile : {"linux-3.3", "linux-5.17", "linux-6.13"}) {
    Scenario s(load_kernel_profile(profile).config);
    MmStruct& mm = s.k.new_mm();
    std::uint64_t a = 0, b = 0, c = 0;
    s.run_on(0, mmap_pages(s.cpu(0), mm, 16, a));
    s.run_on(0, mmap_pages(s.cpu(0), mm, 16, b));
    EXPECT_EQ(a, MmStruct::kMmapBase - 16 * kPageSize) << profile;
    EXPECT_EQ(b, a - 16 * kPageSize) << profile;
    ASSERT_EQ(mm.vmas.size(), 1u) << profile;
    EXPECT_EQ(mm.vmas.begin()->second.start, b) << profile;
    EXPECT_EQ(mm.vmas.begin()->second.end, a + 16 * kPageSize) << profile;
    s.run_on(0, munmap_range(s.cpu(0), mm, a, 16 * kPageSize));
    ASSERT_EQ(mm.vmas.size(), 1u) << profile;
    EXPECT_EQ(mm.vmas.begin()->second.end, a) << profile;
    s.run_on(0, mmap_pages(s.cpu(0), mm, 16, c));
    EXPECT_EQ(c, a) << profile;
  }
}

TEST(MmOps, OnlyAnonymousMappingsOfWholePmdsAreThpAlignedFromV612) {
  // __get_unmapped_area: efa7df3e3bb5 (v6.8) aligns every anonymous mapping to PMD_SIZE; d4148aeab412 (v6.12) only
  // those whose length is a multiple of it.
  constexpr std::uint64_t kPmd = kPtesPerTable * kPageSize;
  EXPECT_EQ(mmap_thp_align({5, 17}, true, kPmd), kPageSize);
  EXPECT_EQ(mmap_thp_align({6, 8}, true, 16 * kPageSize), kPmd);
  EXPECT_EQ(mmap_thp_align({6, 13}, true, 16 * kPageSize), kPageSize);
  EXPECT_EQ(mmap_thp_align({6, 13}, true, 2 * kPmd), kPmd);
  EXPECT_EQ(mmap_thp_align({6, 13}, false, 2 * kPmd), kPageSize);
}

TEST(MmOps, ALazyCpuGetsAFlushIpiFromMunmapOnlyWhenItFreesAPageTable) {
  // free_pgtables frees a leaf table only when no VMA lies within the 2 MiB it maps (floor and ceiling). A flush
  // that frees no table skips lazy CPUs (v5.17 tlb_is_not_lazy, v6.13 should_flush_tlb); one that does interrupts
  // every CPU of mm_cpumask (native_flush_tlb_multi).
  for (const char* profile : {"linux-5.17", "linux-6.13"}) {
    Scenario s(load_kernel_profile(profile).config);
    MmStruct& mm = s.k.new_mm();
    s.oracle().set_user_context(CpuId{0}, mm.id());
    std::uint64_t a = 0, b = 0;
    s.run_on(0, enter_mm(s.cpu(0), mm));
    s.run_on(0, map_and_write(s.cpu(0), mm, 16, a));
    s.run_on(0, map_and_write(s.cpu(0), mm, 16, b));
    s.run_on(1, run_mm_then_go_lazy(s.cpu(1), mm));
    s.run_on(0, munmap_range(s.cpu(0), mm, a, 16 * kPageSize));  // b's part of the VMA keeps the table
    EXPECT_EQ(s.k.counters().irq_tlb_count[1], 0u) << profile;
    s.run_on(0, munmap_range(s.cpu(0), mm, b, 16 * kPageSize));  // the last VMA: its table is freed
    EXPECT_EQ(s.k.counters().irq_tlb_count[1], 1u) << profile;
    EXPECT_TRUE(s.oracle().violations().empty()) << profile;
  }
}

sim::Task<void> hold_mmap_lock_for_write(PerCpu& self, MmStruct& mm, sim::Duration hold) {
  co_await mm.mmap_lock.down_write(self);
  co_await self.cpu.delay(hold);
  co_await mmap_write_unlock(self, mm);
}
sim::Task<void> write_fault_after(PerCpu& self, MmStruct& mm, std::uint64_t addr, sim::Duration wait,
                                  sim::SimTime& done) {
  co_await self.cpu.delay(wait);
  co_await user_access(self, mm, addr, true);
  done = self.cpu.now();
}

TEST(MmOps, AFaultTakesItsVmaLockRatherThanMmapLockFromV64) {
  // x86 v6.4 ("x86/mm: try VMA lock-based page fault handling first"): a fault on a VMA that no writer has
  // write-locked runs under the VMA's own lock, while another CPU holds mmap_lock for write; before, it waits. (The
  // VMA has had a page written, so it has its anon_vma: tests/mm/mmap_lock_test.cpp has the first write.)
  for (const auto& [profile, waits] : {std::pair{"linux-5.17", true}, std::pair{"linux-6.13", false}}) {
    Scenario s(load_kernel_profile(profile).config);
    MmStruct& mm = s.k.new_mm();
    s.oracle().set_user_context(CpuId{0}, mm.id());
    std::uint64_t addr = 0;
    s.run_on(0, enter_mm(s.cpu(0), mm));
    s.run_on(0, mmap_pages(s.cpu(0), mm, 16, addr));
    sim::SimTime done{};
    s.run_on(0, write_fault_after(s.cpu(0), mm, addr, sim::microseconds(1), done));
    const sim::SimTime start = s.sys.scheduler().now();
    const sim::Duration hold = sim::microseconds(50);
    s.cpu(1).cpu.start(hold_mmap_lock_for_write(s.cpu(1), mm, hold));
    s.run_on(0, write_fault_after(s.cpu(0), mm, addr + kPageSize, sim::microseconds(1), done));
    EXPECT_EQ(done - start > hold, waits) << profile << ": fault done after " << sim::format_duration(done - start);
  }
}

}  // namespace mmap_paths

}  // namespace
}  // namespace tlbsim::kernel
