#include "native/validate.h"

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "cli/command.h"
#include "hw/machine.h"
#include "native/host.h"

namespace tlbsim::native {
namespace {

int run_cli_status(std::vector<std::string> args, std::string* err = nullptr, std::string* out = nullptr) {
  args.insert(args.begin(), "tlbsim");
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  std::ostringstream o, e;
  const int status = cli::run_cli(static_cast<int>(argv.size()), argv.data(), o, e);
  if (err != nullptr) *err = e.str();
  if (out != nullptr) *out = o.str();
  return status;
}

TEST(Validate, ChoosesTheNewestX86ProfileNotNewerThanTheKernel) {
  std::string why;
  EXPECT_EQ(closest_x86_profile("6.18.44-fc-v782", why), "linux-6.18");
  EXPECT_EQ(closest_x86_profile("6.14.2", why), "linux-6.13");
  EXPECT_EQ(closest_x86_profile("6.1.0-18-amd64", why), "linux-5.17");
  EXPECT_EQ(closest_x86_profile("5.17.0", why), "linux-5.17");
  EXPECT_EQ(closest_x86_profile("4.19.0", why), "linux-3.3");
  EXPECT_EQ(closest_x86_profile("2.6.32", why), "linux-3.3");
  EXPECT_NE(why.find("oldest"), std::string::npos);
  EXPECT_EQ(closest_x86_profile("garbage", why), "linux-3.3");
}

TEST(Validate, BadInputExitsWithStatus2) {
  std::string err;
  EXPECT_EQ(run_cli_status({"validate", "--workloads", "no_such", "--machine", "small-2s2c"}, &err), 2);
  EXPECT_NE(err.find("unknown workload 'no_such'"), std::string::npos) << err;
  EXPECT_EQ(run_cli_status({"validate", "--threads", "1,x", "--machine", "small-2s2c"}), 2);
  EXPECT_EQ(run_cli_status({"validate", "--threads", "4096", "--machine", "small-2s2c"}), 2);
  EXPECT_EQ(run_cli_status({"validate", "--seconds", "-1", "--machine", "small-2s2c"}), 2);
  EXPECT_EQ(run_cli_status({"validate", "--kernel", "linux-0.1", "--machine", "small-2s2c"}), 2);
  EXPECT_EQ(run_cli_status({"calibrate", "--repetitions", "1"}), 2);
  EXPECT_EQ(run_cli_status({"calibrate", "--name", "Bad Name"}), 2);
}

TEST(Validate, RunsOutsideTheirRangeExitWithStatus2) {
  std::string err;
  EXPECT_EQ(run_cli_status({"validate", "--runs", "0", "--machine", "small-2s2c"}, &err), 2);
  EXPECT_NE(err.find("--runs: 0 is outside 1..100"), std::string::npos) << err;
  EXPECT_EQ(run_cli_status({"validate", "--runs", "101", "--machine", "small-2s2c"}), 2);
  EXPECT_EQ(run_cli_status({"validate", "--runs", "x", "--machine", "small-2s2c"}), 2);
  EXPECT_EQ(run_cli_status({"validate", "--runs", "3", "--qemu", "--smp", "2"}, &err), 2);
  EXPECT_NE(err.find("--runs"), std::string::npos) << err;
}

Figures run_of(double ops, std::optional<double> ipis) {
  Figures f;
  f.ops_per_sec = ops;
  f.ipis_per_op = ipis;
  return f;
}

// The real mmap_storm at two threads on a 2-vCPU guest (docs/fidelity-notes.md, issue 31 part 5): runs near 0.25
// IPIs/op with the mappings adjacent, near 0.8 with a thread stack between them, and one at 0.67.
TEST(Validate, RunsGroupIntoModesWhereTheirIpisPerOpLieApart) {
  const std::vector<Figures> runs = {run_of(31000, 0.80),  run_of(21900, 0.229), run_of(30600, 0.853),
                                     run_of(20400, 0.665), run_of(20300, 0.280), run_of(21700, 0.264)};
  const std::vector<std::string> layouts = {"apart", "adjacent", "apart", "adjacent", "adjacent", "adjacent"};
  const std::vector<RunGroup> g = group_runs(runs, layouts);
  ASSERT_EQ(g.size(), 3u);
  EXPECT_EQ(g[0].runs, (std::vector<std::size_t>{1, 5, 4}));
  EXPECT_DOUBLE_EQ(g[0].ipis_lo, 0.229);
  EXPECT_DOUBLE_EQ(g[0].ipis_hi, 0.280);
  EXPECT_DOUBLE_EQ(g[0].ops_lo, 20300);
  EXPECT_DOUBLE_EQ(g[0].ops_hi, 21900);
  EXPECT_EQ(g[0].layouts, "adjacent");
  EXPECT_EQ(g[1].runs, (std::vector<std::size_t>{3}));
  EXPECT_EQ(g[2].runs, (std::vector<std::size_t>{0, 2}));
  EXPECT_EQ(g[2].layouts, "apart");
  // The median run by IPIs/op: 0.229 0.264 0.280 | 0.665 0.80 0.853 -> the lower middle, 0.280.
  EXPECT_EQ(median_run(runs), 4u);
  // Runs within 0.1 of each other in a chain stay one group; runs without an IPI count form their own.
  const std::vector<RunGroup> one = group_runs({run_of(1, 0.10), run_of(2, 0.19), run_of(3, 0.28)}, {});
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].layouts, "");
  const std::vector<RunGroup> none = group_runs({run_of(5, std::nullopt), run_of(4, 0.5)}, {});
  ASSERT_EQ(none.size(), 2u);
  EXPECT_EQ(none[0].runs, (std::vector<std::size_t>{1}));
  EXPECT_EQ(median_run({run_of(5, std::nullopt), run_of(3, std::nullopt), run_of(4, std::nullopt)}), 2u);
}

