// Scenario tests of task_numa_work (kernel/sched/fair_numa.cpp): which VMAs one scan covers, the window, and the
// offset it leaves for the next.
#include "kernel/sched/fair_numa.h"

#include <gtest/gtest.h>

#include "kernel/scenario.h"
#include "mm/memory.h"
#include "model/profile.h"

namespace tlbsim::kernel {
namespace {

using testing::Scenario;

sim::Task<void> setup(PerCpu& self, MmStruct& mm, std::uint64_t& anon, std::uint64_t& file_ro, File& f) {
  self.cpu.local_irq_disable();
  co_await self.k.arch().switch_mm_irqs_off(self, mm);
  co_await self.cpu.local_irq_enable();
  anon = co_await sys_mmap(self, mm, 4 * kPageSize, false, nullptr, 0);
  for (int i = 0; i < 4; ++i) co_await user_access(self, mm, anon + i * kPageSize, true);
  file_ro = mm.get_unmapped_area(kPageSize);
  mm.insert_vma(Vma{file_ro, file_ro + kPageSize, false, false, &f, 0, nullptr});
  co_await user_access(self, mm, file_ro, false);
}
sim::Task<void> write_lock(PerCpu& self, MmStruct& mm) { co_await mm.mmap_lock.down_write(self); }
sim::Task<void> scan(PerCpu& self, MmStruct& mm, std::uint64_t& n) { n = co_await task_numa_work(self, mm); }

// Two threads' mm (mm_users 2), run by cpu0: four written anonymous pages and a read-only file page, read.
struct TwoMappings {
  TwoMappings() : s(load_kernel_profile("linux-6.13").config), mm(s.k.new_mm()), f(s.k.new_file(kPageSize)) {
    mm.mm_users.value = 2;
    s.run_on(0, setup(s.cpu(0), mm, anon, file_ro, f));
  }
  std::uint64_t scan_on_cpu0() {
    std::uint64_t n = 7;
    s.run_on(0, scan(s.cpu(0), mm, n));
    return n;
  }
  Scenario s;
  MmStruct& mm;
  File& f;
  std::uint64_t anon = 0, file_ro = 0;
};

TEST(TaskNumaWork, ScansTheAnonymousMemoryAndSkipsReadOnlyFileMappings) {
  TwoMappings t;
  EXPECT_EQ(t.scan_on_cpu0(), 4u);
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(t.mm.pgd.lookup(vpn_of(t.anon + i * kPageSize))->protnone);
  EXPECT_FALSE(t.mm.pgd.lookup(vpn_of(t.file_ro))->protnone);
  EXPECT_EQ(t.mm.numa_scan_offset, 0u) << "the scan reached the end of the address space: reset_ptenuma_scan";
  EXPECT_EQ(t.mm.mmap_lock.value(), 0) << "mmap_lock released";
}

TEST(TaskNumaWork, AScanThatCannotTakeMmapLockAtOnceIsSkipped) {
  TwoMappings t;
  t.s.run_on(1, write_lock(t.s.cpu(1), t.mm));  // a writer holds mmap_lock
  EXPECT_EQ(t.scan_on_cpu0(), 0u);
  EXPECT_FALSE(t.mm.pgd.lookup(vpn_of(t.anon))->protnone);
}

}  // namespace
}  // namespace tlbsim::kernel
