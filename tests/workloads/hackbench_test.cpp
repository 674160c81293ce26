// hackbench: 40 processes per group passing 100-byte messages over unix sockets, on both sides of seed 002.
#include <gtest/gtest.h>

#include "hw/machine.h"
#include "workloads/run.h"

namespace tlbsim::workloads {
namespace {

RunOutput run(const char* kernel, std::uint32_t groups, std::uint64_t seed, std::vector<std::string> params = {}) {
  RunSpec spec;
  spec.kernel = kernel;
  spec.workload = "hackbench";
  spec.threads = groups;
  spec.duration = sim::milliseconds(2);
  spec.seed = seed;
  spec.params = std::move(params);
  return run_workload(hw::load_machine("milan-36c"), spec);
}

std::uint64_t cpumask_rmws(const RunOutput& r) {
  return r.json["counters"]["cache_lines"]["mm_cpumask"]["rmws"].get<std::uint64_t>();
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

// The fair class of the kernel decides how often a woken worker preempts a running one: under v5.17's CFS every
// woken sleeper does; under v6.13's EEVDF only one that pick_eevdf() would pick, and RUN_TO_PARITY lets the running
// task finish its request first (kernel/sched/fair.cpp).
TEST(Hackbench, EevdfPreemptsLessOftenThanCfs) {
  const auto share = [](const RunOutput& r) {
    const auto& c = r.json["counters"];
    return c["nonvoluntary_ctxt_switches"].get<double>() / c["context_switches"].get<double>();
  };
  const RunOutput cfs = run("linux-5.17", 4, 1), eevdf = run("linux-6.13", 4, 1);
  EXPECT_GT(share(cfs), 0.2);
  EXPECT_LT(share(eevdf), 0.8 * share(cfs)) << share(eevdf) << " vs " << share(cfs);
}

TEST(Hackbench, Seed002TurnsMostCpumaskRmwsIntoReads) {
  const RunOutput before = run("linux-6.13", 4, 1), after = run("linux-6.13-seed002", 4, 1);
  EXPECT_LT(cpumask_rmws(after) * 3, cpumask_rmws(before)) << cpumask_rmws(after) << " vs " << cpumask_rmws(before);
}

// hackbench -T: every worker is a thread of one process, so a switch between two of them stays in one mm and even
// the unpatched v6.13 touches mm_cpumask only when a CPU first loads that mm: at most once per CPU.
TEST(Hackbench, ThreadsModeSharesOneMmSoSwitchesLeaveMmCpumaskAlone) {
  const RunOutput threads = run("linux-6.13", 4, 1, {"threads=1"}), processes = run("linux-6.13", 4, 1);
  EXPECT_EQ(threads.json["params"]["threads"], "1");
  EXPECT_LE(cpumask_rmws(threads), 72u);
  EXPECT_GT(cpumask_rmws(processes), 10 * cpumask_rmws(threads));
  EXPECT_GT(threads.json["counters"]["context_switches"].get<std::uint64_t>(), 72u) << "the workers do switch";
}

// hackbench -p: the same messages over pipes, one 100-byte write each; no socket line is touched.
TEST(Hackbench, PipeModeSendsTheMessagesOverPipes) {
  const RunOutput r = run("linux-6.13", 2, 1, {"pipe=1"});
  const auto& lines = r.json["counters"]["cache_lines"];
  EXPECT_GT(r.metric, 0);
  EXPECT_EQ(r.violations, 0u);
  ASSERT_TRUE(lines.contains("pipe.buf"));
  EXPECT_GT(lines["pipe.buf"]["rmws"].get<std::uint64_t>(), 0u);
  EXPECT_FALSE(lines.contains("unix.sk_receive_queue"));
  EXPECT_TRUE(run("linux-6.13", 2, 1).json["counters"]["cache_lines"].contains("unix.sk_receive_queue"));
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
  spec.duration = sim::milliseconds(2);
  spec.params = {"loops=10000"};
  const RunOutput l = run_workload(hw::load_machine("milan-36c"), spec);
  EXPECT_EQ(l.json["benchmark"]["messages"].get<std::uint64_t>(), 2u * 20 * 20 * 10000);
  EXPECT_DOUBLE_EQ(l.json["benchmark"]["time_s"].get<double>(), 100 * b["time_s"].get<double>())
      << "the same run, a hundred times the work";
}

}  // namespace
}  // namespace tlbsim::workloads
