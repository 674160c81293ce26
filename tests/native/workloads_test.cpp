// The native benchmarks run on the host's kernel and count; they are skipped off Linux.
#include "native/workloads.h"

#include <gtest/gtest.h>

#include "util/error.h"

namespace tlbsim::native {
namespace {

TEST(NativeWorkloads, TlbFlush1WithTwoThreadsCountsOpsAndShootdowns) {
  if (!native_supported()) GTEST_SKIP() << "native benchmarks need Linux";
  const HostTopology host = read_host_topology();
  const NativeRun r = run_native_workload("tlb_flush1", 2, 0.05, 0.2, host, nullptr);
  EXPECT_GT(r.ops, 0u);
  EXPECT_GT(r.seconds, 0);
  if (!r.before.tlb_shootdowns || !r.after.tlb_shootdowns) {
    GTEST_SKIP() << "/proc/interrupts has no readable TLB row; ops counted, shootdowns not checked";
  }
  if (host.cpus.size() < 2) GTEST_SKIP() << "one CPU: no remote shootdown to count";
  if (*r.after.tlb_shootdowns == *r.before.tlb_shootdowns) {
    GTEST_SKIP() << "the TLB row did not move: this kernel flushes remote TLBs without an IPI (paravirtual "
                    "flush under a hypervisor)";
  }
  EXPECT_GT(*r.after.tlb_shootdowns, *r.before.tlb_shootdowns);
}

TEST(NativeWorkloads, EveryWorkloadRunsAndCounts) {
  if (!native_supported()) GTEST_SKIP() << "native benchmarks need Linux";
  const HostTopology host = read_host_topology();
  for (const auto& [name, description] : native_workloads()) {
    const NativeRun r = run_native_workload(name, 1, 0.01, 0.05, host, nullptr);
    EXPECT_GT(r.ops, 0u) << name;
    EXPECT_EQ(r.workload, name);
  }
}

TEST(NativeWorkloads, RejectsUnknownNamesAndZeroThreads) {
  const HostTopology host = read_host_topology();
  EXPECT_THROW(run_native_workload("no_such", 1, 0, 0.01, host, nullptr), InputError);
  EXPECT_THROW(run_native_workload("tlb_flush1", 0, 0, 0.01, host, nullptr), InputError);
}

}  // namespace
}  // namespace tlbsim::native
