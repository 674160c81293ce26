// The native executor of workload files: every built-in file runs on the host's kernel and counts, including the
// pairs that talk over pipes (threads and processes); skipped off Linux.
#include "native/file_workload.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "util/error.h"

namespace tlbsim::native {
namespace {

TEST(NativeFileWorkload, EveryBuiltInFileRunsAndCounts) {
  const HostTopology host = read_host_topology();
  // Refused before anything runs: a file that is not there, and no tasks.
  EXPECT_THROW(run_native_file_workload("no_such.toml", 1, 0, 0.01, host, nullptr), InputError);
  EXPECT_THROW(run_native_file_workload("tlb_flush2.toml", 0, 0, 0.01, host, nullptr), InputError);
  if (!native_supported()) GTEST_SKIP() << "native benchmarks need Linux";
  for (const auto& f : workloads::builtin_workload_files()) {
    const std::string name = fmt::format("{}.toml", f.name);
    const NativeRun r = run_native_file_workload(name, 1, 0.01, 0.05, host, nullptr);
    EXPECT_GT(r.ops, 0u) << name;
    EXPECT_EQ(r.workload, name);
  }
}

// A pair's ping-pong counts two per round trip on both sides' clocks, and stops cleanly with two tasks.
TEST(NativeFileWorkload, PartnersOnPipesCountInPairs) {
  if (!native_supported()) GTEST_SKIP() << "native benchmarks need Linux";
  const HostTopology host = read_host_topology();
  for (const char* name : {"context_switch1.toml", "context_switch1_processes.toml"}) {
    const NativeRun r = run_native_file_workload(name, 2, 0.01, 0.05, host, nullptr);
    EXPECT_GT(r.ops, 0u) << name;
    EXPECT_EQ(r.ops % 2, 0u) << name;
  }
}

}  // namespace
}  // namespace tlbsim::native
