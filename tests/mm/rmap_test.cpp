// Scenario tests of the batched reclaim flush (mm/rmap.c), of the anonymous rmap walk's order, and of the oracle's
// free and reuse checks.
#include "mm/rmap.h"

#include <gtest/gtest.h>

#include "arch/x86/mm/tlb.h"
#include "arch/x86/options.h"
#include "kernel/options.h"
#include "kernel/scenario.h"
#include "mm/memory.h"
#include "model/profile.h"

namespace tlbsim::kernel {
namespace {

using testing::Scenario;

sim::Task<void> do_switch(PerCpu& self, MmStruct& mm) { co_await x86::switch_mm(self, mm); }
sim::Task<void> do_mmap_anon(PerCpu& self, MmStruct& mm, std::uint64_t len, std::uint64_t& addr) {
  addr = co_await sys_mmap(self, mm, len, false, nullptr, 0);
}
sim::Task<void> do_access(PerCpu& self, MmStruct& mm, std::uint64_t addr, bool write) {
  co_await user_access(self, mm, addr, write);
}
sim::Task<void> do_unmap(PerCpu& self, TlbflushUnmapBatch& ubc, MmStruct& mm, std::uint64_t addr, bool batch) {
  const auto pte = mm.pgd.lookup(vpn_of(addr));
  co_await try_to_unmap_one(self, ubc, mm, vpn_of(addr), pte ? pte->pfn : Pfn{0}, batch);
}
sim::Task<void> do_flush(PerCpu& self, TlbflushUnmapBatch& ubc) { co_await try_to_unmap_flush(self, ubc); }
sim::Task<void> do_lazy(PerCpu& self) { co_await x86::enter_lazy_tlb(self); }
sim::Task<void> do_munmap(PerCpu& self, MmStruct& mm, std::uint64_t addr, std::uint64_t len) {
  co_await sys_munmap(self, mm, addr, len);
}

struct TwoCpus {
  explicit TwoCpus(KernelConfig cfg = {}) : s(cfg), mm(s.k.new_mm()), ubc(s.k.ncpus()) {
    s.run_on(0, do_switch(s.cpu(0), mm));
    s.run_on(1, do_switch(s.cpu(1), mm));
    s.oracle().set_user_context(CpuId{0}, mm.id());
    s.oracle().set_user_context(CpuId{1}, mm.id());
    s.run_on(0, do_mmap_anon(s.cpu(0), mm, 4 << 20, addr));
    s.run_on(0, do_access(s.cpu(0), mm, addr, true));
    s.run_on(1, do_access(s.cpu(1), mm, addr, false));  // cpu1 caches the translation
    frame = mm.pgd.lookup(vpn_of(addr))->pfn;
  }
  Scenario s;
  MmStruct& mm;
  TlbflushUnmapBatch ubc;
  std::uint64_t addr = 0;
  Pfn frame;
};

TEST(Rmap, ReclaimDefersTheFlushWhileAnotherCpuIsInTheMask) {
  TwoCpus t;
  t.s.run_on(0, do_unmap(t.s.cpu(0), t.ubc, t.mm, t.addr, true));
  EXPECT_TRUE(t.ubc.flush_required);
  EXPECT_TRUE(t.mm.tlb_flush_batched.value);
  EXPECT_EQ(t.s.k.counters().irq_tlb_count[1], 0u) << "deferred: no IPI yet";
  EXPECT_TRUE(t.s.cpu(1).tlb.maps_pfn(Asid{static_cast<std::uint16_t>(t.s.cpu(1).tlb_tag())}, t.frame));
  t.s.run_on(0, do_flush(t.s.cpu(0), t.ubc));
  EXPECT_EQ(t.s.k.counters().irq_tlb_count[1], 1u);
  EXPECT_FALSE(t.ubc.flush_required);
  t.s.k.frames().free(t.frame);  // shrink_page_list frees after try_to_unmap_flush
  t.s.run_on(1, do_access(t.s.cpu(1), t.mm, t.addr, false));
  EXPECT_TRUE(t.s.oracle().violations().empty());
}

// Seed 000 as posted returns early from flush_tlb_func when f->new_tlb_gen <= local_tlb_gen; the batched flush
// carries new_tlb_gen = 0, so every target skips it and keeps the stale translation (docs/findings.md F1).
void batched_flush_with_seed000(bool fixed, bool expect_violation) {
  KernelConfig cfg;
  cfg.set(x86::Option::avoid_mm_tlb_gen_read, true);
  cfg.set(x86::Option::ignore_invalid_tlb_gen, fixed);
  TwoCpus t(cfg);
  t.s.run_on(0, do_unmap(t.s.cpu(0), t.ubc, t.mm, t.addr, true));
  t.s.run_on(0, do_flush(t.s.cpu(0), t.ubc));
  EXPECT_EQ(t.s.k.counters().irq_tlb_count[1], 1u) << "the IPI is sent either way";
  t.s.k.frames().free(t.frame);
  t.s.run_on(1, do_access(t.s.cpu(1), t.mm, t.addr, false));
  EXPECT_EQ(!t.s.oracle().violations().empty(), expect_violation);
}

TEST(Rmap, Seed000AsPostedSkipsTheBatchedFlush) { batched_flush_with_seed000(false, true); }
TEST(Rmap, Seed000WithTheZeroGenerationFixFlushes) { batched_flush_with_seed000(true, false); }

TEST(Rmap, WithoutBatchingTheFlushIsImmediate) {
  TwoCpus t;
  t.s.run_on(0, do_unmap(t.s.cpu(0), t.ubc, t.mm, t.addr, false));
  EXPECT_FALSE(t.ubc.flush_required);
  EXPECT_EQ(t.s.k.counters().irq_tlb_count[1], 1u);
}

TEST(Rmap, OracleCatchesAPageFreedBeforeTheBatchedFlush) {
  TwoCpus t;
  t.s.run_on(0, do_unmap(t.s.cpu(0), t.ubc, t.mm, t.addr, true));
  t.s.k.frames().free(t.frame);  // too early: cpu1 still caches the translation
  t.s.run_on(1, do_access(t.s.cpu(1), t.mm, t.addr, false));
  ASSERT_FALSE(t.s.oracle().violations().empty());
  EXPECT_NE(t.s.oracle().violations()[0].what.find("stale"), std::string::npos);
}

TEST(Rmap, OracleCatchesAFrameReusedWhileARunningCpuMapsIt) {
  TwoCpus t;
  t.s.run_on(0, do_unmap(t.s.cpu(0), t.ubc, t.mm, t.addr, true));
  t.s.k.frames().free(t.frame);
  const Pfn again = t.s.k.frames().alloc(FrameUse::kAnon);
  ASSERT_EQ(again, t.frame);
  bool cpu1 = false;
  for (const auto& v : t.s.oracle().violations()) cpu1 |= v.what.find("reused while cpu1") != std::string::npos;
  EXPECT_TRUE(cpu1);
}

void freed_tables_scenario(bool break_it, bool expect_violation) {
  KernelConfig cfg;
  if (break_it) cfg.plant(x86::Mutation::flush_skips_lazy_cpus_freeing_tables);
  TwoCpus t(cfg);
  t.s.run_on(1, do_lazy(t.s.cpu(1)));  // cpu1 runs a kernel thread, lazily keeping the mm loaded
  t.s.oracle().set_user_context(CpuId{1}, 0);
  t.s.run_on(0, do_munmap(t.s.cpu(0), t.mm, t.addr, 4 << 20));  // frees the leaf page table
  bool pwc = false;
  for (const auto& v : t.s.oracle().violations()) pwc |= v.what.find("paging-structure cache") != std::string::npos;
  EXPECT_EQ(pwc, expect_violation);
}

TEST(Rmap, FreedPageTablesMustReachLazyCpus) { freed_tables_scenario(false, false); }
TEST(Rmap, OracleCatchesLazyCpusSkippedWhenTablesAreFreed) { freed_tables_scenario(true, true); }

sim::Task<void> do_switch_any(PerCpu& self, MmStruct& mm) {
  self.cpu.local_irq_disable();
  co_await self.k.arch().switch_mm_irqs_off(self, mm);
  co_await self.cpu.local_irq_enable();
}

// rmap_walk_anon: by vm_pgoff, then by when each VMA joined the tree (v3.7+), or in link order alone (the v3.3 list);
// either way a VMA that mremap links is visited after the one it moves from, which the planted mutation reverses.
TEST(Rmap, AWalkVisitsTheVmaMremapMovesToAfterTheOldOne) {
  for (const bool mutated : {false, true}) {
    for (const char* kernel : {"linux-3.3", "linux-6.13"}) {
      KernelConfig cfg = load_kernel_profile(kernel).config;
      if (mutated) cfg.plant(Mutation::rmap_walk_newest_first);
      Scenario s(cfg);
      MmStruct& mm = s.k.new_mm();
      std::uint64_t addr = 0;
      s.run_on(0, do_switch_any(s.cpu(0), mm));
      s.run_on(0, do_mmap_anon(s.cpu(0), mm, kPageSize, addr));
      s.run_on(0, do_access(s.cpu(0), mm, addr, true));
      const Vma& old = *mm.find_vma(addr);
      // Both VMAs at once, as in the window between copy_vma and the old VMA's unmap.
      Vma moved = old;
      moved.start = mm.get_unmapped_area(kPageSize);
      moved.end = moved.start + kPageSize;
      moved.vm_lock = nullptr;
      mm.insert_vma(moved);
      const auto r = *s.k.frames().anon_rmap(mm.pgd.lookup(vpn_of(addr))->pfn);
      const std::vector<Vpn> order = rmap_walk_anon(s.cpu(0), r);
      ASSERT_EQ(order.size(), 2u);
      const Vpn first = mutated ? vpn_of(moved.start) : vpn_of(addr);
      EXPECT_EQ(order[0], first) << kernel << (mutated ? " mutated" : "");
    }
  }
}

}  // namespace
}  // namespace tlbsim::kernel
