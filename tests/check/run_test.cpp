// The checker's single run: the default order, decisions that replay, and violations found in setup or later.
#include "check/run.h"

#include <gtest/gtest.h>

#include "util/error.h"

namespace tlbsim::check {
namespace {

using sim::Action;

TEST(CheckRun, DefaultOrderKeepsTheLastCpuRunningThenTakesTheEarliest) {
  DefaultOrder order;
  const std::vector<Action> actions = {
      Action{Action::Kind::kStep, CpuId{1}, 0, sim::kTimeZero + sim::nanoseconds(50)},
      Action{Action::Kind::kHardware, CpuId{0}, 0, sim::kTimeZero},
      Action{Action::Kind::kIrq, CpuId{0}, 2, sim::kTimeZero + sim::nanoseconds(10)},
      Action{Action::Kind::kStep, CpuId{0}, 0, sim::kTimeZero + sim::nanoseconds(20)},
  };
  EXPECT_EQ(order.pick(actions), 2u) << "earliest, never a hardware action";
  order.ran(actions[0]);
  EXPECT_EQ(order.pick(actions), 0u) << "cpu1 ran last and can continue";
  order.ran(actions[2]);  // an interrupt's arrival is not a CPU running
  EXPECT_EQ(order.pick(actions), 0u);
}

TEST(CheckRun, UnknownNamesAndScenariosThatDoNotApplyAreInputErrors) {
  EXPECT_THROW(make_target("linux-5.17", {}, {}, "nosuch", ""), InputError);
  EXPECT_THROW(make_target("nosuch-kernel", {}, {}, "madvise_vs_access", ""), InputError);
  EXPECT_THROW(make_target("linux-5.17", {}, {"nosuch"}, "madvise_vs_access", ""), InputError);
  EXPECT_THROW(make_target("linux-6.2-ppc", {}, {"flush_sends_no_ipis"}, "madvise_vs_access", ""), InputError);
}

TEST(CheckRun, TheCheckersMachineHasExactlyTheScenariosCpus) {
  const CheckTarget t = make_target("linux-5.17", {}, {}, "madvise_vs_access", "skylake-sp-2s28c");
  EXPECT_EQ(t.machine.cpu_count(), 2u);
  EXPECT_EQ(t.machine.name, "skylake-sp-2s28c");
}

TEST(CheckRun, DefaultOrderOnTheCorrectKernelFindsNothingAndTheDecisionsReplay) {
  const CheckTarget t = make_target("linux-5.17", {}, {}, "madvise_vs_access", "");
  sim::RandomChooser random(7);
  const Outcome a = run_schedule(t, random);
  EXPECT_FALSE(a.violation) << a.what;
  EXPECT_GT(a.steps, 10u);
  DecisionChooser replay(a.decisions);
  const Outcome b = run_schedule(t, replay);
  EXPECT_EQ(b.steps, a.steps);
  EXPECT_EQ(b.decisions, a.decisions) << "replaying a run's decisions takes the same choices";
}

TEST(CheckRun, AMutationThatSendsNoIpisIsAViolationInTheDefaultOrder) {
  const CheckTarget t = make_target("linux-5.17", {}, {"flush_sends_no_ipis"}, "madvise_vs_access", "");
  DecisionChooser none({});
  const Outcome o = run_schedule(t, none);
  ASSERT_TRUE(o.violation);
  EXPECT_NE(o.what.find("stale translation"), std::string::npos) << o.what;
  EXPECT_TRUE(o.decisions.empty());
}

}  // namespace
}  // namespace tlbsim::check
