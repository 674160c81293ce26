// Scenario tests of NUMA hinting (mm/mempolicy.cpp, do_numa_page in mm/memory.cpp, pte_accessible in
// mm/migrate.cpp): change_prot_numa's hinting PTEs and their flush, the skips, the hinting fault that migrates a
// misplaced page or restores the PTE, and a migration that meets a hinting PTE.
#include "mm/mempolicy.h"

#include <gtest/gtest.h>

#include "kernel/options.h"
#include "kernel/scenario.h"
#include "mm/memory.h"
#include "mm/migrate.h"
#include "model/profile.h"

namespace tlbsim::kernel {
namespace {

using testing::Scenario;

sim::Task<void> enter(PerCpu& self, MmStruct& mm) {
  self.cpu.local_irq_disable();
  co_await self.k.arch().switch_mm_irqs_off(self, mm);
  co_await self.cpu.local_irq_enable();
}
sim::Task<void> map_and_write(PerCpu& self, MmStruct& mm, std::uint64_t pages, std::uint64_t& addr) {
  co_await enter(self, mm);
  addr = co_await sys_mmap(self, mm, pages * kPageSize, false, nullptr, 0);
  for (std::uint64_t i = 0; i < pages; ++i) co_await user_access(self, mm, addr + i * kPageSize, true);
}
sim::Task<void> map_and_read(PerCpu& self, MmStruct& mm, std::uint64_t& addr) {
  addr = co_await sys_mmap(self, mm, kPageSize, false, nullptr, 0);
  co_await user_access(self, mm, addr, false);
}
sim::Task<void> enter_and_touch(PerCpu& self, MmStruct& mm, std::uint64_t addr, bool write) {
  co_await enter(self, mm);
  co_await user_access(self, mm, addr, write);
}
sim::Task<void> touch(PerCpu& self, MmStruct& mm, std::uint64_t addr, bool write) {
  co_await user_access(self, mm, addr, write);
}
sim::Task<void> prot_numa(PerCpu& self, MmStruct& mm, std::uint64_t start, std::uint64_t end, std::uint64_t& n) {
  co_await mm.mmap_lock.down_read(self);
  n = co_await change_prot_numa(self, mm, start, end);
  co_await mm.mmap_lock.up_read(self);
  self.k.events().on_syscall_return(self.id);
}
sim::Task<void> migrate(PerCpu& self, MmStruct& mm) { co_await sys_migrate_pages(self, mm); }

KernelConfig profile(const char* kernel) { return load_kernel_profile(kernel).config; }

// Two threads of one mm: cpu0 (node 0) has written `pages` pages (on node 0); a CPU of node 1 (`far`) has read the
// first.
struct Hinting {
  explicit Hinting(const char* kernel, std::uint64_t n = 2)
      : s(profile(kernel), Scenario::machine_for(profile(kernel))),
        mm(s.k.new_mm()),
        pages(n),
        far(s.sys.topology().cpu_at(1, 0, 0).get()) {
    mm.mm_users.value = 2;
    s.oracle().set_user_context(CpuId{0}, mm.id());
    s.oracle().set_user_context(CpuId{far}, mm.id());
    s.run_on(0, map_and_write(s.cpu(0), mm, n, addr));
    s.run_on(far, enter_and_touch(s.cpu(far), mm, addr, false));
  }
  std::optional<Pte> pte(std::uint64_t i = 0) { return mm.pgd.lookup(vpn_of(addr + i * kPageSize)); }
  std::uint64_t scan() {
    std::uint64_t n = 0;
    s.run_on(0, prot_numa(s.cpu(0), mm, addr, addr + pages * kPageSize, n));
    return n;
  }
  Scenario s;
  MmStruct& mm;
  std::uint64_t pages;
  std::uint32_t far;
  std::uint64_t addr = 0;
};

TEST(NumaHinting, TheMachinesNodesAreItsSockets) {
  Scenario s(load_kernel_profile("linux-6.13").config);
  EXPECT_EQ(s.k.cpu_to_node(CpuId{0}), 0);
  EXPECT_EQ(s.k.cpu_to_node(s.sys.topology().cpu_at(1, 0, 0)), 1);
  EXPECT_TRUE(numa_balancing(KernelVersion{4, 14}));
  EXPECT_FALSE(numa_balancing(KernelVersion{3, 3}));
}

TEST(NumaHinting, ChangeProtNumaMakesHintingPtesAndFlushesThemInEveryEra) {
  for (const char* kernel : {"linux-4.14-ppc", "linux-5.17", "linux-6.2-ppc-seed004", "linux-6.13", "linux-6.18"}) {
    Hinting t(kernel);
    const Pfn page = t.pte()->pfn;
    ASSERT_TRUE(t.s.cpu(t.far).tlb.peek(Asid{t.s.cpu(t.far).hw_tag}, vpn_of(t.addr)).has_value());
    EXPECT_EQ(t.scan(), 2u) << kernel;
    const auto pte = t.pte();
    ASSERT_TRUE(pte.has_value()) << "a hinting PTE still maps the page for the kernel";
    EXPECT_TRUE(pte->protnone) << kernel;
    EXPECT_TRUE(pte->writable) << "the write bit is kept for the fault to restore";
    EXPECT_EQ(pte->pfn, page);
    EXPECT_FALSE(t.s.cpu(t.far).tlb.peek(Asid{t.s.cpu(t.far).hw_tag}, vpn_of(t.addr)).has_value())
        << kernel << ": the other thread's CPU must have dropped the translation when change_prot_numa returned";
    EXPECT_EQ(t.mm.tlb_flush_pending.value, 0) << kernel;
    EXPECT_EQ(t.scan(), 0u) << kernel << ": hinting PTEs are skipped";
    EXPECT_TRUE(t.s.oracle().violations().empty()) << kernel;
  }
}

TEST(NumaHinting, ASingleThreadedProcessesPagesOnItsOwnNodeAreLeftAlone) {
  Hinting t("linux-6.13");
  t.mm.mm_users.value = 1;
  EXPECT_EQ(t.scan(), 0u) << "target_node: the pages are on the scanning CPU's node";
  EXPECT_FALSE(t.pte()->protnone);
}

TEST(NumaHinting, TheZeroPageIsNotAHintingCandidate) {
  Scenario s(load_kernel_profile("linux-6.13").config);
  MmStruct& mm = s.k.new_mm();
  mm.mm_users.value = 2;
  std::uint64_t addr = 0;
  s.run_on(0, enter(s.cpu(0), mm));
  s.run_on(0, map_and_read(s.cpu(0), mm, addr));  // a read maps the zero page
  std::uint64_t n = 1;
  s.run_on(0, prot_numa(s.cpu(0), mm, addr, addr + kPageSize, n));
  EXPECT_EQ(n, 0u);
  EXPECT_FALSE(mm.pgd.lookup(vpn_of(addr))->protnone);
}

TEST(NumaHinting, AFirstFaultFromTheOtherNodeMigratesThePageThere) {
  for (const char* kernel : {"linux-4.14-ppc", "linux-5.17", "linux-6.13"}) {
    Hinting t(kernel);
    const Pfn page = t.pte()->pfn;
    ASSERT_EQ(t.s.k.frames().nid(page), 0);
    t.scan();
    t.s.run_on(t.far, touch(t.s.cpu(t.far), t.mm, t.addr, true));
    const auto pte = t.pte();
    ASSERT_TRUE(pte.has_value());
    EXPECT_FALSE(pte->protnone) << kernel;
    EXPECT_TRUE(pte->writable);
    EXPECT_NE(pte->pfn, page) << kernel << ": migrated to a new frame";
    EXPECT_EQ(t.s.k.frames().nid(pte->pfn), 1) << kernel << ": on the faulting CPU's node";
    EXPECT_EQ(t.s.k.frames().use(page), FrameUse::kFree);
    EXPECT_TRUE(t.s.oracle().violations().empty()) << kernel;
  }
}

TEST(NumaHinting, APageLastFaultedFromAnotherNodeStaysAndItsPteIsRestored) {
  Hinting t("linux-6.13");
  const Pfn page = t.pte()->pfn;
  t.scan();
  t.s.run_on(0, touch(t.s.cpu(0), t.mm, t.addr, true));  // node 0: the page is local, stays; last node 0
  EXPECT_EQ(t.pte()->pfn, page);
  EXPECT_FALSE(t.pte()->protnone);
  t.scan();
  t.s.run_on(t.far, touch(t.s.cpu(t.far), t.mm, t.addr, true));  // node 1 after node 0: the two-stage filter holds it
  EXPECT_EQ(t.pte()->pfn, page) << "not migrated on the first fault from a new node";
  EXPECT_FALSE(t.pte()->protnone);
  t.scan();
  t.s.run_on(t.far, touch(t.s.cpu(t.far), t.mm, t.addr, true));  // node 1 again: now it moves
  EXPECT_NE(t.pte()->pfn, page);
  EXPECT_EQ(t.s.k.frames().nid(t.pte()->pfn), 1);
}

// migrate_pages(2) of a hinting PTE whose flush is done: on x86 pte_accessible is false and the migration sends no
// flush of its own; powerpc's generic pte_accessible is always true, so it flushes.
TEST(NumaHinting, AMigrationFlushesAHintingPteOnlyWhereItMayStillBeCached) {
  for (const auto& [kernel, flushes] : {std::pair{"linux-5.17", false}, std::pair{"linux-6.13", false},
                                        std::pair{"linux-4.14-ppc", true}, std::pair{"linux-6.2-ppc-seed004", true}}) {
    Hinting t(kernel, 1);
    t.scan();
    const auto before =
        t.s.cpu(0).tlb.counters().invlpg + t.s.cpu(0).tlb.counters().flush_tag + t.s.cpu(0).tlb.counters().flush_all;
    t.s.run_on(0, migrate(t.s.cpu(0), t.mm));
    const auto after =
        t.s.cpu(0).tlb.counters().invlpg + t.s.cpu(0).tlb.counters().flush_tag + t.s.cpu(0).tlb.counters().flush_all;
    EXPECT_EQ(after != before, flushes) << kernel;
    EXPECT_FALSE(t.pte()->protnone) << "remove_migration_pte maps the copy with the VMA's protection";
    EXPECT_TRUE(t.s.oracle().violations().empty()) << kernel;
  }
}

// While change_prot_numa's flush is pending, pte_accessible says a hinting PTE may be cached: a migration flushes.
TEST(NumaHinting, WhileTheScansFlushIsPendingAMigrationFlushesAHintingPte) {
  Hinting t("linux-5.17", 1);
  t.scan();
  t.mm.tlb_flush_pending.value = 1;  // as inside another change_protection_range
  const auto before =
      t.s.cpu(0).tlb.counters().invlpg + t.s.cpu(0).tlb.counters().flush_tag + t.s.cpu(0).tlb.counters().flush_all;
  t.s.run_on(0, migrate(t.s.cpu(0), t.mm));
  const auto after =
      t.s.cpu(0).tlb.counters().invlpg + t.s.cpu(0).tlb.counters().flush_tag + t.s.cpu(0).tlb.counters().flush_all;
  EXPECT_GT(after, before);
}

}  // namespace
}  // namespace tlbsim::kernel
