// Scenario tests of the scheduler tick (kernel/sched/tick.cpp): NO_HZ_IDLE, check_preempt_tick, wake-up
// preemption and NOHZ idle balancing.
#include <gtest/gtest.h>

#include <functional>

#include "kernel/hog.h"
#include "kernel/scenario.h"
#include "kernel/sched/sched.h"

namespace tlbsim::kernel {
namespace {

using testing::Hog;
using testing::hog_body;
using testing::napper;
using testing::only;
using testing::Scenario;

TEST(SchedTick, TicksOnlyOnBusyCpusAtHz) {
  Scenario s;  // HZ 250: a tick every 4 ms
  Sched sched(s.k);
  MmStruct& mm = s.k.new_mm();
  sched.start();
  Hog h;
  sched.create_task("hog", &mm, CpuId{0}, [&](TaskStruct& t) { return hog_body(sched, t, h, sim::microseconds(10)); });
  s.sys.scheduler().run(sim::kTimeZero + sim::milliseconds(19));
  EXPECT_EQ(sched.tick_period(), sim::milliseconds(4));
  EXPECT_EQ(s.k.counters().irq_timer_count, 4u) << "ticks at 4, 8, 12 and 16 ms on the busy CPU, none on idle ones";
  EXPECT_EQ(h.first_preempted, sim::SimTime::max()) << "alone on its CPU, the hog is never preempted";
}

TEST(SchedTick, NoTickWhenTurnedOff) {
  Scenario s;
  Sched sched(s.k, false);
  MmStruct& mm = s.k.new_mm();
  sched.start();
  Hog h;
  sched.create_task("hog", &mm, CpuId{0}, [&](TaskStruct& t) { return hog_body(sched, t, h, sim::microseconds(10)); });
  s.sys.scheduler().run(sim::kTimeZero + sim::milliseconds(19));
  EXPECT_EQ(s.k.counters().irq_timer_count, 0u);
}

TEST(SchedTick, TheTickPreemptsAHogOnceItsSliceIsUsedUp) {
  Scenario s;  // 4 CPUs: sysctl_sched_latency 6 ms x (1 + ilog2 4) = 18 ms, a 9 ms slice for each of two tasks
  Sched sched(s.k);
  MmStruct& mm = s.k.new_mm();
  sched.start();
  Hog a, b;
  TaskStruct& ta = sched.create_task("a", &mm, CpuId{0},
                                     [&](TaskStruct& t) { return hog_body(sched, t, a, sim::microseconds(10)); });
  TaskStruct& tb = sched.create_task("b", &mm, CpuId{0},
                                     [&](TaskStruct& t) { return hog_body(sched, t, b, sim::microseconds(10)); });
  ta.cpus_allowed = only(s.k.ncpus(), 0);  // pinned: no balancing, only preemption
  tb.cpus_allowed = only(s.k.ncpus(), 0);
  s.sys.scheduler().run(sim::kTimeZero + sim::milliseconds(30));
  // Ticks at 4 and 8 ms find a's 9 ms slice unfinished; the one at 12 ms preempts it.
  EXPECT_GE(a.first_preempted, sim::kTimeZero + sim::milliseconds(12));
  EXPECT_LT(a.first_preempted, sim::kTimeZero + sim::milliseconds(12) + sim::microseconds(50));
  EXPECT_GE(b.first_preempted, sim::kTimeZero + sim::milliseconds(24)) << "b starts at 12 ms and runs its slice";
  EXPECT_EQ(s.k.sched()->stats.sched_migrations, 0u);
}

TEST(SchedTick, ANohzKickMovesAQueuedTaskToAnIdleCpu) {
  for (const bool tick : {true, false}) {
    Scenario s;
    Sched sched(s.k, tick);
    MmStruct& mm = s.k.new_mm();
    sched.start();
    Hog a, b;
    sched.create_task("a", &mm, CpuId{0}, [&](TaskStruct& t) { return hog_body(sched, t, a, sim::microseconds(10)); });
    sched.create_task("b", &mm, CpuId{0}, [&](TaskStruct& t) { return hog_body(sched, t, b, sim::microseconds(10)); });
    s.sys.scheduler().run(sim::kTimeZero + sim::milliseconds(6));
    if (tick) {
      // The 4 ms tick on cpu0 sees b queued and kicks the first idle CPU, which balances for the idle CPUs: the
      // first of them after itself pulls b, and b stays there.
      EXPECT_EQ(s.k.sched()->stats.sched_migrations, 1u);
      EXPECT_EQ(b.ran_on, 2u);
      EXPECT_EQ(a.first_preempted, sim::SimTime::max());
    } else {
      EXPECT_EQ(s.k.sched()->stats.sched_migrations, 0u) << "without the tick nothing moves b";
      EXPECT_EQ(b.ran_on, 99u) << "and nothing preempts a";
    }
  }
}

TEST(SchedTick, ACacheHotTaskMovesOnlyAfterIdleBalancingHasFailedPastCacheNiceTries) {
  Scenario s;
  Sched sched(s.k);
  MmStruct& mm = s.k.new_mm();
  sched.start();
  Hog a, b;
  TaskStruct& ta = sched.create_task("a", &mm, CpuId{0},
                                     [&](TaskStruct& t) { return hog_body(sched, t, a, sim::microseconds(10)); });
  TaskStruct& tb = sched.create_task("b", &mm, CpuId{0},
                                     [&](TaskStruct& t) { return hog_body(sched, t, b, sim::microseconds(10)); });
  // b looks as if it had just run at every balance (its exec_start stands ahead of the clock), so task_hot refuses it.
  // Neither hog may run on cpu0's SMT sibling, where no task is ever hot.
  tb.exec_start = sim::kTimeZero + sim::milliseconds(1000);
  const hw::Topology& topo = s.sys.topology();
  Cpumask not_sibling(s.k.ncpus());
  for (std::uint32_t c = 0; c < s.k.ncpus(); ++c) {
    const bool sibling = c != 0 && topo.core_of(CpuId{c}) == topo.core_of(CpuId{0}) &&
                         topo.socket_of(CpuId{c}) == topo.socket_of(CpuId{0});
    if (!sibling) not_sibling.set(CpuId{c});
  }
  ta.cpus_allowed = tb.cpus_allowed = not_sibling;
  s.sys.scheduler().run(sim::kTimeZero + sim::milliseconds(10));
  // The kicks at 4 and 8 ms find only a cache-hot task: each idle CPU's balance fails and counts it.
  EXPECT_EQ(s.k.sched()->stats.sched_migrations, 0u);
  EXPECT_EQ(b.ran_on, 99u);
  s.sys.scheduler().run(sim::kTimeZero + sim::milliseconds(13));
  // At 12 ms the LLC domain of an idle CPU has failed twice, more than its cache_nice_tries (1), and a hot task
  // may move. (The same tick ends a's CFS slice, so the task that moves is whichever is queued then.)
  EXPECT_EQ(s.k.sched()->stats.sched_migrations, 1u);
  EXPECT_NE(b.ran_on, 99u);
  EXPECT_NE(a.ran_on, b.ran_on) << "the two hogs now run on two CPUs";
}

sim::Task<void> forker(Sched& s, TaskStruct& t, TaskStruct& child, WaitQueue& never) {
  co_await s.cpu_of(t).cpu.delay(sim::microseconds(100));
  co_await s.wake_up_new_task(t, child);
  co_await s.wait_event(t, never, [] { return false; });
}

// One CPU-bound hog pinned to cpu0, plus whatever `add` creates; returns when the hog was first preempted.
sim::SimTime first_preemption(sim::Duration run_for,
                              const std::function<void(Scenario&, Sched&, MmStruct&, WaitQueue&)>& add,
                              bool hog_first) {
  Scenario s;
  Sched sched(s.k);
  MmStruct& mm = s.k.new_mm();
  WaitQueue never(s.sys.coherence(), "never", s.k.arch().spinlock_kind());
  sched.start();
  Hog h;
  if (!hog_first) add(s, sched, mm, never);
  TaskStruct& hog = sched.create_task("hog", &mm, CpuId{0},
                                      [&](TaskStruct& t) { return hog_body(sched, t, h, sim::microseconds(10)); });
  hog.cpus_allowed = only(s.k.ncpus(), 0);
  if (hog_first) add(s, sched, mm, never);
  s.sys.scheduler().run(sim::kTimeZero + run_for);
  return h.first_preempted;
}

TEST(SchedTick, AWokenSleeperPreemptsAtOnceANewTaskWaitsForTheTick) {
  // The napper runs first and sleeps; the hog takes the CPU; the napper's wake-up at 100 us preempts it.
  const sim::SimTime by_sleeper = first_preemption(
      sim::milliseconds(1),
      [](Scenario& s, Sched& sched, MmStruct& mm, WaitQueue& never) {
        TaskStruct& n = sched.create_task(
            "napper", &mm, CpuId{0}, [&](TaskStruct& t) { return napper(sched, t, sim::microseconds(100), never); });
        n.cpus_allowed = only(s.k.ncpus(), 0);
      },
      false);
  EXPECT_GE(by_sleeper, sim::kTimeZero + sim::microseconds(100));
  EXPECT_LT(by_sleeper, sim::kTimeZero + sim::microseconds(130));
  // WF_FORK: a new child waits behind the hog until the tick finds the hog's 9 ms slice used up (the 12 ms tick).
  const sim::SimTime by_new_task = first_preemption(
      sim::milliseconds(20),
      [](Scenario& s, Sched& sched, MmStruct& mm, WaitQueue& never) {
        TaskStruct& child = sched.create_task(
            "child", &mm, CpuId{0}, [&](TaskStruct& t) { return napper(sched, t, sim::microseconds(1), never); },
            false);
        child.cpus_allowed = only(s.k.ncpus(), 0);
        sched.create_task("forker", &mm, CpuId{2}, [&](TaskStruct& t) { return forker(sched, t, child, never); });
      },
      true);
  EXPECT_GE(by_new_task, sim::kTimeZero + sim::milliseconds(12));
  EXPECT_LT(by_new_task, sim::kTimeZero + sim::milliseconds(13));
}

}  // namespace
}  // namespace tlbsim::kernel
