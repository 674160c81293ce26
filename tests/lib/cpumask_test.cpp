// mm_cpumask under the checker's memory models: cpumask_set_cpu is a locked RMW on x86 and a relaxed one on powerpc,
// and cpumask_test_cpu a plain load. The store -> load pair that switch_mm_irqs_off and the radix flush order with
// smp_mb() is SB-shaped: under POWER a CPU that sets its bit and one that stores and then tests the bit may both
// miss the other's store without the barriers, and never with both.
#include "lib/cpumask.h"

#include <gtest/gtest.h>

#include "hw/every_schedule.h"
#include "hw/memory.h"
#include "hw/test_machine.h"
#include "kernel/barrier.h"

namespace tlbsim::kernel {
namespace {

using sim::Cpu;
using sim::Task;

struct Sb {
  hw::Shared<int> pte;
  SharedCpumask mask;
  bool saw_bit = true;
  int saw_pte = -1;
};

// cpu0 clears the "PTE" and tests cpu1's bit (the flusher); cpu1 sets its bit and reads the "PTE" (the walker).
Task<void> flusher(hw::Memory& m, Cpu& c, Sb& s, bool mb) {
  co_await m.write(c, s.pte, 0);
  if (mb) smp_mb(m, c);
  s.saw_bit = co_await s.mask.test_cpu(m, c, CpuId{1});
}
Task<void> joiner(hw::Memory& m, Cpu& c, Sb& s, bool mb) {
  co_await s.mask.set_cpu(m, c, CpuId{1});
  if (mb) smp_mb(m, c);
  s.saw_pte = co_await m.read(c, s.pte);
}

// Whether some schedule ends with the flusher missing cpu1's bit and cpu1 reading the old PTE.
bool both_miss(hw::MemoryModel mm, bool mb0, bool mb1) {
  hw::testing::EverySchedule chooser;
  const hw::Topology topo{hw::testing::two_cpu_topology()};
  bool found = false;
  do {
    sim::ExploringScheduler sched(topo.cpu_count(), chooser);
    hw::CoherenceModel model(topo, hw::testing::round_latencies());
    hw::Memory mem(sched, model);
    mem.set_memory_model(mm);
    sched.set_memory_actions(mem.memory_actions());
    Sb s{{1, model.add_line("pte")}, SharedCpumask(model, 2, "mm_cpumask")};
    sched.cpu(CpuId{0}).start(flusher(mem, sched.cpu(CpuId{0}), s, mb0));
    sched.cpu(CpuId{1}).start(joiner(mem, sched.cpu(CpuId{1}), s, mb1));
    sched.run(sim::kTimeZero + sim::milliseconds(1));
    EXPECT_TRUE(s.mask.peek().test(CpuId{1}));
    found = found || (!s.saw_bit && s.saw_pte == 1);
  } while (chooser.next());
  return found;
}

TEST(Cpumask, UnderPowerTheJoinAndTheFlushNeedABarrierEachUnderTsoTheLockedSetIsOne) {
  EXPECT_TRUE(both_miss(hw::MemoryModel::kPower, false, false));
  EXPECT_TRUE(both_miss(hw::MemoryModel::kPower, true, false));  // the flush side alone (v4.14 had the other)
  EXPECT_TRUE(both_miss(hw::MemoryModel::kPower, false, true));  // F9: v4.14's flush has no barrier
  EXPECT_FALSE(both_miss(hw::MemoryModel::kPower, true, true));
  EXPECT_FALSE(both_miss(hw::MemoryModel::kSc, false, false));
  // x86: cpumask_set_cpu is LOCK'd, which drains the store buffer; the flusher's plain store may still pass its
  // mask load without smp_mb.
  EXPECT_TRUE(both_miss(hw::MemoryModel::kTso, false, false));
  EXPECT_FALSE(both_miss(hw::MemoryModel::kTso, true, false));
}

TEST(Cpumask, ValuesAndBitsAsPlainMasks) {
  Cpumask m(130);
  m.set(CpuId{0});
  m.set(CpuId{129});
  EXPECT_EQ(m.weight(), 2u);
  EXPECT_EQ(m.next(1), 129u);
  EXPECT_EQ(m.any_but(CpuId{0}), 129u);
  EXPECT_EQ(m.shown_value(), 1u);
  m.clear(CpuId{0});
  EXPECT_EQ(m.shown_value(), 0u);
  EXPECT_FALSE(m.empty());
}

}  // namespace
}  // namespace tlbsim::kernel
