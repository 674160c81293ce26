// Scenario tests of the fair class's EEVDF policy (kernel/sched/fair.cpp, Linux v6.13 kernel/sched/fair.c): slice
// expiry at the tick, RUN_TO_PARITY against wake-up preemption, and PLACE_REL_DEADLINE across a migration. The
// machine is small-2s2c (8 CPUs), so sysctl_sched_base_slice is 0.75 ms x (1 + ilog2 8) = 3 ms and HZ 250 ticks
// every 4 ms. SchedTick.* pins the CFS (v6.1) behaviour of the same scenarios.
#include <gtest/gtest.h>

#include <memory>
#include <tuple>
#include <vector>

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

KernelConfig v6_13() {
  KernelConfig c;
  c.version = KernelVersion{6, 13};
  return c;
}

constexpr sim::Duration kStep = sim::microseconds(10);
constexpr sim::Duration kSlice = sim::milliseconds(3);

sim::Duration ms(double v) { return sim::Duration{static_cast<std::int64_t>(v * 1e9)}; }

// A runqueue of hand-set entities, for the policy's functions alone.
struct Entities {
  Scenario s;
  Rq rq{s.sys.coherence(), SpinlockKind::kQueued};
  std::vector<std::unique_ptr<TaskStruct>> tasks;
  TaskStruct& task(sim::Duration vruntime, sim::Duration deadline) {
    tasks.push_back(std::make_unique<TaskStruct>(s.sys.coherence(), static_cast<std::uint32_t>(tasks.size() + 1), "t",
                                                 nullptr, CpuId{0}, SpinlockKind::kQueued));
    tasks.back()->vruntime = vruntime;
    tasks.back()->deadline = deadline;
    return *tasks.back();
  }
};

TEST(SchedFair, EevdfFromV66AndItsDelayedDequeueFromV612) {
  KernelConfig c;
  for (const auto& [v, eevdf, delay] :
       {std::tuple{KernelVersion{6, 2}, false, false}, std::tuple{KernelVersion{6, 6}, true, false},
        std::tuple{KernelVersion{6, 11}, true, false}, std::tuple{KernelVersion{6, 12}, true, true},
        std::tuple{KernelVersion{6, 13}, true, true}}) {
    c.version = v;
    EXPECT_EQ(c.sched_eevdf(), eevdf) << v.str();
    EXPECT_EQ(c.sched_delay_dequeue(), delay) << v.str();
  }
}

TEST(SchedFair, TheBaseSliceScalesWithTheLogOfUpToEightCpus) {
  EXPECT_EQ(eevdf_base_slice(1), sim::microseconds(750));
  EXPECT_EQ(eevdf_base_slice(4), sim::microseconds(2250));
  EXPECT_EQ(eevdf_base_slice(72), kSlice);
}

TEST(SchedFair, PickEevdfKeepsAnEligibleCurrInsideItsRequestElseTakesTheEarliestEligibleDeadline) {
  Entities e;
  // curr a at 0 with deadline 3; b far ahead (10); woken c placed at -1 with deadline 2. V = 3: all but b eligible.
  TaskStruct& a = e.task(ms(0), ms(3));
  TaskStruct& b = e.task(ms(10), ms(11));
  TaskStruct& c = e.task(ms(-1), ms(2));
  e.rq.queue = {&b, &c};
  EXPECT_EQ(avg_vruntime(e.rq, &a), ms(3));
  EXPECT_TRUE(entity_eligible(e.rq, &a, a));
  EXPECT_FALSE(entity_eligible(e.rq, &a, b));
  a.vprot = a.deadline;  // picked with this request: RUN_TO_PARITY keeps it
  EXPECT_EQ(pick_eevdf(e.rq, &a), &a);
  a.vprot = ms(1);  // a new request was issued since the pick: the earliest eligible deadline wins
  EXPECT_EQ(pick_eevdf(e.rq, &a), &c);
  // An ineligible curr loses its protection: with c gone and b slower, a at 0 is ahead of V = -0.5.
  b.vruntime = ms(-1);
  e.rq.queue = {&b};
  a.vprot = a.deadline;
  EXPECT_EQ(pick_eevdf(e.rq, &a), &b);
}

