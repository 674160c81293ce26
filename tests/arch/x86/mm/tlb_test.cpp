// Scenario tests pinning the semantics of the modeled x86 v5.17 TLB code with small concrete cases.
#include "arch/x86/mm/tlb.h"

#include <gtest/gtest.h>

#include "arch/x86/options.h"
#include "kernel/scenario.h"
#include "mm/memory.h"

namespace tlbsim::x86 {
namespace {

using kernel::kPageSize;
using kernel::MmStruct;
using kernel::PerCpu;
using kernel::VmTlbEvent;
using testing::Scenario;

sim::Task<void> do_mmap_anon(PerCpu& self, MmStruct& mm, std::uint64_t len, std::uint64_t& addr) {
  addr = co_await kernel::sys_mmap(self, mm, len, false, nullptr, 0);
}
sim::Task<void> do_access(PerCpu& self, MmStruct& mm, std::uint64_t addr, bool write) {
  co_await kernel::user_access(self, mm, addr, write);
}
sim::Task<void> do_madvise(PerCpu& self, MmStruct& mm, std::uint64_t addr, std::uint64_t len) {
  co_await kernel::sys_madvise_dontneed(self, mm, addr, len);
}
sim::Task<void> do_munmap(PerCpu& self, MmStruct& mm, std::uint64_t addr, std::uint64_t len) {
  co_await kernel::sys_munmap(self, mm, addr, len);
}
sim::Task<void> do_lazy(PerCpu& self) { co_await enter_lazy_tlb(self); }
sim::Task<void> do_flush_func(PerCpu& self, const FlushTlbInfo* info) {
  self.cpu.local_irq_disable();
  co_await flush_tlb_func(self, info);
  co_await self.cpu.local_irq_enable();
}
sim::Task<void> do_range(PerCpu& self, MmStruct& mm, std::uint64_t start, std::uint64_t end) {
  co_await flush_tlb_mm_range(self, mm, start, end, 12, false);
}
sim::Task<void> do_switch(PerCpu& self, MmStruct& mm) { co_await switch_mm(self, mm); }

TEST(X86Tlb, LazyCpuGetsNoIpiForMadviseButDoesWhenPageTablesAreFreed) {
  Scenario s;
  MmStruct& mm = s.k.new_mm();
  s.run_on(0, do_switch(s.cpu(0), mm));
  s.run_on(1, do_switch(s.cpu(1), mm));
  std::uint64_t addr = 0;
  s.run_on(0, do_mmap_anon(s.cpu(0), mm, 4 << 20, addr));
  s.run_on(1, do_access(s.cpu(1), mm, addr, true));
  s.run_on(1, do_lazy(s.cpu(1)));  // cpu1 switches to a kernel thread: lazy, still in mm_cpumask
  ASSERT_TRUE(mm.cpumask.peek().test(CpuId{1}));

  s.run_on(0, do_madvise(s.cpu(0), mm, addr, kPageSize));
  EXPECT_EQ(s.k.counters().irq_tlb_count[1], 0u) << "a lazy CPU must not be interrupted for a plain madvise";
  EXPECT_EQ(x86::cpu_tlbstate(s.cpu(1)).loaded_mm, &mm);

  const auto flushes_before = s.k.counters().get(VmTlbEvent::NR_TLB_REMOTE_FLUSH);
  s.run_on(0, do_munmap(s.cpu(0), mm, addr, 4 << 20));  // frees the page-table pages
  EXPECT_EQ(s.k.counters().get(VmTlbEvent::NR_TLB_REMOTE_FLUSH), flushes_before + 1);
  EXPECT_EQ(s.k.counters().irq_tlb_count[1], 1u) << "freed page tables must reach lazy CPUs";
  EXPECT_EQ(x86::cpu_tlbstate(s.cpu(1)).loaded_mm, &s.k.init_mm()) << "the lazy CPU switches to init_mm";
  EXPECT_FALSE(mm.cpumask.peek().test(CpuId{1}));
  EXPECT_TRUE(s.oracle().violations().empty());
}

TEST(X86Tlb, ActiveCpuGetsAnIpiForMadvise) {
  Scenario s;
  MmStruct& mm = s.k.new_mm();
  s.run_on(0, do_switch(s.cpu(0), mm));
  s.run_on(2, do_switch(s.cpu(2), mm));
  std::uint64_t addr = 0;
  s.run_on(0, do_mmap_anon(s.cpu(0), mm, 4 << 20, addr));
  s.run_on(0, do_access(s.cpu(0), mm, addr, true));
  s.run_on(0, do_madvise(s.cpu(0), mm, addr, kPageSize));
  EXPECT_EQ(s.k.counters().irq_tlb_count[2], 1u);
  EXPECT_EQ(s.k.counters().get(VmTlbEvent::NR_TLB_REMOTE_FLUSH), 1u);
  EXPECT_EQ(s.k.counters().get(VmTlbEvent::NR_TLB_REMOTE_FLUSH_RECEIVED), 1u);
}

TEST(X86Tlb, ReverseOrderFullThenPartialFlushEndsInAFullFlush) {
  // A full flush took the mm from gen 0 to 1 and a partial one from 1 to 2; cpu1 (at gen 0) sees the partial
  // one first. Jumping to gen 2 with a one-page flush would skip the full flush's work: it must flush all.
  Scenario s;
  MmStruct& mm = s.k.new_mm();
  s.run_on(1, do_switch(s.cpu(1), mm));
  x86::context(mm).tlb_gen.value = 2;
  const std::uint64_t flush_tag_before = s.cpu(1).tlb.counters().flush_tag;
  const FlushTlbInfo partial{&mm, 1ull << 32, (1ull << 32) + kPageSize, 2, 0, 12, false};
  s.run_on(1, do_flush_func(s.cpu(1), &partial));
  EXPECT_EQ(s.cpu(1).tlb.counters().flush_tag, flush_tag_before + 1);
  EXPECT_EQ(s.cpu(1).tlb.counters().invlpg, 0u);
  EXPECT_EQ(x86::cpu_tlbstate(s.cpu(1)).ctxs[x86::cpu_tlbstate(s.cpu(1)).loaded_mm_asid].tlb_gen, 2u);
  const FlushTlbInfo full{&mm, 0, TLB_FLUSH_ALL, 1, 0, 12, false};
  s.run_on(1, do_flush_func(s.cpu(1), &full));
  EXPECT_EQ(s.cpu(1).tlb.counters().flush_tag, flush_tag_before + 1) << "already up to date: nothing to do";
}

TEST(X86Tlb, PartialFlushOneGenerationAheadInvalidatesOnlyThePage) {
  Scenario s;
  MmStruct& mm = s.k.new_mm();
  s.run_on(1, do_switch(s.cpu(1), mm));
  x86::context(mm).tlb_gen.value = 1;
  const FlushTlbInfo partial{&mm, 1ull << 32, (1ull << 32) + 2 * kPageSize, 1, 0, 12, false};
  const std::uint64_t flush_tag_before = s.cpu(1).tlb.counters().flush_tag;
  s.run_on(1, do_flush_func(s.cpu(1), &partial));
  EXPECT_EQ(s.cpu(1).tlb.counters().invlpg, 2u);
  EXPECT_EQ(s.cpu(1).tlb.counters().flush_tag, flush_tag_before);
}

TEST(X86Tlb, SwitchingBackToAnAsidSlotFlushesOnlyIfItsGenerationIsBehind) {
  Scenario s;
  MmStruct& a = s.k.new_mm();
  MmStruct& b = s.k.new_mm();
  PerCpu& c = s.cpu(0);
  s.run_on(0, do_switch(c, a));
  s.run_on(0, do_switch(c, b));
  const std::uint64_t flushes = c.tlb.counters().flush_tag;
  s.run_on(0, do_switch(c, a));
  EXPECT_EQ(c.tlb.counters().flush_tag, flushes) << "slot still current: CR3 written with NOFLUSH";
  s.run_on(0, do_switch(c, b));
  x86::context(a).tlb_gen.value += 1;  // a flush of `a` happened while this CPU was away
  s.run_on(0, do_switch(c, a));
  EXPECT_EQ(c.tlb.counters().flush_tag, flushes + 1);
}

TEST(X86Tlb, MoreThan33PagesFlushesEverything) {
  Scenario s;
  MmStruct& mm = s.k.new_mm();
  s.run_on(0, do_switch(s.cpu(0), mm));
  const std::uint64_t base = 1ull << 32;
  s.run_on(0, do_range(s.cpu(0), mm, base, base + 33 * kPageSize));
  EXPECT_EQ(s.k.counters().get(VmTlbEvent::NR_TLB_LOCAL_FLUSH_ONE), 33u);
  EXPECT_EQ(s.k.counters().get(VmTlbEvent::NR_TLB_LOCAL_FLUSH_ALL), 0u);
  s.run_on(0, do_range(s.cpu(0), mm, base, base + 34 * kPageSize));
  EXPECT_EQ(s.k.counters().get(VmTlbEvent::NR_TLB_LOCAL_FLUSH_ONE), 33u);
  EXPECT_EQ(s.k.counters().get(VmTlbEvent::NR_TLB_LOCAL_FLUSH_ALL), 1u);
}

void stale_read_scenario(bool break_flush, std::size_t expected_violations) {
  kernel::KernelConfig cfg;
  if (break_flush) cfg.plant(x86::Mutation::flush_sends_no_ipis);
  Scenario s(cfg);
  MmStruct& mm = s.k.new_mm();
  s.run_on(0, do_switch(s.cpu(0), mm));
  s.run_on(1, do_switch(s.cpu(1), mm));
  std::uint64_t addr = 0;
  s.run_on(0, do_mmap_anon(s.cpu(0), mm, 4 << 20, addr));
  s.run_on(0, do_access(s.cpu(0), mm, addr, true));
  s.run_on(1, do_access(s.cpu(1), mm, addr, true));        // cpu1 caches the translation
  s.run_on(0, do_madvise(s.cpu(0), mm, addr, kPageSize));  // the page is freed after the flush
  s.run_on(1, do_access(s.cpu(1), mm, addr, false));
  ASSERT_EQ(s.oracle().violations().size(), expected_violations);
  if (expected_violations > 0) {
    const std::string& what = s.oracle().violations()[0].what;
    EXPECT_NE(what.find("cpu1 hit a stale translation"), std::string::npos) << what;
    EXPECT_NE(what.find("removed by cpu0"), std::string::npos) << what;
  }
}

TEST(X86Tlb, AlwaysFullTurnsAOnePageFlushIntoAFullOne) {
  for (const bool on : {false, true}) {
    kernel::KernelConfig c;
    c.set(Option::flush_tlb_func_always_full, on);
    Scenario s(c);
    MmStruct& mm = s.k.new_mm();
    s.run_on(0, do_switch(s.cpu(0), mm));
    s.run_on(0, do_range(s.cpu(0), mm, 0, kPageSize));
    EXPECT_EQ(s.k.counters().get(VmTlbEvent::NR_TLB_LOCAL_FLUSH_ONE), on ? 0u : 1u) << on;
    EXPECT_EQ(s.k.counters().get(VmTlbEvent::NR_TLB_LOCAL_FLUSH_ALL), on ? 1u : 0u) << on;
  }
}

TEST(X86Tlb, OracleCatchesAFlushThatSkipsRemoteCpus) { stale_read_scenario(true, 1); }
TEST(X86Tlb, OracleIsQuietWhenTheFlushReachesEveryCpu) { stale_read_scenario(false, 0); }

kernel::KernelConfig v613(bool lazy_cpumask) {
  kernel::KernelConfig c;
  c.version = {6, 13};
  c.set(x86::Option::avoid_mm_tlb_gen_read, true);
  c.set(x86::Option::ignore_invalid_tlb_gen, true);
  c.set(x86::Option::lazy_mm_cpumask, lazy_cpumask);
  return c;
}

// cpu1 runs mm, then switches to another process's mm; cpu0 then flushes mm.
void switch_away_then_flush(Scenario& s, MmStruct& mm, MmStruct& other) {
  s.run_on(0, do_switch(s.cpu(0), mm));
  s.run_on(1, do_switch(s.cpu(1), mm));
  s.run_on(1, do_switch(s.cpu(1), other));
}

TEST(X86Tlb, Seed002KeepsTheBitAfterSwitchingAwayUntilTheFirstFlushIpiClearsIt) {
  Scenario s(v613(true));
  MmStruct& mm = s.k.new_mm();
  MmStruct& other = s.k.new_mm();
  switch_away_then_flush(s, mm, other);
  EXPECT_TRUE(mm.cpumask.peek().test(CpuId{1})) << "seed 002: switching away leaves the bit set";
  EXPECT_EQ(x86::cpu_tlbstate(s.cpu(1)).loaded_mm, &other);

  s.run_on(0, do_range(s.cpu(0), mm, 0, kPageSize));
  EXPECT_EQ(s.k.counters().irq_tlb_count[1], 1u) << "the stale CPU still gets the first flush IPI";
  EXPECT_FALSE(mm.cpumask.peek().test(CpuId{1})) << "which clears its bit there";
  EXPECT_EQ(s.k.counters().traced(kernel::TlbFlushReason::TLB_REMOTE_WRONG_CPU), 1u);

  s.run_on(0, do_range(s.cpu(0), mm, 0, kPageSize));
  EXPECT_EQ(s.k.counters().irq_tlb_count[1], 1u) << "later flushes no longer reach it";
}

TEST(X86Tlb, WithoutSeed002SwitchingAwayClearsTheBitAtOnce) {
  Scenario s(v613(false));
  MmStruct& mm = s.k.new_mm();
  MmStruct& other = s.k.new_mm();
  switch_away_then_flush(s, mm, other);
  EXPECT_FALSE(mm.cpumask.peek().test(CpuId{1}));
  s.run_on(0, do_range(s.cpu(0), mm, 0, kPageSize));
  EXPECT_EQ(s.k.counters().irq_tlb_count[1], 0u);
}

TEST(X86Tlb, Seed002SetsTheNextBitOnlyWhenItIsClear) {
  Scenario s(v613(true));
  MmStruct& mm = s.k.new_mm();
  MmStruct& other = s.k.new_mm();
  switch_away_then_flush(s, mm, other);
  const LineId line = mm.cpumask.line_of(CpuId{1});
  const auto rmws = s.sys.coherence().stats(line).rmws;
  const auto loads = s.sys.coherence().stats(line).loads;
  s.run_on(1, do_switch(s.cpu(1), mm));  // back to mm: its bit is still set, so only a read
  EXPECT_EQ(s.sys.coherence().stats(line).rmws, rmws);
  EXPECT_EQ(s.sys.coherence().stats(line).loads, loads + 1);
}

sim::Task<void> do_wait(PerCpu& self, sim::Duration d) { co_await self.cpu.delay(d); }

kernel::KernelConfig v613_trim() {
  kernel::KernelConfig c = v613(true);
  c.set(x86::Option::should_trim_cpumask, true);
  return c;
}

// Seed 002's later fix: a CPU that left the mm is IPIed (and trims its bit) only by the first flush after a second.
TEST(X86Tlb, Seed002TrimFixSkipsACpuThatLeftTheMmUntilASecondHasPassed) {
  Scenario s(v613_trim());
  MmStruct& mm = s.k.new_mm();
  MmStruct& other = s.k.new_mm();
  const std::int64_t hz = s.k.config().HZ;
  EXPECT_EQ(x86::context(mm).next_trim_cpumask.value, hz) << "init_new_context: jiffies (0) + HZ";
  switch_away_then_flush(s, mm, other);
  s.run_on(0, do_range(s.cpu(0), mm, 0, kPageSize));
  EXPECT_EQ(s.k.counters().irq_tlb_count[1], 0u) << "within the first second the stale CPU gets no IPI";
  EXPECT_TRUE(mm.cpumask.peek().test(CpuId{1})) << "and keeps its bit";

  for (int i = 0; i < 26; ++i) s.run_on(0, do_wait(s.cpu(0), sim::milliseconds(40)));  // a second passes
  s.run_on(0, do_range(s.cpu(0), mm, 0, kPageSize));
  EXPECT_EQ(s.k.counters().irq_tlb_count[1], 1u) << "the first flush after a second trims";
  EXPECT_FALSE(mm.cpumask.peek().test(CpuId{1}));
  EXPECT_EQ(s.k.counters().traced(kernel::TlbFlushReason::TLB_REMOTE_WRONG_CPU), 1u);
  const std::int64_t now = kernel::jiffies_at(s.cpu(0).cpu.now(), hz);
  EXPECT_GT(x86::context(mm).next_trim_cpumask.value, now) << "and the next trim is due a second later";
  EXPECT_LE(x86::context(mm).next_trim_cpumask.value, now + hz);
}

// The fix's filter still IPIs a CPU that runs the mm, and still skips a lazy one.
TEST(X86Tlb, Seed002TrimFixStillFlushesACpuRunningTheMmAndSkipsALazyOne) {
  Scenario s(v613_trim());
  MmStruct& mm = s.k.new_mm();
  s.run_on(0, do_switch(s.cpu(0), mm));
  s.run_on(1, do_switch(s.cpu(1), mm));
  s.run_on(2, do_switch(s.cpu(2), mm));
  s.run_on(2, do_lazy(s.cpu(2)));
  s.run_on(0, do_range(s.cpu(0), mm, 0, kPageSize));
  EXPECT_EQ(s.k.counters().irq_tlb_count[1], 1u) << "cpu1 runs mm";
  EXPECT_EQ(s.k.counters().irq_tlb_count[2], 0u) << "cpu2 is lazy";
}

}  // namespace
}  // namespace tlbsim::x86
