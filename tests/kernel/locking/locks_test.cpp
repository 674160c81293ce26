// Scenario tests of the kernel locks (src/kernel/locking/locks.h) on the small test machine.
#include "kernel/locking/locks.h"

#include <gtest/gtest.h>

#include <vector>

#include "hw/test_machine.h"
#include "kernel/arch_mmu.h"
#include "model/config.h"
#include "sim/timed_scheduler.h"

namespace tlbsim::kernel {
namespace {

using sim::Cpu;
using sim::SimTime;
using sim::Task;

SimTime at_ns(std::int64_t ns) { return sim::kTimeZero + sim::nanoseconds(ns); }

// Records when each interrupt was taken.
class Recorder final : public sim::IrqHandler {
 public:
  std::vector<SimTime> taken;
  Task<void> handle_irq(Cpu& cpu, int) override {
    taken.push_back(cpu.now());
    co_await cpu.delay(sim::nanoseconds(5));
  }
};

Task<void> hold_for(hw::Memory& mem, Cpu& cpu, Spinlock& l, std::int64_t ns) {
  co_await l.lock(mem, cpu);
  co_await cpu.delay(sim::nanoseconds(ns));
  co_await l.unlock(mem, cpu);
}

// spin_lock_irqsave(&l, flags) as the caller writes it: interrupts off, then the arch's lock_flags.
Task<void> lock_irqsave(hw::Memory& mem, Cpu& cpu, Spinlock& l, bool enables_irqs, SimTime& acquired,
                        bool& irqs_off_when_acquired) {
  co_await cpu.delay(sim::nanoseconds(100));
  cpu.local_irq_disable();
  co_await l.lock_flags(mem, cpu, enables_irqs);
  acquired = cpu.now();
  irqs_off_when_acquired = cpu.irqs_disabled();
  co_await l.unlock(mem, cpu);
  co_await cpu.local_irq_enable();
}

class LocksTest : public ::testing::Test {
 protected:
  hw::Topology topo{hw::testing::small_topology()};
  sim::TimedScheduler sched{topo.cpu_count(), 1};
  hw::CoherenceModel model{topo, hw::testing::round_latencies()};
  hw::Memory mem{sched, model};
  Spinlock lock{model, "pgdat.lru_lock", SpinlockKind::kTestAndSet};
  Recorder recorder;

