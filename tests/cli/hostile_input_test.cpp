// Issue 32's hostile inputs, each as a careless user typed it: every one must end in `tlbsim: error: WHERE: WHAT`
// and exit 2 (or the stated outcome), never a crash, a hang, a silent clamp or a half-written file.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/cli_harness.h"
#include "util/atomic_file.h"

namespace tlbsim::cli {
namespace {

using testing::Result;
using testing::run;
namespace fs = std::filesystem;

// A fresh, empty directory for one test.
fs::path scratch(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("tlbsim_hostile_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

void expect_refused(const Result& r, const std::string& message) {
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_NE(r.err.find("tlbsim: error: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(message), std::string::npos) << "expected '" << message << "' in:\n" << r.err;
  EXPECT_EQ(r.err.find("internal error"), std::string::npos) << r.err;
}

// Item 2: latencies of 0.0001 ns rounded to zero picoseconds and a run spun forever at one instant.
TEST(HostileInput, AMachineWhoseLatenciesRoundToZeroIsRefused) {
  const fs::path dir = scratch("zero_latency");
  std::string text = read_file(std::string(TLBSIM_SOURCE_DIR) + "/configs/machines/small-2s2c.toml");
  for (std::size_t at = text.find("ns = "); at != std::string::npos; at = text.find("ns = ", at + 1)) {
    const std::size_t end = text.find_first_of(",}", at);
    text.replace(at, end - at, "ns = 0.0001 ");
  }
  const std::string path = (dir / "tiny.toml").string();
  write_file_atomic(path, text);
  expect_refused(run({"run", "--machine", path, "--duration", "1us"}), "below one picosecond");
  expect_refused(run({"bench", "contention", "--machine", path, "--cpus", "1,2"}), "below one picosecond");
  fs::remove_all(dir);
}

// Workload files: a missing file, a file that is not TOML, and one whose loop touches a region it never mapped.
TEST(HostileInput, BadWorkloadFilesAreLocatedErrors) {
  const fs::path dir = scratch("workload_file");
  expect_refused(run({"run", "--machine", "small-2s2c", "--workload", (dir / "none.toml").string()}), "none.toml");
  expect_refused(run({"run", "--machine", "small-2s2c", "--workload", "nonesuch.toml"}),
                 "no built-in workload file of that name");
  const std::string junk = (dir / "junk.toml").string();
  write_file_atomic(junk, "[workload\nname = 1\n");
  expect_refused(run({"run", "--machine", "small-2s2c", "--workload", junk}), "junk.toml:1:");
  const std::string unmapped = (dir / "unmapped.toml").string();
  write_file_atomic(unmapped, R"([workload]
name = "u"
[tasks]
mode = "processes"
placement = "pinned"
[[regions]]
backing = "anonymous"
pages = 1
name = "r"
[[loop]]
op = "touch"
region = "r"
access = "read"
[[loop]]
op = "count"
)");
  expect_refused(run({"run", "--machine", "small-2s2c", "--workload", unmapped}),
                 "unmapped.toml:11:6: workload file: loop[0].op: region 'r' is used before it is mapped");
  expect_refused(
      run({"run", "--machine", "small-2s2c", "--workload", "madvise_own_pages.toml", "--param", "pages=999999999"}),
      "pages");
  fs::remove_all(dir);
}

// Item 4: `--out /abs/dir/cx.json` with several scenarios built "scenario./abs/dir/cx.json".
TEST(HostileInput, CheckOutWithADirectoryPutsTheScenarioBeforeTheFileName) {
  const fs::path dir = scratch("check_out");
  const Result r = run({"check", "--scenario", "all", "--mutation", "switch_mm_reads_tlb_gen_before_cpumask",
                        "--budget", "300", "--out", (dir / "cx.json").string()});
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_TRUE(fs::exists(dir / "switch_vs_madvise.cx.json")) << r.out;
  // An unwritable --out is refused before the search, with the table's work not yet done.
  expect_refused(run({"check", "--scenario", "all", "--budget", "5", "--out", "/nonexistent-dir/cx.json"}),
                 "--out /nonexistent-dir/");
  fs::remove_all(dir);
}

// Item 5: input files must be regular files of bounded size; a FIFO or a device must not block or eat memory.
TEST(HostileInput, InputFilesThatAreNotRegularFilesAreRefused) {
  expect_refused(run({"machine", "show", "/dev/zero"}), "cannot read '/dev/zero': it is a character device");
  expect_refused(run({"run", "--kernel", "/dev/zero"}), "cannot read '/dev/zero'");
  expect_refused(run({"machine", "show", fs::temp_directory_path().string() + "/"}), "it is a directory");
  const fs::path dir = scratch("fifo");
  const std::string fifo = (dir / "m.toml").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  expect_refused(run({"machine", "show", fifo}), "it is a FIFO");
  const std::string big = (dir / "big.toml").string();
  write_file_atomic(big, std::string(kMaxInputFileBytes + 1, '#'));
  expect_refused(run({"machine", "show", big}), "larger than");
  fs::remove_all(dir);
}

// Item 7: no silent clamping or defaulting of what the user typed.
TEST(HostileInput, NumbersAndPathsAreTakenAsTypedOrRefused) {
  expect_refused(run({"run", "--seed", "18446744073709551616"}), "does not fit in 64 bits");
  expect_refused(run({"run", "--seed", ""}), "--seed: an empty value");
  expect_refused(run({"run", "--seed", "12abc"}), "not a non-negative integer");
  expect_refused(run({"run", "--trace", ""}), "--trace: an empty path");
  expect_refused(run({"run", "--output", ""}), "--output: an empty path");
  expect_refused(run({"run", "--threads", "-3"}), "--threads: '-3' is not a non-negative integer");
  const Result ok = run({"run", "--machine", "small-2s2c", "--seed", "18446744073709551615", "--duration", "20us",
                         "--format", "json"});
  ASSERT_EQ(ok.status, 0) << ok.err;
  EXPECT_EQ(nlohmann::json::parse(ok.out)["seed"].get<std::uint64_t>(), 18446744073709551615ULL);
}

// Item 8: each message names what is actually wrong.
TEST(HostileInput, MessagesNameTheActualMistake) {
  expect_refused(run({"run", "--machine", "small-2s2c", "--threads", "0"}), "--threads: 0; tlb_flush1 runs at least 1");
  expect_refused(run({"run", "--machine", "small-2s2c", "--workload", "hackbench", "--threads", "0"}),
                 "--threads: 0; hackbench runs at least 1");
  // idle states its own minimum, 0: a machine on which no user process ever ran (seed 003's quietest case).
  EXPECT_EQ(run({"run", "--workload", "idle", "--machine", "small-2s2c", "--threads", "0", "--duration", "20us"}).status,
            0);
  expect_refused(run({"bench", "nosuch"}), "bench: unknown subcommand 'nosuch' (known: contention)");
  expect_refused(run({"machine", "frob"}), "machine: unknown subcommand 'frob'");
  const fs::path dir = scratch("messages");
  std::string text = read_file(std::string(TLBSIM_SOURCE_DIR) + "/configs/machines/power9-2s16c-smt4.toml");
  const std::size_t at = text.find("tag = \"pid\"");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 11, "tag = \"pcid\"");
  write_file_atomic((dir / "p9.toml").string(), text);
  expect_refused(run({"machine", "show", (dir / "p9.toml").string()}),
                 "a powerpc64 machine tags its TLB entries by PID: expected \"pid\", got \"pcid\"");
  fs::remove_all(dir);
}

// Item 9: an output that cannot be written is refused before the work, not after it.
TEST(HostileInput, UnwritableOutputsAreRefusedBeforeTheRun) {
  for (const char* option : {"--trace", "--ftrace", "--output"}) {
    const Result r = run({"run", "--machine", "small-2s2c", "--duration", "30ms", option, "/proc/tlbsim/x"});
    expect_refused(r, std::string(option) + " /proc/tlbsim/x");
    EXPECT_EQ(r.err.find("events in"), std::string::npos) << "the run went ahead:\n" << r.err;
  }
  expect_refused(run({"bench", "contention", "--output", "/proc/tlbsim/x"}), "--output /proc/tlbsim/x");
  expect_refused(run({"check", "--scenario", "madvise_vs_access", "--out", "/proc/tlbsim/x"}), "--out /proc/tlbsim/x");
}

// Item 10: two outputs on one path; the last write used to win silently.
TEST(HostileInput, TwoOutputsOnOnePathAreRefused) {
  const fs::path dir = scratch("same_path");
  const std::string x = (dir / "x").string();
  expect_refused(run({"run", "--duration", "20us", "--trace", x, "--ftrace", x}), "--trace and --ftrace both write");
  expect_refused(run({"run", "--duration", "20us", "--trace", x, "--output", (dir / "." / "x").string()}),
                 "both write");
  EXPECT_FALSE(fs::exists(x));
  fs::remove_all(dir);
}

// Item 11: one rule for repeated names and values: refused, naming the option and the value.
TEST(HostileInput, ANameOrValueGivenTwiceIsRefusedEverywhere) {
  expect_refused(run({"run", "--option", "avoid_mm_tlb_gen_read=on", "--option", "avoid_mm_tlb_gen_read=off"}),
                 "given twice");
  expect_refused(run({"run", "--param", "x=1", "--param", "x=2"}), "given twice");
  expect_refused(run({"check", "--mutation", "flush_sends_no_ipis", "--mutation", "flush_sends_no_ipis"}),
                 "given twice");
  expect_refused(run({"sweep", "--kernel", "linux-5.17,linux-5.17", "--out", "/tmp/unused"}),
                 "--kernel: 'linux-5.17' is listed twice");
  expect_refused(run({"sweep", "--threads", "1,1,1", "--out", "/tmp/unused"}), "--threads: 1 is listed twice");
  expect_refused(run({"bench", "contention", "--machine", "small-2s2c", "--cpus", "1-4,4"}), "4 is listed twice");
}

// Item 15: without --kernel a machine runs a kernel of its own architecture.
TEST(HostileInput, TheDefaultKernelIsOfTheMachinesArchitecture) {
  Result r = run({"run", "--machine", "power9-2s16c-smt4", "--duration", "20us", "--format", "json"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["kernel_arch"], "powerpc");
  r = run({"run", "--machine", "small-2s2c", "--duration", "20us", "--format", "json"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["kernel"], "linux-5.17");
}

// Item 14: a run in which the seed decided nothing says so.
TEST(HostileInput, ARunWhoseSeedDecidedNothingSaysSo) {
  // One reader of lru_file_mmap_read runs without a scheduler, so nothing on the other CPUs meets it at an instant.
  const Result one = run({"run", "--machine", "small-2s2c", "--workload", "lru_file_mmap_read", "--threads", "1",
                          "--duration", "200us", "--format", "json"});
  ASSERT_EQ(one.status, 0) << one.err;
  const auto j = nlohmann::json::parse(one.out);
  EXPECT_EQ(j["seeded_tie_sets"], 0);
  EXPECT_TRUE(j["seed_changes_nothing"].get<bool>());
  const Result table = run(
      {"run", "--machine", "small-2s2c", "--workload", "lru_file_mmap_read", "--threads", "1", "--duration", "200us"});
  EXPECT_NE(table.out.find("every --seed gives this run"), std::string::npos) << table.out;
  // Many threads meet at the same instants: the seed orders them, and the run says nothing.
  const Result many = run({"run", "--machine", "small-2s2c", "--workload", "context_switch1", "--threads", "8",
                           "--duration", "200us", "--format", "json"});
  ASSERT_EQ(many.status, 0) << many.err;
  EXPECT_GT(nlohmann::json::parse(many.out)["seeded_tie_sets"].get<std::uint64_t>(), 0u);
}

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kUnderAsan = true;
#else
constexpr bool kUnderAsan = false;
#endif

// Bytes of address space this process maps now.
std::uint64_t vm_bytes() {
  std::uint64_t pages = 0;
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (f != nullptr) {
    if (std::fscanf(f, "%lu", &pages) != 1) pages = 0;
    std::fclose(f);
  }
  return pages * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
}

// Runs the command line with `extra` bytes of address space beyond what the process maps now, and exits with its
// status (for EXPECT_EXIT, which runs it in a child process).
[[noreturn]] void run_with_memory_limit(std::uint64_t extra, const std::vector<std::string>& args) {
  rlimit rl{};
  rl.rlim_cur = rl.rlim_max = vm_bytes() + extra;
  ::setrlimit(RLIMIT_AS, &rl);
  const Result r = run(args);
  std::fputs(r.err.c_str(), stderr);
  std::exit(r.status);
}

// Item 1 and item 5: under a memory limit, a run ends with a message and exit 2 (or succeeds), never an abort.
// (ASan reserves terabytes of address space, so the limit cannot be set under it.)
TEST(HostileInput, UnderAMemoryLimitARunEndsWithAMessageNotAnAbort) {
  if (kUnderAsan) GTEST_SKIP() << "ulimit -v cannot be set under AddressSanitizer";
  const fs::path dir = scratch("memory_limit");
  const std::vector<std::string> traced = {"run", "--machine", "small-2s2c", "--workload", "context_switch1",
                                           "--threads", "8", "--duration", "5ms", "--trace", (dir / "t.json").string()};
  // The streamed Chrome trace needs no memory for its events: it fits in 64 MiB more than the test binary maps.
  EXPECT_EXIT(run_with_memory_limit(std::uint64_t{64} << 20, traced), ::testing::ExitedWithCode(0), "");
  // A run far bigger than the limit is refused up front with its figure.
  const std::vector<std::string> huge = {"run", "--machine", "power8-16s192c-smt8", "--workload", "lru_file_mmap_read",
                                         "--threads", "1536", "--param", "memory_pages=65536", "--duration", "1ms"};
  EXPECT_EXIT(run_with_memory_limit(std::uint64_t{256} << 20, huge), ::testing::ExitedWithCode(2),
              "needs about [0-9]+ MiB of memory");
  fs::remove_all(dir);
}

// Item 3: a terminating signal while an output is being written leaves no temporary file behind.
TEST(HostileInput, ASignalWhileWritingRemovesTheTemporaryFile) {
  const fs::path dir = scratch("signal");
  for (int sig : {SIGINT, SIGTERM}) {
    EXPECT_EXIT(
        {
          AtomicFileWriter w((dir / "t.json").string());
          w.write("{\"traceEvents\":[");
          std::raise(sig);
          std::exit(0);
        },
        ::testing::KilledBySignal(sig), "");
    EXPECT_TRUE(fs::is_empty(dir)) << "signal " << sig << " left " << fs::directory_iterator(dir)->path();
  }
  fs::remove_all(dir);
}

// `tlbsim offcpu FILE` (issue 31, part 11): a directory, binary junk, a truncated switch and a trace with no switch
// are located errors; a task name that is not UTF-8 prints in JSON instead of crashing it.
TEST(HostileInput, BadRealTracesForOffCpuAreLocatedErrors) {
  const fs::path dir = scratch("offcpu");
  expect_refused(run({"offcpu", dir.string()}), dir.string());
  const std::string junk = (dir / "junk.txt").string();
  write_file_atomic(junk, std::string("\x7f"
                                      "ELF\x02\x01\x01\0\0\0: sched_switch: \xff\xfe",
                                      26));
  expect_refused(run({"offcpu", junk}), "junk.txt:1:");
  const std::string cut = (dir / "cut.txt").string();
  write_file_atomic(cut, "  a-1 [000] d..2. 1.5: sched_switch: prev_comm=a prev_pid=1 prev_state=D ==> next_c");
  expect_refused(run({"offcpu", cut}), "cut.txt:1: sched_switch without 'next_pid='");
  const std::string none = (dir / "none.txt").string();
  write_file_atomic(none, "# tracer: nop\n  a-1 [000] d..2. 1.5: sched_waking: comm=b pid=2\n");
  expect_refused(run({"offcpu", none}), "none.txt: no sched_switch events");
  const std::string bytes = (dir / "bytes.txt").string();
  write_file_atomic(bytes,
                    "  x-1 [000] d..2. 1.5: sched_switch: prev_comm=\xff\xfe prev_pid=1 prev_prio=120 prev_state=D "
                    "==> next_comm=swapper/0 next_pid=0 next_prio=120\n"
                    "  y-0 [000] d..2. 1.6: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R "
                    "==> next_comm=\xff\xfe next_pid=1 next_prio=120\n");
  const Result j = run({"offcpu", bytes, "--format", "json"});
  EXPECT_EQ(j.status, 0) << j.err;
  EXPECT_NE(j.out.find("\"comm\": \"\xef\xbf\xbd\xef\xbf\xbd\""), std::string::npos) << j.out;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tlbsim::cli
