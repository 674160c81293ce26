// Timeline traces of real runs: tlb_flush1 on the 8-CPU machine as Chrome JSON (validated against the
// trace-event format, with IPI arrows from senders to handlers) and as ftrace text; filters; results unchanged.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "hw/machine.h"
#include "trace/chrome_validate.h"
#include "trace/chrome_writer.h"
#include "trace/ftrace_writer.h"
#include "trace/tracer.h"
#include "workloads/run.h"

namespace tlbsim::trace {
namespace {

constexpr std::uint32_t kCpus = 8;

// small-2s2c's latencies on 2 sockets x 4 cores x 1 thread: tlb_flush1 pins one thread per core, so 8 threads.
hw::Machine eight_cpus(const char* base = "small-2s2c") {
  hw::Machine m = hw::load_machine(base);
  m.name = std::string(base) + "-as-2s4c1t";
  m.topology.cores_per_socket = 4;
  m.topology.threads_per_core = 1;
  m.topology.cores_per_llc = 4;
  return m;
}

workloads::RunSpec tlb_flush1_spec(std::uint32_t threads = kCpus) {
  workloads::RunSpec spec;
  spec.workload = "tlb_flush1";
  spec.threads = threads;
  spec.duration = sim::microseconds(200);
  spec.seed = 3;
  return spec;
}

struct Traced {
  workloads::RunOutput out;
  nlohmann::json chrome;
  std::string ftrace;
  std::uint64_t events = 0;
  bool truncated = false;
};

Traced traced_run(const TraceFilter& f, const workloads::RunSpec& spec = tlb_flush1_spec(),
                  const char* kernel = "linux-5.17", const hw::Machine& m = eight_cpus()) {
  Tracer tracer(m.cpu_count(), f);
  ChromeWriter chrome(ChromeTraceInfo{"tlbsim test", m.cpu_count(), f.cpus, "test"});
  FtraceWriter ftrace(m.cpu_count());
  tracer.add_writer(chrome);
  tracer.add_writer(ftrace);
  workloads::RunSpec s = spec;
  s.kernel = kernel;
  Traced t;
  t.out = workloads::run_workload(m, s, &tracer);
  t.chrome = nlohmann::json::parse(chrome.finish());
  t.ftrace = ftrace.finish();
  t.events = tracer.events();
  t.truncated = tracer.truncated();
  return t;
}

std::string errors(const testing::ChromeCheck& c) {
  std::string s;
  for (const auto& e : c.errors) s += e + "\n";
  return s;
}

TEST(TraceRun, TlbFlush1On8CpusIsAValidChromeTraceWithArrowsFromSendersToHandlers) {
  const Traced t = traced_run(TraceFilter{});
  const testing::ChromeCheck c = testing::validate_chrome_trace(t.chrome);
  EXPECT_TRUE(c.errors.empty()) << errors(c);
  EXPECT_FALSE(t.truncated);
  EXPECT_EQ(t.chrome["displayTimeUnit"], "ns");
  EXPECT_GT(c.flows, 0u);
  EXPECT_GT(c.counters, 0u);
  EXPECT_EQ(c.tids, (std::set<long long>{0, 1, 2, 3, 4, 5, 6, 7}));
  // Every arrow starts inside an open span on the sender and ends where the receiver's IPI handler begins.
  std::map<long long, std::vector<const nlohmann::json*>> by_tid;
  for (const auto& e : t.chrome["traceEvents"]) by_tid[e["tid"].get<long long>()].push_back(&e);
  std::set<std::string> names, thread_names;
  std::size_t arrows = 0;
  for (const auto& e : t.chrome["traceEvents"]) {
    names.insert(e["name"].get<std::string>());
    if (e["ph"] == "M" && e["name"] == "thread_name") thread_names.insert(e["args"]["name"].get<std::string>());
    if (e["ph"] != "f") continue;
    ++arrows;
    bool handler = false;
    for (const nlohmann::json* o : by_tid[e["tid"].get<long long>()]) {
      if ((*o)["ph"] == "B" && (*o)["ts"] == e["ts"] && (*o)["name"].get<std::string>().rfind("IPI handler", 0) == 0) {
        handler = true;
      }
    }
    EXPECT_TRUE(handler) << "no IPI handler span at the arrow's end " << e.dump();
  }
  for (const auto& e : t.chrome["traceEvents"]) {
    if (e["ph"] != "s") continue;
    int depth = 0;
    for (const nlohmann::json* o : by_tid[e["tid"].get<long long>()]) {
      if ((*o)["ts"].get<double>() > e["ts"].get<double>()) break;
      if ((*o)["ph"] == "B") ++depth;
      if ((*o)["ph"] == "E") --depth;
    }
    EXPECT_GT(depth, 0) << "arrow start outside any span " << e.dump();
  }
  EXPECT_EQ(arrows, c.flows);
  EXPECT_EQ(names.count("process_name"), 1u);
  EXPECT_EQ(thread_names.count("CPU 0"), 1u);
  EXPECT_EQ(thread_names.count("CPU 7"), 1u);
  for (const char* n :
       {"switch_mm_irqs_off", "flush_tlb_func", "smp_call_function_many_cond", "IPI handler (Function call interrupts)",
        "tlb_flush: remote shootdown", "tlb_flush: remote ipi send", "IPI sent (Function call interrupts)",
        "IPI received (Function call interrupts)", "mm 1 tlb_gen", "cache-line transfers per us", "tlb_flush1-1",
        "tlb_flush1-8"}) {
    EXPECT_EQ(names.count(n), 1u) << n;
  }
}

// A workload on the scheduler (processes forking and exiting): tasks switch, CPUs idle in C-states, mms
// are grabbed and dropped (mm_count).
TEST(TraceRun, ScheduledWorkloadShowsTasksSwitchesIdleStatesAndMmCount) {
  workloads::RunSpec spec = tlb_flush1_spec(2);
  spec.workload = "proc_churn";
  const Traced t = traced_run(TraceFilter{}, spec);
  const testing::ChromeCheck c = testing::validate_chrome_trace(t.chrome);
  EXPECT_TRUE(c.errors.empty()) << errors(c);
  std::set<std::string> names;
  for (const auto& e : t.chrome["traceEvents"]) names.insert(e["name"].get<std::string>());
  for (const char* n : {"sched_switch", "context_switch", "switch_mm_irqs_off", "swapper/0", "mm 0 mm_count"}) {
    EXPECT_EQ(names.count(n), 1u) << n;
  }
  bool idle = false, user_mm_count = false;
  for (const auto& n : names) {
    idle = idle || n.rfind("idle: ", 0) == 0;
    user_mm_count =
        user_mm_count || (n.rfind("mm ", 0) == 0 && n.rfind(" mm_count") != std::string::npos && n != "mm 0 mm_count");
  }
  EXPECT_TRUE(idle);
  EXPECT_TRUE(user_mm_count);
  EXPECT_NE(t.ftrace.find(": sched_switch: prev_comm="), std::string::npos);
}

TEST(TraceRun, TracingDoesNotChangeTheResults) {
  const hw::Machine m = eight_cpus();
  nlohmann::json plain = workloads::run_workload(m, tlb_flush1_spec()).json;
  nlohmann::json traced = traced_run(TraceFilter{}).out.json;
  plain.erase("wall_seconds");
  traced.erase("wall_seconds");
  EXPECT_EQ(plain.dump(), traced.dump());
}

TEST(TraceRun, SameInputsSameBytes) {
  const Traced a = traced_run(TraceFilter{}), b = traced_run(TraceFilter{});
  EXPECT_EQ(a.chrome.dump(), b.chrome.dump());
  EXPECT_EQ(a.ftrace, b.ftrace);
}

TEST(TraceRun, FtraceTextHasTheKernelsEventLinesInTimeOrder) {
  const Traced t = traced_run(TraceFilter{});
  std::istringstream in(t.ftrace);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "# tracer: nop");
  const std::regex re(R"(^\s*(\S+)-(\d+)\s+\[(\d{3})\] ([d.][.N][h.][.\d][.\d])\s+(\d+)\.(\d{6}): (\w+): (.*)$)");
  std::map<std::string, std::size_t> count;
  long long last = -1;
  std::size_t lines = 0;
  bool remote = false, switched = false;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::smatch m;
    ASSERT_TRUE(std::regex_match(line, m, re)) << line;
    ++lines;
    const long long us = std::stoll(m[5]) * 1'000'000 + std::stoll(m[6]);
    EXPECT_GE(us, last) << line;
    last = us;
    EXPECT_LT(std::stoi(m[3]), 8);
    ++count[m[7]];
    const std::string body = m[8];
    if (m[7] == "tlb_flush") {
      EXPECT_TRUE(std::regex_match(body, std::regex(R"(pages:-?\d+ reason:[a-z ]+[a-zA-Z ]* \(\d\))"))) << line;
      remote = remote || body.find("reason:remote shootdown (1)") != std::string::npos;
    }
    EXPECT_EQ(m[1].str().rfind("tlb_flush1", 0) == 0 || m[1] == "<idle>", true) << line;
    if (m[7] == "sched_switch") {
      EXPECT_TRUE(std::regex_match(
          body,
          std::regex(
              R"(prev_comm=\S+ prev_pid=\d+ prev_prio=120 prev_state=(R\+?|S|D|X) ==> next_comm=\S+ next_pid=\d+ next_prio=120)")))
          << line;
      switched = true;
    }
    if (m[7] == "ipi_raise") {
      EXPECT_TRUE(
          std::regex_match(body, std::regex(R"(target_mask=[0-9a-f]{2} \((Single f|F)unction call interrupts\))")))
          << line;
    }
    if (m[7] == "ipi_entry" || m[7] == "ipi_exit") {
      EXPECT_EQ(m[4].str()[0], 'd') << line;  // handlers run with interrupts off
    }
  }
  EXPECT_TRUE(remote);
  // tlb_flush1's threads are pinned, one per core, and each first runs when its CPU's idle task switches to it.
  EXPECT_TRUE(switched);
  EXPECT_GT(count["ipi_raise"], 0u);
  EXPECT_GT(count["ipi_entry"], 0u);
  EXPECT_LE(count["ipi_entry"] - count["ipi_exit"], kCpus);  // handlers still running at the end
  EXPECT_NE(t.ftrace.find("# entries-in-buffer/entries-written: " + std::to_string(lines) + "/"), std::string::npos);
}