TEST(Validate, ListNativeNamesEveryNativeWorkload) {
  std::string out;
  EXPECT_EQ(run_cli_status({"list", "native"}, nullptr, &out), 0);
  for (const char* w : {"tlb_flush1", "tlb_flush2", "context_switch1", "context_switch1_processes", "mmap_storm"}) {
    EXPECT_NE(out.find(w), std::string::npos) << w;
  }
}

// The command writes its file atomically and the file loads as a machine anywhere one is taken.
TEST(Calibrate, CommandWritesAFileThatMachineShowLoads) {
  if (!native_supported()) GTEST_SKIP() << "calibrate needs Linux";
  const std::string path = (std::filesystem::temp_directory_path() / "tlbsim-calibrate-test.toml").string();
  std::string err, out;
  ASSERT_EQ(run_cli_status({"calibrate", "--quick", "--repetitions", "3", "--name", "ci-host", "--out", path}, &err),
            0)
      << err;
  EXPECT_NE(err.find("wrote " + path), std::string::npos) << err;
  EXPECT_EQ(run_cli_status({"machine", "show", path}, &err, &out), 0) << err;
  EXPECT_NE(out.find("ci-host"), std::string::npos);
  EXPECT_NE(out.find("MEASURED on"), std::string::npos);
  std::filesystem::remove(path);
}

// A native workload the simulator cannot run gets simulated: null and says why, in JSON and in the table.
TEST(Validate, MissingSimulationIsNullNotInvented) {
  ValidateReport r;
  r.release = "6.1.0";
  r.kernel_profile = "linux-5.17";
  ValidateRow row;
  row.workload = "mmap_storm";
  row.threads = 2;
  row.real.ops_per_sec = 100;
  row.real.ipis_per_op = 1.0;
  row.simulated_missing = "the simulator has no workload mmap_storm";
  r.rows.push_back(row);
  const auto j = to_json(r);
  EXPECT_TRUE(j["rows"][0]["simulated"].is_null());
  EXPECT_EQ(j["rows"][0]["simulated_missing"], "the simulator has no workload mmap_storm");
  EXPECT_TRUE(j["rows"][0]["real"]["flushes_per_op"].is_null());
  EXPECT_DOUBLE_EQ(j["rows"][0]["real"]["ipis_per_op"].get<double>(), 1.0);
  EXPECT_NE(to_table(r).find("simulated: none (the simulator has no workload mmap_storm)"), std::string::npos);
}