  // CPU 1 holds the lock from 0 to about 2 us; CPU 0 asks for it at 100 ns and gets an IPI at 500 ns.
  void run(bool enables_irqs, SimTime& acquired, bool& irqs_off) {
    sched.cpu(CpuId{0}).set_irq_handler(&recorder);
    sched.cpu(CpuId{1}).start(hold_for(mem, sched.cpu(CpuId{1}), lock, 2000));
    sched.cpu(CpuId{0}).start(lock_irqsave(mem, sched.cpu(CpuId{0}), lock, enables_irqs, acquired, irqs_off));
    sched.send_irq(CpuId{0}, 1, at_ns(500));
    ASSERT_EQ(sched.run(at_ns(100000)).reason, sim::StopReason::kAllFinished);
  }
};

TEST_F(LocksTest, PowerpcSpinLockIrqsaveTakesAnInterruptWhileItSpins) {
  SimTime acquired{};
  bool irqs_off = false;
  run(true, acquired, irqs_off);
  ASSERT_EQ(recorder.taken.size(), 1u);
  EXPECT_LT(recorder.taken[0], at_ns(1000));  // taken while spinning, as soon as it arrived
  EXPECT_GT(acquired, at_ns(2000));
  EXPECT_TRUE(irqs_off);  // the trylock that succeeds runs with interrupts off again
}

TEST_F(LocksTest, SpinLockIrqsaveWithInterruptsKeptOffDefersTheInterruptPastTheCriticalSection) {
  SimTime acquired{};
  bool irqs_off = false;
  run(false, acquired, irqs_off);
  ASSERT_EQ(recorder.taken.size(), 1u);
  EXPECT_GT(acquired, at_ns(2000));
  EXPECT_GT(recorder.taken[0], acquired);  // only at spin_unlock_irqrestore
  EXPECT_TRUE(irqs_off);
}

// An era fact: each modeled era (ArchMmu) says how its spin_lock_irqsave spins.
TEST(ArchEra, OnlyPowerpcBefore516SpinsWithInterruptsEnabled) {
  const auto era = [](Arch arch, KernelVersion v) { return find_arch_mmu(arch, v); };
  EXPECT_TRUE(era(Arch::kPowerpc, {4, 14})->spin_lock_flags_enables_irqs());
  EXPECT_FALSE(era(Arch::kPowerpc, {6, 2})->spin_lock_flags_enables_irqs());
  EXPECT_FALSE(era(Arch::kX86, {3, 3})->spin_lock_flags_enables_irqs());
  EXPECT_FALSE(era(Arch::kX86, {5, 17})->spin_lock_flags_enables_irqs());
}

// Takes and releases `l` `rounds` times, holding it for `hold_ns`; appends this CPU to `order` at each acquisition.
Task<void> contend(hw::Memory& mem, Cpu& cpu, Spinlock& l, int rounds, std::int64_t hold_ns, std::vector<int>& order,
                   int& inside) {
  for (int i = 0; i < rounds; ++i) {
    co_await l.lock(mem, cpu);
    EXPECT_EQ(++inside, 1) << "two CPUs inside the lock";
    order.push_back(static_cast<int>(cpu.id().get()));
    co_await cpu.delay(sim::nanoseconds(hold_ns));
    --inside;
    co_await l.unlock(mem, cpu);
  }
}

// Every algorithm excludes, and every waiter gets the lock, with all 8 CPUs contending.
class SpinlockKinds : public ::testing::TestWithParam<SpinlockKind> {};

TEST_P(SpinlockKinds, ExcludeAndServeEveryWaiter) {
  const hw::Topology topo{hw::testing::small_topology()};
  sim::TimedScheduler sched{topo.cpu_count(), 1};
  hw::CoherenceModel model{topo, hw::testing::round_latencies()};
  hw::Memory mem{sched, model};
  Spinlock lock{model, "lock", GetParam()};
  std::vector<int> order;
  int inside = 0;
  for (std::uint32_t c = 0; c < topo.cpu_count(); ++c) {
    sched.cpu(CpuId{c}).start(contend(mem, sched.cpu(CpuId{c}), lock, 20, 50, order, inside));
  }
  ASSERT_EQ(sched.run(at_ns(10'000'000)).reason, sim::StopReason::kAllFinished);
  EXPECT_EQ(order.size(), 8u * 20);
  EXPECT_FALSE(lock.held());
}

// A queued lock hands over with a few atomics per acquisition: the fast path, pending, or the queue's xchg_tail and the
// head's cmpxchg. A test-and-set release sets off an atomic from every spinner.
TEST(Spinlock, QueuedWaitersSpinOnTheirOwnNodesNotOnTheLockWord) {
  const auto rmws_per_acquisition = [](SpinlockKind kind) {
    const hw::Topology topo{hw::testing::small_topology()};
    sim::TimedScheduler sched{topo.cpu_count(), 1};
    hw::CoherenceModel model{topo, hw::testing::round_latencies()};
    hw::Memory mem{sched, model};
    Spinlock lock{model, "lock", kind};
    std::vector<int> order;
    int inside = 0;
    for (std::uint32_t c = 0; c < topo.cpu_count(); ++c) {
      sched.cpu(CpuId{c}).start(contend(mem, sched.cpu(CpuId{c}), lock, 20, 50, order, inside));
    }
    EXPECT_EQ(sched.run(at_ns(10'000'000)).reason, sim::StopReason::kAllFinished);
    return static_cast<double>(model.stats(lock.line()).rmws) / static_cast<double>(order.size());
  };
  const double queued = rmws_per_acquisition(SpinlockKind::kQueued);
  const double tas = rmws_per_acquisition(SpinlockKind::kTestAndSet);
  EXPECT_LE(queued, 3.0);
  EXPECT_GT(tas, 2 * queued) << "test-and-set " << tas << " vs queued " << queued;
}

TEST(ArchEra, SpinlockKindFollowsTheArchAndRelease) {
  const auto kind = [](const char* arch, KernelVersion v) { return find_arch_mmu(*parse_arch(arch), v)->spinlock_kind(); };
  EXPECT_EQ(kind("x86", {3, 3}), SpinlockKind::kTicket);
  EXPECT_EQ(kind("x86", {5, 17}), SpinlockKind::kQueued);
  EXPECT_EQ(kind("x86", {6, 13}), SpinlockKind::kQueued);
  EXPECT_EQ(kind("powerpc", {4, 14}), SpinlockKind::kTestAndSet);
  EXPECT_EQ(kind("powerpc", {6, 2}), SpinlockKind::kQueued);
}

INSTANTIATE_TEST_SUITE_P(Locks, SpinlockKinds,
                         ::testing::Values(SpinlockKind::kTestAndSet, SpinlockKind::kTicket, SpinlockKind::kQueued),
                         [](const ::testing::TestParamInfo<SpinlockKind>& info) {
                           std::string name = to_string(info.param);
                           std::erase(name, '-');
                           return name;
                         });

}  // namespace
}  // namespace tlbsim::kernel
