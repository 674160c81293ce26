// `tlbsim run --offcpu` and `--offcpu-folded`: the table after the counters, the JSON rows, the folded file, and
// the refusals of a bad path.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/cli_harness.h"
#include "util/atomic_file.h"

namespace tlbsim::cli {
namespace {

using testing::expect_golden;
using testing::Result;
using testing::run;

std::vector<std::string> storm_args() {
  return {"run",        "--machine", "small-2s2c", "--kernel",   "linux-6.18", "--workload",
          "mmap_storm", "--threads", "2",          "--duration", "1ms",        "--counters"};
}

TEST(Cli, RunOffCpuTableJsonAndFoldedFile) {
  std::vector<std::string> args = storm_args();
  args.insert(args.end(), {"summary", "--offcpu"});
  const Result r = run(args);
  EXPECT_EQ(r.status, 0) << r.err;
  expect_golden("run_mmap_storm_offcpu.txt", r.out);

  const std::string folded = ::testing::TempDir() + "/offcpu.folded";
  args = storm_args();
  args.insert(args.end(), {"summary", "--offcpu-folded", folded});
  const Result f = run(args);
  EXPECT_EQ(f.status, 0) << f.err;
  EXPECT_EQ(f.out.find("off-CPU:"), std::string::npos) << "the table is printed only with --offcpu";
  EXPECT_NE(read_file(folded).find("this workload;handle_mm_fault;rwsem_down_read_slowpath;[D] "), std::string::npos)
      << read_file(folded);

  args = storm_args();
  args.insert(args.end(), {"summary", "--offcpu", "--format", "json"});
  const Result j = run(args);
  EXPECT_EQ(j.status, 0) << j.err;
  const auto parsed = nlohmann::json::parse(j.out);
  ASSERT_TRUE(parsed.contains("offcpu")) << j.out;
  const auto& row = parsed["offcpu"]["rows"][0];
  EXPECT_EQ(row["stack"], (nlohmann::json{"handle_mm_fault", "rwsem_down_read_slowpath"})) << j.out;
  EXPECT_DOUBLE_EQ(row["per_op"].get<double>(),
                   row["waits"].get<double>() / parsed["ops"].get<double>());  // per op of the run's own ops
}

TEST(Cli, RunOffCpuFoldedRefusesABadPath) {
  std::vector<std::string> args = storm_args();
  args.insert(args.end(), {"summary", "--offcpu-folded", "/nonexistent-dir/x.folded"});
  const Result missing = run(args);
  EXPECT_EQ(missing.status, 2);
  EXPECT_NE(missing.err.find("--offcpu-folded"), std::string::npos) << missing.err;
  const std::string same = ::testing::TempDir() + "/same.txt";
  args = storm_args();
  args.insert(args.end(), {"summary", "--offcpu-folded", same, "--output", same});
  EXPECT_EQ(run(args).status, 2);
}

}  // namespace
}  // namespace tlbsim::cli
