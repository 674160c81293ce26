// Sweeps: grid parsing, interrupt + resume and shards + merge giving the same bytes as one run, refusals.
#include "sweep/sweep.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <sstream>

#include "plot/xml_check.h"
#include "sweep/results.h"
#include "util/atomic_file.h"
#include "util/error.h"

namespace tlbsim::sweep {
namespace {

namespace fs = std::filesystem;

// A fresh, empty directory under the system's temporary directory.
std::string temp_dir(const std::string& name) {
  const fs::path p = fs::temp_directory_path() / ("tlbsim_sweep_test_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(p);
  return p.string();
}

SweepOptions small(const std::string& out) {
  SweepOptions o;
  o.grid.machine = "small-2s2c";
  o.grid.workload = "tlb_flush1";
  o.grid.duration = "100us";
  o.grid.kernels = {"linux-5.17", "linux-5.17-seed000"};
  o.grid.threads = {1, 2, 4};
  o.grid.seeds = {1, 2};
  o.out_dir = out;
  o.jobs = 2;
  return o;
}

// small()'s grid cut to one point: linux-5.17, 2 threads, seed 1.
SweepOptions one_point(const std::string& out) {
  SweepOptions o = small(out);
  o.grid.kernels = {"linux-5.17"};
  o.grid.threads = {2};
  o.grid.seeds = {1};
  return o;
}

// The InputError a sweep is refused with ("" when it runs).
std::string refusal(const SweepOptions& o) {
  std::ostringstream progress;
  try {
    run_sweep(o, progress, nullptr);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

std::string results_of(const std::string& dir) {
  return read_file(dir + "/results.csv") + read_file(dir + "/results.json") + read_file(dir + "/results.svg");
}

TEST(Sweep, GridPointsAreKernelMajorThenThreadsThenSeeds) {
  Grid g;
  g.kernels = {"a", "b"};
  g.threads = {1, 5};
  g.seeds = {1, 2, 3};
  const auto p = grid_points(g);
  ASSERT_EQ(p.size(), 12u);
  EXPECT_EQ(p[4].kernel, "a");
  EXPECT_EQ(p[4].threads, 5u);
  EXPECT_EQ(p[4].seed, 2u);
  EXPECT_EQ(p[11].index, 11u);
}

TEST(Sweep, ParsesShardsSeedsAndNamesAndSaysWhatIsWrong) {
  EXPECT_EQ(parse_shard("3/8").index, 3u);
  EXPECT_EQ(parse_shard("3/8").count, 8u);
  EXPECT_TRUE(parse_shard("2/3").owns(4));
  EXPECT_FALSE(parse_shard("2/3").owns(3));
  EXPECT_EQ(parse_seed_list("1..5"), (std::vector<std::uint64_t>{1, 2, 3, 4, 5}));
  for (const char* bad : {"0/3", "4/3", "3", "a/b", "1/0", "1/2/3"}) {
    try {
      parse_shard(bad);
      ADD_FAILURE() << bad;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("--shard: '") + bad + "'"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(parse_name_list("a,,b", "--kernel"), InputError);
  EXPECT_THROW(parse_seed_list("5..1"), InputError);
}

TEST(Sweep, ValidatesTheGridBeforeRunning) {
  Grid g = small("unused").grid;
  g.threads = {1, 9};
  try {
    validate_grid(g);
    ADD_FAILURE();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--threads: 9 is outside 1..8"), std::string::npos) << e.what();
  }
  g = small("unused").grid;
  g.kernels = {"linux-9.9"};
  EXPECT_THROW(validate_grid(g), InputError);
  g = small("unused").grid;
  g.duration = "5 parsecs";
  EXPECT_THROW(validate_grid(g), InputError);
  for (const char* w : {"-1ms", "2h", "soon"}) {
    g = small("unused").grid;
    g.warmup = w;
    try {
      validate_grid(g);
      ADD_FAILURE() << w;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("--warmup"), std::string::npos) << e.what();
    }
  }
}

// --warmup is recorded in the grid only when given, so journals written before it read back unchanged.
TEST(Sweep, TheWarmupTravelsWithTheGridOnlyWhenGiven) {
  Grid g = small("unused").grid;
  EXPECT_FALSE(grid_to_json(g).contains("warmup"));
  g.warmup = "132ms";
  const nlohmann::json j = grid_to_json(g);
  EXPECT_EQ(j["warmup"], "132ms");
  EXPECT_EQ(grid_from_json(j, "test").warmup, "132ms");
}

TEST(Sweep, InterruptedAndResumedGivesTheSameBytesAsOneRun) {
  const std::string whole = temp_dir("whole"), parts = temp_dir("parts");
  std::ostringstream progress;
  SweepOptions o = small(whole);
  const SweepOutcome w = run_sweep(o, progress, nullptr);
  EXPECT_FALSE(w.stopped);
  EXPECT_EQ(w.finished, 12u);
  EXPECT_NE(progress.str().find("sweep: 12/12 points"), std::string::npos) << progress.str();

  o.out_dir = parts;
  o.max_points = 5;  // stops as Ctrl-C would
  const SweepOutcome a = run_sweep(o, progress, nullptr);
  EXPECT_TRUE(a.stopped);
  EXPECT_EQ(a.finished, 5u);
  EXPECT_EQ(read_journal(parts + "/points.jsonl")->points.size(), 5u);
  EXPECT_THROW(run_sweep(o, progress, nullptr), InputError);  // no --resume: refused, the journal kept
  // A writer killed mid-line leaves half a line; resume drops it.
  {
    std::FILE* f = std::fopen((parts + "/points.jsonl").c_str(), "a");
    std::fputs("{\"index\": 7, \"ker", f);
    std::fclose(f);
  }
  o.resume = true;
  o.max_points = 0;
  const SweepOutcome b = run_sweep(o, progress, nullptr);
  EXPECT_FALSE(b.stopped);
  EXPECT_EQ(b.ran, 7u);
  EXPECT_EQ(b.finished, 12u);
  EXPECT_EQ(results_of(parts), results_of(whole));
  EXPECT_EQ(plot::testing::xml_problem(read_file(whole + "/results.svg")), "");
  fs::remove_all(whole);
  fs::remove_all(parts);
}

TEST(Sweep, AStopFlagKeepsFinishedPoints) {
  const std::string dir = temp_dir("stop");
  std::ostringstream progress;
  std::atomic<bool> stop{true};
  const SweepOutcome r = run_sweep(small(dir), progress, &stop);
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.ran, 0u);
  EXPECT_TRUE(fs::exists(dir + "/results.csv"));
  fs::remove_all(dir);
}

TEST(Sweep, ShardsMergeIntoTheWholeSweep) {
  const std::string whole = temp_dir("mwhole"), s1 = temp_dir("s1"), s2 = temp_dir("s2"), s3 = temp_dir("s3"),
                    merged = temp_dir("merged");
  std::ostringstream progress, err;
  SweepOptions o = small(whole);
  o.grid.seeds = {1};
  run_sweep(o, progress, nullptr);
  for (const auto& [dir, i] : {std::pair{s1, 1u}, std::pair{s2, 2u}, std::pair{s3, 3u}}) {
    o.out_dir = dir;
    o.shard = Shard{i, 3};
    EXPECT_EQ(run_sweep(o, progress, nullptr).owned, 2u);
  }
  EXPECT_EQ(merge_sweeps(merged, {s1, s2}, err), 2u);  // one shard missing
  EXPECT_NE(err.str().find("2 points missing"), std::string::npos) << err.str();
  EXPECT_EQ(merge_sweeps(merged, {s1, s2, s3}, err), 0u);
  EXPECT_EQ(results_of(merged), results_of(whole));

  // A shard of another grid is refused, saying what differs.
  o.out_dir = s3;
  o.grid.duration = "50us";
  fs::remove_all(s3);
  run_sweep(o, progress, nullptr);
  try {
    merge_sweeps(merged, {s1, s2, s3}, err);
    ADD_FAILURE();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("duration: \"100us\" here, \"50us\""), std::string::npos) << e.what();
  }
  for (const auto& d : {whole, s1, s2, s3, merged}) fs::remove_all(d);
}

TEST(Sweep, ResumeOfAnotherGridIsRefused) {
  const std::string dir = temp_dir("regrid");
  std::ostringstream progress;
  SweepOptions o = small(dir);
  o.max_points = 1;
  run_sweep(o, progress, nullptr);
  o.resume = true;
  o.grid.threads = {1, 2};
  try {
    run_sweep(o, progress, nullptr);
    ADD_FAILURE();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("the grid differs from the journal's: threads: [1,2] here, [1,2,4]"),
              std::string::npos)
        << e.what();
  }
  fs::remove_all(dir);
}

// --param reaches every point, is part of the grid (journal and results), and a wrong one fails before any point.
TEST(Sweep, WorkloadParametersReachEveryPointAndAreRecordedInTheGrid) {
  const std::string dir = temp_dir("params");
  std::ostringstream progress;
  SweepOptions o = small(dir);
  o.grid.workload = "idle";
  o.grid.duration = "100ms";
  o.grid.kernels = {"linux-5.17"};
  o.grid.threads = {2};
  o.grid.seeds = {1};
  // The one point's value: the fifth column of results.csv's last line.
  const auto value = [&dir] {
    std::istringstream csv(read_file(dir + "/results.csv"));
    std::string line, last;
    while (std::getline(csv, line)) last = line;
    std::istringstream cells(last);
    std::string cell;
    for (int i = 0; i < 5; ++i) std::getline(cells, cell, ',');
    return std::stod(cell);
  };
  run_sweep(o, progress, nullptr);
  const double base = value();
  fs::remove_all(dir);
  o.grid.params = {"wakeups_per_s=40"};
  run_sweep(o, progress, nullptr);
  EXPECT_DOUBLE_EQ(value(), 2 * base);
  EXPECT_NE(read_file(dir + "/results.json").find("\"wakeups_per_s=40\""), std::string::npos);
  EXPECT_EQ(grid_from_json(grid_to_json(o.grid), "test").params, o.grid.params);
  EXPECT_FALSE(grid_to_json(small(dir).grid).contains("params")) << "sweeps without --param keep their bytes";
  // Resuming that sweep without its --param is another grid.
  SweepOptions again = o;
  again.grid.params.clear();
  again.resume = true;
  EXPECT_NE(refusal(again).find("params: null here, [\"wakeups_per_s=40\"]"), std::string::npos);
  fs::remove_all(dir);
  o.grid.params = {"wakeups=40"};
  EXPECT_NE(refusal(o).find("workload idle has no parameter 'wakeups'"), std::string::npos) << refusal(o);
  EXPECT_FALSE(fs::exists(dir)) << "refused before any point ran";
}

// --set reaches every point, is part of the grid (journal, results and the plot's title), and a wrong key fails
// before any point.
TEST(Sweep, MachineSettingsReachEveryPointAndAreRecordedInTheGrid) {
  const std::string dir = temp_dir("machine_set");
  std::ostringstream progress;
  SweepOptions o = one_point(dir);
  run_sweep(o, progress, nullptr);
  const std::string base = read_file(dir + "/results.csv");
  fs::remove_all(dir);
  o.grid.machine_set = {"kernel.syscall=2us"};
  run_sweep(o, progress, nullptr);
  EXPECT_NE(read_file(dir + "/results.csv"), base) << "a 2 us system call in every madvise moves the figure";
  EXPECT_NE(read_file(dir + "/results.json").find("\"kernel.syscall=2us\""), std::string::npos);
  EXPECT_NE(read_file(dir + "/results.svg").find("small-2s2c (kernel.syscall=2us)"), std::string::npos);
  EXPECT_EQ(grid_from_json(grid_to_json(o.grid), "test").machine_set, o.grid.machine_set);
  EXPECT_FALSE(grid_to_json(small(dir).grid).contains("machine_set")) << "sweeps without --set keep their bytes";
  SweepOptions again = o;
  again.grid.machine_set.clear();
  again.resume = true;
  EXPECT_NE(refusal(again).find("machine_set: null here, [\"kernel.syscall=2us\"]"), std::string::npos)
      << refusal(again);
  fs::remove_all(dir);
  o.grid.machine_set = {"kernel.sycall=2us"};
  EXPECT_NE(refusal(o).find("--set kernel.sycall=2us: the machine file gives no latency"), std::string::npos)
      << refusal(o);
  EXPECT_FALSE(fs::exists(dir)) << "refused before any point ran";
}

TEST(Sweep, UnwritableOutputIsAnInputError) {
  std::ostringstream progress;
  try {
    run_sweep(small("/proc/tlbsim-no-such-dir/out"), progress, nullptr);
    ADD_FAILURE();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot create directory '/proc/tlbsim-no-such-dir/out'"), std::string::npos)
        << e.what();
  }
}

TEST(Sweep, AMetricPathPicksACounter) {
  const std::string dir = temp_dir("metric");
  std::ostringstream progress;
  SweepOptions o = one_point(dir);
  o.grid.metric = "counters.nr_tlb_remote_flush";
  run_sweep(o, progress, nullptr);
  const std::string csv = read_file(dir + "/results.csv");
  EXPECT_NE(csv.find(",counters.nr_tlb_remote_flush,"), std::string::npos) << csv;
  fs::remove_all(dir);
  o.grid.metric = "counters.no_such_counter";
  EXPECT_NE(refusal(o).find("no 'no_such_counter'"), std::string::npos) << refusal(o);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tlbsim::sweep
