// Golden-output tests of the commands users type. Regenerate with TLBSIM_UPDATE_GOLDEN=1 after a deliberate
// change, and review the diff.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "cli/cli_harness.h"
#include "cli/command.h"
#include "trace/chrome_validate.h"
#include "util/atomic_file.h"

namespace tlbsim::cli {
namespace {

using testing::Result;
using testing::run;

using testing::expect_golden;

TEST(Cli, ListMachines) {
  const Result r = run({"list", "machines"});
  EXPECT_EQ(r.status, 0);
  expect_golden("list_machines.txt", r.out);
}

TEST(Cli, ListPatterns) {
  const Result r = run({"list", "patterns"});
  EXPECT_EQ(r.status, 0);
  expect_golden("list_patterns.txt", r.out);
}

TEST(Cli, MachineShow) {
  const Result r = run({"machine", "show", "small-2s2c"});
  EXPECT_EQ(r.status, 0);
  expect_golden("machine_show_small.txt", r.out);
}

// A calibrated file's step spread is shown under the hardware lines; the built-in machines have none (above).
TEST(Cli, MachineShowGivesTheStepSpreadOfACalibratedFile) {
  const Result r =
      run({"machine", "show", std::string(TLBSIM_SOURCE_DIR) + "/tests/data/kvm-2vcpu-20261207-epyc-host.toml"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(
      r.out.find("\ntiming    step spread 0.069: each step and wake-up within -+6.9% of its cost (MEASURED on vm"),
      std::string::npos)
      << r.out;
  EXPECT_EQ(run({"machine", "show", "small-2s2c"}).out.find("timing"), std::string::npos);
}

TEST(Cli, BenchContentionTable) {
  const Result r = run({"bench", "contention", "--machine", "small-2s2c", "--cpus", "1,2,4,8", "--duration", "5us"});
  EXPECT_EQ(r.status, 0) << r.err;
  expect_golden("bench_contention_small.txt", r.out);
  EXPECT_NE(r.err.find("events/s"), std::string::npos);  // the simulator's own speed figure, on stderr
}

TEST(Cli, BenchContentionJsonIsReproducibleFromItsOutput) {
  const std::vector<std::string> args = {"bench", "contention", "--machine", "small-2s2c", "--cpus", "2,8",
                                         "--pattern", "shared-rmw", "--duration", "5us", "--seed", "9", "--format",
                                         "json"};
  const Result a = run(args), b = run(args);
  ASSERT_EQ(a.status, 0) << a.err;
  EXPECT_EQ(a.out, b.out);
  const auto j = nlohmann::json::parse(a.out);
  EXPECT_EQ(j["seed"], 9);
  EXPECT_EQ(j["pattern"], "shared-rmw");
  EXPECT_EQ(j["machine"]["name"], "small-2s2c");
  ASSERT_EQ(j["results"].size(), 2u);
  EXPECT_EQ(j["results"][0]["cpus"], 2);
  EXPECT_GT(j["results"][1]["ops_per_sec"].get<double>(), 0);
  expect_golden("bench_contention_small.json", a.out);
}

TEST(Cli, OutputFileIsWrittenAtomically) {
  const auto path = (std::filesystem::temp_directory_path() / "tlbsim_cli_out.txt").string();
  const Result r = run({"bench", "contention", "--machine", "small-2s2c", "--cpus", "2", "--duration", "1us",
                        "--output", path});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_NE(read_file(path).find("pattern shared-rmw"), std::string::npos);
  std::filesystem::remove(path);
}

struct BadInput {
  std::vector<std::string> args;
  const char* message;
};

TEST(Cli, BadInputExitsWithStatus2AndSaysWhat) {
  const std::vector<BadInput> cases = {
      {{"list", "bugs"},
       "unknown list kind 'bugs' (known: eras, kernels, machines, memory-models, mutations, native, options, patterns, "
       "scenarios, "
       "seeds, workloads)"},
      {{"machine", "show", "nosuch"}, "unknown machine 'nosuch'"},
      {{"machine", "show", "/nonexistent/m.toml"}, "cannot read '/nonexistent/m.toml'"},
      {{"bench", "contention", "--pattern", "zigzag"}, "unknown pattern 'zigzag'"},
      {{"bench", "contention", "--machine", "small-2s2c", "--cpus", "9"}, "--cpus: '9' is outside 1..8"},
      {{"bench", "contention", "--duration", "5 parsecs"}, "--duration"},
      {{"bench", "contention", "--duration", "100s"}, "outside 10ns..1s"},
      {{"bench", "contention", "--format", "xml"}, "--format"},
      {{"check", "--scenario", "nosuch"}, "unknown scenario 'nosuch'"},
      {{"check", "--scenario", "madvise_vs_access", "--time", "90000s"}, "--time: 90000s is outside 1ms..24h"},
      {{"check", "--scenario", "madvise_vs_access", "--time", "soon"}, "--time: "},
      {{"check", "--mutation", "nosuch"}, "unknown mutation 'nosuch'"},
      {{"check", "--scenario", "madvise_vs_access", "--strategy", "dfs"}, "unknown strategy 'dfs'"},
      {{"check", "--scenario", "madvise_vs_access", "--budget", "0"}, "--budget must be between"},
      {{"check", "--kernel", "linux-6.2-ppc", "--mutation", "flush_sends_no_ipis"},
       "breaks x86 code, but the kernel is powerpc"},
      {{"check", "--replay", "/nonexistent/cx.json"}, "cannot read '/nonexistent/cx.json'"},
      {{"check", "--mutations", "nosuch"}, "unknown mutation 'nosuch'"},
      {{"check", "--scenario", "madvise_vs_access", "--seed", "-1"}, "--seed: '-1' is not a non-negative integer"},
      {{"run", "--seed", "-1"}, "--seed: '-1' is not a non-negative integer"},
      {{"run", "--warmup", "5 parsecs"}, "--warmup"},
      {{"run", "--warmup", "100s"}, "--warmup: 100s is outside 0..60s"},
      {{"run", "--stall-limit", "2h"}, "--stall-limit: '2h' has unknown unit"},
      {{"run", "--stall-limit", "61s"}, "--stall-limit: 61s is outside 0..60s"},
      {{"run", "--machine", "small-2s2c", "--kernel", "linux-6.2-ppc"}, "a powerpc kernel needs a powerpc64 machine"},
      {{"bench", "contention", "--seed", "-2"}, "--seed: '-2' is not a non-negative integer"},
      {{"run", "--trace", "/tmp/t.json", "--trace-max-events", "-5"},
       "--trace-max-events: '-5' is not a non-negative integer"},
      {{"run", "--set", "kernel.page_alocc=1ns"}, "--set kernel.page_alocc=1ns: the machine file gives no latency"},
      {{"run", "--set", "ipi.send"}, "--set ipi.send: expected KEY=VALUE"},
      {{"machine", "show", "small-2s2c", "--set", "ipi.send=soon"}, "--set ipi.send=soon: 'soon' is not a duration"},
      {{"validate", "--machine", "small-2s2c", "--set", "ipi.sned=1us"}, "--set ipi.sned=1us: the machine file gives"},
      {{"frobnicate"}, "frobnicate"},
      {{}, "subcommand"},
  };
  for (const auto& c : cases) {
    const Result r = run(c.args);
    EXPECT_EQ(r.status, 2) << c.message << "\n" << r.err;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << "expected '" << c.message << "' in:\n" << r.err;
    EXPECT_EQ(r.err.find("internal error"), std::string::npos) << r.err;
  }
}

TEST(Cli, HelpExitsZero) {
  const Result r = run({"--help"});
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.out.find("bench"), std::string::npos);
}

}  // namespace
}  // namespace tlbsim::cli

namespace tlbsim::cli {
namespace {

// A listing's stable part: kernels and options of the seeds only (a user's new option or profile is no seed's, so
// adding one leaves the goldens alone), with the name column's padding, which follows the longest name, collapsed.
std::string stable_listing(std::string_view kind, const std::string& out) {
  const bool seeds_only = kind == "kernels" || kind == "options";
  std::istringstream in(out);
  std::string line, kept;
  while (std::getline(in, line)) {
    if (seeds_only && line.find("seed 00") == std::string::npos) continue;
    const auto name_end = line.find(' ');
    const auto rest = line.find_first_not_of(' ', name_end);
    kept += (name_end == std::string::npos || rest == std::string::npos)
                ? line
                : line.substr(0, name_end) + " " + line.substr(rest);
    kept += '\n';
  }
  return kept;
}

TEST(Cli, ListKernelsWorkloadsOptionsErasMutationsScenarios) {
  for (const char* kind : {"kernels", "workloads", "options", "eras", "mutations", "scenarios", "memory-models"}) {
    const Result r = run({"list", kind});
    EXPECT_EQ(r.status, 0) << kind;
    expect_golden(std::string("list_") + kind + ".txt", stable_listing(kind, r.out));
  }
}

TEST(Cli, OptionOverridesTheProfile) {
  const std::vector<std::string> base = {"run", "--machine", "small-2s2c", "--threads", "2", "--duration", "100us",
                                         "--format", "json"};
  std::vector<std::string> on = base;
  on.insert(on.end(), {"--option", "avoid_mm_tlb_gen_read=on"});
  const Result a = run(on);
  ASSERT_EQ(a.status, 0) << a.err;
  EXPECT_EQ(nlohmann::json::parse(a.out)["options"], nlohmann::json::array({"avoid_mm_tlb_gen_read"}));
  std::vector<std::string> off = base;
  off.insert(off.end(), {"--kernel", "linux-5.17-seed000", "--option", "avoid_mm_tlb_gen_read=off"});
  const Result b = run(off);
  ASSERT_EQ(b.status, 0) << b.err;
  EXPECT_EQ(nlohmann::json::parse(b.out)["options"], nlohmann::json::array());
}

TEST(Cli, BadOptionsAreRefusedWithWhereAndWhat) {
  const std::vector<BadInput> cases = {
      {{"run", "--option", "no_such_option=on"}, "--option no_such_option=on: unknown option 'no_such_option'"},
      {{"run", "--option", "lazy_mm_cpumask=on"},
       "option 'lazy_mm_cpumask' is modeled for Linux 6.13..6.18, not for this kernel's version 5.17"},
      {{"run", "--option", "avoid_mm_tlb_gen_read=maybe"}, "value 'maybe' is not on or off"},
      {{"run", "--option", "avoid_mm_tlb_gen_read"}, "expected NAME=on or NAME=off"},
      {{"run", "--option", "ignore_invalid_tlb_gen=on"},
       "option 'ignore_invalid_tlb_gen' needs option 'avoid_mm_tlb_gen_read' on"},
      {{"run", "--kernel", "/nonexistent/k.toml"}, "cannot read '/nonexistent/k.toml': No such file or directory"},
      {{"reproduce", "007"}, "unknown seed '007'"},
      {{"reproduce", "--jobs", "1000"}, "--jobs: 1000 is outside 1..256"},
      {{"reproduce", "--format", "pdf"}, "--format"},
      {{"reproduce", "--runs", "0"}, "--runs: Value 0 not in range 1 to 20"},
      {{"run", "--param", "fds=4"}, "--param fds=4: workload tlb_flush1 has no parameter 'fds' (it has: none)"},
      {{"run", "--workload", "hackbench", "--machine", "milan-36c", "--kernel", "linux-6.13", "--param", "fds=0"},
       "--param fds=0: workload hackbench: fds must be an integer in 1..256"},
  };
  for (const auto& c : cases) {
    const Result r = run(c.args);
    EXPECT_EQ(r.status, 2) << c.message << "\n" << r.err;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << "expected '" << c.message << "' in:\n" << r.err;
  }
}

// `--set`: one machine parameter replaced; the table names it, and a run differs from the file's machine only
// where that parameter acts (a null system call is charged in every madvise of tlb_flush1).
TEST(Cli, RunWithAMachineParameterSetNamesItAndMovesTheFigure) {
  const std::vector<std::string> base = {"run",        "--machine", "small-2s2c", "--threads", "2",
                                         "--duration", "200us",     "--counters", "summary"};
  std::vector<std::string> set = base;
  set.insert(set.end(), {"--set", "kernel.syscall=2us"});
  const Result r = run(set);
  EXPECT_EQ(r.status, 0) << r.err;
  expect_golden("run_tlb_flush1_small_set.txt", r.out);
  const Result b = run(base);
  EXPECT_NE(r.out.find("machine parameter set              kernel.syscall=2us\n"), std::string::npos) << r.out;
  EXPECT_EQ(b.out.find("machine parameter set"), std::string::npos) << b.out;
  const auto figure = [](const std::string& out) {
    const auto pos = out.find("\nops_per_sec");
    return pos == std::string::npos ? std::string() : out.substr(pos, out.find('\n', pos + 1) - pos);
  };
  EXPECT_FALSE(figure(r.out).empty()) << r.out;
  EXPECT_NE(figure(r.out), figure(b.out));
  const Result shown = run({"machine", "show", "small-2s2c", "--set", "kernel.syscall=2us"});
  EXPECT_NE(
      shown.out.find("kernel.syscall              2000.00 ns  SET on the command line (--set kernel.syscall=2us); "
                     "the machine file gives 228 ns"),
      std::string::npos)
      << shown.out;
}

TEST(Cli, RunTlbFlush1Table) {
  // The summary counters only: a golden that does not change when a cache line or a counter is added.
  const Result r =
      run({"run", "--machine", "small-2s2c", "--threads", "2", "--duration", "200us", "--counters", "summary"});
  EXPECT_EQ(r.status, 0) << r.err;
  expect_golden("run_tlb_flush1_small.txt", r.out);
  const Result all = run({"run", "--machine", "small-2s2c", "--threads", "2", "--duration", "200us"});
  EXPECT_NE(all.out.find("cache_lines mm.mmap_lock "), std::string::npos) << all.out;
  EXPECT_NE(all.out.find("tlb lookups "), std::string::npos) << all.out;
}

// The profile table after the counters, and its two files (written atomically, as every output).
TEST(Cli, RunProfile) {
  const Result r = run({"run", "--machine", "small-2s2c", "--kernel", "linux-6.13", "--workload", "tlb_flush2",
                        "--threads", "2", "--duration", "200us", "--counters", "summary", "--profile"});
  EXPECT_EQ(r.status, 0) << r.err;
  expect_golden("run_tlb_flush2_profile.txt", r.out);
  const std::string dir = ::testing::TempDir();
  const std::string folded = dir + "/p.folded", svg = dir + "/p.svg";
  const Result f = run({"run", "--machine", "small-2s2c", "--kernel", "linux-6.13", "--workload", "tlb_flush2",
                        "--threads", "2", "--duration", "200us", "--profile-folded", folded, "--profile-svg", svg});
  EXPECT_EQ(f.status, 0) << f.err;
  EXPECT_EQ(f.out.find("profile:"), std::string::npos) << "the table is printed only with --profile";
  EXPECT_NE(read_file(folded).find("[system];task_main;tlb_flush2_thread;tlb_flush_loop;sys_madvise_dontneed"),
            std::string::npos);
  EXPECT_NE(read_file(svg).find("<title>sys_madvise_dontneed ("), std::string::npos);
  const Result j = run({"run", "--machine", "small-2s2c", "--kernel", "linux-6.13", "--workload", "tlb_flush2",
                        "--threads", "2", "--duration", "200us", "--profile", "--format", "json"});
  EXPECT_EQ(j.status, 0) << j.err;
  const auto parsed = nlohmann::json::parse(j.out);
  EXPECT_EQ(parsed["profile"]["total_ps"].get<std::int64_t>(), 8 * 200'000'000);  // small-2s2c's 8 CPUs x 200 us
  const Result same = run({"run", "--machine", "small-2s2c", "--profile-folded", folded, "--profile-svg", folded});
  EXPECT_EQ(same.status, 2);
}

// A workload file runs as a built-in workload does: its own name in the header, its parameter echoed.
TEST(Cli, RunWorkloadFileTable) {
  const Result r = run({"run", "--machine", "small-2s2c", "--workload", "madvise_own_pages.toml", "--param", "pages=16",
                        "--threads", "2", "--duration", "200us", "--counters", "summary"});
  EXPECT_EQ(r.status, 0) << r.err;
  expect_golden("run_madvise_own_pages_file.txt", r.out);
}

TEST(Cli, RunJsonIsReproducible) {
  const std::vector<std::string> args = {"run", "--machine", "small-2s2c", "--threads", "3", "--duration", "200us",
                                         "--format", "json", "--seed", "5"};
  const Result a = run(args), b = run(args);
  ASSERT_EQ(a.status, 0) << a.err;
  EXPECT_EQ(a.out, b.out);
  const auto j = nlohmann::json::parse(a.out);
  for (const char* key : {"machine", "kernel", "options", "workload", "threads", "seed", "sim_time_ns", "ops", "metric",
                          "counters", "violations", "events"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_EQ(j["metric"]["unit"], "ops/s");
  EXPECT_TRUE(j["counters"].contains("nr_tlb_remote_flush"));
  EXPECT_EQ(j["warmup_ns"].get<double>(), 20000) << "a tenth of --duration by default";
}

TEST(Cli, RunWarmupSetsTheUnmeasuredStart) {
  const Result r = run({"run", "--machine", "small-2s2c", "--threads", "2", "--duration", "200us", "--warmup", "50us",
                        "--format", "json"});
  ASSERT_EQ(r.status, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["warmup_ns"].get<double>(), 50000);
  EXPECT_EQ(j["sim_time_ns"].get<double>(), 200000) << "the measured duration, which follows the warm-up";
  const Result d = run({"run", "--machine", "small-2s2c", "--threads", "2", "--duration", "200us", "--format", "json"});
  ASSERT_EQ(d.status, 0) << d.err;
  EXPECT_GT(j["events"].get<std::uint64_t>(), nlohmann::json::parse(d.out)["events"].get<std::uint64_t>())
      << "50 us of warm-up simulate more than the default 20 us";
}

TEST(Cli, RunBadInputExits2) {
  EXPECT_EQ(run({"run", "--kernel", "linux-9.9"}).status, 2);
  EXPECT_EQ(run({"run", "--workload", "nope"}).status, 2);
  EXPECT_EQ(run({"run", "--machine", "small-2s2c", "--threads", "99"}).status, 2);
  EXPECT_EQ(run({"run", "--machine", "power8-16s192c-smt8", "--threads", "1537"}).status, 2);
  EXPECT_EQ(run({"run", "--duration", "0ns"}).status, 2);
}

}  // namespace
}  // namespace tlbsim::cli

namespace tlbsim::cli {
namespace {

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (std::size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) s.replace(at, from.size(), to);
  return s;
}

TEST(Cli, CheckFindsAMutationWritesACounterexampleAndReplaysIt) {
  const std::string path = (std::filesystem::temp_directory_path() / "tlbsim_cli_cx.json").string();
  Result r = run({"check", "--scenario", "switch_vs_madvise", "--mutation", "switch_mm_reads_tlb_gen_before_cpumask",
                  "--strategy", "exhaustive", "--budget", "100000", "--out", path});
  EXPECT_EQ(r.status, 1) << r.err;
  expect_golden("check_switch_mutation.txt", replace_all(r.out, path, "<out>"));
  r = run({"check", "--replay", path});
  EXPECT_EQ(r.status, 1) << r.err;
  // Source lines as file:N: an edit elsewhere in a modeled file must not change the golden.
  expect_golden("check_replay_switch_mutation.txt",
                std::regex_replace(r.out, std::regex(R"(([A-Za-z_0-9]+\.(cpp|h)):[0-9]+)"), "$1:N"));
  // The replay as a timeline: the same text, and a trace file of the run.
  const std::string trace = (std::filesystem::temp_directory_path() / "tlbsim_cli_replay.json").string();
  const Result traced = run({"check", "--replay", path, "--trace", trace});
  EXPECT_EQ(traced.status, 1) << traced.err;
  EXPECT_EQ(traced.out, r.out);
  const auto check = trace::testing::validate_chrome_trace(nlohmann::json::parse(read_file(trace)));
  EXPECT_TRUE(check.errors.empty()) << (check.errors.empty() ? "" : check.errors[0]);
  EXPECT_GT(check.spans, 0u);
  std::filesystem::remove(trace);
  // The replay profiled: the same interleaving, then the table; the folded stacks cover the switch_mm_irqs_off
  // the schedule interleaves, and every stack has a positive time.
  const std::string folded = (std::filesystem::temp_directory_path() / "tlbsim_cli_replay.folded").string();
  const Result profiled = run({"check", "--replay", path, "--profile", "--profile-folded", folded});
  EXPECT_EQ(profiled.status, 1) << profiled.err;
  EXPECT_EQ(profiled.out.substr(0, r.out.size()), r.out);
  EXPECT_NE(profiled.out.find("Children      Self  Function", r.out.size()), std::string::npos) << profiled.out;
  const std::string stacks = read_file(folded);
  EXPECT_NE(stacks.find("switch_mm_irqs_off"), std::string::npos) << stacks;
  EXPECT_EQ(std::regex_search(stacks, std::regex(R"( 0\n)")), false) << stacks;
  std::filesystem::remove(folded);
  // Without --replay the profile options are refused: there is no single run to profile.
  EXPECT_EQ(run({"check", "--scenario", "switch_vs_madvise", "--profile"}).status, 2);
  std::filesystem::remove(path);
}

// A corrupted counterexample is bad input (status 2) naming the field, never a clean replay (status 0), and no trace
// of the wrong run is written.
TEST(Cli, ACorruptedReplayIsRefusedNamingTheFieldOrTheStep) {
  const std::string path = (std::filesystem::temp_directory_path() / "tlbsim_cli_bad_cx.json").string();
  const std::string trace = (std::filesystem::temp_directory_path() / "tlbsim_cli_bad_cx_trace.json").string();
  const nlohmann::json f5 = nlohmann::json::parse(
      read_file(std::string(TLBSIM_SOURCE_DIR) + "/docs/counterexamples/f5-seed002-trim-skips-switching-cpu.json"));
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"/decisions/0/action", "\"cpu99\""},
      {"/decisions/1/step", "1.5"},
      {"/decisions/1/action", "\"irq999@cpu0\""},
      {"/decisions/1/step", "19999"},
  };
  const std::vector<std::string> messages = {
      path +
          ": counterexample file: 'decisions[0].action': expected an action cpuN, irqV@cpuN, timerT, hw@cpuN or "
          "sb@cpuN",
      path + ": counterexample file: 'decisions[1].step': expected an integer from 0 to 19999, got 1.5",
      path +
          ": counterexample file: not a schedule of scenario 'switch_vs_madvise': 'decisions[1]' (step 12): action "
          "'irq999@cpu0' is not offered at that step (offered: ",
      path +
          ": counterexample file: not a schedule of scenario 'switch_vs_madvise': 'decisions[1]' (step 19999): never "
          "reached: the run ended after ",
  };
  for (std::size_t i = 0; i < cases.size(); ++i) {
    nlohmann::json j = f5;
    j[nlohmann::json::json_pointer(cases[i].first)] = nlohmann::json::parse(cases[i].second);
    write_file_atomic(path, j.dump(2));
    std::filesystem::remove(trace);
    const Result r = run({"check", "--replay", path, "--trace", trace});
    EXPECT_EQ(r.status, 2) << r.out << r.err;
    EXPECT_NE(r.err.find("tlbsim: error: " + messages[i]), std::string::npos) << r.err;
    EXPECT_FALSE(std::filesystem::exists(trace));
  }
  std::filesystem::remove(path);
}

TEST(Cli, CheckOfTheCorrectKernelFindsNothingAndSaysHowMuchItExplored) {
  const Result r = run({"check", "--scenario", "madvise_vs_access", "--strategy", "exhaustive", "--preemptions", "1"});
  EXPECT_EQ(r.status, 0) << r.err;
  expect_golden("check_madvise_exhaustive.txt", r.out);
}

}  // namespace
}  // namespace tlbsim::cli