TEST(SchedFair, PlaceEntityInflatesTheLagAndIssuesAHalfRequestToANewTask) {
  Entities e;
  TaskStruct& a = e.task(ms(4), ms(7));
  TaskStruct& w = e.task(ms(0), ms(0));
  e.rq.curr = &a;
  a.on_rq.value = true;
  // Slept 2 ms behind V: with one entity there the lag doubles, so that V after the join is 2 ms behind a.
  w.vlag = ms(2);
  place_entity(e.rq, w, false, kSlice);
  EXPECT_EQ(w.vruntime, ms(0));
  EXPECT_EQ(w.deadline, ms(3));
  e.rq.queue = {&w};
  EXPECT_EQ(avg_vruntime(e.rq, &a), ms(2));
  // A new task (ENQUEUE_INITIAL) at V with half a slice; a migrated one keeps its relative deadline.
  TaskStruct& n = e.task(ms(0), ms(0));
  place_entity(e.rq, n, true, kSlice);
  EXPECT_EQ(n.vruntime, ms(2));
  EXPECT_EQ(n.deadline, ms(3.5));
  TaskStruct& m = e.task(ms(0), ms(0.25));
  m.rel_deadline = true;
  place_entity(e.rq, m, false, kSlice);
  EXPECT_EQ(m.deadline - m.vruntime, ms(0.25));
  EXPECT_FALSE(m.rel_deadline);
}

TEST(SchedFair, UpdateCurrIssuesANewRequestOnceTheDeadlineIsReached) {
  Entities e;
  TaskStruct& a = e.task(ms(0), ms(1.5));
  e.rq.curr = &a;
  a.on_rq.value = true;
  e.rq.curr_exec_start = sim::kTimeZero;
  EXPECT_FALSE(update_curr(e.rq, sim::kTimeZero + ms(1), kSlice));
  EXPECT_EQ(a.vruntime, ms(1));
  EXPECT_EQ(a.deadline, ms(1.5));
  EXPECT_FALSE(update_curr(e.rq, sim::kTimeZero + ms(2), kSlice)) << "a new request, but nobody to switch to";
  EXPECT_EQ(a.deadline, ms(5));
  TaskStruct& b = e.task(ms(2), ms(5));
  e.rq.queue = {&b};
  EXPECT_TRUE(update_curr(e.rq, sim::kTimeZero + ms(5), kSlice));
  EXPECT_EQ(a.deadline, ms(8));
  update_entity_lag(e.rq, &a, a, ms(6));
  EXPECT_EQ(a.vlag, ms(-1.5)) << "V = 3.5 with b at 2";
}

TEST(SchedFair, TheTickPreemptsAHogWhoseRequestIsConsumed) {
  ASSERT_TRUE(v6_13().sched_eevdf());
  Scenario s(v6_13());
  Sched sched(s.k);
  MmStruct& mm = s.k.new_mm();
  sched.start();
  Hog a, b;
  TaskStruct& ta = sched.create_task("a", &mm, CpuId{0}, [&](TaskStruct& t) { return hog_body(sched, t, a, kStep); });
  TaskStruct& tb = sched.create_task("b", &mm, CpuId{0}, [&](TaskStruct& t) { return hog_body(sched, t, b, kStep); });
  ta.cpus_allowed = only(s.k.ncpus(), 0);
  tb.cpus_allowed = only(s.k.ncpus(), 0);
  s.sys.scheduler().run(sim::kTimeZero + sim::milliseconds(10));
  // Both start with half a slice (PLACE_DEADLINE_INITIAL, 1.5 ms). The 4 ms tick finds a past its deadline, issues
  // it a new one, and b (eligible, a no longer) runs; the 8 ms tick does the same to b. CFS would give each a 12 ms
  // turn (sched_slice of 2 tasks in an 18 ms period, at ticks).
  EXPECT_GE(a.first_preempted, sim::kTimeZero + sim::milliseconds(4));
  EXPECT_LT(a.first_preempted, sim::kTimeZero + sim::milliseconds(4) + sim::microseconds(50));
  EXPECT_GE(b.first_preempted, sim::kTimeZero + sim::milliseconds(8));
  EXPECT_LT(b.first_preempted, sim::kTimeZero + sim::milliseconds(8) + sim::microseconds(50));
  EXPECT_EQ(s.k.sched()->stats.sched_migrations, 0u);
}

