// `tlbsim offcpu FILE`: a real trace's waits in the table `run --offcpu` prints, as JSON, and its refusals.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "cli/cli_harness.h"
#include "util/atomic_file.h"

namespace tlbsim::cli {
namespace {

using testing::expect_golden;
using testing::Result;
using testing::run;

const std::string kExcerpt = std::string(TLBSIM_SOURCE_DIR) + "/tests/data/offcpu/mmap_storm_kvm_6.18.txt";

TEST(Cli, OffCpuReadsARealTrace) {
  const Result r = run({"offcpu", kExcerpt, "--comm", "storm", "--ops", "8"});
  EXPECT_EQ(r.status, 0) << r.err;
  std::string out = r.out;  // the golden names the file relative to the source tree
  out.replace(0, std::string(TLBSIM_SOURCE_DIR).size() + 1, "");
  expect_golden("offcpu_mmap_storm_kvm.txt", out);

  const Result j = run({"offcpu", kExcerpt, "--comm", "storm", "--format", "json"});
  EXPECT_EQ(j.status, 0) << j.err;
  const auto parsed = nlohmann::json::parse(j.out);
  EXPECT_EQ(parsed["switches"], 36);
  EXPECT_EQ(parsed["rows"][0]["stack"], (nlohmann::json{"handle_mm_fault", "rwsem_down_read_slowpath"}));
  EXPECT_FALSE(parsed["rows"][0].contains("per_op")) << "no --ops: no per-op figure";
}

TEST(Cli, OffCpuRefusals) {
  Result r = run({"offcpu", "/nonexistent/trace.txt"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("/nonexistent/trace.txt"), std::string::npos) << r.err;
  r = run({"offcpu", kExcerpt, "--comm", "nosuchtask"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("no task named 'nosuchtask' was switched out (--comm)"), std::string::npos) << r.err;
  const std::string junk = ::testing::TempDir() + "/junk_trace.txt";
  write_file_atomic(junk, "  a-1 [000] d..2. 1.5: sched_switch: prev_comm=a prev_pid=\n");
  r = run({"offcpu", junk});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("junk_trace.txt:1: sched_switch"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace tlbsim::cli
