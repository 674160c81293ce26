// Scenario tests pinning the modeled x86 v3.3 lazy-TLB code (leave_mm, switch_mm, the invalidate-vector flush IPI)
// and seed 003's two forms of leave_mm, on the seed's Sandy Bridge-EP machine.
#include "arch/x86/mm/tlb_v3.h"

#include <gtest/gtest.h>

#include "arch/x86/mm/mm_stats.h"
#include "arch/x86/options.h"
#include "kernel/scenario.h"
#include "mm/memory.h"

namespace tlbsim::x86::v3 {
namespace {

using kernel::kPageSize;
using testing::Scenario;

constexpr const char* kMachine = "sandybridge-ep-2s8c2t";

kernel::KernelConfig v33(bool posted = false, bool reviewed = false) {
  kernel::KernelConfig c;
  c.version = {3, 3};
  c.set(x86::Option::leave_mm_cr3_when_needed, posted);
  c.set(x86::Option::leave_mm_cr3_when_needed_test_first, reviewed);
  return c;
}

sim::Task<void> do_switch(PerCpu& self, MmStruct& mm) {
  self.cpu.local_irq_disable();
  co_await switch_mm(self, mm);
  co_await self.cpu.local_irq_enable();
}
sim::Task<void> do_lazy(PerCpu& self) { co_await enter_lazy_tlb(self); }
// The idle driver's call (intel_idle on a CPUIDLE_FLAG_TLB_FLUSHED state), through the ArchMmu hook.
sim::Task<void> do_idle_leave(PerCpu& self) { co_await self.k.arch().leave_mm(self); }
sim::Task<void> do_flush_mm(PerCpu& self, MmStruct& mm) { co_await flush_tlb_mm(self, mm); }
sim::Task<void> do_flush_page(PerCpu& self, MmStruct& mm, std::uint64_t va) { co_await flush_tlb_page(self, mm, va); }
sim::Task<void> do_flush_all(PerCpu& self) { co_await flush_tlb_all(self); }
sim::Task<void> do_mmap_anon(PerCpu& self, MmStruct& mm, std::uint64_t len, std::uint64_t& addr) {
  addr = co_await kernel::sys_mmap(self, mm, len, false, nullptr, 0);
}
sim::Task<void> do_access(PerCpu& self, MmStruct& mm, std::uint64_t addr, bool write) {
  co_await kernel::user_access(self, mm, addr, write);
}
sim::Task<void> do_madvise(PerCpu& self, MmStruct& mm, std::uint64_t addr, std::uint64_t len) {
  co_await kernel::sys_madvise_dontneed(self, mm, addr, len);
}

TEST(X86TlbV3, FlushIpiToALazyCpuMakesItLeaveTheMm) {
  Scenario s(v33(), kMachine);
  MmStruct& mm = s.k.new_mm();
  s.run_on(0, do_switch(s.cpu(0), mm));
  s.run_on(1, do_switch(s.cpu(1), mm));
  s.run_on(1, do_lazy(s.cpu(1)));
  EXPECT_EQ(x86::cpu_tlbstate(s.cpu(1)).state, TLBSTATE_LAZY);
  ASSERT_TRUE(mm.cpumask.peek().test(CpuId{1})) << "a lazy CPU stays in mm_cpumask";
  EXPECT_EQ(x86::mm_stats(s.k).cr3_switch_mm, 2u);

  s.run_on(0, do_flush_mm(s.cpu(0), mm));
  EXPECT_EQ(s.k.counters().irq_tlb_count[1], 1u);
  EXPECT_EQ(s.k.counters().irq_tlb_count[0], 0u);
  EXPECT_EQ(x86::mm_stats(s.k).cr3_flush, 1u) << "cpu0 flushed itself with a CR3 rewrite";
  EXPECT_EQ(s.cpu(1).cr3_mm, &s.k.init_mm()) << "the lazy CPU loaded swapper_pg_dir";
  EXPECT_EQ(x86::cpu_tlbstate(s.cpu(1)).active_mm, &mm) << "leave_mm keeps active_mm";
  EXPECT_FALSE(mm.cpumask.peek().test(CpuId{1}));
  EXPECT_EQ(x86::mm_stats(s.k).cr3_to_init_mm, 1u);
  EXPECT_TRUE(flush_globals(s.cpu(0)).flush_state[flush_globals(s.cpu(0)).tlb_vector_offset[0]].flush_cpumask.empty());

  s.run_on(0, do_flush_mm(s.cpu(0), mm));
  EXPECT_EQ(s.k.counters().irq_tlb_count[1], 1u) << "after leave_mm no flush IPI reaches it";
}

TEST(X86TlbV3, ActiveCpuFlushesOnePageOrEverything) {
  Scenario s(v33(), kMachine);
  MmStruct& mm = s.k.new_mm();
  s.run_on(0, do_switch(s.cpu(0), mm));
  s.run_on(17, do_switch(s.cpu(17), mm));  // the other socket
  s.run_on(0, do_flush_page(s.cpu(0), mm, 1ull << 32));
  EXPECT_EQ(s.k.counters().irq_tlb_count[17], 1u);
  EXPECT_EQ(s.cpu(17).tlb.counters().invlpg, 1u);
  EXPECT_EQ(s.cpu(0).tlb.counters().invlpg, 1u);
  EXPECT_EQ(x86::mm_stats(s.k).cr3_flush, 0u);
  s.run_on(0, do_flush_mm(s.cpu(0), mm));
  EXPECT_EQ(s.k.counters().irq_tlb_count[17], 2u);
  EXPECT_EQ(x86::mm_stats(s.k).cr3_flush, 2u) << "both CPUs rewrite CR3";
  EXPECT_EQ(s.cpu(17).cr3_mm, &mm);
  EXPECT_EQ(s.k.counters().ipis_sent, 2u);
}

TEST(X86TlbV3, EachCpuOfTheSeedMachineHasItsOwnVectorAndNoLock) {
  Scenario s(v33(), kMachine);
  const FlushGlobals& g = flush_globals(s.cpu(0));
  ASSERT_EQ(g.tlb_vector_offset.size(), 32u);
  EXPECT_LE(g.nr_cpu_ids, NUM_INVALIDATE_TLB_VECTORS) << "nr_cpu_ids <= NUM_INVALIDATE_TLB_VECTORS: no tlbstate_lock";
  std::vector<bool> used(NUM_INVALIDATE_TLB_VECTORS, false);
  for (std::uint32_t c = 0; c < 32; ++c) {
    EXPECT_FALSE(used[g.tlb_vector_offset[c]]) << "cpu" << c;
    used[g.tlb_vector_offset[c]] = true;
    EXPECT_EQ(g.tlb_vector_offset[c] / 16, s.k.sys().topology().socket_of(CpuId{c})) << "node " << c;
  }
}

// cpu1 runs mm, goes lazy, and the idle driver calls leave_mm twice (two deep C-state entries).
struct TwoLeaves {
  explicit TwoLeaves(kernel::KernelConfig cfg) : s(cfg, kMachine), mm(s.k.new_mm()) {
    s.run_on(1, do_switch(s.cpu(1), mm));
    s.run_on(1, do_lazy(s.cpu(1)));
    s.run_on(1, do_idle_leave(s.cpu(1)));
    first_cr3 = x86::mm_stats(s.k).cr3_to_init_mm;
    first_bit = mm.cpumask.peek().test(CpuId{1});
    before = s.sys.coherence().stats(mm.cpumask.line_of(CpuId{1}));
    s.run_on(1, do_idle_leave(s.cpu(1)));
    after = s.sys.coherence().stats(mm.cpumask.line_of(CpuId{1}));
  }
  Scenario s;
  MmStruct& mm;
  std::uint64_t first_cr3 = 0;
  bool first_bit = true;
  hw::LineStats before, after;
};

TEST(X86TlbV3, BeforeSeed003EveryLeaveMmReloadsCr3) {
  TwoLeaves t(v33());
  EXPECT_EQ(t.first_cr3, 1u);
  EXPECT_FALSE(t.first_bit);
  EXPECT_EQ(x86::mm_stats(t.s.k).cr3_to_init_mm, 2u) << "the second leave_mm loads swapper_pg_dir again";
  EXPECT_EQ(t.after.rmws, t.before.rmws + 1) << "and clears the already clear bit with a locked RMW";
  EXPECT_EQ(t.after.loads, t.before.loads);
}

TEST(X86TlbV3, Seed003AsPostedSkipsTheCr3LoadButNotTheRmw) {
  TwoLeaves t(v33(true, false));
  EXPECT_EQ(t.first_cr3, 1u);
  EXPECT_FALSE(t.first_bit);
  EXPECT_EQ(x86::mm_stats(t.s.k).cr3_to_init_mm, 1u);
  EXPECT_EQ(t.after.rmws, t.before.rmws + 1) << "test_and_clear is a locked RMW even when the bit is clear";
}

TEST(X86TlbV3, Seed003AsMergedOnlyReadsTheClearBit) {
  TwoLeaves t(v33(false, true));
  EXPECT_EQ(t.first_cr3, 1u);
  EXPECT_FALSE(t.first_bit);
  EXPECT_EQ(x86::mm_stats(t.s.k).cr3_to_init_mm, 1u);
  EXPECT_EQ(t.after.rmws, t.before.rmws) << "no RMW on mm_cpumask";
  EXPECT_EQ(t.after.loads, t.before.loads + 1) << "only cpumask_test_cpu's load";
}

TEST(X86TlbV3, SwitchingBackAfterLeaveMmReloadsCr3ButNotWithoutIt) {
  Scenario s(v33(false, true), kMachine);
  MmStruct& mm = s.k.new_mm();
  s.run_on(1, do_switch(s.cpu(1), mm));
  s.run_on(1, do_lazy(s.cpu(1)));
  s.run_on(1, do_switch(s.cpu(1), mm));  // back from a kernel thread, still in the mask: no CR3 load
  EXPECT_EQ(x86::mm_stats(s.k).cr3_switch_mm, 1u);
  EXPECT_EQ(x86::cpu_tlbstate(s.cpu(1)).state, TLBSTATE_OK);
  const LineId line = mm.cpumask.line_of(CpuId{1});
  const auto rmws = s.sys.coherence().stats(line).rmws;
  s.run_on(1, do_lazy(s.cpu(1)));
  s.run_on(1, do_idle_leave(s.cpu(1)));
  s.run_on(1, do_switch(s.cpu(1), mm));  // the test_and_set finds the bit clear: reload
  EXPECT_EQ(x86::mm_stats(s.k).cr3_switch_mm, 2u);
  EXPECT_EQ(s.cpu(1).cr3_mm, &mm);
  EXPECT_TRUE(mm.cpumask.peek().test(CpuId{1}));
  EXPECT_EQ(s.sys.coherence().stats(line).rmws, rmws + 2) << "leave_mm's clear and switch_mm's test_and_set";
}

TEST(X86TlbV3, FlushTlbAllMakesLazyCpusLeaveEveryTimeBeforeSeed003) {
  for (const bool fixed : {false, true}) {
    Scenario s(v33(false, fixed), kMachine);
    MmStruct& mm = s.k.new_mm();
    for (std::uint32_t c : {1u, 2u}) {
      s.run_on(c, do_switch(s.cpu(c), mm));
      s.run_on(c, do_lazy(s.cpu(c)));
    }
    s.run_on(0, do_flush_all(s.cpu(0)));
    EXPECT_EQ(x86::mm_stats(s.k).cr3_to_init_mm, 2u) << "fixed=" << fixed;
    EXPECT_EQ(s.cpu(5).tlb.counters().flush_all, 1u) << "every CPU flushes globally";
    s.run_on(0, do_flush_all(s.cpu(0)));
    EXPECT_EQ(x86::mm_stats(s.k).cr3_to_init_mm, fixed ? 2u : 4u) << "fixed=" << fixed;
  }
}

void stale_read_v3(bool break_flush, std::size_t expected_violations) {
  kernel::KernelConfig cfg = v33();
  if (break_flush) cfg.plant(x86::Mutation::flush_sends_no_ipis);
  Scenario s(cfg, kMachine);
  MmStruct& mm = s.k.new_mm();
  s.run_on(0, do_switch(s.cpu(0), mm));
  s.run_on(1, do_switch(s.cpu(1), mm));
  std::uint64_t addr = 0;
  s.run_on(0, do_mmap_anon(s.cpu(0), mm, 4 << 20, addr));
  s.run_on(0, do_access(s.cpu(0), mm, addr, true));
  s.run_on(1, do_access(s.cpu(1), mm, addr, true));
  s.run_on(0, do_madvise(s.cpu(0), mm, addr, kPageSize));
  s.run_on(1, do_access(s.cpu(1), mm, addr, false));
  EXPECT_EQ(s.oracle().violations().size(), expected_violations);
}

TEST(X86TlbV3, OracleCatchesAFlushThatSkipsRemoteCpus) { stale_read_v3(true, 1); }
TEST(X86TlbV3, OracleIsQuietWhenTheFlushIpiReachesEveryCpu) { stale_read_v3(false, 0); }

}  // namespace
}  // namespace tlbsim::x86::v3
