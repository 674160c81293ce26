// The idle workload on seed 003's machine: with the v3.3 kernel every deep C-state entry reloads CR3 in leave_mm;
// with seed 003 (either form) only the first entry after each CPU ran its user process does.
#include <gtest/gtest.h>

#include "hw/machine.h"
#include "workloads/run.h"

namespace tlbsim::workloads {
namespace {

RunOutput run_idle(const char* kernel, std::uint32_t threads) {
  RunSpec spec;
  spec.kernel = kernel;
  spec.workload = "idle";
  spec.threads = threads;
  spec.duration = sim::milliseconds(200);
  spec.warmup = sim::Duration{0};  // counters from boot, as seed 003's reproduction counts: each CPU's first leave_mm
  return run_workload(hw::load_machine("sandybridge-ep-2s8c2t"), spec);
}

std::uint64_t deep_idle_entries(const RunOutput& r) {
  // idle_state_usage: polling, C1, C3, C6, C7 (C3 and deeper flush the TLB).
  const auto& u = r.json["counters"]["idle_state_usage"];
  return u[2].get<std::uint64_t>() + u[3].get<std::uint64_t>() + u[4].get<std::uint64_t>();
}

std::uint64_t to_init_mm(const RunOutput& r) {
  return r.json["counters"]["cr3_loads_by_cause"]["to_init_mm"].get<std::uint64_t>();
}

TEST(IdleWorkload, BeforeSeed003EveryDeepIdleEntryLoadsSwapperPgDir) {
  const RunOutput r = run_idle("linux-3.3", 32);
  EXPECT_EQ(r.violations, 0u);
  // 32 CPUs x 20 wakeups/s x 200 ms, less each CPU's first, polling pass.
  EXPECT_GT(deep_idle_entries(r), 100u);
  EXPECT_EQ(to_init_mm(r), deep_idle_entries(r));
}

TEST(IdleWorkload, Seed003LoadsSwapperPgDirOnlyAfterAUserProcessRan) {
  for (const char* k : {"linux-3.3-seed003", "linux-3.3-seed003-reviewed"}) {
    const RunOutput r = run_idle(k, 32);
    EXPECT_EQ(r.violations, 0u) << k;
    EXPECT_GT(deep_idle_entries(r), 100u) << k;
    EXPECT_EQ(to_init_mm(r), 32u) << k << ": one necessary leave_mm per CPU";
  }
  const RunOutput none = run_idle("linux-3.3-seed003-reviewed", 0);
  EXPECT_EQ(to_init_mm(none), 0u) << "CPUs that never ran a user mm never load CR3";
}

}  // namespace
}  // namespace tlbsim::workloads
