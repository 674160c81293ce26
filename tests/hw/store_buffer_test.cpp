// The x86-TSO layer on its own: classic litmus shapes written against hw::Memory and explored exhaustively by the
// exploring scheduler, with the verdicts of Owens, Sarkar and Sewell, "A better x86 memory model: x86-TSO" (TPHOLs
// 2009) and Sewell et al., CACM 53(7) 2010: SB is allowed under TSO and forbidden under SC; SB with MFENCEs
// (or with LOCK'd RMWs), MP, LB and 2+2W are forbidden under both; a CPU reads its own buffered store (n-test n8
// style forwarding).
#include "hw/store_buffer.h"

#include <gtest/gtest.h>

#include <functional>
#include <set>
#include <utility>
#include <vector>

#include "hw/every_schedule.h"
#include "hw/memory.h"
#include "hw/test_machine.h"
#include "kernel/barrier.h"
#include "sim/exploring_scheduler.h"

namespace tlbsim::hw {
namespace {

using sim::Cpu;
using sim::Task;

using Everything = testing::EverySchedule;

struct Litmus {
  Shared<int> x, y;
  int r0 = -1, r1 = -1;
};

using Thread = std::function<Task<void>(Memory&, Cpu&, Litmus&)>;

// The final states (r0, r1, x, y) of every schedule of two threads under `mm`.
std::set<std::vector<int>> outcomes(MemoryModel mm, const Thread& t0, const Thread& t1) {
  std::set<std::vector<int>> out;
  Everything chooser;
  const Topology topo{testing::small_topology()};
  do {
    sim::ExploringScheduler sched(topo.cpu_count(), chooser);
    CoherenceModel model(topo, testing::round_latencies());
    Memory mem(sched, model);
    mem.set_memory_model(mm);
    sched.set_memory_actions(mem.memory_actions());
    Litmus l{{0, model.add_line("x")}, {0, model.add_line("y")}};
    sched.cpu(CpuId{0}).start(t0(mem, sched.cpu(CpuId{0}), l));
    sched.cpu(CpuId{1}).start(t1(mem, sched.cpu(CpuId{1}), l));
    sched.run(sim::kTimeZero + sim::milliseconds(1));
    out.insert({l.r0, l.r1, l.x.value, l.y.value});
  } while (chooser.next());
  return out;
}

bool reachable(const std::set<std::vector<int>>& o, int r0, int r1) {
  for (const auto& s : o) {
    if (s[0] == r0 && s[1] == r1) return true;
  }
  return false;
}

// SB: P0 x=1; r0=y   P1 y=1; r1=x. Final r0=0 && r1=0.
Task<void> sb0(Memory& m, Cpu& c, Litmus& l) {
  co_await m.write(c, l.x, 1);
  l.r0 = co_await m.read(c, l.y);
}
Task<void> sb1(Memory& m, Cpu& c, Litmus& l) {
  co_await m.write(c, l.y, 1);
  l.r1 = co_await m.read(c, l.x);
}
Task<void> sb0_mb(Memory& m, Cpu& c, Litmus& l) {
  co_await m.write(c, l.x, 1);
  kernel::smp_mb(m, c);
  l.r0 = co_await m.read(c, l.y);
}
Task<void> sb1_mb(Memory& m, Cpu& c, Litmus& l) {
  co_await m.write(c, l.y, 1);
  kernel::smp_mb(m, c);
  l.r1 = co_await m.read(c, l.x);
}
Task<void> sb0_xchg(Memory& m, Cpu& c, Litmus& l) {
  co_await m.rmw(c, l.x, [](int) { return 1; });
  l.r0 = co_await m.read(c, l.y);
}
Task<void> sb1_xchg(Memory& m, Cpu& c, Litmus& l) {
  co_await m.rmw(c, l.y, [](int) { return 1; });
  l.r1 = co_await m.read(c, l.x);
}

TEST(StoreBuffer, SbIsAllowedUnderTsoOnlyAndAFenceOrALockedRmwForbidsIt) {
  EXPECT_FALSE(reachable(outcomes(MemoryModel::kSc, sb0, sb1), 0, 0));
  EXPECT_TRUE(reachable(outcomes(MemoryModel::kTso, sb0, sb1), 0, 0));
  EXPECT_FALSE(reachable(outcomes(MemoryModel::kTso, sb0_mb, sb1_mb), 0, 0));
  EXPECT_FALSE(reachable(outcomes(MemoryModel::kTso, sb0_xchg, sb1_xchg), 0, 0));
  // smp_rmb and smp_wmb are barrier() on x86: they do not forbid it.
  const Thread w0 = [](Memory& m, Cpu& c, Litmus& l) -> Task<void> {
    co_await m.write(c, l.x, 1);
    kernel::smp_wmb(m, c);
    kernel::smp_rmb(m, c);
    l.r0 = co_await m.read(c, l.y);
  };
  EXPECT_TRUE(reachable(outcomes(MemoryModel::kTso, w0, sb1), 0, 0));
}

// MP: P0 x=1; y=1   P1 r0=y; r1=x. Final r0=1 && r1=0: forbidden under TSO (stores commit in order, loads are
// not reordered with loads).
Task<void> mp0(Memory& m, Cpu& c, Litmus& l) {
  co_await m.write(c, l.x, 1);
  co_await m.write(c, l.y, 1);
}
Task<void> mp1(Memory& m, Cpu& c, Litmus& l) {
  l.r0 = co_await m.read(c, l.y);
  l.r1 = co_await m.read(c, l.x);
}

// LB: P0 r0=x; y=1   P1 r1=y; x=1. Final r0=1 && r1=1: forbidden (loads are not reordered with later stores).
Task<void> lb0(Memory& m, Cpu& c, Litmus& l) {
  l.r0 = co_await m.read(c, l.x);
  co_await m.write(c, l.y, 1);
}
Task<void> lb1(Memory& m, Cpu& c, Litmus& l) {
  l.r1 = co_await m.read(c, l.y);
  co_await m.write(c, l.x, 1);
}

// 2+2W: P0 x=1; y=2   P1 y=1; x=2. Final x=1 && y=1: forbidden (stores commit in program order).
Task<void> w0(Memory& m, Cpu& c, Litmus& l) {
  co_await m.write(c, l.x, 1);
  co_await m.write(c, l.y, 2);
}
Task<void> w1(Memory& m, Cpu& c, Litmus& l) {
  co_await m.write(c, l.y, 1);
  co_await m.write(c, l.x, 2);
}

TEST(StoreBuffer, MpLbAnd2Plus2WAreForbiddenUnderTso) {
  for (const MemoryModel mm : {MemoryModel::kSc, MemoryModel::kTso}) {
    EXPECT_FALSE(reachable(outcomes(mm, mp0, mp1), 1, 0)) << to_string(mm);
    EXPECT_TRUE(reachable(outcomes(mm, mp0, mp1), 1, 1)) << to_string(mm);
    EXPECT_FALSE(reachable(outcomes(mm, lb0, lb1), 1, 1)) << to_string(mm);
    for (const auto& s : outcomes(mm, w0, w1)) EXPECT_FALSE(s[2] == 1 && s[3] == 1) << to_string(mm);
  }
}

// A CPU reads its own store while it is still in its buffer (store forwarding): P0 x=1; r0=x. Final r0=1 always.
TEST(StoreBuffer, ACpuReadsItsOwnBufferedStore) {
  const Thread own = [](Memory& m, Cpu& c, Litmus& l) -> Task<void> {
    co_await m.write(c, l.x, 1);
    l.r0 = co_await m.read(c, l.x);
  };
  const Thread idle = [](Memory&, Cpu&, Litmus&) -> Task<void> { co_return; };
  for (const auto& s : outcomes(MemoryModel::kTso, own, idle)) {
    EXPECT_EQ(s[0], 1);
    EXPECT_EQ(s[2], 1);  // and it reaches memory by the end
  }
}

TEST(StoreBuffer, StoresCommitInProgramOrderAndDrainThroughStopsAtTheNewestToTheAddress) {
  StoreBuffers b(2);
  std::vector<int> committed;
  int a = 0, z = 0;
  for (int i = 0; i < 3; ++i)
    b.push(CpuId{0},
           BufferedStore{i == 1 ? &z : &a, LineId{}, i, [&committed, i] { committed.push_back(i); }, std::nullopt});
  EXPECT_TRUE(b.pending(CpuId{0}));
  EXPECT_FALSE(b.pending(CpuId{1}));
  EXPECT_EQ(std::any_cast<int>(b.newest_for(CpuId{0}, &a)->value), 2);
  b.drain_through(CpuId{0}, &z);
  EXPECT_EQ(committed, (std::vector<int>{0, 1}));
  b.drain(CpuId{0});
  EXPECT_EQ(committed, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(b.newest_for(CpuId{0}, &a), nullptr);
  EXPECT_EQ(memory_model_from_string("tso"), MemoryModel::kTso);
  EXPECT_EQ(memory_model_from_string("power"), MemoryModel::kPower);
  EXPECT_EQ(memory_model_from_string("arm"), MemoryModel::kArm);
  EXPECT_EQ(memory_model_from_string("riscv"), std::nullopt);
}

}  // namespace
}  // namespace tlbsim::hw
