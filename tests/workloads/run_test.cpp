// run_workload's JSON (src/workloads/run.cpp): the identity of the kernel code that ran.
#include "workloads/run.h"

#include <gtest/gtest.h>

#include "hw/machine.h"

namespace tlbsim::workloads {
namespace {

// The run names the spinlock algorithm of its release: a reader of the figures can tell a queued lock's hand-off
// from a test-and-set herd without opening the source.
TEST(Run, NamesTheSpinlockAlgorithmOfTheKernelRelease) {
  const auto spinlock = [](const char* machine, const char* kernel) {
    RunSpec spec;
    spec.kernel = kernel;
    spec.duration = sim::microseconds(20);
    return run_workload(hw::load_machine(machine), spec).json["kernel_spinlock"].get<std::string>();
  };
  EXPECT_EQ(spinlock("small-2s2c", "linux-3.3"), "ticket");
  EXPECT_EQ(spinlock("small-2s2c", "linux-5.17"), "queued");
  EXPECT_EQ(spinlock("power9-2s16c-smt4", "linux-4.14-ppc"), "test-and-set");
  EXPECT_EQ(spinlock("power9-2s16c-smt4", "linux-6.2-ppc"), "queued");
}

// The timed model prices the barriers (issue 25): the same run on a machine without [barrier] figures does more
// operations; on powerpc, where every lock release and acquire is an lwsync and smp_mb() a sync, visibly more.
TEST(Run, BarriersCostTimeWhereTheMachineGivesTheirFigures) {
  const auto ops = [](hw::Machine m, const char* workload, const char* kernel, bool priced) {
    if (!priced) m.barrier = hw::BarrierCosts{};
    RunSpec spec;
    spec.workload = workload;
    spec.kernel = kernel;
    spec.threads = 4;
    spec.duration = sim::milliseconds(1);
    return run_workload(m, spec).json["ops"].get<std::uint64_t>();
  };
  const hw::Machine p9 = hw::load_machine("power9-2s16c-smt4");
  EXPECT_LT(ops(p9, "tlb_flush1", "linux-6.2-ppc", true), ops(p9, "tlb_flush1", "linux-6.2-ppc", false));
  // x86 v6.13: switch_mm_irqs_off's smp_mb() on the way back from lazy mode, a LOCK ADD.
  const hw::Machine small = hw::load_machine("small-2s2c");
  EXPECT_LT(ops(small, "context_switch1", "linux-6.13", true), ops(small, "context_switch1", "linux-6.13", false));
}

// A long run can say how far it has got (issue 32: a 1536-CPU run looked hung): the hook sees simulated time and
// events grow, and reporting does not change the run.
TEST(Run, ReportsProgressWithoutChangingTheRun) {
  RunSpec spec;
  spec.workload = "context_switch1";
  spec.threads = 8;
  spec.duration = sim::milliseconds(2);
  const hw::Machine m = hw::load_machine("small-2s2c");
  std::vector<std::pair<sim::Duration, std::uint64_t>> seen;
  sim::Duration end_seen{};
  const RunOutput with = run_workload(m, spec, nullptr, [&](sim::Duration reached, sim::Duration end, std::uint64_t e) {
    seen.emplace_back(reached, e);
    end_seen = end;
  });
  ASSERT_GE(seen.size(), 2u);
  for (std::size_t i = 1; i < seen.size(); ++i) {
    EXPECT_LE(seen[i - 1].first, seen[i].first);
    EXPECT_LT(seen[i - 1].second, seen[i].second);
  }
  EXPECT_EQ(end_seen, spec.duration + spec.duration / 10);
  EXPECT_LE(seen.back().first, end_seen);
  nlohmann::json a = with.json, b = run_workload(m, spec).json;
  a.erase("wall_seconds");
  b.erase("wall_seconds");
  EXPECT_EQ(a, b);
}

}  // namespace
}  // namespace tlbsim::workloads