TEST(TraceRun, TimeWindowKeepsOnlyItsEventsAndStaysValid) {
  // On v6.13 the threads' faults take the per-VMA lock, so every thread is past its start (the mmap's write lock)
  // and flushing by 150 us; on v5.17 a thread whose mmap sleeps behind the others' madvises and faults waits up to
  // the rwsem's 4 ms handoff, and the window would hold no IPI.
  const Traced full = traced_run(TraceFilter{}, tlb_flush1_spec(), "linux-6.13");
  TraceFilter f;
  f.start = sim::kTimeZero + sim::microseconds(150);
  f.end = sim::kTimeZero + sim::microseconds(200);
  const Traced t = traced_run(f, tlb_flush1_spec(), "linux-6.13");
  const testing::ChromeCheck c = testing::validate_chrome_trace(t.chrome);
  EXPECT_TRUE(c.errors.empty()) << errors(c);
  EXPECT_GT(c.flows, 0u);
  EXPECT_LT(t.events, full.events);
  for (const auto& e : t.chrome["traceEvents"]) {
    if (e["ph"] == "M") continue;
    EXPECT_GE(e["ts"].get<double>(), 150.0) << e.dump();
    EXPECT_LE(e["ts"].get<double>(), 200.0) << e.dump();
  }
}

