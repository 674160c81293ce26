// The CLI of the memory models: `check --memory-model`, and `tlbsim litmus`.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <vector>

#include "cli/cli_harness.h"
#include "util/atomic_file.h"

namespace tlbsim::cli {
namespace {

using testing::expect_golden;
using testing::Result;
using testing::run;

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (std::size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
  return s;
}

// Under --memory-model sc the checker finds exactly what it found before the memory models (the same runs, the same
// counterexample and replay: these goldens are the outputs of the commands above before x86 explored x86-TSO).
TEST(Cli, UnderSequentialConsistencyTheCheckerFindsWhatItFoundBefore) {
  const std::string path = (std::filesystem::temp_directory_path() / "tlbsim_cli_cx_sc.json").string();
  Result r = run({"check", "--scenario", "switch_vs_madvise", "--mutation", "switch_mm_reads_tlb_gen_before_cpumask",
                  "--strategy", "exhaustive", "--budget", "100000", "--out", path, "--memory-model", "sc"});
  EXPECT_EQ(r.status, 1) << r.err;
  expect_golden("check_switch_mutation_sc.txt", replace_all(r.out, path, "<out>"));
  EXPECT_EQ(read_file(path).find("memory_model"), std::string::npos);  // the file of before: no field
  r = run({"check", "--replay", path});
  EXPECT_EQ(r.status, 1) << r.err;
  expect_golden("check_replay_switch_mutation_sc.txt",
                std::regex_replace(r.out, std::regex(R"(([A-Za-z_0-9]+\.(cpp|h)):[0-9]+)"), "$1:N"));
  std::filesystem::remove(path);
  r = run({"check", "--scenario", "madvise_vs_access", "--strategy", "exhaustive", "--preemptions", "1",
           "--memory-model", "sc"});
  EXPECT_EQ(r.status, 0) << r.err;
  expect_golden("check_madvise_exhaustive_sc.txt", r.out);
  r = run({"check", "--scenario", "madvise_vs_access", "--memory-model", "rvwmo"});
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.err.find("--memory-model"), std::string::npos) << r.err;
}

// `tlbsim litmus`: the classic tests' verdicts per memory model as a table (golden), as JSON, and a file outside the
// subset is an error that names it unless --skip-unsupported.
TEST(Cli, LitmusPrintsEachTestsVerdictUnderEachMemoryModel) {
  const std::string dir = std::string(TLBSIM_SOURCE_DIR) + "/tests/data/litmus/";
  std::vector<std::string> args = {"litmus"};
  for (const char* n : {"SB",
                        "SB+mfences",
                        "SB+xchgs",
                        "SB+rmbs",
                        "MP",
                        "MP+wmb",
                        "MP+rmb",
                        "MP+wmb+rmb",
                        "LB",
                        "IRIW",
                        "IRIW+rmbs",
                        "IRIW+mbs",
                        "2+2W",
                        "R",
                        "R+mfence",
                        "WRC",
                        "WRC+release+acquire",
                        "n4",
                        "n5",
                        "n6",
                        "MP+lock",
                        "MP+mb+addr",
                        "MP+wmb+addr",
                        "MP+po+addr",
                        "WRC+wmb+addr",
                        "WRC+po+addr",
                        "ISA2+wmb+data+addr",
                        "ISA2+wmb+data+po"}) {
    args.push_back(dir + n + ".litmus");
  }
  Result r = run(args);
  EXPECT_EQ(r.status, 0) << r.err;
  expect_golden("litmus_classic.txt", r.out);
  r = run({"litmus", dir + "SB.litmus", "--memory-model", "tso", "--format", "json"});
  EXPECT_EQ(r.status, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["tests"][0]["tso"]["verdict"], "Sometimes");
  EXPECT_FALSE(j["tests"][0].contains("sc"));
  const std::string bad = (std::filesystem::temp_directory_path() / "tlbsim_cli_rcu.litmus").string();
  write_file_atomic(bad, "C rcu\n{}\nP0(int *x)\n{\n\tsynchronize_rcu();\n}\nexists (x=0)\n");
  r = run({"litmus", bad});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find(bad + ":5: 'synchronize_rcu' is outside tlbsim's litmus subset"), std::string::npos) << r.err;
  r = run({"litmus", "--skip-unsupported", bad, dir + "SB.litmus"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("1 ran, 1 outside the subset, 0 disagree"), std::string::npos) << r.out;
  // A test whose Result says Never but whose condition a memory model reaches: exit status 1.
  const std::string wrong = (std::filesystem::temp_directory_path() / "tlbsim_cli_wrong.litmus").string();
  std::string sb = read_file(dir + "SB.litmus");
  sb.replace(sb.find("Result: Sometimes"), 17, "Result: Never");
  write_file_atomic(wrong, sb);
  r = run({"litmus", wrong});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("DISAGREES"), std::string::npos) << r.out;
  r = run({"litmus", dir + "SB.litmus", "--budget", "0"});
  EXPECT_EQ(r.status, 2);
  std::filesystem::remove(bad);
  std::filesystem::remove(wrong);
}

}  // namespace
}  // namespace tlbsim::cli