TEST(Validate, QemuFlagsGoTogether) {
  std::string err;
  EXPECT_EQ(run_cli_status({"validate", "--qemu"}, &err), 2);
  EXPECT_NE(err.find("--qemu and --smp N go together"), std::string::npos) << err;
  EXPECT_EQ(run_cli_status({"validate", "--smp", "2"}), 2);
  EXPECT_EQ(run_cli_status({"validate", "--qemu", "--smp", "1000"}), 2);
}

// A short validation on the built-in small machine: 0.1 s native runs after 0.02 s of warm-up.
ValidateOptions short_validation(std::vector<std::string> workloads, std::uint32_t threads, const char* sim_duration) {
  ValidateOptions o;
  o.workloads = std::move(workloads);
  o.threads = {threads};
  o.seconds = 0.1;
  o.warmup = 0.02;
  o.machine = "small-2s2c";
  o.sim_duration = sim_duration;
  return o;
}

// tlb_flush1 on the host and in the simulator, short: the JSON rows carry both sides; the simulated side of a
// 2-thread run sends about one remote-flush IPI per op.
TEST(Validate, Tlbflush1RowsHaveRealAndSimulatedFigures) {
  if (!native_supported()) GTEST_SKIP() << "validate needs Linux";
  const std::uint32_t n = read_host_topology().cpus.size() >= 2 ? 2 : 1;
  const ValidateOptions o = short_validation({"tlb_flush1", "context_switch1"}, n, "2ms");
  std::ostringstream progress;
  const ValidateReport r = run_validation(o, progress);
  ASSERT_EQ(r.rows.size(), 2u);
  EXPECT_EQ(r.kernel_profile.rfind("linux-", 0), 0u);
  for (const ValidateRow& row : r.rows) {
    EXPECT_GT(row.real.ops_per_sec, 0) << row.workload;
    ASSERT_TRUE(row.simulated.has_value()) << row.workload << ": " << row.simulated_missing;
    EXPECT_GT(row.simulated->ops_per_sec, 0);
  }
  // At least the madvise's own shootdown per op; concurrent madvise calls add mm_tlb_flush_nested full flushes.
  if (n == 2) {
    EXPECT_GE(*r.rows[0].simulated->ipis_per_op, 0.9);
  }
  const auto j = to_json(r);
  ASSERT_TRUE(j["rows"][0]["real"].contains("ipis_per_op"));
  EXPECT_TRUE(j["rows"][0]["simulated"].contains("flushes_per_op"));
  EXPECT_NE(to_table(r).find("tlb_flush1"), std::string::npos);
}

// mmap_storm natively with two threads: the simulation takes the layout the native run's mappings had (apart: a
// thread stack between them, --param apart=1), and says so.
TEST(Validate, MmapStormIsSimulatedWithTheLayoutOfTheRealRun) {
  if (!native_supported()) GTEST_SKIP() << "validate needs Linux";
  if (read_host_topology().cpus.size() < 2) GTEST_SKIP() << "needs two CPUs";
  const ValidateOptions o = short_validation({"mmap_storm"}, 2, "1ms");
  std::ostringstream progress;
  const ValidateReport r = run_validation(o, progress);
  ASSERT_EQ(r.rows.size(), 1u);
  ASSERT_EQ(r.rows[0].real_layouts.size(), 1u);
  const bool apart = r.rows[0].real_layouts[0] == "apart";
  EXPECT_EQ(progress.str().find("(--param apart=1)") != std::string::npos, apart) << r.rows[0].real_layouts[0] << "\n"
                                                                                  << progress.str();
  ASSERT_TRUE(r.rows[0].simulated.has_value());
}