sim::Task<void> forker(Sched& s, TaskStruct& t, TaskStruct& child, WaitQueue& never) {
  co_await s.cpu_of(t).cpu.delay(sim::microseconds(10));
  co_await s.wake_up_new_task(t, child);
  co_await s.wait_event(t, never, [] { return false; });
}

TEST(SchedFair, AWokenTaskWaitsWhileTheRunningTaskIsInsideItsSlice) {
  Scenario s(v6_13());
  Sched sched(s.k);
  MmStruct& mm = s.k.new_mm();
  WaitQueue never(s.sys.coherence(), "never", s.k.arch().spinlock_kind());
  sched.start();
  Hog h;
  TaskStruct& n = sched.create_task("napper", &mm, CpuId{0},
                                    [&](TaskStruct& t) { return napper(sched, t, sim::microseconds(100), never); });
  TaskStruct& hog = sched.create_task(
      "hog", &mm, CpuId{0}, [&](TaskStruct& t) { return hog_body(sched, t, h, kStep); }, false);
  n.cpus_allowed = only(s.k.ncpus(), 0);
  hog.cpus_allowed = only(s.k.ncpus(), 0);
  sched.create_task("forker", &mm, CpuId{2}, [&](TaskStruct& t) { return forker(sched, t, hog, never); });
  s.sys.scheduler().run(sim::kTimeZero + sim::milliseconds(5));
  // The napper sleeps alone on cpu0, so it leaves the runqueue with no lag; the hog, forked onto cpu0 at 10 us,
  // gets a first request of 1.5 ms. The napper's wake-up at 100 us places it at V, level with the hog and with a
  // later deadline: no preemption (CFS preempts at once here:
  // SchedTick.AWokenSleeperPreemptsAtOnceANewTaskWaitsForTheTick). The 4 ms tick finds the hog's request consumed, and
  // the napper, now the eligible one, runs.
  EXPECT_GE(h.first_preempted, sim::kTimeZero + sim::milliseconds(4));
  EXPECT_LT(h.first_preempted, sim::kTimeZero + sim::milliseconds(4) + sim::microseconds(50));
}

TEST(SchedFair, AMigratedTaskKeepsWhatIsLeftOfItsDeadline) {
  KernelConfig c = v6_13();
  c.HZ = 1000;  // the first tick (1 ms) comes before a's first request (1.5 ms) is consumed
  Scenario s(c);
  Sched sched(s.k);
  MmStruct& mm = s.k.new_mm();
  sched.start();
  Hog a, b;
  sched.create_task("a", &mm, CpuId{0}, [&](TaskStruct& t) { return hog_body(sched, t, a, kStep); });
  TaskStruct& tb = sched.create_task("b", &mm, CpuId{0}, [&](TaskStruct& t) { return hog_body(sched, t, b, kStep); });
  const sim::Duration request = tb.deadline - tb.vruntime;
  EXPECT_EQ(request, sim::microseconds(1500)) << "a new task's first request is half a slice";
  s.sys.scheduler().run(sim::kTimeZero + sim::microseconds(1100));
  // The 1 ms tick leaves a running and kicks an idle CPU, which pulls the queued b
  // (SchedTick.ANohzKickMovesAQueuedTaskToAnIdleCpu). b never ran, so it arrives with its whole first request
  // (PLACE_REL_DEADLINE), not a fresh 3 ms slice. No update_curr has charged it on its new CPU yet: that CPU's
  // first tick is at 2 ms.
  EXPECT_EQ(a.first_preempted, sim::SimTime::max());
  ASSERT_EQ(s.k.sched()->stats.sched_migrations, 1u);
  EXPECT_NE(b.ran_on, 99u);
  EXPECT_NE(b.ran_on, 0u);
  EXPECT_EQ(tb.deadline - tb.vruntime, request);
}

