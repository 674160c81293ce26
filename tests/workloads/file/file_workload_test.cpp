// The built-in workload files against the C++ workloads they mirror: for the same machine, kernel, threads and
// seed, every counter, the ops and the events are identical.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <utility>

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

// Sockets: the same ping-pong over unix stream sockets wakes the partner through the socket's wait queues; a
// round trip is two sends, two receives and two sleeps.
TEST(FileWorkload, SocketPairsCarryTheMessages) {
  const RunOutput r = run("unix_pingpong.toml", 2);
  EXPECT_GT(r.json["ops"].get<std::int64_t>(), 0);
  EXPECT_GT(r.json["counters"]["cache_lines"]["unix.sk_receive_queue"]["rmws"].get<std::int64_t>(), 0);
  EXPECT_GT(r.json["counters"]["context_switches"].get<std::int64_t>(), r.json["ops"].get<std::int64_t>() / 2);
}

// spawn: each child execs into a fresh mm, faults its pages in and exits, and the task waits for it; every child's
// mm is freed (after the last lazy reference), and each op faults the child's pages.
TEST(FileWorkload, SpawnedChildrenFaultExitAndAreFreed) {
  const RunOutput r = run("spawn_touch_exit.toml", 2);
  const auto ops = r.json["ops"].get<std::int64_t>();
  ASSERT_GT(ops, 0);
  EXPECT_GE(r.json["counters"]["page_faults"].get<std::int64_t>(), 64 * ops);
  EXPECT_GE(r.json["counters"]["mm_freed"].get<std::int64_t>(), ops - 2);
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

TEST(FileWorkload, MprotectToggleFaultsAfterTheUpgradeOnlyBeforeV6_0) {
  // v5.17: mprotect(PROT_READ|PROT_WRITE) leaves the 8 PTEs read-only, so each round's 8 writes fault
  // (wp_page_reuse); v6.13 makes the exclusive anonymous PTEs writable at once. Both write-protect (and flush) each
  // round: with two threads, at least one remote flush request per op.
  for (const auto& [kernel, faults_per_op] : {std::pair{"linux-5.17", 8.0}, {"linux-6.13", 0.0}}) {
    const RunOutput r = run("mprotect_toggle.toml", 2, kernel);
    const double ops = r.json["ops"].get<double>();
    ASSERT_GT(ops, 0) << kernel;
    EXPECT_NEAR(r.json["counters"]["page_faults"].get<double>() / ops, faults_per_op, 0.5) << kernel;
    EXPECT_GE(r.json["counters"]["nr_tlb_remote_flush"].get<double>() / ops, 1.0) << kernel;
    EXPECT_TRUE(r.json["violations"].empty()) << kernel;
  }
}

TEST(FileWorkload, NumaHintingFaultsOnlyForAProcessOfTwoThreads) {
  // One thread: a single-threaded process's pages on its own node are never made hinting PTEs (target_node), so no
  // fault. Two: each scan makes the pages not yet hinting PTEs (both threads') and flushes them; a write faults at
  // most once per page and round (do_numa_page restores the PTE: the pages are on their writer's node), and a thread
  // whose TLB the other's flush has not reached yet writes without faulting.
  for (const char* kernel : {"linux-5.17", "linux-6.13"}) {
    const RunOutput one = run("numa_hinting.toml", 1, kernel);
    ASSERT_GT(one.json["ops"].get<double>(), 0) << kernel;
    EXPECT_EQ(one.json["counters"]["page_faults"].get<double>(), 0) << kernel;
    const RunOutput r = run("numa_hinting.toml", 2, kernel);
    const double ops = r.json["ops"].get<double>();
    ASSERT_GT(ops, 0) << kernel;
    EXPECT_GT(r.json["counters"]["page_faults"].get<double>() / ops, 1.0) << kernel;
    EXPECT_LE(r.json["counters"]["page_faults"].get<double>() / ops, 8.0) << kernel;
    EXPECT_GT(r.json["counters"]["nr_tlb_remote_flush"].get<double>(), 0) << kernel;
    EXPECT_TRUE(r.json["violations"].empty()) << kernel;
  }
}

TEST(FileWorkload, ThpFaultZapMapsOneThpPerRoundOnlyWhereTheMappingIsAligned) {
  // v6.13 aligns a 2 MiB anonymous mapping to 2 MiB (v6.8+, whole PMDs from v6.12): the first write of a round maps a
  // THP (one fault) and the zap clears its PMD. v5.17 does not align it: the 512 writes fault 4 KiB pages, and no
  // 2 MiB block lies inside the VMA for a THP.
  const RunOutput aligned = run("thp_fault_zap.toml", 2, "linux-6.13");
  const double ops = aligned.json["ops"].get<double>();
  ASSERT_GT(ops, 0);
  EXPECT_NEAR(aligned.json["counters"]["page_faults"].get<double>() / ops, 1.0, 0.1);
  EXPECT_TRUE(aligned.json["violations"].empty());
  // In the same 400 us v5.17 finishes no round: hundreds of 4 KiB faults instead.
  const RunOutput unaligned = run("thp_fault_zap.toml", 1, "linux-5.17");
  EXPECT_GT(unaligned.json["counters"]["page_faults"].get<double>(), 100.0);
  EXPECT_LT(unaligned.json["ops"].get<double>(), ops / 10);
}

TEST(FileWorkload, ThpNumaHintingFaultsOncePerThpAndRoundEvenForOneThread) {
  // v6.13 maps each thread's 2 MiB as one THP. change_huge_pmd has no node check (the PTEs' target_node is theirs
  // alone), so even a single-threaded process's THP on its own node becomes a hinting PMD each round, and the
  // round's first write faults once (do_huge_pmd_numa_page restores the PMD: the THP is on its writer's node; the
  // other 511 writes hit the restored 2 MiB entry). numa_hinting.toml's base pages make no fault at one thread.
  for (const std::uint32_t threads : {1u, 2u}) {
    const RunOutput r = run("thp_numa_hinting.toml", threads);
    const double ops = r.json["ops"].get<double>();
    ASSERT_GT(ops, 0) << threads;
    EXPECT_NEAR(r.json["counters"]["page_faults"].get<double>() / ops, 1.0, 0.1) << threads;
    EXPECT_EQ(r.json["counters"]["nr_tlb_remote_flush"].get<double>() > 0, threads == 2) << threads;
    EXPECT_TRUE(r.json["violations"].empty()) << threads;
  }
}

// A workload file on disk, for the cases the built-in files do not cover.
RunOutput run_text(const std::string& name, const std::string& text, std::uint32_t threads,
                   const std::string& kernel = "linux-6.13") {
  const std::string path = ::testing::TempDir() + name + ".toml";
  {
    std::ofstream out(path);
    out << text;
  }
  return run(path, threads, kernel);
}

const char* kSleepBarrier = R"([workload]
name = "sb"
[tasks]
mode = "threads"
placement = "%s"
%s
[[regions]]
name = "r"
backing = "anonymous"
pages = %d
[[setup]]
op = "mmap"
region = "r"
[[loop]]
access = "write"
op = "touch"
region = "r"
[[loop]]
op = "sleep"
duration = "10us"
[[loop]]
op = "barrier"
[[loop]]
op = "count"
)";

