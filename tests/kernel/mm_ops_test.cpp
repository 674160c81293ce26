// Scenario tests of the fault paths (kernel/mm_ops.cpp): what fault-around charges for the pages of its window.
#include "kernel/mm_ops.h"

#include <gtest/gtest.h>

#include <vector>

#include "arch/x86/tlb.h"
#include "kernel/scenario.h"

namespace tlbsim::kernel {
namespace {

using testing::Scenario;

// Maps a 16-page file (one fault-around window) privately and reads its pages in order, recording how long each
// read (each one a read fault) took.
sim::Task<void> read_window(PerCpu& self, MmStruct& mm, File& file, std::vector<sim::Duration>& took) {
  co_await x86::switch_mm(self, mm);
  const std::uint64_t addr = co_await sys_mmap(self, mm, 16 * kPageSize, false, &file, 0);
  for (std::uint64_t i = 0; i < 16; ++i) {
    const sim::SimTime t0 = self.cpu.now();
    co_await user_access(self, mm, addr + i * kPageSize, false);
    took.push_back(self.cpu.now() - t0);
  }
}

TEST(MmOps, FaultAroundVisitsEveryCachedPageOfItsWindowMappedOrNot) {
  // The file starts with no page cached, so read fault i caches and maps page i alone, and filemap_map_pages visits
  // pages 0..i-1, cached and already mapped: each costs fault_around_skip (the reference and page lock taken and
  // dropped again), so each fault takes one skip longer than the one before.
  Scenario s;
  MmStruct& mm = s.k.new_mm();
  File& file = s.k.new_file(16 * kPageSize);
  s.k.oracle().set_user_context(CpuId{0}, mm.id());
  std::vector<sim::Duration> took;
  s.run_on(0, read_window(s.cpu(0), mm, file, took));
  ASSERT_EQ(took.size(), 16u);
  const sim::Duration skip = s.machine.kernel.fault_around_skip;
  ASSERT_GT(skip, sim::Duration{0});
  for (std::size_t i = 2; i < took.size(); ++i) EXPECT_EQ(took[i] - took[i - 1], skip) << "fault " << i;
  EXPECT_EQ(s.k.counters().page_faults, 16u);
}

}  // namespace
}  // namespace tlbsim::kernel
