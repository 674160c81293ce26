// The native benchmarks run on the host's kernel and count; they are skipped off Linux.
#include "native/workloads.h"

#include <gtest/gtest.h>

#include "util/error.h"

namespace tlbsim::native {
namespace {

TEST(NativeWorkloads, TlbFlush1WithTwoThreadsCountsOpsAndShootdowns) {
  if (!native_supported()) GTEST_SKIP() << "native benchmarks need Linux";
  const HostTopology host = read_host_topology();
  const TlbFlushTracepoint trace(host.cpus.back().cpu + 1);
  const NativeRun r = run_native_workload("tlb_flush1", 2, 0.05, 0.2, host, &trace);
  EXPECT_GT(r.ops, 0u);
  EXPECT_GT(r.seconds, 0);
  if (host.cpus.size() < 2) GTEST_SKIP() << "one CPU: no remote shootdown to count";
  // The kernel's own count of remote flush requests, when the tracepoint can be counted.
  if (r.before.tlb_flush && r.after.tlb_flush) {
    EXPECT_GT((*r.after.tlb_flush)[4], (*r.before.tlb_flush)[4]) << "TLB_REMOTE_SEND_IPI did not rise";
  }
  if (!r.before.tlb_shootdowns || !r.after.tlb_shootdowns) {
    GTEST_SKIP() << "/proc/interrupts has no readable TLB row; ops counted, shootdown IPIs not checked";
  }
  if (*r.after.tlb_shootdowns == *r.before.tlb_shootdowns) {
    GTEST_SKIP() << "the TLB row did not move: this kernel flushes remote TLBs without an IPI (a paravirtual "
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

// mmap_storm records where its tasks' latest mappings lay (the mode of a multi-threaded run depends on it); the other
// workloads record nothing.
TEST(NativeWorkloads, MmapStormRecordsItsMappingsLayout) {
  if (!native_supported()) GTEST_SKIP() << "native benchmarks need Linux";
  const HostTopology host = read_host_topology();
  EXPECT_EQ(run_native_workload("mmap_storm", 1, 0.01, 0.05, host, nullptr).layout, "one task");
  const std::string two = run_native_workload("mmap_storm", 2, 0.01, 0.05, host, nullptr).layout;
  EXPECT_TRUE(two == "adjacent" || two == "apart" || two == "near") << two;
  EXPECT_EQ(run_native_workload("tlb_flush2", 1, 0.01, 0.05, host, nullptr).layout, "");
}

TEST(NativeWorkloads, RejectsUnknownNamesAndZeroThreads) {
  const HostTopology host = read_host_topology();
  EXPECT_THROW(run_native_workload("no_such", 1, 0, 0.01, host, nullptr), InputError);
  EXPECT_THROW(run_native_workload("tlb_flush1", 0, 0, 0.01, host, nullptr), InputError);
}

}  // namespace
}  // namespace tlbsim::native
