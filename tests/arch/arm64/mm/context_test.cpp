// Scenario tests pinning the modeled arm64 ASID allocator (arch/arm64/mm/context.c, v6.5/v6.6): first allocation,
// the fast and slow paths, rollover with reserved ASIDs and the deferred local flush.
#include "arch/arm64/mm/context.h"

#include <gtest/gtest.h>

#include "kernel/scenario.h"
#include "mm/memory.h"

namespace tlbsim::arm64 {
namespace {

using kernel::KernelConfig;
using kernel::kPageSize;
using kernel::MmStruct;
using kernel::PerCpu;
using kernel::vpn_of;
using testing::Scenario;

KernelConfig arm64(int minor) {
  KernelConfig cfg;
  cfg.arch = kernel::Arch::kArm64;
  cfg.version = {6, minor};
  return cfg;
}

Arm64Mmu& mmu(Scenario& s) { return static_cast<Arm64Mmu&>(s.k.arch()); }

sim::Task<void> do_touch_new_page(PerCpu& self, MmStruct& mm, std::uint64_t& addr) {
  addr = co_await kernel::sys_mmap(self, mm, kPageSize, false, nullptr, 0);
  co_await kernel::user_access(self, mm, addr, true);
}

// A machine file of the Raspberry Pi 4 with `bits`-bit ASIDs would be refused (8 or 16 only); the allocator is built
// from the machine's tag_bits at the first init_cpu, so tests narrow it the way the checker does.
hw::Machine narrow(std::uint32_t bits) {
  hw::Machine m = hw::load_machine("rpi4-a72-4c");
  m.tlb.tag_bits = bits;
  return m;
}

TEST(Arm64Context, AnMmGetsItsAsidAtItsFirstSwitchFromOneUp) {
  Scenario s(arm64(6), "rpi4-a72-4c");
  MmStruct& a = s.k.new_mm();
  MmStruct& b = s.k.new_mm();
  EXPECT_EQ(context(a).id.value, 0u) << "init_new_context: 0 until the first switch";
  s.run_on(0, testing::switch_to_mm(s.cpu(0), a));
  s.run_on(1, testing::switch_to_mm(s.cpu(1), b));
  const std::uint64_t gen = std::uint64_t{1} << 16;
  EXPECT_EQ(context(a).id.value, gen | 1) << "the first generation is ASID_FIRST_VERSION; ASID 0 is reserved";
  EXPECT_EQ(context(b).id.value, gen | 2);
  EXPECT_EQ(s.cpu(0).hw_tag, 1u);
  EXPECT_EQ(s.cpu(1).hw_tag, 2u);
  EXPECT_EQ(mmu(s).stats.switch_slowpath, 2u);
  EXPECT_FALSE(a.cpumask.peek().test(CpuId{0})) << "arm64 never sets mm_cpumask";
}

TEST(Arm64Context, ASecondSwitchToACurrentMmTakesTheFastPathWithoutTheLock) {
  Scenario s(arm64(6), "rpi4-a72-4c");
  MmStruct& a = s.k.new_mm();
  MmStruct& b = s.k.new_mm();
  s.run_on(0, testing::switch_to_mm(s.cpu(0), a));
  s.run_on(0, testing::switch_to_mm(s.cpu(0), b));
  s.run_on(0, testing::switch_to_mm(s.cpu(0), a));
  EXPECT_EQ(mmu(s).stats.switch_slowpath, 2u);
  EXPECT_EQ(mmu(s).stats.switch_fastpath, 1u) << "active_asids was non-zero and A's generation current";
  EXPECT_EQ(mmu(s).asids().active_asids[0].value, context(a).id.value);
}

TEST(Arm64Context, RolloverKeepsTheRunningMmsAsidsAndFlushesEachCpuAtItsNextSlowSwitch) {
  Scenario s(narrow(2), arm64(6));  // ASIDs 1..3 per generation
  MmStruct& a = s.k.new_mm();
  MmStruct& b = s.k.new_mm();
  MmStruct& c = s.k.new_mm();
  MmStruct& d = s.k.new_mm();
  std::uint64_t x = 0;
  s.run_on(0, testing::switch_to_mm(s.cpu(0), a));
  s.run_on(0, do_touch_new_page(s.cpu(0), a, x));
  s.run_on(1, testing::switch_to_mm(s.cpu(1), b));
  s.run_on(1, testing::switch_to_mm(s.cpu(1), c));
  EXPECT_EQ(mmu(s).stats.asid_rollovers, 0u);
  s.run_on(1, testing::switch_to_mm(s.cpu(1), d));  // no free ASID: a new generation
  EXPECT_EQ(mmu(s).stats.asid_rollovers, 1u);
  const AsidAllocator& al = mmu(s).asids();
  EXPECT_EQ(al.asid_generation.value, std::uint64_t{2} << 2);
  EXPECT_EQ(al.reserved_asids[0], (std::uint64_t{1} << 2) | 1) << "cpu0 still runs A: its ASID is reserved";
  EXPECT_EQ(context(d).id.value, (std::uint64_t{2} << 2) | 2) << "the first free ASID of the new map, A's 1 and C's "
                                                                 "3 being reserved";
  EXPECT_FALSE(al.tlb_flush_pending[1]) << "cpu1 flushed at this very switch";
  EXPECT_TRUE(al.tlb_flush_pending[0]) << "cpu0 flushes at its next slow-path switch";
  EXPECT_EQ(mmu(s).stats.local_flush_tlb_all, 1u);
  // cpu0's TLB keeps A's entry meanwhile: A keeps its ASID, in the new generation, when it next allocates.
  EXPECT_TRUE(s.cpu(0).tlb.peek(Asid{1}, vpn_of(x)).has_value());
  s.run_on(1, testing::switch_to_mm(s.cpu(1), a));
  EXPECT_EQ(context(a).id.value, (std::uint64_t{2} << 2) | 1) << "check_update_reserved_asid: A keeps ASID 1";
  EXPECT_EQ(mmu(s).stats.local_flush_tlb_all, 1u) << "cpu1's pending flush was done";
  EXPECT_TRUE(s.oracle().violations().empty());
}

TEST(Arm64Context, AnExitedMmsAsidIsNotReusedBeforeARollover) {
  Scenario s(narrow(2), arm64(6));
  MmStruct& a = s.k.new_mm();
  MmStruct& b = s.k.new_mm();
  s.run_on(0, testing::switch_to_mm(s.cpu(0), a));
  s.run_on(0, testing::switch_to_mm(s.cpu(0), b));
  s.k.free_mm(a);  // no destroy_context on arm64: the ASID stays in asid_map until the next rollover
  MmStruct& c = s.k.new_mm();
  s.run_on(0, testing::switch_to_mm(s.cpu(0), c));
  EXPECT_EQ(context(c).id.value & 3, 3u);
  EXPECT_EQ(mmu(s).stats.asid_rollovers, 0u);
}

}  // namespace
}  // namespace tlbsim::arm64