std::string sleep_barrier(const char* placement, const char* cpus, int pages) {
  char buf[1024];
  std::snprintf(buf, sizeof buf, kSleepBarrier, placement, cpus, pages);
  return buf;
}

// A barrier keeps the tasks in step however unequal their work (one page against 64 per pass is the same work
// here, but the barrier is what makes every task's count equal); the sleep bounds the rate: at most one pass per
// 10 us of simulated time.
TEST(FileWorkload, BarrierKeepsTasksInStepAndSleepBoundsTheRate) {
  const RunOutput r = run_text("sleep_barrier", sleep_barrier("pinned", "", 16), 2);
  const auto per = r.json["per_thread_ops"];
  ASSERT_EQ(per.size(), 2u);
  const auto a = per[0].get<std::int64_t>(), b = per[1].get<std::int64_t>();
  EXPECT_GT(a, 0);
  EXPECT_LE(std::abs(a - b), 1);
  EXPECT_LE(a, 400 / 10);  // 400 us measured, a 10 us sleep per pass
  EXPECT_GT(r.json["counters"]["context_switches"].get<std::int64_t>(), 0) << "sleeping tasks leave their CPU";
}

// placement = "cpus": both tasks on CPU 3 share it; a CPU the machine lacks is refused.
TEST(FileWorkload, ListedCpusPlaceTheTasks) {
  const RunOutput r = run_text("cpus_ok", sleep_barrier("cpus", "cpus = [3]", 1), 2);
  EXPECT_GT(r.json["ops"].get<std::int64_t>(), 0);
  EXPECT_THROW(run_text("cpus_bad", sleep_barrier("cpus", "cpus = [99]", 1), 2), InputError);
}

