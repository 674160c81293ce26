// The oracle's bookkeeping of removals in flight (check/oracle.cpp): a hit on a removed translation is allowed until
// the removing system call returns, its range is synced or its old frame is freed, and is a violation after.
#include "check/oracle.h"

#include <gtest/gtest.h>

#include "kernel/scenario.h"
#include "mm/memory.h"
#include "model/profile.h"

namespace tlbsim::check {
namespace {

using kernel::MmStruct;
using kernel::PerCpu;
using testing::Scenario;

struct TwoPages {
  TwoPages() : s(kernel::load_kernel_profile("linux-6.13").config), mm(s.k.new_mm()) {
    s.run_on(0, map_and_write(s.cpu(0), mm, addr));
    for (std::uint64_t i = 0; i < 2; ++i) {
      pte[i] = *mm.pgd.lookup(kernel::vpn_of(addr + i * kernel::kPageSize));
      vpn[i] = kernel::vpn_of(addr + i * kernel::kPageSize);
    }
  }
  static sim::Task<void> map_and_write(PerCpu& self, MmStruct& mm, std::uint64_t& addr) {
    self.cpu.local_irq_disable();
    co_await self.k.arch().switch_mm_irqs_off(self, mm);
    co_await self.cpu.local_irq_enable();
    addr = co_await kernel::sys_mmap(self, mm, 2 * kernel::kPageSize, false, nullptr, 0);
    for (std::uint64_t i = 0; i < 2; ++i) co_await kernel::user_access(self, mm, addr + i * kernel::kPageSize, true);
  }
  // cpu `by` clears page i's PTE and tells the oracle.
  void remove(std::uint32_t i, std::uint32_t by) {
    mm.pgd.clear(vpn[i]);
    s.oracle().on_pte_removed(mm, vpn[i], pte[i], CpuId{by}, sim::kTimeZero);
  }
  // cpu1 hits its cached (now stale) translation of page i; returns the violations so far.
  std::size_t hit(std::uint32_t i) {
    s.oracle().on_tlb_hit(CpuId{1}, mm, vpn[i], hw::Translation{pte[i].pfn, true, mm.id()}, sim::kTimeZero);
    return s.oracle().violations().size();
  }
  Scenario s;
  MmStruct& mm;
  std::uint64_t addr = 0;
  kernel::Pte pte[2];
  Vpn vpn[2];
};

TEST(Oracle, ARemovalIsInFlightUntilItsSystemCallReturns) {
  TwoPages t;
  t.remove(0, 0);
  EXPECT_EQ(t.hit(0), 0u) << "the flush may still be on its way";
  t.s.oracle().on_syscall_return(CpuId{1});
  EXPECT_EQ(t.hit(0), 0u) << "another CPU's return completes nothing";
  t.s.oracle().on_syscall_return(CpuId{0});
  EXPECT_EQ(t.hit(0), 1u);
  EXPECT_NE(t.s.oracle().violations()[0].what.find("stale translation"), std::string::npos);
}

TEST(Oracle, ASecondRemovalOfTheSameEntryIsCompletedByEitherReturn) {
  TwoPages t;
  t.remove(0, 0);
  t.remove(0, 2);  // the same (pfn, mm, vpn), recorded again by cpu2
  t.s.oracle().on_syscall_return(CpuId{0});
  EXPECT_EQ(t.hit(0), 1u) << "one record per entry: cpu0's return completes it";
}

TEST(Oracle, SyncingARangeCompletesOnlyTheRemovalsInIt) {
  TwoPages t;
  t.remove(0, 0);
  t.remove(1, 0);
  t.s.oracle().on_range_synced(CpuId{0}, t.mm, t.addr + kernel::kPageSize, t.addr + 2 * kernel::kPageSize);
  EXPECT_EQ(t.hit(0), 0u);
  EXPECT_EQ(t.hit(1), 1u);
}

TEST(Oracle, FreeingTheOldFrameCompletesItsRemovalsOnly) {
  TwoPages t;
  t.remove(0, 0);
  t.remove(1, 0);
  t.s.oracle().on_frame_free(t.pte[1].pfn, sim::kTimeZero);
  EXPECT_EQ(t.hit(0), 0u);
  EXPECT_EQ(t.hit(1), 1u);
  t.s.oracle().on_syscall_return(CpuId{0});  // its record of page 1 is gone already
  EXPECT_EQ(t.hit(0), 2u);
}

}  // namespace
}  // namespace tlbsim::check
