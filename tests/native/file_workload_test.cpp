// The native executor of workload files: every built-in file runs on the host's kernel and counts, including the
// pairs that talk over pipes (threads and processes); skipped off Linux.
#include "native/file_workload.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "util/error.h"

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace tlbsim::native {
namespace {

TEST(NativeFileWorkload, EveryBuiltInFileRunsAndCounts) {
  const HostTopology host = read_host_topology();
  // Refused before anything runs: a file that is not there, and no tasks.
  EXPECT_THROW(run_native_file_workload("no_such.toml", 1, 0, 0.01, host, nullptr), InputError);
  EXPECT_THROW(run_native_file_workload("tlb_flush2.toml", 0, 0, 0.01, host, nullptr), InputError);
  if (!native_supported()) GTEST_SKIP() << "native benchmarks need Linux";
  // numa_scan has no user-space equivalent: refused with where and what.
  try {
    run_native_file_workload("numa_hinting.toml", 1, 0, 0.01, host, nullptr);
    ADD_FAILURE() << "numa_hinting.toml ran natively";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("'numa_scan' cannot run natively"), std::string::npos) << e.what();
  }
  for (const auto& f : workloads::builtin_workload_files()) {
    const std::string name = fmt::format("{}.toml", f.name);
    if (name == "numa_hinting.toml" || name == "thp_numa_hinting.toml") continue;  // numa_scan: refused above
    // A spawn executes the tlbsim binary's child program, not this test program.
    // A spawned child is a whole tlbsim process: under the sanitizers its start takes tens of milliseconds.
    // On a loaded machine one such start has taken over a second (CI, stop 51): the window doubles until an
    // operation lands in it, up to 16 s; a file that counts nothing in 16 s is broken, not slow.
    double seconds = name.starts_with("spawn") ? 1.0 : 0.05;
    NativeRun r = run_native_file_workload(name, 1, 0.01, seconds, host, nullptr, TLBSIM_BINARY);
    while (r.ops == 0 && seconds < 16) {
      seconds *= 2;
      r = run_native_file_workload(name, 1, 0.01, seconds, host, nullptr, TLBSIM_BINARY);
    }
    EXPECT_GT(r.ops, 0u) << name << " in " << seconds << " s";
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

// A barrier among forked tasks (a futex in shared memory) and a sleep: the tasks go round together, and the run
// stops although a task may be waiting at the barrier when it ends.
TEST(NativeFileWorkload, BarrierAndSleepRunInThreadsAndProcesses) {
  if (!native_supported()) GTEST_SKIP() << "native benchmarks need Linux";
  const HostTopology host = read_host_topology();
  for (const char* mode : {"threads", "processes"}) {
    const std::string path = ::testing::TempDir() + "native_barrier_" + mode + ".toml";
    std::ofstream(path) << "[workload]\nname = \"b\"\n[tasks]\nmode = \"" << mode
                        << "\"\nplacement = \"cpus\"\ncpus = [0]\n[[loop]]\nop = \"sleep\"\nduration = \"20us\"\n"
                           "[[loop]]\nop = \"barrier\"\n[[loop]]\nop = \"count\"\n";
    const NativeRun r = run_native_file_workload(path, 2, 0.01, 0.05, host, nullptr);
    EXPECT_GT(r.ops, 0u) << mode;
  }
}

// A region's align: the mapping starts at a multiple of it and can be written; a page's is a plain mmap.
TEST(NativeFileWorkload, AnAlignedRegionStartsAtAMultipleOfItsAlign) {
#if !defined(__linux__)
  GTEST_SKIP() << "native benchmarks need Linux";
#else
  for (const std::uint64_t align : {std::uint64_t{4096}, std::uint64_t{2} << 20, std::uint64_t{1} << 30}) {
    constexpr std::uint64_t kLen = std::uint64_t{2} << 20;
    void* a = mmap_aligned(kLen, align, MAP_PRIVATE | MAP_ANONYMOUS, -1);
    ASSERT_NE(a, MAP_FAILED) << align;
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(a) % align, 0u) << align;
    static_cast<volatile char*>(a)[kLen - 1] = 1;
    EXPECT_EQ(munmap(a, kLen), 0) << align;
  }
#endif
}

// The child program refuses a spawn number the file does not have, and a file that is not there.
TEST(NativeFileWorkload, SpawnedChildRunsItsBodyOrRefuses) {
  if (!native_supported()) GTEST_SKIP() << "native benchmarks need Linux";
  EXPECT_EQ(run_spawned_child("spawn_touch_exit.toml", 0), 0);
  EXPECT_EQ(run_spawned_child("spawn_touch_exit.toml", 1), 2);
  EXPECT_EQ(run_spawned_child("no_such.toml", 0), 2);
}

}  // namespace
}  // namespace tlbsim::native
