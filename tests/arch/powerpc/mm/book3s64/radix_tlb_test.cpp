// Scenario tests pinning the modeled powerpc64 radix TLB code (v4.14 and v6.2) and seed 001 / seed 004 patch 5.
#include "arch/powerpc/mm/book3s64/radix_tlb.h"

#include <gtest/gtest.h>

#include <map>
#include <vector>

#include "arch/powerpc/options.h"
#include "kernel/fork.h"
#include "kernel/scenario.h"
#include "kernel/sched/sched.h"
#include "mm/memory.h"
#include "mm/rmap.h"

namespace tlbsim::powerpc {
namespace {

using kernel::KernelConfig;
using kernel::kPageSize;
using kernel::MmStruct;
using kernel::PerCpu;
using kernel::TlbflushUnmapBatch;
using kernel::vpn_of;
using testing::Scenario;

RadixStats& radix_stats(kernel::Kernel& k) { return static_cast<RadixMmu&>(k.arch()).stats; }

constexpr const char* kMachine = "power9-2s16c-smt4";

KernelConfig ppc(int major, int minor) {
  KernelConfig cfg;
  cfg.arch = kernel::Arch::kPowerpc;
  cfg.version = {major, minor};
  return cfg;
}

sim::Task<void> do_switch(PerCpu& self, MmStruct& mm) {
  self.cpu.local_irq_disable();
  co_await self.k.arch().switch_mm_irqs_off(self, mm);
  co_await self.cpu.local_irq_enable();
  self.k.events().set_user_context(self.id, mm.id());
}
sim::Task<void> do_mmap_anon(PerCpu& self, MmStruct& mm, std::uint64_t len, std::uint64_t& addr) {
  addr = co_await kernel::sys_mmap(self, mm, len, false, nullptr, 0);
}
sim::Task<void> do_access(PerCpu& self, MmStruct& mm, std::uint64_t addr, bool write) {
  co_await kernel::user_access(self, mm, addr, write);
}
sim::Task<void> do_madvise(PerCpu& self, MmStruct& mm, std::uint64_t addr, std::uint64_t len) {
  co_await kernel::sys_madvise_dontneed(self, mm, addr, len);
}
sim::Task<void> do_unmap(PerCpu& self, TlbflushUnmapBatch& ubc, MmStruct& mm, std::uint64_t addr) {
  const auto pte = mm.pgd.lookup(vpn_of(addr));
  co_await kernel::try_to_unmap_one(self, ubc, mm, vpn_of(addr), pte ? pte->pfn : Pfn{0}, true);
}
sim::Task<void> do_flush(PerCpu& self, TlbflushUnmapBatch& ubc) { co_await kernel::try_to_unmap_flush(self, ubc); }

bool cached(Scenario& s, std::uint32_t cpu, const MmStruct& mm, std::uint64_t addr) {
  return s.cpu(cpu).tlb.peek(Asid{static_cast<std::uint16_t>(powerpc::context(mm).id)}, vpn_of(addr)).has_value();
}

// An mm with one mapped page that CPUs `cpus` have run and cached.
struct Mapped {
  Mapped(Scenario& s, std::initializer_list<std::uint32_t> cpus) : mm(s.k.new_mm()) {
    for (std::uint32_t c : cpus) s.run_on(c, do_switch(s.cpu(c), mm));
    const std::uint32_t first = *cpus.begin();
    s.run_on(first, do_mmap_anon(s.cpu(first), mm, 64 * kPageSize, addr));
    for (std::uint64_t i = 0; i < 4; ++i) s.run_on(first, do_access(s.cpu(first), mm, addr + i * kPageSize, true));
    for (std::uint32_t c : cpus) s.run_on(c, do_access(s.cpu(c), mm, addr, false));
    frame = mm.pgd.lookup(vpn_of(addr))->pfn;
  }
  MmStruct& mm;
  std::uint64_t addr = 0;
  Pfn frame;
};

TEST(PowerpcRadix, ThreadLocalMmFlushesWithTlbielAndNoIpi) {
  Scenario s(ppc(4, 14), kMachine);
  Mapped a(s, {0});
  EXPECT_EQ(powerpc::context(a.mm).id, 1u) << "PIDs are allocated from 1; the kernel uses 0";
  EXPECT_EQ(s.cpu(0).hw_tag, 1u);
  ASSERT_TRUE(cached(s, 0, a.mm, a.addr));
  s.run_on(0, do_madvise(s.cpu(0), a.mm, a.addr, kPageSize));
  EXPECT_EQ(radix_stats(s.k).tlbiel_va, 1u);
  EXPECT_EQ(radix_stats(s.k).tlbie_va + radix_stats(s.k).tlbie_pid, 0u);
  EXPECT_EQ(s.k.counters().ipis_sent, 0u);
  EXPECT_FALSE(cached(s, 0, a.mm, a.addr));
  EXPECT_TRUE(s.oracle().violations().empty());
}

TEST(PowerpcRadix, SecondCpuInTheMaskMakesItATlbieThatReachesEveryTlb) {
  Scenario s(ppc(4, 14), kMachine);
  Mapped a(s, {0, 5});
  EXPECT_EQ(powerpc::context(a.mm).active_cpus.value, 2);
  ASSERT_TRUE(cached(s, 5, a.mm, a.addr));
  s.run_on(0, do_madvise(s.cpu(0), a.mm, a.addr, kPageSize));
  EXPECT_EQ(radix_stats(s.k).tlbie_va, 1u);
  EXPECT_EQ(radix_stats(s.k).tlbiel_va, 0u);
  EXPECT_EQ(s.k.counters().ipis_sent, 0u) << "v4.14 radix never IPIs for a flush";
  EXPECT_FALSE(cached(s, 5, a.mm, a.addr)) << "tlbie removes the entry from the other CPU's TLB";
  EXPECT_TRUE(s.oracle().violations().empty());
}

// The model visits only the TLBs that hold the PID (hw::TagHolders); what it simulates is a tlbie that reaches every
// CPU: each CPU's TLB counts it, and the holders lose the entry.
TEST(PowerpcRadix, ATlbieVisitsTheTlbsHoldingThePidAndEveryTlbCountsIt) {
  Scenario s(ppc(4, 14), kMachine);
  Mapped a(s, {0, 5});
  const Asid pid{static_cast<std::uint16_t>(powerpc::context(a.mm).id)};
  ASSERT_NE(s.k.tag_holders(), nullptr);
  EXPECT_EQ(s.k.tag_holders()->of(pid), (std::vector<std::uint32_t>{0, 5}));
  std::vector<std::uint64_t> before;
  for (std::uint32_t c = 0; c < s.k.ncpus(); ++c) before.push_back(s.cpu(c).tlb.counters().invlpg);
  s.run_on(0, do_madvise(s.cpu(0), a.mm, a.addr, kPageSize));
  ASSERT_EQ(radix_stats(s.k).tlbie_va, 1u);
  for (std::uint32_t c = 0; c < s.k.ncpus(); ++c) EXPECT_EQ(s.cpu(c).tlb.counters().invlpg, before[c] + 1) << c;
  EXPECT_FALSE(cached(s, 5, a.mm, a.addr));
  EXPECT_TRUE(s.oracle().violations().empty());
}

TEST(PowerpcRadix, SwitchingAwayNeverClearsTheBit) {
  Scenario s(ppc(4, 14), kMachine);
  Mapped a(s, {0, 5});
  MmStruct& b = s.k.new_mm();
  s.run_on(5, do_switch(s.cpu(5), b));
  EXPECT_EQ(s.cpu(5).cr3_mm, &b);
  EXPECT_EQ(s.cpu(5).hw_tag, powerpc::context(b).id);
  EXPECT_TRUE(a.mm.cpumask.peek().test(CpuId{5}));
  EXPECT_EQ(powerpc::context(a.mm).active_cpus.value, 2);
  s.run_on(5, do_switch(s.cpu(5), a.mm));  // back: the bit is already set, only PIDR is written
  EXPECT_EQ(powerpc::context(a.mm).active_cpus.value, 2);
  EXPECT_EQ(radix_stats(s.k).cr3_loads[5], 3u);
}

// Reclaim on cpu0 of pages of the given mms (the n-th time an mm is named, its n-th page), then the batch flush.
struct Reclaim {
  Reclaim(Scenario& s, std::vector<Mapped*> mms) : ubc(s.k.ncpus()) {
    std::vector<Pfn> frames;
    std::map<Mapped*, std::uint64_t> next;
    for (Mapped* m : mms) {
      const std::uint64_t addr = m->addr + next[m]++ * kPageSize;
      frames.push_back(m->mm.pgd.lookup(vpn_of(addr))->pfn);
      s.run_on(0, do_unmap(s.cpu(0), ubc, m->mm, addr));
    }
    s.run_on(0, do_flush(s.cpu(0), ubc));
    for (Pfn f : frames) s.k.frames().free(f);  // shrink_page_list frees after try_to_unmap_flush
  }
  TlbflushUnmapBatch ubc;
};

TEST(PowerpcRadixSeed001, WithoutTheSeedReclaimFlushesEachPageWithTlbie) {
  Scenario s(ppc(4, 14), kMachine);
  Mapped a(s, {4, 8});
  Mapped b(s, {12});
  Reclaim r(s, {&a, &b});
  EXPECT_EQ(radix_stats(s.k).tlbie_va, 2u) << "neither mm is thread-local to the reclaimer";
  EXPECT_EQ(s.k.counters().ipis_sent, 0u);
  EXPECT_FALSE(cached(s, 8, a.mm, a.addr));
  EXPECT_FALSE(cached(s, 12, b.mm, b.addr));
  EXPECT_TRUE(s.oracle().violations().empty());
}

TEST(PowerpcRadixSeed001, OneIpiBatchAndEachTargetFlushesTheListedMms) {
  KernelConfig cfg = ppc(4, 14);
  cfg.set(powerpc::Option::ARCH_WANT_BATCHED_UNMAP_TLB_FLUSH, true);
  Scenario s(cfg, kMachine);
  Mapped a(s, {4, 8});
  Mapped b(s, {12});
  s.run_on(12, do_switch(s.cpu(12), a.mm));  // a now on 4, 8, 12
  Reclaim r(s, {&a, &a, &b, &a});            // a is added again after b, so b (mm[3]) is read by the handler
  EXPECT_EQ(radix_stats(s.k).tlbie_va, 0u);
  EXPECT_EQ(s.k.counters().ipis_sent, 3u) << "one IPI to each CPU of the union {4, 8, 12}";
  // Entries mm[1..4] = a, a, b, a; the handler reads mm[0..3]: NULL, a, a, b: three PID flushes per target.
  EXPECT_EQ(radix_stats(s.k).tlbiel_pid, 9u);
  EXPECT_FALSE(cached(s, 8, a.mm, a.addr));
  EXPECT_TRUE(s.oracle().violations().empty());
}

// Defect 1 as posted: the last-added mm is never flushed. b's page is freed while cpu12 still caches it.
TEST(PowerpcRadixSeed001, AsPostedTheLastAddedMmIsNeverFlushed) {
  KernelConfig cfg = ppc(4, 14);
  cfg.set(powerpc::Option::ARCH_WANT_BATCHED_UNMAP_TLB_FLUSH, true);
  Scenario s(cfg, kMachine);
  Mapped a(s, {4});
  Mapped b(s, {12});
  s.run_on(4, do_switch(s.cpu(4), b.mm));  // both mms are now not thread-local to the reclaimer... and a is on 4
  s.run_on(4, do_switch(s.cpu(4), a.mm));
  Reclaim r(s, {&a, &b});
  EXPECT_EQ(radix_stats(s.k).tlbiel_pid, 2u) << "cpu4 and cpu12 flush mm[1] = a only";
  EXPECT_TRUE(cached(s, 12, b.mm, b.addr)) << "mm[2] = b is past the handler's loop";
  s.oracle().set_user_context(CpuId{12}, b.mm.id());
  s.run_on(12, do_switch(s.cpu(12), b.mm));
  s.run_on(12, do_access(s.cpu(12), b.mm, b.addr, false));
  EXPECT_FALSE(s.oracle().violations().empty()) << "a stale hit on a freed page (docs/findings.md F3)";
}

// Defect 2 as posted: smp_call_function_many skips the reclaimer, which is in the mask and keeps its entry.
TEST(PowerpcRadixSeed001, AsPostedTheReclaimingCpuIsNeverFlushed) {
  KernelConfig cfg = ppc(4, 14);
  cfg.set(powerpc::Option::ARCH_WANT_BATCHED_UNMAP_TLB_FLUSH, true);
  cfg.set(powerpc::Option::batched_unmap_flush_lpid, true);  // the follow-up keeps this defect
  Scenario s(cfg, kMachine);
  Mapped a(s, {0, 4});
  Reclaim r(s, {&a});
  EXPECT_EQ(s.k.counters().ipis_sent, 1u);
  EXPECT_EQ(radix_stats(s.k).tlbiel_lpid, 1u) << "cpu4 flushes the whole partition";
  EXPECT_FALSE(cached(s, 4, a.mm, a.addr));
  EXPECT_TRUE(cached(s, 0, a.mm, a.addr));
  s.run_on(0, do_access(s.cpu(0), a.mm, a.addr, false));
  EXPECT_FALSE(s.oracle().violations().empty()) << "docs/findings.md F4";
}

TEST(PowerpcRadixSeed001, LpidVariantFlushesEverythingOnTheTargetsSoTheLastMmToo) {
  KernelConfig cfg = ppc(4, 14);
  cfg.set(powerpc::Option::ARCH_WANT_BATCHED_UNMAP_TLB_FLUSH, true);
  cfg.set(powerpc::Option::batched_unmap_flush_lpid, true);
  Scenario s(cfg, kMachine);
  Mapped a(s, {4});
  Mapped b(s, {12});
  Mapped c(s, {12});  // not reclaimed: the LPID flush drops it too
  s.run_on(4, do_switch(s.cpu(4), b.mm));
  s.run_on(4, do_switch(s.cpu(4), a.mm));
  Reclaim r(s, {&a, &b});
  EXPECT_EQ(radix_stats(s.k).tlbiel_lpid, 2u);
  EXPECT_EQ(radix_stats(s.k).tlbiel_pid, 0u);
  EXPECT_FALSE(cached(s, 12, b.mm, b.addr));
  EXPECT_FALSE(cached(s, 12, c.mm, c.addr));
  s.run_on(12, do_switch(s.cpu(12), b.mm));
  s.run_on(12, do_access(s.cpu(12), b.mm, b.addr, false));
  EXPECT_TRUE(s.oracle().violations().empty());
}

// ---- v6.2 and seed 004 patch 5 ----

sim::Task<void> touch_and_exit(kernel::Sched& s, kernel::TaskStruct& t, sim::Duration delay) {
  if (delay > sim::Duration{0}) co_await s.sleep(t, delay);
  PerCpu& pc = s.cpu_of(t);
  const std::uint64_t addr = co_await kernel::sys_mmap(pc, *t.mm, 8 * kPageSize, false, nullptr, 0);
  co_await kernel::user_access(pc, *t.mm, addr, true);
  co_await kernel::exit_mm(s, t);
}

struct ExitScenario {
  explicit ExitScenario(bool patch5) : s(cfg(patch5), kMachine), sched(s.k), mm(s.k.new_mm()) {
    mm.mm_users.value = 2;  // two threads
    sched.start();
    sched.create_task("t2", &mm, CpuId{2}, [this](kernel::TaskStruct& t) { return touch_and_exit(sched, t, {}); });
    sched.create_task("t1", &mm, CpuId{1},
                      [this](kernel::TaskStruct& t) { return touch_and_exit(sched, t, sim::microseconds(200)); });
    s.sys.scheduler().run(sim::kTimeZero + sim::milliseconds(2));
  }
  static KernelConfig cfg(bool patch5) {
    KernelConfig c = ppc(6, 2);
    c.set(powerpc::Option::exit_flush_lazy_tlbs, patch5);
    return c;
  }
  Scenario s;
  kernel::Sched sched;
  MmStruct& mm;
};

TEST(PowerpcRadix62, ExitFlushIsATlbieAndLeavesTheLazyCpuInTheMask) {
  ExitScenario e(false);
  EXPECT_EQ(e.mm.mm_users.value, 0);
  EXPECT_EQ(radix_stats(e.s.k).tlbie_pid, 1u) << "fullmm: FLUSH_TYPE_GLOBAL";
  EXPECT_EQ(radix_stats(e.s.k).mm_cpumask_trims, 0u);
  EXPECT_TRUE(e.mm.cpumask.peek().test(CpuId{2}));
  EXPECT_EQ(e.sched.rq(CpuId{2}).idle->active_mm, &e.mm) << "cpu2's idle still borrows the mm";
  EXPECT_TRUE(e.s.oracle().violations().empty());
}

TEST(PowerpcRadix62, ExitFlushLazyTlbsIpisTheMaskAndSwitchesTheLazyCpuToInitMm) {
  ExitScenario e(true);
  EXPECT_EQ(e.mm.mm_users.value, 0);
  EXPECT_EQ(radix_stats(e.s.k).tlbie_pid, 0u);
  EXPECT_EQ(e.s.k.counters().ipis_sent, 1u) << "cpu2, the other CPU in mm_cpumask";
  EXPECT_EQ(radix_stats(e.s.k).mm_cpumask_trims, 1u);
  EXPECT_FALSE(e.mm.cpumask.peek().test(CpuId{2}));
  EXPECT_EQ(e.sched.rq(CpuId{2}).idle->active_mm, &e.s.k.init_mm());
  EXPECT_EQ(e.s.cpu(2).cr3_mm, &e.s.k.init_mm());
  EXPECT_EQ(e.s.cpu(2).hw_tag, 0u);
  EXPECT_TRUE(e.s.oracle().violations().empty());
}

}  // namespace
}  // namespace tlbsim::powerpc