// A host with a thread spinning beside validate is not idle: validate says so before its real runs, and keeps the
// figure. (Other load can only add to it.)
TEST(Validate, ABusyHostGetsAWarningAndANote) {
  if (!native_supported()) GTEST_SKIP() << "validate needs Linux";
  std::atomic<bool> stop{false};
  std::thread spinner([&] {
    while (!stop.load(std::memory_order_relaxed)) {
    }
  });
  ValidateReport rep;
  std::ostringstream progress;
  note_busy_host(rep, progress, static_cast<std::uint32_t>(read_host_topology().cpus.size()));
  stop = true;
  spinner.join();
  ASSERT_TRUE(rep.host_busy_cpus.has_value());
  EXPECT_GT(*rep.host_busy_cpus, kBusyHostCpus);
  ASSERT_EQ(rep.notes.size(), 1u);
  EXPECT_NE(rep.notes[0].find("the host was busy"), std::string::npos) << rep.notes[0];
  EXPECT_NE(progress.str().find("validate: warning: "), std::string::npos);
  EXPECT_TRUE(to_json(rep)["host_busy_cpus"].is_number());
}

// Where the machine's idle CPUs halt, validate times this host's wake-ups of a thread asleep 30 us and 1 ms beside
// the machine's one figure for waking a halted CPU, and a note says how far apart they are; where its idle CPUs
// poll (a waker's write wakes them), nothing is timed.
TEST(Validate, WakeUpsOfBriefSleepersAreTimedBesideTheMachinesOneFigure) {
  if (!native_supported()) GTEST_SKIP() << "validate needs Linux";
  const HostTopology host = read_host_topology();
  if (host.cpus.size() < 2) GTEST_SKIP() << "needs two CPUs";
  hw::Machine m = hw::load_machine("small-2s2c");
  hw::IdleState hlt;
  hlt.name = "HLT";
  hlt.polls = false;
  hlt.exit_latency = sim::milliseconds(20);  // far slower than any host's wake-up
  m.idle_states = {hlt};
  ValidateReport rep;
  std::ostringstream progress;
  note_wakeups(rep, m, progress, host.cpus[0].cpu, host.cpus[1].cpu);
  ASSERT_TRUE(rep.host_wakeup_30us.has_value());
  ASSERT_TRUE(rep.host_wakeup_1ms.has_value());
  EXPECT_GT(rep.host_wakeup_30us->median, 0);
  EXPECT_LT(rep.host_wakeup_30us->median, 20e6);
  ASSERT_TRUE(rep.simulated_wakeup_ns.has_value());
  EXPECT_GT(*rep.simulated_wakeup_ns, 20e6);  // send + delivery + the 20 ms exit
  ASSERT_EQ(rep.notes.size(), 1u);
  EXPECT_NE(rep.notes[0].find("x slower in the simulation than here"), std::string::npos) << rep.notes[0];
  EXPECT_NE(progress.str().find("validate: timing wake-ups"), std::string::npos);
  const nlohmann::json j = to_json(rep)["wakeup_ns"];
  EXPECT_TRUE(j["host_asleep_30us"]["median"].is_number());
  EXPECT_TRUE(j["simulated"].is_number());

  ValidateReport refused;  // a CPU the host lacks: a note, no figures, and validate goes on
  note_wakeups(refused, m, progress, 1u << 20, host.cpus[1].cpu);
  EXPECT_FALSE(refused.host_wakeup_30us.has_value());
  ASSERT_EQ(refused.notes.size(), 1u);
  EXPECT_NE(refused.notes[0].find("not timed"), std::string::npos) << refused.notes[0];

  ValidateReport polling;
  m.idle_states.front().polls = true;
  note_wakeups(polling, m, progress, host.cpus[0].cpu, host.cpus[1].cpu);
  EXPECT_FALSE(polling.host_wakeup_30us.has_value());
  EXPECT_TRUE(polling.notes.empty());
  EXPECT_TRUE(to_json(polling)["wakeup_ns"]["simulated"].is_null());
}

}  // namespace
}  // namespace tlbsim::native
