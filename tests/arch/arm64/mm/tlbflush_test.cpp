// Scenario tests pinning arm64's TLB maintenance (asm/tlbflush.h, asm/tlb.h, v6.5/v6.6): broadcast TLBIs that
// complete at the issuer's DSB ISH, no IPIs and no mm_cpumask, the leaf-only flushes, and the v6.6 batched reclaim
// flush with its arch_flush_tlb_batched_pending (F10).
#include <gtest/gtest.h>

#include "arch/arm64/mm/context.h"
#include "arch/arm64/options.h"
#include "kernel/scenario.h"
#include "mm/memory.h"
#include "mm/rmap.h"
#include "model/options.h"

namespace tlbsim::arm64 {
namespace {

using kernel::KernelConfig;
using kernel::kPageSize;
using kernel::MmStruct;
using kernel::PerCpu;
using kernel::TlbflushUnmapBatch;
using kernel::vpn_of;
using testing::Scenario;

KernelConfig arm64(int minor, bool batched = false, bool fixed = false) {
  KernelConfig cfg;
  cfg.arch = kernel::Arch::kArm64;
  cfg.version = {6, minor};
  if (batched) kernel::set_option(cfg, "ARCH_WANT_BATCHED_UNMAP_TLB_FLUSH", true, "test");
  if (fixed) kernel::set_option(cfg, "batched_pending_flush_tlb_mm", true, "test");
  return cfg;
}

Arm64Stats& st(Scenario& s) { return static_cast<Arm64Mmu&>(s.k.arch()).stats; }

sim::Task<void> do_munmap(PerCpu& self, MmStruct& mm, std::uint64_t addr, std::uint64_t len) {
  co_await kernel::sys_munmap(self, mm, addr, len);
}
sim::Task<void> do_batched_pending(PerCpu& self, MmStruct& mm) { co_await kernel::flush_tlb_batched_pending(self, mm); }

// An mm of `pages` pages, all touched by cpu0, the first also by cpu1.
struct Mapped {
  Mapped(Scenario& s, std::uint64_t pages) : mm(s.k.new_mm()) {
    s.run_on(0, testing::switch_to_mm(s.cpu(0), mm));
    s.run_on(1, testing::switch_to_mm(s.cpu(1), mm));
    s.run_on(0, testing::mmap_anon(s.cpu(0), mm, pages * kPageSize, addr));
    for (std::uint64_t i = 0; i < pages; ++i) s.run_on(0, testing::access(s.cpu(0), mm, addr + i * kPageSize, true));
    s.run_on(1, testing::access(s.cpu(1), mm, addr, false));
  }
  bool cached(Scenario& s, std::uint32_t cpu, std::uint64_t a) const {
    return s.cpu(cpu).tlb.peek(Asid{s.cpu(cpu).hw_tag}, vpn_of(a)).has_value();
  }
  MmStruct& mm;
  std::uint64_t addr = 0;
};

TEST(Arm64Tlbflush, MadviseOfOnePageIsOneLeafTlbiAndOneDsbWithNoIpi) {
  Scenario s(arm64(6), "rpi4-a72-4c");
  Mapped a(s, 4);
  ASSERT_TRUE(a.cached(s, 1, a.addr));
  s.run_on(0, testing::madvise(s.cpu(0), a.mm, a.addr, kPageSize));
  EXPECT_EQ(st(s).tlbi_vale1is, 1u) << "tlb_flush: no table freed, so last_level";
  EXPECT_EQ(st(s).tlbi_vae1is + st(s).tlbi_aside1is, 0u);
  EXPECT_EQ(st(s).dsb_ish, 1u);
  EXPECT_EQ(s.k.counters().ipis_sent, 0u) << "arm64 flushes user TLBs by broadcast, never by IPI";
  EXPECT_FALSE(a.cached(s, 1, a.addr)) << "the TLBI reached cpu1's TLB";
  EXPECT_TRUE(s.oracle().violations().empty());
}

TEST(Arm64Tlbflush, ALazyCpuIsInvalidatedByTheBroadcastToo) {
  Scenario s(arm64(6), "rpi4-a72-4c");
  Mapped a(s, 4);
  s.run_on(1, s.k.arch().enter_lazy_tlb(s.cpu(1), a.mm));
  s.run_on(0, do_munmap(s.cpu(0), a.mm, a.addr, 4 * kPageSize));
  EXPECT_EQ(s.k.counters().ipis_sent, 0u);
  EXPECT_GE(st(s).tlbi_vae1is, 1u) << "munmap freed the page table: non-leaf TLBIs, walk caches included";
  EXPECT_FALSE(a.cached(s, 1, a.addr));
  EXPECT_TRUE(s.oracle().violations().empty());
}

TEST(Arm64Tlbflush, FromMaxTlbiOpsPagesOnTheWholeAsidIsFlushed) {
  Scenario s(arm64(6), "rpi4-a72-4c");
  Mapped a(s, 1100);
  s.run_on(0, testing::madvise(s.cpu(0), a.mm, a.addr, 511 * kPageSize));
  EXPECT_EQ(st(s).tlbi_vale1is, 511u);
  EXPECT_EQ(st(s).tlbi_aside1is, 0u);
  s.run_on(0, testing::madvise(s.cpu(0), a.mm, a.addr + 511 * kPageSize, 512 * kPageSize));
  EXPECT_EQ(st(s).tlbi_aside1is, 1u) << "MAX_TLBI_OPS (512) strides: flush_tlb_mm";
  EXPECT_EQ(st(s).tlbi_vale1is, 511u);
}

TEST(Arm64Tlbflush, ABroadcastTlbiCompletesOnlyAtTheIssuersDsb) {
  Scenario s(arm64(6), "rpi4-a72-4c");
  Mapped a(s, 1);
  Arm64Mmu& mmu = static_cast<Arm64Mmu&>(s.k.arch());
  s.run_on(0, mmu.__flush_tlb_page_nosync(s.cpu(0), a.mm, a.addr));
  EXPECT_TRUE(a.cached(s, 1, a.addr)) << "issued, not complete: the model applies it at the latest moment";
  s.run_on(1, mmu.dsb_ish(s.cpu(1)));
  EXPECT_TRUE(a.cached(s, 1, a.addr)) << "another CPU's DSB does not complete cpu0's TLBI";
  s.run_on(0, mmu.dsb_ish(s.cpu(0)));
  EXPECT_FALSE(a.cached(s, 1, a.addr));
}

// Reclaim on cpu0 of the first `n` pages, then the batch flush.
void reclaim(Scenario& s, Mapped& a, std::uint64_t n, TlbflushUnmapBatch& ubc) {
  for (std::uint64_t i = 0; i < n; ++i)
    s.run_on(0, testing::unmap_batched(s.cpu(0), ubc, a.mm, a.addr + i * kPageSize));
}

TEST(Arm64Tlbflush, V65ReclaimWaitsForEachPagesTlbi) {
  Scenario s(arm64(5), "rpi4-a72-4c");
  Mapped a(s, 8);
  TlbflushUnmapBatch ubc(s.k.ncpus());
  reclaim(s, a, 8, ubc);
  s.run_on(0, testing::flush_batch(s.cpu(0), ubc));
  EXPECT_EQ(st(s).tlbi_vale1is, 8u);
  EXPECT_EQ(st(s).dsb_ish, 8u) << "ptep_clear_flush: flush_tlb_page per page";
}

TEST(Arm64Tlbflush, V66ReclaimIssuesEachTlbiAndWaitsOncePerBatch) {
  Scenario s(arm64(6, true), "rpi4-a72-4c");
  Mapped a(s, 8);
  TlbflushUnmapBatch ubc(s.k.ncpus());
  reclaim(s, a, 8, ubc);
  EXPECT_EQ(st(s).tlbi_vale1is, 8u) << "arch_tlbbatch_add_pending: __flush_tlb_page_nosync";
  EXPECT_EQ(st(s).dsb_ish, 0u);
  EXPECT_TRUE(a.cached(s, 1, a.addr)) << "not complete before arch_tlbbatch_flush";
  s.run_on(0, testing::flush_batch(s.cpu(0), ubc));
  EXPECT_EQ(st(s).dsb_ish, 1u);
  EXPECT_FALSE(a.cached(s, 1, a.addr));
  EXPECT_TRUE(s.oracle().violations().empty());
}

// F10 (docs/findings.md): as posted, flush_tlb_batched_pending on another CPU is a dsb(ish) of that CPU, which leaves
// the reclaimer's TLBI incomplete; the later fix flushes the mm.
TEST(Arm64Tlbflush, BatchedPendingIsALocalDsbAsPostedAndAFlushOfTheMmWithTheFix) {
  for (const bool fixed : {false, true}) {
    Scenario s(arm64(6, true, fixed), "rpi4-a72-4c");
    Mapped a(s, 1);
    TlbflushUnmapBatch ubc(s.k.ncpus());
    reclaim(s, a, 1, ubc);
    s.run_on(1, do_batched_pending(s.cpu(1), a.mm));
    EXPECT_EQ(a.cached(s, 1, a.addr), !fixed) << (fixed ? "flush_tlb_mm" : "a local dsb(ish)");
    EXPECT_EQ(st(s).tlbi_aside1is, fixed ? 1u : 0u);
  }
}

}  // namespace
}  // namespace tlbsim::arm64