TEST(TraceRun, CpuFilterKeepsOnlyThoseTracksAndArrowsBetweenThem) {
  TraceFilter f;
  f.cpus = {true, true, true, true, false, false, false, false};
  const Traced t = traced_run(f);
  const testing::ChromeCheck c = testing::validate_chrome_trace(t.chrome);
  EXPECT_TRUE(c.errors.empty()) << errors(c);
  EXPECT_EQ(c.tids, (std::set<long long>{0, 1, 2, 3}));
  for (const auto& e : t.chrome["traceEvents"]) EXPECT_LT(e["tid"].get<long long>(), 4) << e.dump();
  std::istringstream in(t.ftrace);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    EXPECT_NE(line.find(" [00"), std::string::npos) << line;
  }
}

TEST(TraceRun, EventCapStopsRecordingWithANoteAndStaysValid) {
  TraceFilter f;
  f.max_events = 300;
  const Traced t = traced_run(f);
  EXPECT_TRUE(t.truncated);
  const testing::ChromeCheck c = testing::validate_chrome_trace(t.chrome);
  EXPECT_TRUE(c.errors.empty()) << errors(c);
  EXPECT_LE(t.events, 300u + 8 * 8);  // the cap, plus the ends that close what was open
  EXPECT_NE(t.chrome["otherData"]["note"].get<std::string>().find("--trace-max-events 300"), std::string::npos);
  EXPECT_NE(t.ftrace.find("# tlbsim: trace truncated"), std::string::npos);
}

