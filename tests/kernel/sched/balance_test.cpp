// Scenario tests of newidle balancing (kernel/sched/balance.cpp): v5.16+'s cost gate on sd->max_newidle_lb_cost.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>

#include "kernel/scenario.h"
#include "kernel/sched/sched.h"

namespace tlbsim::kernel {
namespace {

using testing::Scenario;

constexpr std::uint32_t kNeverRan = 99;

struct Placement {
  std::uint32_t child_ran_on = kNeverRan;
};

// cpu0 runs for 50 us, then sleeps for good: it goes idle through newidle balancing.
sim::Task<void> short_runner(Sched& s, TaskStruct& t) {
  co_await s.cpu_of(t).cpu.delay(sim::microseconds(50));
  t.state = TaskState::TASK_INTERRUPTIBLE;
  for (;;) co_await s.schedule(t);
}

sim::Task<void> child_body(Sched& s, TaskStruct& t, Placement& p) {
  p.child_ran_on = t.cpu.get();
  for (;;) co_await s.cpu_of(t).cpu.delay(sim::microseconds(10));
}

// cpu1's task forks a child that may run on cpu0 or cpu1 while both are busy, so it queues on cpu1 (setting
// rd->overload), and keeps cpu1 busy.
sim::Task<void> parent_body(Sched& s, TaskStruct& t, TaskStruct& child) {
  co_await s.wake_up_new_task(t, child);
  for (;;) co_await s.cpu_of(t).cpu.delay(sim::microseconds(10));
}

// Runs the scenario on `s` for 1 ms with cpu0's sd->max_newidle_lb_cost pre-set to `max_cost` at every level;
// returns the CPU the child ran on.
std::uint32_t run(Scenario& s, std::unique_ptr<Sched>& sched, sim::Duration max_cost) {
  sched = std::make_unique<Sched>(s.k, false);  // no tick: nothing but newidle balancing moves tasks
  sched->start();
  for (auto& sd : sched->rq(CpuId{0}).sd) sd.max_newidle_lb_cost = max_cost;
  Placement p;
  MmStruct& mm = s.k.new_mm();
  sched->create_task("runner", &mm, CpuId{0}, [&](TaskStruct& t) { return short_runner(*sched, t); });
  TaskStruct& child = sched->create_task(
      "child", &s.k.new_mm(), CpuId{1}, [&](TaskStruct& t) { return child_body(*sched, t, p); },
      /*runnable=*/false);
  child.cpus_allowed = Cpumask(s.k.ncpus());
  child.cpus_allowed.set(CpuId{0});
  child.cpus_allowed.set(CpuId{1});
  sched->create_task("parent", &s.k.new_mm(), CpuId{1}, [&](TaskStruct& t) { return parent_body(*sched, t, child); });
  s.sys.scheduler().run(sim::kTimeZero + sim::milliseconds(1));
  return p.child_ran_on;
}

std::uint32_t ran_on(sim::Duration max_cost) {
  Scenario s;
  std::unique_ptr<Sched> sched;
  return run(s, sched, max_cost);
}

TEST(SchedBalance, ACpuGoingIdlePullsTheQueuedTaskAndRecordsWhatBalancingCost) {
  Scenario s;
  std::unique_ptr<Sched> sched;
  EXPECT_EQ(run(s, sched, sim::Duration{0}), 0u) << "newidle balancing on cpu0 pulled the child from cpu1";
  EXPECT_EQ(s.k.sched()->stats.sched_migrations, 1u);
  const Rq& r0 = sched->rq(CpuId{0});
  sim::Duration most{0};
  for (const auto& sd : r0.sd) most = std::max(most, sd.max_newidle_lb_cost);
  EXPECT_GT(most, sim::Duration{0}) << "update_newidle_cost recorded the balance's cost";
  EXPECT_LT(most, sim::microseconds(50));
  EXPECT_EQ(r0.max_idle_balance_cost, sim::microseconds(500)) << "below sysctl_sched_migration_cost: unchanged";
}

TEST(SchedBalance, NoPullWhenTheExpectedIdleTimeCannotPayForBalancing) {
  // avg_idle starts at 1 ms (2 * sysctl_sched_migration_cost); a domain whose balancing once cost 2 ms is skipped.
  EXPECT_EQ(ran_on(sim::milliseconds(2)), kNeverRan) << "the child stays queued behind cpu1's hog while cpu0 idles";
  EXPECT_EQ(ran_on(sim::microseconds(999)), 0u) << "a cost below avg_idle does not stop the balance";
}

TEST(SchedBalance, ATaskThatRanWithinTheMigrationCostIsCacheHotExceptToItsSmtSibling) {
  Scenario s;
  Sched sched(s.k, false);
  Placement placement;  // never woken: only its bookkeeping is read
  TaskStruct& t = sched.create_task(
      "t", &s.k.new_mm(), CpuId{0}, [&](TaskStruct& self) { return child_body(sched, self, placement); },
      /*runnable=*/false);
  const hw::Topology& topo = s.sys.topology();
  std::uint32_t sibling = 0, other = 0;
  for (std::uint32_t c = 1; c < s.k.ncpus(); ++c) {
    const bool same_core =
        topo.core_of(CpuId{c}) == topo.core_of(CpuId{0}) && topo.socket_of(CpuId{c}) == topo.socket_of(CpuId{0});
    if (same_core && sibling == 0) sibling = c;
    if (!same_core && other == 0) other = c;
  }
  ASSERT_NE(sibling, 0u);
  ASSERT_NE(other, 0u);
  const sim::SimTime ran = sim::kTimeZero + sim::milliseconds(10);
  EXPECT_FALSE(sched.task_hot(t, CpuId{other}, ran)) << "a task that never ran has no cache to lose";
  t.exec_start = ran;
  EXPECT_TRUE(sched.task_hot(t, CpuId{other}, ran + sim::microseconds(499)));
  EXPECT_FALSE(sched.task_hot(t, CpuId{other}, ran + sim::microseconds(500)));
  EXPECT_FALSE(sched.task_hot(t, CpuId{sibling}, ran + sim::microseconds(1))) << "SMT siblings share the caches";
}

}  // namespace
}  // namespace tlbsim::kernel
