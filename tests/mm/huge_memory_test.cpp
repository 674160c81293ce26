// Scenario tests of anonymous THPs (mm/huge_memory.cpp): the fault that maps one and the 2 MiB TLB entry it fills,
// the split and the zap with each architecture's flush, and NUMA hinting of a THP (its hinting PMD, and the hinting
// fault that migrates it or restores the PMD).
#include "mm/huge_memory.h"

#include <gtest/gtest.h>

#include "kernel/scenario.h"
#include "mm/memory.h"
#include "mm/mempolicy.h"
#include "mm/mprotect.h"
#include "model/profile.h"

namespace tlbsim::kernel {
namespace {

using testing::Scenario;

KernelConfig profile(const char* kernel) { return load_kernel_profile(kernel).config; }

sim::Task<void> enter_and_touch(PerCpu& self, MmStruct& mm, std::uint64_t addr, bool write) {
  self.cpu.local_irq_disable();
  co_await self.k.arch().switch_mm_irqs_off(self, mm);
  co_await self.cpu.local_irq_enable();
  co_await user_access(self, mm, addr, write);
}
sim::Task<void> touch(PerCpu& self, MmStruct& mm, std::uint64_t addr, bool write) {
  co_await user_access(self, mm, addr, write);
}
sim::Task<void> madvise(PerCpu& self, MmStruct& mm, std::uint64_t addr, std::uint64_t len) {
  co_await sys_madvise_dontneed(self, mm, addr, len);
}
sim::Task<void> mprotect(PerCpu& self, MmStruct& mm, std::uint64_t addr, std::uint64_t len) {
  co_await sys_mprotect(self, mm, addr, len, false);
}
sim::Task<void> mprotect_rw(PerCpu& self, MmStruct& mm, std::uint64_t addr, std::uint64_t len) {
  co_await sys_mprotect(self, mm, addr, len, true);
}
sim::Task<void> hugepage(PerCpu& self, MmStruct& mm, std::uint64_t addr, std::uint64_t len) {
  co_await sys_madvise_hugepage(self, mm, addr, len);
}

// A 2 MiB-aligned MADV_HUGEPAGE anonymous mapping of 2 MiB; cpu0 writes its first page (a THP), cpu1 reads it.
struct Thp {
  explicit Thp(const char* kernel, bool fault = true)
      : s(profile(kernel), Scenario::machine_for(profile(kernel))), mm(s.k.new_mm()) {
    x = mm.get_unmapped_area(kHpagePmdSize, kHpagePmdSize);
    mm.insert_vma(Vma{x, x + kHpagePmdSize, true, false, nullptr, 0, nullptr});
    s.oracle().set_user_context(CpuId{0}, mm.id());
    s.oracle().set_user_context(CpuId{1}, mm.id());
    s.run_on(0, hugepage(s.cpu(0), mm, x, kHpagePmdSize));
    if (!fault) return;
    s.run_on(0, enter_and_touch(s.cpu(0), mm, x, true));
    s.run_on(1, enter_and_touch(s.cpu(1), mm, x + kPageSize, false));
  }
  std::uint64_t flushes(std::uint32_t cpu) {
    const hw::TlbCounters& c = s.cpu(cpu).tlb.counters();
    return c.invlpg + c.flush_tag + c.flush_all;
  }
  std::uint64_t full_flushes(std::uint32_t cpu) {
    const hw::TlbCounters& c = s.cpu(cpu).tlb.counters();
    return c.flush_tag + c.flush_all;
  }
  Scenario s;
  MmStruct& mm;
  std::uint64_t x = 0;
};

TEST(Thp, AWriteFaultInAHugepageRangeMapsATwoMegabyteEntry) {
  Thp t("linux-6.13");
  const HugePmd* h = t.mm.pgd.huge_pmd(vpn_of(t.x));
  ASSERT_NE(h, nullptr);
  EXPECT_TRUE(h->writable);
  EXPECT_EQ(t.s.k.frames().use(h->deposit), FrameUse::kPageTable) << "a PTE table deposited for the split";
  EXPECT_EQ(t.mm.pgd.table(vpn_of(t.x)), nullptr);
  const auto e = t.s.cpu(1).tlb.peek(Asid{t.s.cpu(1).hw_tag}, vpn_of(t.x + 300 * kPageSize));
  ASSERT_TRUE(e.has_value()) << "cpu1's read filled a 2 MiB entry that covers every page";
  EXPECT_EQ(e->pfn, Pfn{h->page.get() + 300});
  EXPECT_EQ(t.mm.pgd.lookup(vpn_of(t.x + 5 * kPageSize))->pfn, Pfn{h->page.get() + 5});
  EXPECT_TRUE(t.s.oracle().violations().empty());
}

TEST(Thp, ARangeWithoutMadvHugepageMapsBasePages) {
  Vma plain{0, kHpagePmdSize, true, false, nullptr, 0, nullptr};
  EXPECT_FALSE(thp_fault_eligible(plain, 0));
  plain.hugepage = true;
  EXPECT_TRUE(thp_fault_eligible(plain, 4096));
  plain.end = kHpagePmdSize - kPageSize;
  EXPECT_FALSE(thp_fault_eligible(plain, 4096)) << "the 2 MiB must lie inside the VMA";
}

// A read fault in a THP range maps the huge zero page by a read-only PMD (v3.8+), shared and never freed; v3.3 maps
// the small zero page by a PTE.
TEST(Thp, AReadFaultMapsTheHugeZeroPageExceptInV33) {
  for (const char* kernel : {"linux-4.14-ppc", "linux-5.17", "linux-6.13", "linux-6.6-arm64"}) {
    Thp t(kernel, false);
    t.s.run_on(1, enter_and_touch(t.s.cpu(1), t.mm, t.x + kPageSize, false));
    const HugePmd* h = t.mm.pgd.huge_pmd(vpn_of(t.x));
    ASSERT_NE(h, nullptr) << kernel;
    EXPECT_TRUE(h->zero && !h->writable) << kernel;
    EXPECT_EQ(t.s.k.frames().use(h->page), FrameUse::kZeroPage) << kernel;
    EXPECT_EQ(h->page, t.s.k.frames().huge_zero_page()) << kernel << ": one huge zero page for every PMD";
    EXPECT_FALSE(t.mm.pgd.lookup(vpn_of(t.x))->anon) << kernel;
    const auto e = t.s.cpu(1).tlb.peek(Asid{t.s.cpu(1).hw_tag}, vpn_of(t.x + 100 * kPageSize));
    ASSERT_TRUE(e.has_value()) << kernel << ": one read-only 2 MiB entry covers the range";
    EXPECT_FALSE(e->writable) << kernel;
  }
  Thp old("linux-3.3", false);
  old.s.run_on(1, enter_and_touch(old.s.cpu(1), old.mm, old.x, false));
  EXPECT_EQ(old.mm.pgd.huge_pmd(vpn_of(old.x)), nullptr);
  EXPECT_EQ(old.mm.pgd.lookup(vpn_of(old.x))->pfn, Pfn{0}) << "the small zero page";
}

// A write to the huge zero page, which cpu0 and cpu1 both cache: before v5.8 do_huge_pmd_wp_page allocates a THP and
// replaces the PMD with its flush; from v5.8 (3917c80280c9) the PMD is split into small zero pages (flushed) and the
// written page alone is copied. cpu1 caches neither the huge zero entry nor a stale page afterwards.
TEST(Thp, AWriteToTheHugeZeroPageMakesATHPBeforeV58AndOnePageFrom) {
  for (const auto& [kernel, splits] : {std::pair{"linux-4.14-ppc", false}, std::pair{"linux-5.17", true},
                                       std::pair{"linux-6.13", true}, std::pair{"linux-6.2-ppc", true}}) {
    Thp t(kernel, false);
    t.mm.mm_users.value = 2;  // two threads (powerpc v6.2 would trim cpu1 from a single-threaded mm)
    t.s.run_on(0, enter_and_touch(t.s.cpu(0), t.mm, t.x, false));
    t.s.run_on(1, enter_and_touch(t.s.cpu(1), t.mm, t.x + kPageSize, false));
    const Pfn zero = t.mm.pgd.huge_pmd(vpn_of(t.x))->page;
    t.s.run_on(0, touch(t.s.cpu(0), t.mm, t.x + kPageSize, true));
    EXPECT_EQ(huge_zero_era(profile(kernel)).wp_splits, splits) << kernel;
    const auto written = t.mm.pgd.lookup(vpn_of(t.x + kPageSize));
    ASSERT_TRUE(written.has_value()) << kernel;
    EXPECT_TRUE(written->writable && written->anon) << kernel;
    if (splits) {
      EXPECT_EQ(t.mm.pgd.huge_pmd(vpn_of(t.x)), nullptr) << kernel;
      ASSERT_NE(t.mm.pgd.table(vpn_of(t.x)), nullptr) << kernel;
      EXPECT_EQ(t.mm.pgd.lookup(vpn_of(t.x + 2 * kPageSize))->pfn, Pfn{0}) << kernel << ": the rest is zero pages";
    } else {
      const HugePmd* h = t.mm.pgd.huge_pmd(vpn_of(t.x));
      ASSERT_NE(h, nullptr) << kernel;
      EXPECT_TRUE(!h->zero && h->writable) << kernel << ": a new THP";
    }
    const auto e = t.s.cpu(1).tlb.peek(Asid{t.s.cpu(1).hw_tag}, vpn_of(t.x + kPageSize));
    EXPECT_TRUE(!e || e->pfn != Pfn{zero.get() + 1}) << kernel << ": cpu1's huge zero entry was flushed";
    EXPECT_EQ(t.s.k.frames().use(zero), FrameUse::kZeroPage) << kernel << ": the huge zero page stays";
    t.s.run_on(1, touch(t.s.cpu(1), t.mm, t.x + kPageSize, false));
    EXPECT_TRUE(t.s.oracle().violations().empty()) << kernel;
  }
}

// The huge zero page zapped whole frees only its deposited table; mprotect(PROT_WRITE) leaves it read-only.
TEST(Thp, ZappingTheHugeZeroPageFreesOnlyItsDepositedTable) {
  Thp t("linux-6.13", false);
  t.s.run_on(1, enter_and_touch(t.s.cpu(1), t.mm, t.x, false));
  t.s.run_on(0, mprotect(t.s.cpu(0), t.mm, t.x, kHpagePmdSize));
  t.s.run_on(0, mprotect_rw(t.s.cpu(0), t.mm, t.x, kHpagePmdSize));
  ASSERT_NE(t.mm.pgd.huge_pmd(vpn_of(t.x)), nullptr);
  EXPECT_FALSE(t.mm.pgd.huge_pmd(vpn_of(t.x))->writable) << "can_change_pmd_writable: not an anonymous page";
  const std::uint64_t frees = t.s.k.frames().frees();
  t.s.run_on(0, madvise(t.s.cpu(0), t.mm, t.x, kHpagePmdSize));
  EXPECT_EQ(t.mm.pgd.huge_pmd(vpn_of(t.x)), nullptr);
  EXPECT_EQ(t.s.k.frames().frees() - frees, 1U) << "the deposited table only";
  EXPECT_TRUE(t.s.oracle().violations().empty());
}

// x86: the split's pmdp_invalidate is flush_tlb_range at PAGE_SIZE stride (the whole mm); the zap of the page
// then frees it. powerpc radix flushes 2 MiB pages over the range.
TEST(Thp, MadvisingOnePageSplitsTheThpAndFreesOnlyThatPage) {
  for (const char* kernel : {"linux-5.17", "linux-6.13", "linux-4.14-ppc", "linux-6.2-ppc"}) {
    Thp t(kernel);
    const Pfn page = t.mm.pgd.huge_pmd(vpn_of(t.x))->page;
    const std::uint64_t frees = t.s.k.frames().frees();
    t.s.run_on(0, madvise(t.s.cpu(0), t.mm, t.x + kPageSize, kPageSize));
    EXPECT_EQ(t.mm.pgd.huge_pmd(vpn_of(t.x)), nullptr) << kernel;
    ASSERT_NE(t.mm.pgd.table(vpn_of(t.x)), nullptr) << kernel;
    EXPECT_EQ(t.mm.pgd.table(vpn_of(t.x))->present, kPtesPerTable - 1) << kernel;
    EXPECT_EQ(t.mm.pgd.lookup(vpn_of(t.x + 2 * kPageSize))->pfn, Pfn{page.get() + 2});
    EXPECT_FALSE(t.mm.pgd.lookup(vpn_of(t.x + kPageSize)).has_value());
    EXPECT_EQ(t.s.k.frames().frees() - frees, 1u) << kernel << ": the zapped page alone";
    EXPECT_FALSE(t.s.cpu(1).tlb.peek(Asid{t.s.cpu(1).hw_tag}, vpn_of(t.x + kPageSize)).has_value()) << kernel;
    if (profile(kernel).arch == Arch::kX86) {
      EXPECT_GT(t.full_flushes(1), 0u) << kernel << ": a full flush on x86";
    }
    EXPECT_TRUE(t.s.oracle().violations().empty()) << kernel;
  }
}

// v5.15+ x86: a gather that cleared only a THP's PMD flushes at PMD stride: one INVLPG, not the whole mm.
TEST(Thp, ZappingAWholeThpOnX86FlushesOneTwoMegabytePage) {
  Thp t("linux-6.13");
  const std::uint64_t full = t.full_flushes(1), frees = t.s.k.frames().frees();
  t.s.run_on(0, madvise(t.s.cpu(0), t.mm, t.x, kHpagePmdSize));
  EXPECT_EQ(t.mm.pgd.huge_pmd(vpn_of(t.x)), nullptr);
  EXPECT_EQ(t.full_flushes(1), full) << "no full flush";
  EXPECT_FALSE(t.s.cpu(1).tlb.peek(Asid{t.s.cpu(1).hw_tag}, vpn_of(t.x + 100 * kPageSize)).has_value());
  EXPECT_EQ(t.s.k.frames().frees() - frees, kHpagePmdNr + 1) << "the THP's 512 pages and the deposited table";
  EXPECT_TRUE(t.s.oracle().violations().empty());
}

TEST(Thp, ZappingAWholeThpOnPowerpcFlushesItAtOnceAndAgainByTheGather) {
  for (const char* kernel : {"linux-4.14-ppc", "linux-6.2-ppc"}) {
    Thp t(kernel);
    const std::uint64_t before = t.flushes(0);
    t.s.run_on(0, madvise(t.s.cpu(0), t.mm, t.x, kHpagePmdSize));
    EXPECT_EQ(t.mm.pgd.huge_pmd(vpn_of(t.x)), nullptr) << kernel;
    EXPECT_GT(t.flushes(0), before) << kernel;
    EXPECT_TRUE(t.s.oracle().violations().empty()) << kernel;
  }
}

TEST(Thp, MprotectingAThpSplitsItAndWriteProtectsThePtes) {
  Thp t("linux-6.13");
  t.s.run_on(0, mprotect(t.s.cpu(0), t.mm, t.x, kPageSize));
  EXPECT_EQ(t.mm.pgd.huge_pmd(vpn_of(t.x)), nullptr);
  EXPECT_FALSE(t.mm.pgd.lookup(vpn_of(t.x))->writable);
  EXPECT_TRUE(t.mm.pgd.lookup(vpn_of(t.x + kPageSize))->writable);
  t.s.run_on(1, touch(t.s.cpu(1), t.mm, t.x + kPageSize, true));
  EXPECT_TRUE(t.s.oracle().violations().empty());
}

// change_huge_pmd: a THP the range covers whole stays a THP. Before v5.19 pmdp_invalidate flushes it at once (on x86
// the whole mm) and change_protection_range flushes again; from v5.19 x86 defers one PMD-stride flush to the gather.
// Making it writable again: v6.0+ makes an exclusive anonymous THP writable at once; v5.17 leaves it read-only
// until the next write reuses it (do_huge_pmd_wp_page).
TEST(Thp, MprotectingAWholeThpChangesItsPmdWithTheErasFlush) {
  for (const auto& [kernel, full_flushes] : {std::pair{"linux-5.17", 2u}, std::pair{"linux-6.13", 0u}}) {
    Thp t(kernel);
    const std::uint64_t full = t.full_flushes(1);
    t.s.run_on(0, mprotect(t.s.cpu(0), t.mm, t.x, kHpagePmdSize));
    const HugePmd* h = t.mm.pgd.huge_pmd(vpn_of(t.x));
    ASSERT_NE(h, nullptr) << kernel;
    EXPECT_FALSE(h->writable) << kernel;
    EXPECT_EQ(t.full_flushes(1) - full, full_flushes) << kernel;
    EXPECT_FALSE(t.s.cpu(1).tlb.peek(Asid{t.s.cpu(1).hw_tag}, vpn_of(t.x + kPageSize)).has_value()) << kernel;
    t.s.run_on(0, mprotect_rw(t.s.cpu(0), t.mm, t.x, kHpagePmdSize));
    EXPECT_EQ(t.mm.pgd.huge_pmd(vpn_of(t.x))->writable, std::string(kernel) == "linux-6.13") << kernel;
    t.s.run_on(1, touch(t.s.cpu(1), t.mm, t.x + kPageSize, true));
    EXPECT_TRUE(t.mm.pgd.huge_pmd(vpn_of(t.x))->writable) << kernel << ": the write reused the THP";
    EXPECT_TRUE(t.s.oracle().violations().empty()) << kernel;
  }
}

// ---- NUMA hinting of a THP.

sim::Task<void> prot_numa(PerCpu& self, MmStruct& mm, std::uint64_t start, std::uint64_t end, std::uint64_t& n) {
  co_await mm.mmap_lock.down_read(self);
  n = co_await change_prot_numa(self, mm, start, end);
  co_await mm.mmap_lock.up_read(self);
  self.k.events().on_syscall_return(self.id);
}

// The two-socket machine of the profile's architecture (arm64's small built-in machine has one node).
const char* two_node_machine(const char* kernel) {
  return profile(kernel).arch == Arch::kArm64 ? "kunpeng920-2s64c" : Scenario::machine_for(profile(kernel));
}

// Two threads of one mm: cpu0 (node 0) has written a THP (on node 0), a CPU of node 1 (`far`) has read it.
struct ThpHinting {
  explicit ThpHinting(const char* kernel)
      : s(profile(kernel), two_node_machine(kernel)), mm(s.k.new_mm()), far(s.sys.topology().cpu_at(1, 0, 0).get()) {
    mm.mm_users.value = 2;
    x = mm.get_unmapped_area(kHpagePmdSize, kHpagePmdSize);
    mm.insert_vma(Vma{x, x + kHpagePmdSize, true, false, nullptr, 0, nullptr});
    s.oracle().set_user_context(CpuId{0}, mm.id());
    s.oracle().set_user_context(CpuId{far}, mm.id());
    s.run_on(0, hugepage(s.cpu(0), mm, x, kHpagePmdSize));
    s.run_on(0, enter_and_touch(s.cpu(0), mm, x, true));
    s.run_on(far, enter_and_touch(s.cpu(far), mm, x + kPageSize, false));
    thp = mm.pgd.huge_pmd(vpn_of(x))->page;
  }
  std::uint64_t scan() {
    std::uint64_t n = 0;
    s.run_on(0, prot_numa(s.cpu(0), mm, x, x + kHpagePmdSize, n));
    return n;
  }
  const HugePmd& pmd() { return *mm.pgd.huge_pmd(vpn_of(x)); }
  Scenario s;
  MmStruct& mm;
  std::uint32_t far;
  std::uint64_t x = 0;
  Pfn thp;
};

// change_huge_pmd with MM_CP_PROT_NUMA: the THP's PMD becomes a PROT_NONE hinting PMD that keeps its write bit, and
// the far CPU's 2 MiB entry is flushed (at once before v5.19 and on powerpc and arm64; by the gather on x86 v5.19+).
// A PMD that already is one is skipped.
TEST(ThpNuma, ChangeProtNumaMakesAHintingPmdAndFlushesIt) {
  for (const char* kernel : {"linux-4.14-ppc", "linux-5.17", "linux-6.13", "linux-6.2-ppc", "linux-6.6-arm64"}) {
    ThpHinting t(kernel);
    ASSERT_TRUE(t.s.cpu(t.far).tlb.peek(Asid{t.s.cpu(t.far).hw_tag}, vpn_of(t.x + kPageSize)).has_value()) << kernel;
    EXPECT_EQ(t.scan(), kHpagePmdNr) << kernel;
    EXPECT_TRUE(t.pmd().protnone) << kernel;
    EXPECT_TRUE(t.pmd().writable) << kernel << ": the write bit is kept for the fault to restore";
    EXPECT_EQ(t.pmd().page, t.thp) << kernel;
    EXPECT_TRUE(t.mm.pgd.lookup(vpn_of(t.x))->protnone) << kernel;
    EXPECT_FALSE(t.s.cpu(t.far).tlb.peek(Asid{t.s.cpu(t.far).hw_tag}, vpn_of(t.x + kPageSize)).has_value()) << kernel;
    EXPECT_EQ(t.scan(), 0u) << kernel << ": already a hinting PMD";
    EXPECT_TRUE(t.s.oracle().violations().empty()) << kernel;
  }
}

// The far CPU's write takes the hinting fault; its node is the first recorded, so the THP moves to node 1, whole:
// a new THP on node 1 under the same PMD (the deposit kept), writable, the old 512 pages freed. v4.14 copies it with
// the old PMD still PROT_NONE and replaces it under the PMD lock (migrate_misplaced_transhuge_page); v5.14+ goes
// through a PMD migration entry (set_pmd_migration_entry, remove_migration_pmd).
TEST(ThpNuma, AFirstFaultFromTheOtherNodeMigratesTheThpThere) {
  for (const char* kernel : {"linux-4.14-ppc", "linux-5.17", "linux-6.13", "linux-6.2-ppc", "linux-6.6-arm64"}) {
    ThpHinting t(kernel);
    const Pfn deposit = t.pmd().deposit;
    t.scan();
    const std::uint64_t frees = t.s.k.frames().frees();
    t.s.run_on(t.far, touch(t.s.cpu(t.far), t.mm, t.x + kPageSize, true));
    EXPECT_NE(t.pmd().page, t.thp) << kernel;
    EXPECT_EQ(t.s.k.frames().nid(t.pmd().page), 1) << kernel;
    EXPECT_FALSE(t.pmd().protnone) << kernel;
    EXPECT_FALSE(t.pmd().migration) << kernel;
    EXPECT_TRUE(t.pmd().writable) << kernel;
    EXPECT_EQ(t.pmd().deposit, deposit) << kernel;
    EXPECT_EQ(t.s.k.frames().frees() - frees, kHpagePmdNr) << kernel << ": the old THP freed";
    EXPECT_EQ(t.s.k.frames().use(t.thp), FrameUse::kFree) << kernel;
    EXPECT_FALSE(t.s.k.frames().page_locked(t.thp)) << kernel;
    EXPECT_EQ(t.s.k.frames().last_nid(t.pmd().page), 1) << kernel << ": the copy keeps the last fault's node";
    t.s.run_on(0, touch(t.s.cpu(0), t.mm, t.x, true));
    EXPECT_TRUE(t.s.oracle().violations().empty()) << kernel;
  }
}

// The flushes of cpu0's TLB while the far CPU's hinting fault migrates the THP, with a scan's flush pending on the
// mm (tlb_flush_pending raised, as change_protection_range leaves it while it runs) or not. Before v5.15
// do_huge_pmd_numa_page flushes the 2 MiB under the PMD lock first when one is pending; from v5.15 only the migration
// flushes (one flush of the old PMD in every era: pmdp_huge_clear_flush_notify before v5.14, set_pmd_migration_entry's
// pmdp_invalidate from it).
TEST(ThpNuma, TheHintingFaultFlushesForAPendingScanOnlyBeforeV515) {
  for (const auto& [kernel, extra] : {std::pair{"linux-4.14-ppc", 1u}, std::pair{"linux-5.17", 0u},
                                      std::pair{"linux-6.13", 0u}, std::pair{"linux-6.2-ppc", 0u}}) {
    std::uint64_t flushes[2] = {};
    for (int pending = 0; pending < 2; ++pending) {
      ThpHinting t(kernel);
      t.scan();
      t.mm.tlb_flush_pending.value = pending;
      const hw::TlbCounters before = t.s.cpu(0).tlb.counters();
      t.s.run_on(t.far, touch(t.s.cpu(t.far), t.mm, t.x + kPageSize, true));
      const hw::TlbCounters& after = t.s.cpu(0).tlb.counters();
      flushes[pending] =
          (after.invlpg - before.invlpg) + (after.flush_tag - before.flush_tag) + (after.flush_all - before.flush_all);
      EXPECT_NE(t.pmd().page, t.thp) << kernel << ": migrated";
    }
    EXPECT_GT(flushes[0], 0u) << kernel << ": the migration's flush reaches cpu0";
    EXPECT_EQ(flushes[1] - flushes[0], extra) << kernel;
  }
}

// cpu0's fault, on the THP's own node, does not move it: the PMD is restored in place (pmd_modify with the VMA's
// protection, the saved write bit), no page allocated or freed; the far CPU's later fault then finds the last fault
// from another node and does not migrate either (the two-stage filter).
TEST(ThpNuma, AThpFaultedOnItsOwnNodeStaysAndItsPmdIsRestored) {
  for (const char* kernel : {"linux-4.14-ppc", "linux-5.17", "linux-6.13", "linux-6.2-ppc", "linux-6.6-arm64"}) {
    ThpHinting t(kernel);
    t.scan();
    const std::uint64_t allocated = t.s.k.frames().allocated(), frees = t.s.k.frames().frees();
    t.s.run_on(0, touch(t.s.cpu(0), t.mm, t.x, true));
    EXPECT_EQ(t.pmd().page, t.thp) << kernel;
    EXPECT_FALSE(t.pmd().protnone) << kernel;
    EXPECT_TRUE(t.pmd().writable) << kernel;
    EXPECT_FALSE(t.s.k.frames().page_locked(t.thp)) << kernel;
    t.scan();
    t.s.run_on(t.far, touch(t.s.cpu(t.far), t.mm, t.x + kPageSize, true));
    EXPECT_EQ(t.pmd().page, t.thp) << kernel << ": last faulted from node 0, so not migrated yet";
    EXPECT_EQ(t.s.k.frames().allocated(), allocated) << kernel;
    EXPECT_EQ(t.s.k.frames().frees(), frees) << kernel;
    EXPECT_TRUE(t.s.oracle().violations().empty()) << kernel;
  }
}

}  // namespace
}  // namespace tlbsim::kernel
