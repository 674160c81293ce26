#include <gtest/gtest.h>

#include "hw/machine.h"
#include "util/error.h"
#include "workloads/run.h"

namespace tlbsim::workloads {
namespace {

RunOutput run_tlb_flush3(std::uint32_t threads, const char* kernel = "linux-5.17",
                         const char* workload = "tlb_flush3") {
  RunSpec spec;
  spec.kernel = kernel;
  spec.workload = workload;
  spec.threads = threads;
  spec.duration = sim::microseconds(500);
  // No warm-up: the counters then cover every op counted (an op under way at a warm-up's end counts whole, though
  // its flush fell before the counters' snapshot).
  spec.warmup = sim::Duration{0};
  return run_workload(hw::load_machine("small-2s2c"), spec);
}

// One thread: each op's madvise flushes one page locally; the written page stays in the page cache, so the write
// after it is a shared fault (no copy, no anonymous page) and the read back hits it.
TEST(TlbFlush3, OneThreadFlushesOnePageLocallyPerOp) {
  const RunOutput r = run_tlb_flush3(1);
  EXPECT_EQ(r.violations, 0u) << r.json["violations"].dump(2);
  const auto ops = r.json["ops"].get<double>();
  ASSERT_GT(ops, 0);
  const auto& c = r.json["counters"];
  EXPECT_EQ(c["TLB shootdowns"].get<std::uint64_t>(), 0u);
  EXPECT_GE(c["nr_tlb_local_flush_one"].get<double>(), ops);
  EXPECT_EQ(c["nr_tlb_local_flush_all"].get<std::uint64_t>(), 0u);
}

// Threads of one mm: every madvise reaches the other threads' CPUs, whatever file each thread maps.
TEST(TlbFlush3, ThreadsShootEachOtherDownOnEveryKernel) {
  for (const char* kernel : {"linux-3.3", "linux-5.17", "linux-6.13"}) {
    const RunOutput r = run_tlb_flush3(2, kernel);
    EXPECT_EQ(r.violations, 0u) << kernel << r.json["violations"].dump(2);
    const auto ops = r.json["ops"].get<double>();
    ASSERT_GT(ops, 0) << kernel;
    EXPECT_GE(r.json["counters"]["TLB shootdowns"].get<double>() / ops, 0.9) << kernel;
  }
}

TEST(TlbFlush3, ProcessesModeHasNoOtherCpuToShootDown) {
  const RunOutput four = run_tlb_flush3(4, "linux-5.17", "tlb_flush3_processes");
  EXPECT_EQ(four.violations, 0u) << four.json["violations"].dump(2);
  EXPECT_GT(four.json["ops"].get<std::uint64_t>(), 0u);
  EXPECT_EQ(four.json["counters"]["TLB shootdowns"].get<std::uint64_t>(), 0u);
  EXPECT_EQ(four.json["counters"]["nr_tlb_remote_flush"].get<std::uint64_t>(), 0u);
}

TEST(TlbFlush3, RejectsMoreThreadsThanCpus) { EXPECT_THROW(run_tlb_flush3(9), InputError); }

}  // namespace
}  // namespace tlbsim::workloads