namespace tlbsim::cli {
namespace {

TEST(Cli, SweepStopsWithStatus130ResumesAndReports) {
  const std::string dir = (std::filesystem::temp_directory_path() / "tlbsim_cli_sweep").string();
  std::filesystem::remove_all(dir);
  const std::vector<std::string> args = {"sweep", "--machine", "small-2s2c", "--kernel", "linux-5.17,linux-5.17-seed000",
                                         "--threads", "1..4:3", "--seeds", "1..2", "--duration", "50us", "--jobs", "2",
                                         "--out", dir};
  std::vector<std::string> first = args;
  first.insert(first.end(), {"--max-points", "3"});
  Result r = run(first);
  EXPECT_EQ(r.status, 130) << r.err;
  EXPECT_NE(r.err.find("3 of 8 points finished, kept in " + dir + "/points.jsonl"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("rerun the same command with --resume"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("sweep: 3/8 points (linux-5.17 "), std::string::npos) << r.err;  // a plain line per point
  r = run(args);
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("already holds a sweep (3 points finished); pass --resume"), std::string::npos) << r.err;
  std::vector<std::string> resume = args;
  resume.push_back("--resume");
  r = run(resume);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, dir + "/results.csv\n" + dir + "/results.json\n" + dir + "/results.svg\n");
  const std::string csv = read_file(dir + "/results.csv");
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 9);
  r = run({"report", dir});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(read_file(dir + "/index.html").find("<svg"), std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST(Cli, SweepAndReportBadInputExits2AndSaysWhat) {
  const std::vector<BadInput> cases = {
      {{"sweep", "--threads", "1..9", "--machine", "small-2s2c", "--out", "/tmp/x"}, "--threads: 9 is outside 1..8"},
      {{"sweep", "--threads", "5..1", "--out", "/tmp/x"}, "--threads: '5..1': range is backwards"},
      {{"sweep", "--threads", "1,x", "--out", "/tmp/x"}, "--threads: 'x' is not a number"},
      {{"sweep", "--seeds", "", "--out", "/tmp/x"}, "--seeds: empty list"},
      {{"sweep", "--kernel", "linux-5.17,,x", "--out", "/tmp/x"}, "--kernel: empty name"},
      {{"sweep", "--kernel", "linux-9.9", "--out", "/tmp/x"}, "linux-9.9"},
      {{"sweep", "--shard", "3/2", "--out", "/tmp/x"}, "--shard: '3/2' is not i/N"},
      {{"sweep", "--duration", "1h", "--out", "/tmp/x"}, "--duration"},
      {{"sweep", "--jobs", "999", "--out", "/tmp/x"}, "--jobs: 999 is outside 1..256"},
      {{"sweep", "--machine", "small-2s2c", "--threads", "1..9", "--out", "/tmp/tlbsim_cli_sweep_bad"},
       "--threads: 9 is outside 1..8 (the CPUs of small-2s2c)"},
      {{"sweep"}, "--out DIR is required"},
      {{"sweep", "--machine", "small-2s2c", "--out", "/proc/tlbsim/x"}, "cannot create directory '/proc/tlbsim/x'"},
      {{"sweep", "merge", "/tmp/tlbsim_merged", "/nonexistent/shard"}, "'/nonexistent/shard' has no points.jsonl"},
      {{"report", "/nonexistent/dir"}, "report: '/nonexistent/dir' is not a directory"},
      {{"reproduce", "003", "--plot", "/proc/tlbsim/plots"}, "cannot create directory '/proc/tlbsim/plots'"},
  };
  for (const auto& c : cases) {
    const Result r = run(c.args);
    EXPECT_EQ(r.status, 2) << c.message << "\n" << r.err;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << "expected '" << c.message << "' in:\n" << r.err;
  }
}

// A journal that is not what a sweep writes is refused by --resume and by merge with file:line and the field.
TEST(Cli, SweepRefusesACorruptedJournalWithFileAndLine) {
  const std::string dir = (std::filesystem::temp_directory_path() / "tlbsim_cli_bad_journal").string();
  const std::string merged = dir + "-merged";
  const std::vector<std::string> args = {"sweep",     "--machine", "small-2s2c", "--kernel", "linux-5.17",
                                         "--threads", "1,2",       "--seeds",    "1..2",     "--duration",
                                         "50us",      "--out",     dir};
  const std::string header = R"({"grid":{"duration":"50us","kernels":["linux-5.17"],"machine":"small-2s2c",)"
                             R"("metric":"","seeds":[1,2],"threads":[1,2],"workload":"tlb_flush1"},"shard":"1/1",)"
                             R"("tlbsim_sweep":1})";
  auto point = [](const std::string& index, int threads, int seed) {
    return R"({"events":1,"index":)" + index + R"(,"kernel":"linux-5.17","ops":1,"seed":)" + std::to_string(seed) +
           R"(,"threads":)" + std::to_string(threads) + R"(,"unit":"ops/s","value":1.0,"violations":0})";
  };
  const std::vector<std::pair<std::string, std::string>> cases = {
      {point("0", 1, 1) + "\n" + point("1", 1, 2) + "\n" + point("2", 2, 2),
       ":4: sweep journal: 'seed': point 2 of the header's grid has seed 1, not 2"},
      {point("999", 1, 1), ":2: sweep journal: 'index': expected an integer from 0 to 3, got 999"},
      {point("-1", 1, 1), ":2: sweep journal: 'index': expected an integer from 0 to 3, got -1"},
  };
  std::vector<std::string> resume = args;
  resume.push_back("--resume");
  for (const auto& [points, message] : cases) {
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    write_file_atomic(dir + "/points.jsonl", header + "\n" + points + "\n");
    Result r = run(resume);
    EXPECT_EQ(r.status, 2) << r.err;
    EXPECT_NE(r.err.find("tlbsim: error: " + dir + "/points.jsonl" + message), std::string::npos) << r.err;
    r = run({"sweep", "merge", merged, dir});
    EXPECT_EQ(r.status, 2) << r.err;
    EXPECT_NE(r.err.find("tlbsim: error: " + dir + "/points.jsonl" + message), std::string::npos) << r.err;
  }
  std::filesystem::remove_all(dir);
  std::filesystem::remove_all(merged);
}

TEST(Cli, RunTraceWritesATimelineAndAnFtraceFileAndTheSameFigures) {
  const auto dir = std::filesystem::temp_directory_path();
  const std::string json = (dir / "tlbsim_cli_trace.json").string(), text = (dir / "tlbsim_cli_trace.txt").string();
  const std::vector<std::string> args = {"run", "--machine", "small-2s2c", "--threads", "4", "--duration", "100us"};
  std::vector<std::string> traced = args;
  traced.insert(traced.end(), {"--trace", json, "--ftrace", text, "--trace-cpus", "0-7", "--trace-window", "10us:"});
  const Result plain = run(args), t = run(traced);
  ASSERT_EQ(t.status, 0) << t.err;
  EXPECT_EQ(plain.out, t.out);
  EXPECT_NE(t.err.find("tlbsim: trace " + json + ": "), std::string::npos) << t.err;
  const auto check = trace::testing::validate_chrome_trace(nlohmann::json::parse(read_file(json)));
  EXPECT_TRUE(check.errors.empty()) << (check.errors.empty() ? "" : check.errors[0]);
  EXPECT_GT(check.flows, 0u);
  EXPECT_EQ(read_file(text).rfind("# tracer: nop\n", 0), 0u);
  std::filesystem::remove(json);
  std::filesystem::remove(text);
}

TEST(Cli, TraceToAnUnwritablePlaceOrWithBadFiltersExits2AndSaysWhy) {
  const std::vector<BadInput> cases = {
      {{"run", "--duration", "10us", "--trace", "/nonexistent/dir/t.json"},
       "--trace /nonexistent/dir/t.json: cannot write '/nonexistent/dir/t.json': directory '/nonexistent/dir' does "
       "not exist"},
      {{"run", "--duration", "10us", "--ftrace", "/nonexistent/t.txt"}, "--ftrace /nonexistent/t.txt: cannot write"},
      {{"run", "--duration", "10us", "--trace", "/tmp"}, "--trace /tmp: cannot write '/tmp': is a directory"},
      {{"run", "--duration", "10us", "--trace-window", "1us:2us"}, "need --trace FILE.json or --ftrace FILE"},
      {{"run", "--duration", "10us", "--trace", "/tmp/t.json", "--trace-window", "2us"}, "--trace-window: '2us' is not"},
      {{"run", "--machine", "small-2s2c", "--duration", "10us", "--trace", "/tmp/t.json", "--trace-cpus", "8"},
       "--trace-cpus"},
      {{"check", "--scenario", "madvise_vs_access", "--trace", "/tmp/t.json"}, "use them with --replay FILE"},
      // Refused before the run (not writable) or when the file is written after it (cannot create it).
      {{"run", "--duration", "10us", "--trace", "/proc/tlbsim_trace.json"}, "/proc/tlbsim_trace.json"},
  };
  for (const auto& c : cases) {
    const Result r = run(c.args);
    EXPECT_EQ(r.status, 2) << c.message << "\n" << r.err;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << "expected '" << c.message << "' in:\n" << r.err;
  }
}

}  // namespace
}  // namespace tlbsim::cli

namespace tlbsim::cli {
namespace {

TEST(Cli, ReproducePlotAndHtmlWriteSvgsAndAPage) {
  const std::string dir = (std::filesystem::temp_directory_path() / "tlbsim_cli_reproduce_html").string();
  std::filesystem::remove_all(dir);
  const Result r = run({"reproduce", "002", "--quick", "--jobs", "2", "--plot", dir + "/plots", "--html", dir});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(read_file(dir + "/plots/seed-002.svg").find("<rect class=\"bar\""), std::string::npos);
  const std::string html = read_file(dir + "/index.html");
  EXPECT_NE(html.find("Seed 002: x86,tlb: update mm_cpumask lazily"), std::string::npos);
  EXPECT_NE(html.find("<td>hackbench time after / before</td>"), std::string::npos);
  EXPECT_NE(html.find("<svg"), std::string::npos);
  EXPECT_TRUE(std::filesystem::exists(dir + "/reproduce.json"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tlbsim::cli
