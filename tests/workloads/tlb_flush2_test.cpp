#include <gtest/gtest.h>

#include "hw/machine.h"
#include "util/error.h"
#include "workloads/run.h"

namespace tlbsim::workloads {
namespace {

RunOutput run_named(const char* workload, std::uint32_t threads, const char* kernel = "linux-6.13") {
  RunSpec spec;
  spec.kernel = kernel;
  spec.workload = workload;
  spec.threads = threads;
  spec.duration = sim::microseconds(500);
  return run_workload(hw::load_machine("small-2s2c"), spec);
}

// Each op's madvise shoots down the other thread's CPU; when two madvise calls overlap, tlb_finish_mmu sees
// mm_tlb_flush_nested and flushes the whole mm again (mm/mmu_gather.c), so there can be more than one.
TEST(TlbFlush2, AtLeastOneRemoteShootdownPerOpWithTwoThreadsNoneWithOne) {
  const RunOutput two = run_named("tlb_flush2", 2);
  EXPECT_EQ(two.violations, 0u) << two.json["violations"].dump(2);
  const auto ops = two.json["ops"].get<double>();
  ASSERT_GT(ops, 0);
  EXPECT_GE(two.json["counters"]["TLB shootdowns"].get<double>() / ops, 0.9);
  const RunOutput one = run_named("tlb_flush2", 1);
  EXPECT_EQ(one.violations, 0u);
  EXPECT_GT(one.metric, 0);
  EXPECT_EQ(one.json["counters"]["TLB shootdowns"].get<std::uint64_t>(), 0u);
}

TEST(MmapStorm, RunsCleanAndShootsDownAcrossThreads) {
  for (const char* kernel : {"linux-3.3", "linux-5.17", "linux-6.13"}) {
    const RunOutput r = run_named("mmap_storm", 2, kernel);
    EXPECT_EQ(r.violations, 0u) << kernel << r.json["violations"].dump(2);
    EXPECT_GT(r.metric, 0) << kernel;
    EXPECT_GT(r.json["counters"]["TLB shootdowns"].get<std::uint64_t>(), 0u) << kernel;
  }
}

TEST(TlbFlush2, ProcessesModeHasNoOtherCpuToShootDown) {
  const RunOutput two = run_named("tlb_flush2_processes", 2);
  EXPECT_EQ(two.violations, 0u) << two.json["violations"].dump(2);
  EXPECT_GT(two.json["ops"].get<std::uint64_t>(), 0u);
  EXPECT_EQ(two.json["counters"]["TLB shootdowns"].get<std::uint64_t>(), 0u);
  EXPECT_THROW(run_named("tlb_flush2_processes", 9), InputError);
}

// small-2s2c: 4 cores, 8 hardware threads. will-it-scale runs up to one task per hardware thread.
TEST(TlbFlush2, RejectsMoreThreadsThanCpus) {
  EXPECT_THROW(run_named("tlb_flush2", 9), InputError);
  EXPECT_THROW(run_named("tlb_flush2", 0), InputError);
}

// Tasks beyond the cores share a core's cpuset (main.c: task i on core i % cores): 8 tasks use all 8 CPUs.
TEST(TlbFlush2, TasksBeyondTheCoresRunOnTheSmtSiblings) {
  const RunOutput r = run_named("tlb_flush2", 8);
  EXPECT_EQ(r.violations, 0u);
  EXPECT_GT(r.metric, 0);
  const auto& busy = r.json["counters"]["TLB shootdowns per cpu"];
  ASSERT_TRUE(busy.is_array()) << r.json["counters"].dump();
  std::size_t received = 0;
  for (const auto& v : busy) received += v.get<std::uint64_t>() > 0 ? 1 : 0;
  EXPECT_EQ(received, 8u);
}

}  // namespace
}  // namespace tlbsim::workloads