TEST(FileWorkload, SwapBenchSwapsEveryPageOutAndInEachRound) {
  RunSpec spec;
  spec.kernel = "linux-6.6-arm64";
  spec.workload = "swap_bench.toml";
  spec.threads = 1;
  spec.params = {"pages=16"};
  spec.duration = sim::milliseconds(2);
  spec.warmup = sim::microseconds(100);
  const RunOutput r = run_workload(hw::load_machine("rpi4-a72-4c"), spec);
  const double ops = r.json["ops"].get<double>();
  ASSERT_GT(ops, 10);
  const auto& swap = r.json["counters"]["swap"];
  // Every round reads each of the 16 pages back (a major fault each) and writes all 16 out again.
  EXPECT_NEAR(swap["pswpin"].get<double>() / ops, 16, 1);
  EXPECT_NEAR(swap["pswpout"].get<double>() / ops, 16, 1);
  EXPECT_EQ(r.json["counters"]["arm64"]["tlbi_vale1is"].get<double>() > 0, true);
  EXPECT_EQ(r.violations, 0u);
  // A machine file without the swap costs is refused before the run, naming them.
  spec.kernel = "linux-6.13";
  try {
    run_workload(hw::load_machine("small-2s2c"), spec);
    ADD_FAILURE() << "swap_bench ran on a machine without swap costs";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("swap_out"), std::string::npos) << e.what();
  }
}

// mremap_move (2c91bd4a4e2e's test) with 1,536 pages, three PMDs' worth: one mremap per op. linux-6.13 moves each
// whole PMD by its table and flushes it with the PMD locks held, a full flush each (512 pages are above the 33-page
// ceiling), and the old range then has no table left to free; linux-3.3 moves the PTEs in LATENCY_LIMIT extents of
// 64 pages and flushes the whole range once after, and the old range's do_munmap frees its emptied tables and
// flushes again.
TEST(FileWorkload, MremapMoveFlushesOncePerPmdFromV51AndOncePerCallInV33) {
  for (const auto& [kernel, full_flushes_per_op] : {std::pair{"linux-6.13", 3.0}, std::pair{"linux-3.3", 2.0}}) {
    RunSpec spec;
    spec.kernel = kernel;
    spec.workload = "mremap_move.toml";
    spec.threads = 1;
    spec.params = {"pages=1536"};
    spec.duration = sim::milliseconds(2);
    spec.warmup = sim::milliseconds(4);  // the setup writes all 1,536 pages
    spec.seed = 7;
    const RunOutput r = run_workload(hw::load_machine("small-2s2c"), spec);
    const double ops = r.json["ops"].get<double>();
    ASSERT_GT(ops, 4) << kernel;
    const auto& c = r.json["counters"];
    EXPECT_NEAR(c["nr_tlb_local_flush_all"].get<double>() / ops, full_flushes_per_op, 0.3) << kernel;
    EXPECT_EQ(c["page_faults"].get<double>(), 0) << kernel << ": the pages move, none is faulted in again";
    EXPECT_EQ(r.violations, 0u) << kernel;
  }
}

