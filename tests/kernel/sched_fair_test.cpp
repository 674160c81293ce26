// Scenario tests of the fair class's EEVDF policy (kernel/sched_fair.cpp, Linux v6.13 kernel/sched/fair.c): slice
// expiry at the tick, RUN_TO_PARITY against wake-up preemption, and PLACE_REL_DEADLINE across a migration. The
// machine is small-2s2c (8 CPUs), so sysctl_sched_base_slice is 0.75 ms x (1 + ilog2 8) = 3 ms and HZ 250 ticks
// every 4 ms. SchedTick.* pins the CFS (v6.1) behaviour of the same scenarios.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "kernel/hog.h"
#include "kernel/scenario.h"
#include "kernel/sched.h"

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
  EXPECT_EQ(s.k.counters().sched_migrations, 0u);
}

TEST(SchedFair, AWokenTaskWaitsWhileTheRunningTaskIsInsideItsSlice) {
  Scenario s(v6_13());
  Sched sched(s.k);
  MmStruct& mm = s.k.new_mm();
  WaitQueue never(s.sys.coherence(), "never", s.k.config().spinlock_kind());
  sched.start();
  Hog h;
  TaskStruct& n = sched.create_task("napper", &mm, CpuId{0},
                                    [&](TaskStruct& t) { return napper(sched, t, sim::microseconds(100), never); });
  TaskStruct& hog = sched.create_task("hog", &mm, CpuId{0}, [&](TaskStruct& t) { return hog_body(sched, t, h, kStep); });
  n.cpus_allowed = only(s.k.ncpus(), 0);
  hog.cpus_allowed = only(s.k.ncpus(), 0);
  s.sys.scheduler().run(sim::kTimeZero + sim::milliseconds(5));
  // The napper runs first and sleeps; the hog is picked with a deadline 1.5 ms on (the protection of
  // RUN_TO_PARITY). The napper's wake-up at 100 us places it level with the hog, which stays eligible and
  // protected: no preemption (CFS preempts at once here, SchedTick.AWokenSleeperPreemptsAtOnceANewTaskWaitsForTheTick).
  // The 4 ms tick finds the hog's request consumed, and the napper, now the eligible one, runs.
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
  ASSERT_EQ(s.k.counters().sched_migrations, 1u);
  EXPECT_NE(b.ran_on, 99u);
  EXPECT_NE(b.ran_on, 0u);
  EXPECT_EQ(tb.deadline - tb.vruntime, request);
}

}  // namespace
}  // namespace tlbsim::kernel
