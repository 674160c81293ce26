#include <gtest/gtest.h>

#include <string>

#include "hw/machine.h"
#include "workloads/run.h"

namespace tlbsim::workloads {
namespace {

RunOutput run(const char* machine, const char* workload, std::uint32_t threads, sim::Duration d) {
  RunSpec spec;
  spec.workload = workload;
  spec.threads = threads;
  spec.duration = d;
  return run_workload(hw::load_machine(machine), spec);
}

TEST(ContextSwitch1, ThreadsAndProcessesRunCleanly) {
  for (const char* w : {"context_switch1", "context_switch1_processes"}) {
    const RunOutput r = run("small-2s2c", w, 4, sim::microseconds(200));
    EXPECT_EQ(r.violations, 0u) << w;
    EXPECT_GT(r.metric, 0) << w;
  }
}

// Tasks that go idle between messages hand their mm to the idle task, which takes a reference on mm_count: with
// one mm shared by every thread, that line is the bottleneck as CPUs grow (seed 004's starting point).
TEST(ContextSwitch1, ThreadsOnManyCpusContendOnMmCount) {
  const RunOutput r = run("power8-16s192c-smt8", "context_switch1", 96, sim::microseconds(100));
  EXPECT_EQ(r.violations, 0u);
  const auto& line = r.json["counters"]["cache_lines"]["mm.mm_count"];
  EXPECT_GT(line["remote_transfers"].get<std::uint64_t>(), 100u);
  EXPECT_GT(line["wait_ns"].get<double>(), 1e6);
  const RunOutput procs = run("power8-16s192c-smt8", "context_switch1_processes", 96, sim::microseconds(100));
  EXPECT_GT(procs.metric, 2 * r.metric) << "separate mms do not share an mm_count line";
}

TEST(SchedulerWorkloads, NoOracleViolationOverManySeeds) {
  for (const char* w : {"context_switch1", "context_switch1_processes", "proc_churn"}) {
    for (std::uint64_t seed = 1; seed <= 8; ++seed) {
      RunSpec spec;
      spec.workload = w;
      spec.threads = 3;
      spec.duration = sim::microseconds(300);
      spec.seed = seed;
      const RunOutput r = run_workload(hw::load_machine("small-2s2c"), spec);
      EXPECT_EQ(r.violations, 0u) << w << " seed " << seed << "\n" << r.json["violations"].dump(2);
      EXPECT_GT(r.metric, 0) << w << " seed " << seed;
    }
  }
}

TEST(SchedulerWorkloads, ProcChurnFreesTheChildrensMms) {
  RunSpec spec;
  spec.workload = "proc_churn";
  spec.threads = 2;
  spec.duration = sim::microseconds(500);
  const RunOutput r = run_workload(hw::load_machine("small-2s2c"), spec);
  EXPECT_GT(r.json["counters"]["mm_freed"].get<std::uint64_t>(), 2u);
}

// One task and its partner on one CPU (a machine with one thread per core): each op (a write and a read by one
// side) is charged the machine's pipe_write once and its context_switch once per switch. Raising either by 5 us
// lengthens an op by 5 us times those counts, and by nothing else.
TEST(ContextSwitch1, OneCpuChargesPipeWriteAndContextSwitchPerOp) {
  const hw::Machine base =
      hw::load_machine(std::string(TLBSIM_SOURCE_DIR) + "/tests/data/kvm-2vcpu-20261204-devvm-host.toml");
  RunSpec spec;
  spec.workload = "context_switch1";
  spec.kernel = "linux-6.13";
  spec.threads = 1;
  spec.duration = sim::microseconds(500);
  const auto op_ns = [&](const hw::Machine& m, double* switches_per_op) {
    const RunOutput r = run_workload(m, spec);
    EXPECT_EQ(r.violations, 0u);
    const double ops = r.json["ops"].get<double>();
    if (switches_per_op != nullptr) *switches_per_op = r.json["counters"]["context_switches"].get<double>() / ops;
    return 1e9 / r.metric;
  };
  double sw = 0;
  const double t0 = op_ns(base, &sw);
  EXPECT_NEAR(sw, 1.0, 0.05) << "one switch per op: the reader sleeps, its partner runs";
  hw::Machine slow_switch = base;
  slow_switch.kernel.context_switch += sim::microseconds(5);
  EXPECT_NEAR(op_ns(slow_switch, nullptr) - t0, 5000.0 * sw, 250.0);
  hw::Machine slow_write = base;
  slow_write.kernel.pipe_write += sim::microseconds(5);
  EXPECT_NEAR(op_ns(slow_write, nullptr) - t0, 5000.0, 250.0);
}

}  // namespace
}  // namespace tlbsim::workloads
