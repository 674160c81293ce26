// Page-table entries under the checker's POWER model (mm/pte_visibility.h): a PTE store reaches another CPU's
// walker only when it propagates; ptesync (a sync) before a TLB invalidation makes it reach every walker first, so
// no walk after the invalidation reads the old entry; without it, one may (the radix_tlbi_skips_ptesync mutation).
#include "mm/pte_visibility.h"

#include <gtest/gtest.h>

#include "hw/every_schedule.h"
#include "hw/test_machine.h"
#include "kernel/barrier.h"

namespace tlbsim::kernel {
namespace {

using sim::Cpu;
using sim::Task;

constexpr Vpn kV{0x1234};

// cpu0 clears the PTE, [ptesync,] invalidates cpu1's TLB (a tlbie reaching it) and says so; cpu1 waits for that and
// walks.
Task<void> unmap(hw::Memory& m, Cpu& c, PageTables& pt, PteVisibility& vis, hw::Shared<int>& done, bool ptesync) {
  co_await m.touch(c, done.line, hw::Access::kLoad);
  pt.clear(kV);
  if (ptesync) smp_mb(m, c);
  vis.invalidated(CpuId{1});
  smp_store_release_fence(m, c);
  co_await m.write(c, done, 1);
}
Task<void> walk_after(hw::Memory& m, Cpu& c, PageTables& pt, hw::Shared<int>& done, bool& old) {
  for (;;) {
    const int d = co_await m.read(c, done);
    if (d != 0) break;
    co_await m.wait_for_write(c, done.line);
  }
  old = pt.walk(CpuId{1}, kV).has_value();
}

bool walk_reads_old_entry(bool ptesync) {
  hw::testing::EverySchedule chooser;
  const hw::Topology topo{hw::testing::two_cpu_topology()};
  bool found = false;
  int schedules = 0;
  do {
    sim::ExploringScheduler sched(topo.cpu_count(), chooser);
    hw::CoherenceModel model(topo, hw::testing::round_latencies());
    hw::Memory mem(sched, model);
    mem.set_memory_model(hw::MemoryModel::kPower);
    sched.set_memory_actions(mem.memory_actions());
    FrameAllocator frames;
    PowerPteVisibility vis(mem, model.add_line("pte"));
    {
      PageTables pt(frames);
      pt.set(kV, Pte{Pfn{5}, true, true});  // before the model is installed: the initial entry
      frames.set_pte_visibility(&vis);
      hw::Shared<int> done{0, model.add_line("done")};
      bool old = false;
      sched.cpu(CpuId{0}).start(unmap(mem, sched.cpu(CpuId{0}), pt, vis, done, ptesync));
      sched.cpu(CpuId{1}).start(walk_after(mem, sched.cpu(CpuId{1}), pt, done, old));
      EXPECT_EQ(sched.run(sim::kTimeZero + sim::milliseconds(1)).reason, sim::StopReason::kAllFinished);
      found = found || old;
    }
    frames.set_pte_visibility(nullptr);
    ++schedules;
  } while (chooser.next());
  EXPECT_GT(schedules, 1);
  return found;
}

TEST(PteVisibility, PtesyncBeforeTheInvalidationKeepsEveryLaterWalkFromTheOldEntry) {
  EXPECT_FALSE(walk_reads_old_entry(true));
  EXPECT_TRUE(walk_reads_old_entry(false));
}

// Outside any CPU's action a store reaches every walker at once; a change the model does not track (a table
// unlinked) is seen by every walk as it is; the writer reads its own store.
TEST(PteVisibility, UntrackedChangesAndSetUpWritesAreSeenAtOnce) {
  hw::testing::EverySchedule chooser;
  const hw::Topology topo{hw::testing::two_cpu_topology()};
  sim::ExploringScheduler sched(topo.cpu_count(), chooser);
  hw::CoherenceModel model(topo, hw::testing::round_latencies());
  hw::Memory mem(sched, model);
  mem.set_memory_model(hw::MemoryModel::kPower);
  FrameAllocator frames;
  PowerPteVisibility vis(mem, model.add_line("pte"));
  frames.set_pte_visibility(&vis);
  {
    PageTables pt(frames);
    EXPECT_FALSE(pt.walk(CpuId{1}, kV).has_value());  // never stored: the current entry
    pt.set(kV, Pte{Pfn{7}, true, false});
    ASSERT_TRUE(pt.walk(CpuId{1}, kV).has_value());
    EXPECT_EQ(pt.walk(CpuId{1}, kV)->pfn, Pfn{7});
    ASSERT_TRUE(pt.unlink_table(kV).has_value());
    EXPECT_FALSE(pt.walk(CpuId{0}, kV).has_value());
    EXPECT_FALSE(pt.walk(CpuId{1}, kV).has_value());
  }
  frames.set_pte_visibility(nullptr);
  EXPECT_EQ(PowerPteVisibility::shown(std::nullopt), 0u);
  EXPECT_EQ(PowerPteVisibility::shown(Pte{Pfn{1}, true, true}), 19u);  // pfn 1, writable, present
}

}  // namespace
}  // namespace tlbsim::kernel