// Two 1 GiB regions, each with `align`, whose first page and the page 512 MiB in are written (two page tables), moved
// onto each other and back as mremap_move.toml does.
const char* kAlignedMove = R"([workload]
name = "am"
[tasks]
mode = "threads"
placement = "pinned"
[[regions]]
name = "here"
backing = "anonymous"
size = "1GiB"
align = "%s"
[[regions]]
name = "there"
backing = "anonymous"
size = "1GiB"
align = "%s"
[[setup]]
op = "mmap"
region = "here"
[[setup]]
op = "touch"
region = "here"
access = "write"
stride = "512MiB"
[[loop]]
op = "mmap"
region = "there"
[[loop]]
op = "mremap"
region = "here"
to = "there"
[[loop]]
op = "count"
[[loop]]
op = "mmap"
region = "here"
[[loop]]
op = "mremap"
region = "there"
to = "here"
[[loop]]
op = "count"
)";

std::string aligned_move(const char* align) {
  char buf[1024];
  std::snprintf(buf, sizeof buf, kAlignedMove, align, align);
  return buf;
}

// A region's `align`: 1 GiB-aligned regions move by their PUD on linux-6.13 (move_normal_pud, one full flush per
// mremap), 2 MiB-aligned ones by their two PMDs (move_normal_pmd, one each). An alignment that is not a power of two
// from a page to 1 GiB is refused, naming the region.
TEST(FileWorkload, AGibAlignedRegionMovesByItsPudAndAPmdAlignedOneByItsPmds) {
  for (const auto& [align, full_flushes_per_op] : {std::pair{"1GiB", 1.0}, std::pair{"2MiB", 2.0}}) {
    const RunOutput r = run_text(std::string("aligned_move_") + align, aligned_move(align), 1);
    const double ops = r.json["ops"].get<double>();
    ASSERT_GT(ops, 4) << align;
    EXPECT_NEAR(r.json["counters"]["nr_tlb_local_flush_all"].get<double>() / ops, full_flushes_per_op, 0.1) << align;
    EXPECT_EQ(r.violations, 0u) << align;
  }
  for (const char* bad : {"3KiB", "12KiB", "2GiB"}) {
    try {
      run_text("aligned_move_bad", aligned_move(bad), 1);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("region 'here': align"), std::string::npos) << e.what();
    }
  }
}

// One task writes its 16 pages and writes /proc/sys/vm/compact_memory, in a loop, while the other writes the same
// pages: compaction migrates every page of the mm each round, with one flush per page before v6.4 and one per batch
// of up to 32 pages (COMPACT_CLUSTER_MAX) after, and no write ever hits a stale translation.
const char* kCompactLoop = R"([workload]
name = "cl"
[tasks]
mode = "threads"
placement = "pinned"
[[regions]]
name = "r"
backing = "anonymous"
size = "64KiB"
[[setup]]
op = "mmap"
region = "r"
[[loop]]
op = "touch"
region = "r"
access = "write"
[[loop]]
op = "compact_memory"
[[loop]]
op = "count"
)";

TEST(FileWorkload, CompactMemoryMigratesEveryPageWithItsErasFlushes) {
  double remote_per_op[2] = {0, 0};
  int i = 0;
  for (const char* kernel : {"linux-5.17", "linux-6.13"}) {
    const RunOutput r = run_text("compact_loop", kCompactLoop, 2, kernel);
    const double ops = r.json["ops"].get<double>();
    ASSERT_GT(ops, 2) << kernel;
    remote_per_op[i++] = r.json["counters"]["nr_tlb_remote_flush"].get<double>() / ops;
    EXPECT_EQ(r.violations, 0u) << kernel;
  }
  EXPECT_GT(remote_per_op[0], 8.0) << "a flush per page of 16";
  EXPECT_LT(remote_per_op[1], 2.0) << "a flush per batch";
}

TEST(FileWorkload, UnknownParameterIsRefused) {
  EXPECT_THROW(run("madvise_own_pages.toml", 1, "linux-6.13", {"page=64"}), InputError);
  EXPECT_THROW(run("madvise_own_pages.toml", 1, "linux-6.13", {"pages=0"}), InputError);
}

}  // namespace
}  // namespace tlbsim::workloads