// Runs for `run`, sleeps on `wq` until `go`, records the CPU it woke on, then sleeps for good.
sim::Task<void> run_then_wait(Sched& s, TaskStruct& t, sim::Duration run, WaitQueue& wq, const bool& go,
                              std::uint32_t& woke_on) {
  co_await s.cpu_of(t).cpu.delay(run);
  co_await s.wait_event(t, wq, [&go] { return go; });
  woke_on = t.cpu.get();
  co_await s.wait_event(t, wq, [] { return false; });
}

sim::Task<void> wake_at(Sched& s, TaskStruct& t, sim::Duration at, WaitQueue& wq, bool& go, WaitQueue& never) {
  co_await s.cpu_of(t).cpu.delay(at);
  go = true;
  co_await s.wake_up(t, wq);
  co_await s.wait_event(t, never, [] { return false; });
}

// A task `n` on cpu0 that runs 0.5 ms and sleeps, with a hog pinned there; with `waker`, a task on cpu4 wakes `n`
// at 2.5 ms. Runs until `until`.
struct DelayedSleeper {
  explicit DelayedSleeper(bool waker, sim::Duration until) {
    sched.start();
    TaskStruct& tn = sched.create_task("n", &mm, CpuId{0}, [&](TaskStruct& t) {
      return run_then_wait(sched, t, sim::microseconds(500), wq, go, woke_on);
    });
    TaskStruct& ta = sched.create_task("a", &mm, CpuId{0}, [&](TaskStruct& t) { return hog_body(sched, t, a, kStep); });
    ta.cpus_allowed = only(s.k.ncpus(), 0);
    if (waker) {
      sched.create_task("w", &mm, CpuId{4},
                        [&](TaskStruct& t) { return wake_at(sched, t, sim::microseconds(2500), wq, go, never); });
    }
    s.sys.scheduler().run(sim::kTimeZero + sim::microseconds(1000));
    delayed_at_1ms = tn.on_rq.value && tn.sched_delayed;
    s.sys.scheduler().run(sim::kTimeZero + until);
    n = &tn;
  }
  Scenario s{v6_13()};
  Sched sched{s.k};
  MmStruct& mm = s.k.new_mm();
  WaitQueue wq{s.sys.coherence(), "wq", s.k.arch().spinlock_kind()};
  WaitQueue never{s.sys.coherence(), "never", s.k.arch().spinlock_kind()};
  bool go = false;
  std::uint32_t woke_on = 99;
  Hog a;
  bool delayed_at_1ms = false;
  TaskStruct* n = nullptr;
};

TEST(SchedFair, ATaskThatSleepsAheadOfItsShareStaysQueuedAndWakesWhereItWas) {
  DelayedSleeper d(true, sim::microseconds(3000));
  // n slept 0.5 ms ahead of the hog (V = 0.25 ms): not eligible, so DELAY_DEQUEUE left it on cpu0's runqueue.
  EXPECT_TRUE(d.delayed_at_1ms);
  // Its wake-up found it still queued (ttwu_runnable): requeued on cpu0 with no select_task_rq, although cpu1-3
  // of its LLC were idle; the hog's consumed request (1.5 ms) let it run at once.
  EXPECT_EQ(d.woke_on, 0u);
  EXPECT_EQ(d.s.k.sched()->stats.sched_migrations, 0u);
  EXPECT_GE(d.a.first_preempted, sim::kTimeZero + sim::microseconds(2500));
  EXPECT_LT(d.a.first_preempted, sim::kTimeZero + sim::microseconds(2550));
}

TEST(SchedFair, ADelayedTaskLeavesItsRunqueueWhenPicked) {
  DelayedSleeper d(false, sim::microseconds(4100));
  EXPECT_TRUE(d.delayed_at_1ms);
  // The 4 ms tick ends the hog's request; pick_eevdf picks the delayed n (eligible now, earliest deadline), which
  // is dequeued then, with its positive lag dropped (DELAY_ZERO); the hog runs on.
  EXPECT_FALSE(d.n->on_rq.value);
  EXPECT_FALSE(d.n->sched_delayed);
  EXPECT_EQ(d.n->vlag, sim::Duration{0});
  EXPECT_EQ(d.woke_on, 99u);
}

}  // namespace
}  // namespace tlbsim::kernel
