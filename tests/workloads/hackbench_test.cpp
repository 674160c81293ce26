// hackbench: 40 processes per group passing 100-byte messages over unix sockets, on both sides of seed 002.
#include <gtest/gtest.h>

#include "hw/machine.h"
#include "workloads/run.h"

namespace tlbsim::workloads {
namespace {

RunOutput run(const char* kernel, std::uint32_t groups, std::uint64_t seed) {
  RunSpec spec;
  spec.kernel = kernel;
  spec.workload = "hackbench";
  spec.threads = groups;
  spec.duration = sim::microseconds(500);
  spec.seed = seed;
  return run_workload(hw::load_machine("milan-36c"), spec);
}

// Many wakers racing for tasks that migrate between runqueues once crashed the scheduler (try_to_wake_up locked
// the runqueue the task had just left); these runs replay that interleaving.
TEST(Hackbench, RunsCleanOnBothSidesOfSeed002OverSeeds) {
  for (const char* k : {"linux-6.13", "linux-6.13-seed002"}) {
    for (std::uint64_t seed = 1; seed <= 4; ++seed) {
      const RunOutput r = run(k, 2, seed);
      EXPECT_EQ(r.violations, 0u) << k << " seed " << seed;
      EXPECT_GT(r.metric, 0) << k << " seed " << seed;
    }
  }
}

TEST(Hackbench, Seed002TurnsMostCpumaskRmwsIntoReads) {
  const auto rmws = [](const RunOutput& r) { return r.json["counters"]["cache_lines"]["mm_cpumask"]["rmws"].get<std::uint64_t>(); };
  const RunOutput before = run("linux-6.13", 4, 1), after = run("linux-6.13-seed002", 4, 1);
  EXPECT_LT(rmws(after) * 3, rmws(before)) << rmws(after) << " vs " << rmws(before);
}

// hackbench prints "Time:" for a fixed amount of work; the run reports it for its groups x fds x fds x loops
// messages at the simulated rate, with hackbench's default of 100 loops unless --param loops says otherwise.
TEST(Hackbench, ReportsHackbenchsTimeForItsLoops) {
  const RunOutput r = run("linux-6.13", 2, 1);
  ASSERT_TRUE(r.json.contains("benchmark"));
  const auto& b = r.json["benchmark"];
  EXPECT_EQ(b["loops"].get<std::uint64_t>(), 100u);
  EXPECT_EQ(b["messages"].get<std::uint64_t>(), 2u * 20 * 20 * 100);
  EXPECT_DOUBLE_EQ(b["time_s"].get<double>(), 2.0 * 20 * 20 * 100 / r.metric);
  RunSpec spec;
  spec.kernel = "linux-6.13";
  spec.workload = "hackbench";
  spec.threads = 2;
  spec.duration = sim::microseconds(500);
  spec.params = {"loops=10000"};
  const RunOutput l = run_workload(hw::load_machine("milan-36c"), spec);
  EXPECT_EQ(l.json["benchmark"]["messages"].get<std::uint64_t>(), 2u * 20 * 20 * 10000);
  EXPECT_DOUBLE_EQ(l.json["benchmark"]["time_s"].get<double>(), 100 * b["time_s"].get<double>())
      << "the same run, a hundred times the work";
}

}  // namespace
}  // namespace tlbsim::workloads
