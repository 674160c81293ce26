// kernel_build: make -jN as process churn, on both sides of seed 004 (patches 1-4, and all five) and seed 001.
#include <gtest/gtest.h>

#include "hw/machine.h"
#include "workloads/run.h"

namespace tlbsim::workloads {
namespace {

RunOutput run(const char* machine, const char* kernel, std::uint32_t jobs, sim::Duration d, std::uint64_t seed) {
  RunSpec spec;
  spec.kernel = kernel;
  spec.workload = "kernel_build";
  spec.threads = jobs;
  spec.duration = d;
  spec.seed = seed;
  return run_workload(hw::load_machine(machine), spec);
}

std::uint64_t shoot_ipis(const RunOutput& r) { return r.json["counters"]["shoot_lazies"]["ipis"].get<std::uint64_t>(); }
std::uint64_t radix(const RunOutput& r, const char* name) {
  return r.json["counters"]["radix"][name].get<std::uint64_t>();
}

// make -j120 on the 144-CPU POWER9 leaves idle CPUs, so spawned children land on idle LLC siblings and waiting
// parents are woken elsewhere: processes run on several CPUs, as the seed 004 changelogs describe.
constexpr const char* kP9 = "power9-2s18c-smt4";
constexpr std::uint32_t kJobs = 120;

TEST(KernelBuild, RunsCleanOnEveryProfileThatRunsOnPower) {
  for (const char* k :
       {"linux-6.2-ppc", "linux-6.2-ppc-seed004-p1-4", "linux-6.2-ppc-seed004", "linux-4.14-ppc",
        "linux-4.14-ppc-seed001", "linux-4.14-ppc-seed001-lpid", "linux-5.17", "linux-6.13-seed002", "linux-3.3"}) {
    // 20 ms: the first children exit after ~10 ms, so a 10 ms run would test only where the first exit falls.
    const RunOutput r = run(kP9, k, kJobs, sim::milliseconds(20), 1);
    EXPECT_EQ(r.violations, 0u) << k;
    EXPECT_GT(r.json["counters"]["mm_freed"].get<std::uint64_t>(), 0u) << k;
  }
}

TEST(KernelBuild, Seed004ExitsThatNeedShootdownIpisOverSeeds) {
  for (std::uint64_t seed = 1; seed <= 3; ++seed) {
    // 25 ms: more than 20 exits per kernel and seed, with switches and wake-ups charged (issue 29).
    const RunOutput before = run(kP9, "linux-6.2-ppc", kJobs, sim::milliseconds(25), seed);
    const RunOutput p14 = run(kP9, "linux-6.2-ppc-seed004-p1-4", kJobs, sim::milliseconds(25), seed);
    const RunOutput all = run(kP9, "linux-6.2-ppc-seed004", kJobs, sim::milliseconds(25), seed);
    for (const RunOutput* r : {&before, &p14, &all}) {
      EXPECT_EQ(r->violations, 0u) << r->json["kernel"] << " seed " << seed;
      EXPECT_GT(r->json["counters"]["mm_freed"].get<std::uint64_t>(), 20u) << r->json["kernel"] << " seed " << seed;
    }
    // Without MMU_LAZY_TLB_SHOOTDOWN there is no cleanup_lazy_tlbs at all.
    EXPECT_EQ(before.json["counters"]["shoot_lazies"]["calls"].get<std::uint64_t>(), 0u);
    // Patches 1-4: exits of processes that ran on several CPUs IPI the stale mm_cpumask bits; the exit flush is a
    // broadcast tlbie and trims nothing.
    EXPECT_GT(shoot_ipis(p14), 5u) << "seed " << seed;
    EXPECT_GT(radix(p14, "tlbie_pid"), 0u) << "seed " << seed;
    EXPECT_EQ(radix(p14, "mm_cpumask_trims"), 0u) << "seed " << seed;
    // Patch 5: the exit flush IPIs those CPUs instead (trimming the mask), so cleanup finds only the local CPU.
    EXPECT_LE(shoot_ipis(all) * 10, shoot_ipis(p14)) << shoot_ipis(all) << " vs " << shoot_ipis(p14);
    EXPECT_GT(radix(all, "mm_cpumask_trims"), 5u) << "seed " << seed;
    EXPECT_EQ(radix(all, "tlbie_pid"), 0u) << "seed " << seed;
  }
}

// With as many jobs as CPUs every CPU stays busy, select_task_rq never finds an idle CPU, and (the model has no load
// balancer) no process leaves its CPU: no stale bits, no shootdown IPIs (docs/model.md, kernel_build).
TEST(KernelBuild, SaturatedBuildDoesNotMigrate) {
  const RunOutput r = run(kP9, "linux-6.2-ppc-seed004-p1-4", 144, sim::milliseconds(20), 1);
  EXPECT_EQ(r.violations, 0u);
  EXPECT_EQ(shoot_ipis(r), 0u);
  EXPECT_GT(r.json["counters"]["mm_freed"].get<std::uint64_t>(), 20u);
}

// Seed 001 changes only reclaim's unmap flush, which a kernel build never reaches: the same seed runs the same build.
TEST(KernelBuild, Seed001LeavesThroughputAlone) {
  const RunOutput before = run("power9-2s16c-smt4", "linux-4.14-ppc", 112, sim::milliseconds(40), 2);
  const RunOutput after = run("power9-2s16c-smt4", "linux-4.14-ppc-seed001", 112, sim::milliseconds(40), 2);
  EXPECT_EQ(before.violations + after.violations, 0u);
  EXPECT_GT(before.metric, 0);
  EXPECT_NEAR(after.metric / before.metric, 1.0, 0.02);
}

}  // namespace
}  // namespace tlbsim::workloads
