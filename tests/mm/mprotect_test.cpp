// Scenario tests of mprotect (mm/mprotect.cpp): which release flushes how, what a write-protect does to the other
// CPU's TLB, and what a permission upgrade costs on each architecture.
#include "mm/mprotect.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string_view>
#include <utility>

#include "kernel/scenario.h"
#include "mm/memory.h"
#include "mm/rmap.h"
#include "model/options.h"
#include "model/profile.h"

namespace tlbsim::kernel {
namespace {

using testing::Scenario;

TEST(Mprotect, EachEraHasItsReleasesFlushPlacement) {
  const MprotectEra v33 = mprotect_era({3, 3}, Arch::kX86);
  EXPECT_FALSE(v33.flush_pending || v33.batched_pending || v33.mmu_gather);
  EXPECT_TRUE(v33.flush_range_always);
  const MprotectEra v414 = mprotect_era({4, 14}, Arch::kPowerpc);
  EXPECT_TRUE(v414.flush_pending && v414.batched_pending);
  EXPECT_FALSE(v414.mmu_gather || v414.flush_range_always);
  const MprotectEra v517 = mprotect_era({5, 17}, Arch::kX86);
  EXPECT_TRUE(v517.flush_pending && v517.batched_pending);
  EXPECT_FALSE(v517.mmu_gather || v517.upgrade_exclusive_anon);
  EXPECT_EQ(v517.needs_flush, PteNeedsFlush::kAlways);
  EXPECT_TRUE(mprotect_era({5, 19}, Arch::kX86).mmu_gather);
  const MprotectEra v62 = mprotect_era({6, 2}, Arch::kPowerpc);
  EXPECT_TRUE(v62.mmu_gather && v62.upgrade_exclusive_anon);
  EXPECT_EQ(v62.needs_flush, PteNeedsFlush::kPowerpcRadix);
  const MprotectEra v613 = mprotect_era({6, 13}, Arch::kX86);
  EXPECT_TRUE(v613.mmu_gather && v613.upgrade_exclusive_anon);
  EXPECT_EQ(v613.needs_flush, PteNeedsFlush::kX86);
}

sim::Task<void> enter_and_write(PerCpu& self, MmStruct& mm, std::uint64_t addr) {
  self.cpu.local_irq_disable();
  co_await self.k.arch().switch_mm_irqs_off(self, mm);
  co_await self.cpu.local_irq_enable();
  co_await user_access(self, mm, addr, true);
}
sim::Task<void> map_pages(PerCpu& self, MmStruct& mm, std::uint64_t pages, std::uint64_t& addr) {
  addr = co_await sys_mmap(self, mm, pages * kPageSize, false, nullptr, 0);
}
sim::Task<void> protect(PerCpu& self, MmStruct& mm, std::uint64_t addr, std::uint64_t len, bool writable) {
  co_await sys_mprotect(self, mm, addr, len, writable);
}
sim::Task<void> write_or_segv(PerCpu& self, MmStruct& mm, std::uint64_t addr, bool& segv) {
  try {
    co_await user_access(self, mm, addr, true);
  } catch (const Sigsegv&) {
    segv = true;
  }
}

// Two CPUs run one mm and have both written page 1 of a 3-page private anonymous mapping.
struct SharedPage {
  explicit SharedPage(const char* profile)
      : s(load_kernel_profile(profile).config,
          load_kernel_profile(profile).config.arch == Arch::kPowerpc ? "power9-2s16c-smt4" : "small-2s2c"),
        mm(s.k.new_mm()) {
    s.oracle().set_user_context(CpuId{0}, mm.id());
    s.oracle().set_user_context(CpuId{1}, mm.id());
    s.run_on(0, map_pages(s.cpu(0), mm, 3, addr));
    s.run_on(0, enter_and_write(s.cpu(0), mm, page()));
    s.run_on(1, enter_and_write(s.cpu(1), mm, page()));
  }
  std::uint64_t page() const { return addr + kPageSize; }
  bool writable_in_tlb(std::uint32_t cpu) {
    const auto e = s.cpu(cpu).tlb.peek(Asid{s.cpu(cpu).hw_tag}, vpn_of(page()));
    return e.has_value() && e->writable;
  }
  std::uint64_t remote_flushes() { return s.k.counters().get(VmTlbEvent::NR_TLB_REMOTE_FLUSH); }
  Scenario s;
  MmStruct& mm;
  std::uint64_t addr = 0;
};

TEST(Mprotect, WriteProtectFlushesTheOtherCpuAndItsNextWriteFaults) {
  for (const char* profile : {"linux-3.3", "linux-4.14-ppc", "linux-5.17", "linux-6.2-ppc", "linux-6.13"}) {
    SharedPage t(profile);
    ASSERT_TRUE(t.writable_in_tlb(1)) << profile;
    t.s.run_on(0, protect(t.s.cpu(0), t.mm, t.page(), kPageSize, false));
    EXPECT_FALSE(t.writable_in_tlb(1)) << profile << ": cpu1 still holds a writable entry after mprotect returned";
    EXPECT_FALSE(t.mm.pgd.lookup(vpn_of(t.page()))->writable) << profile;
    bool segv = false;
    t.s.run_on(1, write_or_segv(t.s.cpu(1), t.mm, t.page(), segv));
    EXPECT_TRUE(segv) << profile << ": a write to a read-only mapping is access_error's SIGSEGV";
    EXPECT_TRUE(t.s.oracle().violations().empty()) << profile;
  }
}

TEST(Mprotect, OnX86TheWriteProtectIsOneRemoteFlushRequest) {
  // flush_tlb_range before v6.0, the gather's tlb_finish_mmu from v6.0: either way one request, one IPI to cpu1.
  for (const char* profile : {"linux-3.3", "linux-5.17", "linux-6.13"}) {
    SharedPage t(profile);
    t.s.run_on(0, protect(t.s.cpu(0), t.mm, t.page(), kPageSize, false));
    EXPECT_EQ(t.remote_flushes(), 1u) << profile;
    EXPECT_EQ(t.s.k.counters().irq_tlb_count[1], 1u) << profile;
  }
}

// Reclaim on cpu0 unmaps the shared page with its flush deferred (try_to_unmap_one under TTU_BATCH_FLUSH, cpu1 in
// mm_cpumask); cpu1's TLB still holds the page writable. An mprotect that then finds no PTE to change flushes the mm
// anyway from v4.13 (change_pte_range's flush_tlb_batched_pending, 3ea277194daa), so cpu1's next write faults; the
// planted mprotect_skips_batched_pending leaves the entry, and the write goes through it.
sim::Task<void> unmap_deferred(PerCpu& self, TlbflushUnmapBatch& ubc, MmStruct& mm, std::uint64_t addr) {
  const Pfn page = mm.pgd.lookup(vpn_of(addr))->pfn;
  co_await try_to_unmap_one(self, ubc, mm, vpn_of(addr), page, true);
}

TEST(Mprotect, AnMprotectThatFindsNoPteStillFlushesReclaimsDeferredFlush) {
  for (const bool mutated : {false, true}) {
    for (const char* profile : {"linux-5.17", "linux-6.13"}) {
      KernelConfig cfg = load_kernel_profile(profile).config;
      if (mutated) set_mutation(cfg, "mprotect_skips_batched_pending", "test");
      Scenario s(cfg, "small-2s2c");
      MmStruct& mm = s.k.new_mm();
      s.oracle().set_user_context(CpuId{0}, mm.id());
      s.oracle().set_user_context(CpuId{1}, mm.id());
      std::uint64_t addr = 0;
      s.run_on(0, map_pages(s.cpu(0), mm, 1, addr));
      s.run_on(0, enter_and_write(s.cpu(0), mm, addr));
      s.run_on(1, enter_and_write(s.cpu(1), mm, addr));
      TlbflushUnmapBatch ubc(s.k.ncpus());
      s.run_on(0, unmap_deferred(s.cpu(0), ubc, mm, addr));
      ASSERT_TRUE(ubc.flush_required) << profile;
      ASSERT_TRUE(mm.tlb_flush_batched.value) << profile;
      const auto writable_in_tlb = [&] {
        const auto e = s.cpu(1).tlb.peek(Asid{s.cpu(1).hw_tag}, vpn_of(addr));
        return e.has_value() && e->writable;
      };
      ASSERT_TRUE(writable_in_tlb()) << profile;  // the deferred flush has not run
      s.run_on(1, protect(s.cpu(1), mm, addr, kPageSize, false));
      EXPECT_EQ(writable_in_tlb(), mutated) << profile;
      EXPECT_EQ(mm.tlb_flush_batched.value, mutated) << profile;
      bool segv = false;
      s.run_on(1, write_or_segv(s.cpu(1), mm, addr, segv));
      EXPECT_EQ(segv, !mutated) << profile;
      EXPECT_EQ(s.oracle().violations().empty(), !mutated) << profile;
    }
  }
}

TEST(Mprotect, AnUnchangedRangeFlushesNothing) {
  // mprotect_fixup returns at once when the flags do not change; and before v6.0, change_protection flushes only
  // when a PTE changed (pages > 0).
  for (const char* profile : {"linux-3.3", "linux-5.17", "linux-6.13"}) {
    SharedPage t(profile);
    t.s.run_on(0, protect(t.s.cpu(0), t.mm, t.page(), kPageSize, true));
    EXPECT_EQ(t.remote_flushes(), 0u) << profile;
  }
}

TEST(Mprotect, AnUntouchedPageIsFlushedOnlyByV3) {
  // v3.x's change_protection calls flush_tlb_range whatever the walk found; from v4.x only a rewritten present PTE
  // (pages > 0, then pte_needs_flush in the gather) makes a flush.
  for (const auto& [profile, requests] : {std::pair{"linux-3.3", 1u}, {"linux-5.17", 0u}, {"linux-6.13", 0u}}) {
    SharedPage t(profile);
    t.s.run_on(0, protect(t.s.cpu(0), t.mm, t.addr, kPageSize, false));  // page 0: never touched
    EXPECT_EQ(t.remote_flushes(), requests) << profile;
  }
}

TEST(Mprotect, MakingAPageWritableAgainFlushesOnX86ButNotOnPowerpcRadixFrom6_1) {
  // v5.17: the PTE stays read-only (the next write takes wp_page_reuse's fault), but the walk rewrote a present PTE,
  // so flush_tlb_range runs. v6.0+: the exclusive anonymous page's PTE becomes writable at once
  // (MM_CP_TRY_CHANGE_WRITABLE); x86's pte_needs_flush flushes any change of RW, powerpc radix's (v6.1) skips a
  // permission relaxed.
  struct Case {
    const char* profile;
    bool pte_writable;
    bool flushes;
  };
  for (const Case c :
       {Case{"linux-5.17", false, true}, Case{"linux-6.13", true, true}, Case{"linux-6.2-ppc", true, false}}) {
    SharedPage t(c.profile);
    t.s.run_on(0, protect(t.s.cpu(0), t.mm, t.page(), kPageSize, false));
    const std::uint64_t x86_requests = t.remote_flushes();
    const std::uint64_t ppc_invalidations = t.s.cpu(0).tlb.counters().invlpg + t.s.cpu(0).tlb.counters().flush_tag;
    t.s.run_on(0, protect(t.s.cpu(0), t.mm, t.page(), kPageSize, true));
    EXPECT_EQ(t.mm.pgd.lookup(vpn_of(t.page()))->writable, c.pte_writable) << c.profile;
    if (std::string_view(c.profile).ends_with("ppc")) {
      // radix flushes by tlbie, which the x86 counter does not see: count cpu0's TLB invalidations instead.
      EXPECT_EQ(t.s.cpu(0).tlb.counters().invlpg + t.s.cpu(0).tlb.counters().flush_tag > ppc_invalidations, c.flushes)
          << c.profile;
    } else {
      EXPECT_EQ(t.remote_flushes() > x86_requests, c.flushes) << c.profile;
    }
    const std::uint64_t faults = t.s.k.counters().page_faults;
    t.s.run_on(0, enter_and_write(t.s.cpu(0), t.mm, t.page()));
    EXPECT_EQ(t.s.k.counters().page_faults - faults, c.pte_writable ? 0u : 1u) << c.profile;
    EXPECT_TRUE(t.s.oracle().violations().empty()) << c.profile;
  }
}

TEST(Mprotect, AMiddlePageSplitsTheMappingInThree) {
  SharedPage t("linux-6.13");
  t.s.run_on(0, protect(t.s.cpu(0), t.mm, t.page(), kPageSize, false));
  const Vma* below = t.mm.find_vma(t.addr);
  const Vma* mid = t.mm.find_vma(t.page());
  const Vma* above = t.mm.find_vma(t.page() + kPageSize);
  ASSERT_TRUE(below && mid && above);
  EXPECT_EQ(below->end, t.page());
  EXPECT_TRUE(below->writable);
  EXPECT_EQ(mid->start, t.page());
  EXPECT_EQ(mid->end, t.page() + kPageSize);
  EXPECT_FALSE(mid->writable);
  EXPECT_EQ(above->start, t.page() + kPageSize);
  EXPECT_TRUE(above->writable);
}

TEST(Mprotect, AnUnmappedRangeIsTheCallersError) {
  SharedPage t("linux-5.17");
  EXPECT_THROW(t.s.run_on(0, protect(t.s.cpu(0), t.mm, t.addr + 3 * kPageSize, kPageSize, false)),
               std::invalid_argument);
}

}  // namespace
}  // namespace tlbsim::kernel
