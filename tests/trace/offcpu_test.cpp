// The off-CPU profile: waits counted when they end in the measured window, by task, state and open functions; and,
// in a run, what it sees of mmap_storm's lock waits without changing the run.
#include "trace/offcpu.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "hw/machine.h"
#include "trace/tracer.h"
#include "workloads/run.h"

namespace tlbsim::trace {
namespace {

using sim::nanoseconds;

sim::SimTime at_ns(std::int64_t ns) { return sim::kTimeZero + nanoseconds(ns); }

TEST(OffCpu, CountsEachWaitThatEndsInTheWindowWhole) {
  OffCpuProfile p;
  p.start(at_ns(100));
  p.switch_out("w", 7, "S", {}, at_ns(10));
  p.switch_in(7, at_ns(90));  // ended before the window: not counted
  p.switch_out("w", 5, "D", {"sys_munmap", "__vma_enter_locked"}, at_ns(50));
  p.switch_in(5, at_ns(150));  // began before the window, ended in it: counted whole, 100 ns
  p.switch_out("w", 5, "D", {"sys_munmap", "__vma_enter_locked"}, at_ns(200));
  p.switch_in(5, at_ns(500));  // 300 ns
  p.switch_out("w", 6, "D", {"handle_mm_fault", "rwsem_down_read_slowpath"}, at_ns(300));
  p.switch_in(6, at_ns(350));  // 50 ns
  p.switch_out("swapper/0", 0, "R", {}, at_ns(300));
  p.switch_in(0, at_ns(400));                                   // the idle task: never counted
  p.switch_out("w", 6, "R+", {"handle_mm_fault"}, at_ns(600));  // still out at the end
  p.switch_in(9, at_ns(700));                                   // a task never seen switched out: nothing

  EXPECT_EQ(p.waits(), 3u);
  EXPECT_EQ(p.still_out(), 1u);
  const auto rows = p.rows();
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0]->stack, (std::vector<std::string>{"sys_munmap", "__vma_enter_locked"}));
  EXPECT_EQ(rows[0]->state, "D");
  EXPECT_EQ(rows[0]->waits, (std::vector<sim::Duration>{nanoseconds(100), nanoseconds(300)}));
  EXPECT_EQ(rows[0]->total, nanoseconds(400));
  EXPECT_EQ(rows[1]->total, nanoseconds(50));

  const std::string t = p.table(4);
  EXPECT_NE(t.find("off-CPU: 3 waits"), std::string::npos) << t;
  // 2 waits over 4 ops; mean 0.2 us; the nearest-rank p50 and p90 of {100, 300} ns: 300 ns.
  EXPECT_NE(t.find("2    0.500       0.2       0.3       0.3      0.000  D     w: sys_munmap > __vma_enter_locked"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("(1 tasks were still switched out at the end: not counted)"), std::string::npos) << t;
  EXPECT_NE(p.table(0).find("     2        -"), std::string::npos) << "no ops: no per-op figure";

  EXPECT_EQ(p.folded(),
            "w;handle_mm_fault;rwsem_down_read_slowpath;[D] 50000\n"
            "w;sys_munmap;__vma_enter_locked;[D] 400000\n");
  const nlohmann::json j = p.to_json(4);
  EXPECT_EQ(j["rows"][0]["waits"], 2);
  EXPECT_DOUBLE_EQ(j["rows"][0]["per_op"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(j["rows"][0]["mean_ns"].get<double>(), 200.0);
  EXPECT_EQ(j["still_out"], 1);
}

workloads::RunSpec storm(bool offcpu) {
  workloads::RunSpec spec;
  spec.kernel = "linux-6.18";
  spec.workload = "mmap_storm";
  spec.threads = 2;
  spec.duration = sim::milliseconds(1);
  spec.offcpu = offcpu;
  return spec;
}

const OffCpuProfile::Row* find_row(const OffCpuProfile& p, const std::vector<std::string>& stack) {
  for (const OffCpuProfile::Row* r : p.rows()) {
    if (r->stack == stack) return r;
  }
  return nullptr;
}

// Two mmap_storm threads on v6.18 wait for each other: a fault whose VMA the other thread has write-locked sleeps
// in mmap_lock's read slow path, and a munmap sleeps in __vma_enter_locked for the other's fault to leave the VMA.
TEST(OffCpu, SeesMmapStormsLockWaitsAndChangesNothing) {
  const hw::Machine m = hw::load_machine("small-2s2c");
  const workloads::RunOutput with = workloads::run_workload(m, storm(true));
  ASSERT_TRUE(with.offcpu);
  const OffCpuProfile::Row* fault = find_row(*with.offcpu, {"handle_mm_fault", "rwsem_down_read_slowpath"});
  ASSERT_NE(fault, nullptr) << with.offcpu->table(0);
  EXPECT_EQ(fault->state, "D");
  EXPECT_EQ(fault->comm, "this workload");
  EXPECT_GT(fault->waits.size(), 10u);
  EXPECT_NE(find_row(*with.offcpu, {"sys_munmap", "__vma_enter_locked"}), nullptr) << with.offcpu->table(0);

  nlohmann::json a = with.json, b = workloads::run_workload(m, storm(false)).json;
  a.erase("wall_seconds");
  b.erase("wall_seconds");
  EXPECT_EQ(a, b) << "the profile only observes";

  // A caller's tracer, with a narrow window and a small event cap, gives the same profile.
  TraceFilter narrow;
  narrow.start = sim::kTimeZero + sim::microseconds(500);
  narrow.end = sim::kTimeZero + sim::microseconds(600);
  narrow.max_events = 10;
  Tracer t(m.cpu_count(), narrow);
  const workloads::RunOutput traced = workloads::run_workload(m, storm(true), &t);
  ASSERT_TRUE(traced.offcpu);
  EXPECT_EQ(traced.offcpu->table(0), with.offcpu->table(0));
}

// One thread has nobody to wait for.
TEST(OffCpu, OneThreadNeverWaits) {
  workloads::RunSpec spec = storm(true);
  spec.threads = 1;
  const workloads::RunOutput r = workloads::run_workload(hw::load_machine("small-2s2c"), spec);
  ASSERT_TRUE(r.offcpu);
  EXPECT_EQ(r.offcpu->waits(), 0u) << r.offcpu->table(0);
}

}  // namespace
}  // namespace tlbsim::trace