TEST(TraceRun, OtherErasAndArchitecturesGiveValidTraces) {
  for (const char* kernel : {"linux-3.3", "linux-6.2-ppc"}) {
    // powerpc code needs a powerpc64 machine (its tlbie is priced only there).
    const bool ppc = std::string(kernel) == "linux-6.2-ppc";
    const Traced t =
        traced_run(TraceFilter{}, tlb_flush1_spec(), kernel, eight_cpus(ppc ? "power9-2s16c-smt4" : "small-2s2c"));
    const testing::ChromeCheck c = testing::validate_chrome_trace(t.chrome);
    EXPECT_TRUE(c.errors.empty()) << kernel << "\n" << errors(c);
    if (std::string(kernel) == "linux-3.3") {
      EXPECT_GT(c.flows, 0u) << kernel;  // powerpc flushes by tlbie, without IPIs
    } else {
      EXPECT_NE(t.chrome.dump().find("\"_tlbie_"), std::string::npos) << kernel;
    }
  }
}

}  // namespace
}  // namespace tlbsim::trace

namespace tlbsim::trace {
namespace {

// A kernel function a task sleeps in (a lock's slow path, vma_start_write's wait) ends on its CPU's track at the
// switch-out and begins again at the switch-in, so that the spans of one CPU stay nested: mmap_storm's two threads
// sleep in mmap_lock and the VMA lock several times an op on the 2-vCPU guest, and each munmap's remote flush
// request still lies inside its sys_munmap span, and a slow path begun before a sleep ends after the wake-up.
TEST(TraceRun, SpansATaskSleepsInCloseAtTheSwitchAndReopenWhenItRunsAgain) {
  workloads::RunSpec spec;
  spec.workload = "mmap_storm";
  spec.threads = 2;
  spec.duration = sim::milliseconds(2);
  spec.seed = 1;
  const hw::Machine m = hw::load_machine(std::string(TLBSIM_SOURCE_DIR) + "/tests/data/kvm-2vcpu-20261203-host.toml");
  const Traced t = traced_run(TraceFilter{}, spec, "linux-6.18", m);
  const testing::ChromeCheck c = testing::validate_chrome_trace(t.chrome);
  EXPECT_TRUE(c.errors.empty()) << errors(c);
  std::map<int, std::vector<std::string>> stack;  // by track (tid)
  std::map<int, nlohmann::json> switched;         // by track: the time of its last sched_switch
  std::uint64_t requests = 0, inside_munmap = 0, resumed_slowpaths = 0;
  for (const auto& e : t.chrome["traceEvents"]) {
    const std::string ph = e.value("ph", "");
    if (ph != "B" && ph != "E" && ph != "i") continue;
    std::vector<std::string>& s = stack[e["tid"].get<int>()];
    const std::string name = e["name"].get<std::string>();
    if (ph == "B") {
      // A slow path reopened at a switch-in: it begins at the sched_switch's time, on a track whose task span
      // (the switched-in task's) began there too.
      const bool at_switch = switched.count(e["tid"].get<int>()) > 0 && switched[e["tid"].get<int>()] == e["ts"];
      if (name.ends_with("_slowpath") && at_switch) ++resumed_slowpaths;
      s.push_back(name);
    } else if (ph == "E") {
      ASSERT_FALSE(s.empty());
      EXPECT_EQ(s.back(), name);
      s.pop_back();
    } else if (name == "sched_switch") {
      switched[e["tid"].get<int>()] = e["ts"];
    } else if (name == "tlb_flush: remote ipi send") {
      ++requests;
      if (std::find(s.begin(), s.end(), "sys_munmap") != s.end()) ++inside_munmap;
    }
  }
  EXPECT_GT(requests, 10u);
  EXPECT_EQ(inside_munmap, requests);
  EXPECT_GT(resumed_slowpaths, 10u);
}

}  // namespace
}  // namespace tlbsim::trace
