// The POWER storage model under the kernel's own spin loops: a CPU that waits for a write ends its wait once the
// write has reached it (PowerStorage::settle_line), in every schedule; and the layer's bookkeeping (settle,
// store_global, unseen) on its own.
#include "hw/power_memory.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "hw/every_schedule.h"
#include "hw/memory.h"
#include "hw/test_machine.h"
#include "kernel/barrier.h"

namespace tlbsim::hw {
namespace {

using sim::Cpu;
using sim::Task;

Task<void> publish(Memory& m, Cpu& c, Shared<int>& data, Shared<int>& flag) {
  co_await m.write(c, data, 42);
  kernel::smp_wmb(m, c);
  co_await m.write(c, flag, 1);
}

// The kernel's spin: re-read until set, waiting for a write in between (csd_lock_wait, a test-and-set lock).
Task<void> wait_then_read(Memory& m, Cpu& c, Shared<int>& data, Shared<int>& flag, int& seen) {
  for (;;) {
    const int f = co_await m.read(c, flag);
    if (f != 0) break;
    co_await m.wait_for_write(c, flag.line);
  }
  kernel::smp_rmb(m, c);
  seen = co_await m.read(c, data);
}

// MP with lwsyncs as the kernel spins it: every schedule ends (no spinner is left waiting for a write that has
// already reached it), and the data read after the flag is always the published one.
TEST(PowerMemory, ASpinningCpuEndsItsWaitInEveryScheduleAndMpWithBarriersHolds) {
  testing::EverySchedule chooser;
  const Topology topo{testing::two_cpu_topology()};
  int schedules = 0;
  do {
    sim::ExploringScheduler sched(topo.cpu_count(), chooser);
    CoherenceModel model(topo, testing::round_latencies());
    Memory mem(sched, model);
    mem.set_memory_model(MemoryModel::kPower);
    sched.set_memory_actions(mem.memory_actions());
    Shared<int> data{0, model.add_line("data")}, flag{0, model.add_line("flag")};
    int seen = -1;
    sched.cpu(CpuId{0}).start(publish(mem, sched.cpu(CpuId{0}), data, flag));
    sched.cpu(CpuId{1}).start(wait_then_read(mem, sched.cpu(CpuId{1}), data, flag, seen));
    const sim::RunResult r = sched.run(sim::kTimeZero + sim::milliseconds(1));
    EXPECT_EQ(r.reason, sim::StopReason::kAllFinished);
    EXPECT_EQ(seen, 42);
    ++schedules;
  } while (chooser.next() && schedules < 100000);
  EXPECT_GT(schedules, 10);
  EXPECT_LT(schedules, 100000);
}

TEST(PowerMemory, SettleStoreGlobalAndUnseen) {
  PowerStorage p(2, [](LineId) {});
  int a = 0;
  const std::uint32_t loc = p.location(&a, LineId{3}, 0, 0);
  p.store(CpuId{0}, loc, 1, 1);
  EXPECT_EQ(p.readable(CpuId{0}, loc), (std::pair<std::uint32_t, std::uint32_t>{1, 1}));  // its own write
  EXPECT_EQ(p.readable(CpuId{1}, loc), (std::pair<std::uint32_t, std::uint32_t>{0, 0}));  // not yet reached cpu1
  ASSERT_EQ(p.unseen(CpuId{1}).size(), 1u);
  EXPECT_EQ(p.unseen(CpuId{1})[0], (std::pair<std::uint32_t, std::uint32_t>{loc, 1}));
  EXPECT_TRUE(p.unseen(CpuId{0}).empty());
  EXPECT_FALSE(p.settle_line(CpuId{1}, LineId{3}));  // nothing newer has reached cpu1
  p.run(sim::Action{sim::Action::Kind::kPropagate, CpuId{1}, static_cast<int>(loc), {}, nullptr, 1, CpuId{0}});
  EXPECT_EQ(p.readable(CpuId{1}, loc), (std::pair<std::uint32_t, std::uint32_t>{0, 1}));  // old or new
  EXPECT_FALSE(p.settle_line(CpuId{1}, LineId{4}));                                       // another line
  EXPECT_TRUE(p.settle_line(CpuId{1}, LineId{3}));
  EXPECT_EQ(p.readable(CpuId{1}, loc), (std::pair<std::uint32_t, std::uint32_t>{1, 1}));  // the newest only
  p.store(CpuId{0}, loc, 2, 2);
  p.settle(CpuId{1}, loc);  // settles to what reached cpu1: write 1
  EXPECT_EQ(p.readable(CpuId{1}, loc), (std::pair<std::uint32_t, std::uint32_t>{1, 1}));
  p.store_global(loc, 3, 3);  // reaches both at once
  EXPECT_EQ(p.readable(CpuId{0}, loc), (std::pair<std::uint32_t, std::uint32_t>{3, 3}));
  EXPECT_EQ(p.readable(CpuId{1}, loc), (std::pair<std::uint32_t, std::uint32_t>{3, 3}));
  EXPECT_EQ(std::any_cast<int>(p.newest(loc)), 3);
  EXPECT_TRUE(p.unseen(CpuId{1}).empty());
}

// An address dependency bounds a load from below by what had reached its CPU when the address was known.
TEST(PowerMemory, ADependentLoadReadsNothingOverwrittenBeforeItsAddressWasKnown) {
  PowerStorage p(2, [](LineId) {});
  p.track_dependencies();
  int x = 0, y = 0;
  const std::uint32_t lx = p.location(&x, LineId{1}, 0, 0), ly = p.location(&y, LineId{2}, 0, 0);
  auto reach = [&](std::uint32_t loc, std::uint32_t i) {
    p.run(sim::Action{sim::Action::Kind::kPropagate, CpuId{1}, static_cast<int>(loc), {}, nullptr, i, CpuId{0}});
  };
  p.store(CpuId{0}, lx, 1, 1);
  p.store(CpuId{0}, ly, 1, 1);
  reach(lx, 1);  // cpu1's clock 1
  reach(ly, 1);  // cpu1's clock 2
  EXPECT_EQ(p.arrival(CpuId{1}, lx, 1), 1u);
  EXPECT_EQ(p.arrival(CpuId{1}, ly, 1), 2u);
  EXPECT_EQ(p.arrival(CpuId{1}, ly, 0), 0u);
  // Without a dependency (or with one on the initial value) x may still read 0: the load is satisfied early.
  EXPECT_EQ(p.readable(CpuId{1}, lx), (std::pair<std::uint32_t, std::uint32_t>{0, 1}));
  EXPECT_EQ(p.readable(CpuId{1}, lx, 0), (std::pair<std::uint32_t, std::uint32_t>{0, 1}));
  // Dependent on a load of y=1 (arrived at clock 2, after x=1): only x=1.
  EXPECT_EQ(p.readable(CpuId{1}, lx, p.arrival(CpuId{1}, ly, 1)), (std::pair<std::uint32_t, std::uint32_t>{1, 1}));
  EXPECT_EQ(p.clock(CpuId{1}), 2u);
  PowerStorage untracked(2, [](LineId) {});
  EXPECT_EQ(untracked.clock(CpuId{1}), 0u);
}

// B-cumulativity: a write that reaches a CPU after its writer's barrier makes that CPU's later writes wait for what
// the barrier ordered (ISA2+lwsync+data+addr).
TEST(PowerMemory, AWriteAfterABarrierPassesTheBarrierOnToTheCpusItReaches) {
  PowerStorage p(3, [](LineId) {});
  int x = 0, y = 0, z = 0;
  const std::uint32_t lx = p.location(&x, LineId{1}, 0, 0), ly = p.location(&y, LineId{2}, 0, 0),
                      lz = p.location(&z, LineId{3}, 0, 0);
  p.store(CpuId{0}, lx, 1, 1);
  p.fence(CpuId{0}, Fence::kWmb);
  p.store(CpuId{0}, ly, 1, 1);
  auto offered = [&](std::uint32_t loc, CpuId to) {
    std::vector<sim::Action> out;
    p.enabled(out);
    return std::any_of(out.begin(), out.end(),
                       [&](const sim::Action& a) { return a.vector == static_cast<int>(loc) && a.cpu == to; });
  };
  EXPECT_FALSE(offered(ly, CpuId{1}));  // A-cumulativity: y=1 waits for x=1
  p.run(sim::Action{sim::Action::Kind::kPropagate, CpuId{1}, static_cast<int>(lx), {}, nullptr, 1, CpuId{0}});
  p.run(sim::Action{sim::Action::Kind::kPropagate, CpuId{1}, static_cast<int>(ly), {}, nullptr, 1, CpuId{0}});
  p.store(CpuId{1}, lz, 1, 1);          // no barrier on cpu1
  EXPECT_FALSE(offered(lz, CpuId{2}));  // but z=1 reaches cpu2 only after x=1
  EXPECT_TRUE(offered(lx, CpuId{2}));
  p.run(sim::Action{sim::Action::Kind::kPropagate, CpuId{2}, static_cast<int>(lx), {}, nullptr, 1, CpuId{0}});
  EXPECT_TRUE(offered(lz, CpuId{2}));
}

}  // namespace
}  // namespace tlbsim::hw
