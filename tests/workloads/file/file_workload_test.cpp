// The built-in workload files against the C++ workloads they mirror: for the same machine, kernel, threads and
// seed, every counter, the ops and the events are identical.
#include <gtest/gtest.h>

#include <string>

#include "hw/machine.h"
#include "util/error.h"
#include "workloads/file/workload_file.h"
#include "workloads/run.h"

namespace tlbsim::workloads {
namespace {

RunOutput run(const std::string& workload, std::uint32_t threads, const std::string& kernel = "linux-6.13",
              const std::vector<std::string>& params = {}) {
  RunSpec spec;
  spec.kernel = kernel;
  spec.workload = workload;
  spec.threads = threads;
  spec.params = params;
  spec.duration = sim::microseconds(400);
  spec.warmup = sim::microseconds(100);
  spec.seed = 7;
  return run_workload(hw::load_machine("small-2s2c"), spec);
}

void expect_twins(const std::string& cpp, std::uint32_t threads, const std::string& kernel = "linux-6.13") {
  const RunOutput a = run(cpp, threads, kernel);
  const RunOutput b = run(cpp + ".toml", threads, kernel);
  ASSERT_GT(a.json["ops"].get<std::uint64_t>(), 0u) << cpp;
  EXPECT_EQ(a.json["ops"], b.json["ops"]) << cpp;
  EXPECT_EQ(a.json["per_thread_ops"], b.json["per_thread_ops"]) << cpp;
  EXPECT_EQ(a.json["events"], b.json["events"]) << cpp;
  EXPECT_EQ(a.json["seeded_tie_sets"], b.json["seeded_tie_sets"]) << cpp;
  EXPECT_EQ(a.json["counters"], b.json["counters"]) << cpp << " with " << threads << " threads";
  EXPECT_EQ(a.json["violations"], b.json["violations"]) << cpp;
}

TEST(FileWorkload, TlbFlush1FileGivesTheCountersOfItsCppTwin) {
  expect_twins("tlb_flush1", 1);
  expect_twins("tlb_flush1", 2);
  expect_twins("tlb_flush1_processes", 2);
}

TEST(FileWorkload, TlbFlush2FileGivesTheCountersOfItsCppTwin) {
  expect_twins("tlb_flush2", 1);
  expect_twins("tlb_flush2", 2, "linux-5.17");
  expect_twins("tlb_flush2_processes", 2);
}

TEST(FileWorkload, TlbFlush3FileGivesTheCountersOfItsCppTwin) {
  expect_twins("tlb_flush3", 2);
  expect_twins("tlb_flush3_processes", 2);
}

TEST(FileWorkload, MmapStormFileGivesTheCountersOfItsCppTwin) {
  expect_twins("mmap_storm", 1);
  expect_twins("mmap_storm", 2, "linux-6.18");
}

// A task and its partner on pipes, as context_switch1 places them: on the hardware threads of the task's core.
TEST(FileWorkload, ContextSwitch1FilesGiveTheCountersOfTheirCppTwins) {
  expect_twins("context_switch1", 1);
  expect_twins("context_switch1", 2);
  expect_twins("context_switch1_processes", 2);
}

// The docs' example, a user's microbenchmark that exists only as a file: K pages written, then one madvise of all
// of them. Each op flushes once; one thread flushes locally, two send each flush to the other CPU.
TEST(FileWorkload, UserMicrobenchmarkRunsAndItsParameterScalesTheWork) {
  const RunOutput one = run("madvise_own_pages.toml", 1);
  const RunOutput two = run("madvise_own_pages.toml", 2);
  const double ops1 = one.json["ops"].get<double>(), ops2 = two.json["ops"].get<double>();
  ASSERT_GT(ops1, 0);
  ASSERT_GT(ops2, 0);
  EXPECT_EQ(one.json["counters"]["nr_tlb_remote_flush"].get<double>(), 0);
  EXPECT_NEAR(two.json["counters"]["nr_tlb_remote_flush"].get<double>() / ops2, 1.0, 0.05);
  // 64 pages a round instead of 8: more faults per op, so fewer ops.
  const RunOutput big = run("madvise_own_pages.toml", 1, "linux-6.13", {"pages=64"});
  EXPECT_LT(big.json["ops"].get<double>(), ops1 / 4);
  EXPECT_EQ(big.json["params"]["pages"], "64");
}

TEST(FileWorkload, UnknownParameterIsRefused) {
  EXPECT_THROW(run("madvise_own_pages.toml", 1, "linux-6.13", {"page=64"}), InputError);
  EXPECT_THROW(run("madvise_own_pages.toml", 1, "linux-6.13", {"pages=0"}), InputError);
}

}  // namespace
}  // namespace tlbsim::workloads
