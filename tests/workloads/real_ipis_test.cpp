// The model against the real kernel where remote flushes are real IPIs: a 2-vCPU KVM guest running Linux 6.18.44,
// measured with `tlbsim validate` on 2026-12-03 (../shared/validation/kvm-2vcpu-20261203/, whose README gives the
// command; its calibrated machine file is tests/data/kvm-2vcpu-20261203-host.toml). Each run is simulated as
// `tlbsim validate` simulates it: profile linux-6.18 (the guest's release), no warm-up, 20 ms.
#include <gtest/gtest.h>

#include <string>

#include "hw/machine.h"
#include "workloads/run.h"

namespace tlbsim::workloads {
namespace {

struct PerOp {
  double requests = 0;  // nr_tlb_remote_flush: remote flush requests (TLB_REMOTE_SEND_IPI in the guest)
  double ipis = 0;      // "TLB shootdowns" of /proc/interrupts
  double flushes = 0;   // tlb:tlb_flush events of every reason but TLB_REMOTE_SEND_IPI
  double ops = 0;       // the run's operations (not per op)
};

PerOp simulate_on(hw::Machine guest, const char* workload, std::uint32_t threads, const char* kernel,
                  std::uint64_t seed, const char* param = nullptr);

PerOp simulate_on_guest(const char* workload, std::uint32_t threads, const char* kernel = "linux-6.18",
                        double step_spread = 0, std::uint64_t seed = 1) {
  hw::Machine guest = hw::load_machine(std::string(TLBSIM_SOURCE_DIR) + "/tests/data/kvm-2vcpu-20261203-host.toml");
  guest.timing.step_spread = step_spread;
  return simulate_on(std::move(guest), workload, threads, kernel, seed);
}

PerOp simulate_on(hw::Machine guest, const char* workload, std::uint32_t threads, const char* kernel,
                  std::uint64_t seed, const char* param) {
  RunSpec spec;
  spec.seed = seed;
  spec.kernel = kernel;
  spec.workload = workload;
  spec.threads = threads;
  spec.duration = sim::milliseconds(20);
  spec.warmup = sim::Duration{0};
  if (param != nullptr) spec.params.emplace_back(param);
  const RunOutput r = run_workload(guest, spec);
  EXPECT_EQ(r.violations, 0u) << workload << " " << threads << r.json["violations"].dump(2);
  const auto& c = r.json["counters"];
  const double ops = r.json["ops"].get<double>();
  EXPECT_GT(ops, 0) << workload;
  PerOp p;
  p.ops = ops;
  p.requests = c["nr_tlb_remote_flush"].get<double>() / ops;
  p.ipis = c["TLB shootdowns"].get<double>() / ops;
  for (const auto& [reason, v] : c["tlb:tlb_flush"].items()) {
    if (reason != "TLB_REMOTE_SEND_IPI") p.flushes += v.get<double>() / ops;
  }
  return p;
}

void expect_within(double simulated, double real, double tolerance, const std::string& what) {
  EXPECT_NEAR(simulated / real, 1.0, tolerance) << what << ": simulated " << simulated << ", real " << real;
}

// Two threads: each op's madvise flushes once, in tlb_finish_mmu (a whole-mm flush when the two threads' gathers
// overlap); tlb_end_vma flushes nothing on x86. tlb_flush1 adds one copy-on-write flush per op (wp_page_copy). The
// real figures lie within the ranges of the four guest runs (README: requests/op 1.96-1.97 and 0.99-1.00, IPIs/op
// 1.93-1.96 and 0.95-0.99).
TEST(RealIpis, TwoThreadsFlushAsOftenAsTheGuestKernel) {
  const PerOp f1 = simulate_on_guest("tlb_flush1", 2);
  expect_within(f1.requests, 1.96, 0.25, "tlb_flush1 requests/op");
  expect_within(f1.ipis, 1.95, 0.25, "tlb_flush1 IPIs/op");
  const PerOp f2 = simulate_on_guest("tlb_flush2", 2);
  expect_within(f2.requests, 1.00, 0.25, "tlb_flush2 requests/op");
  expect_within(f2.ipis, 0.97, 0.25, "tlb_flush2 IPIs/op");
  // mmap_storm: one request per munmap (README: 1.00).
  expect_within(simulate_on_guest("mmap_storm", 2).requests, 1.00, 0.25, "mmap_storm requests/op");
}

// mmap_storm's IPIs: in the guest three munmaps in four find the other CPU lazy (0.24-0.29 IPIs/op), its thread
// asleep. From v6.15, vma_start_write sleeps until the other thread's fault has left the VMA the two threads share,
// and that thread's next fault falls back to mmap_lock and sleeps too; a v6.13 writer spins on the VMA's rw_semaphore
// instead, and every munmap interrupts the other thread. The model's v6.18 figure depends on the phase its threads
// lock into (0.0-0.25 IPIs/op; docs/fidelity-notes.md, "Validation"), so what is pinned is the kernel's difference:
// v6.18's munmaps mostly find the other CPU lazy, v6.13's never do.
TEST(RealIpis, FromV615MostMunmapsFindTheOtherThreadAsleep) {
  const PerOp v618 = simulate_on_guest("mmap_storm", 2, "linux-6.18");
  EXPECT_LT(v618.ipis, 0.5 * v618.requests) << "v6.18: " << v618.ipis << " IPIs/op";
  const PerOp v613 = simulate_on_guest("mmap_storm", 2, "linux-6.13");
  EXPECT_GT(v613.ipis, 0.9 * v613.requests) << "v6.13: " << v613.ipis << " IPIs/op";
}

// The flush counts that match are not an artifact of exact costs: with every step's cost spread by -+10% (a spread
// of single kernel operations measured on a guest of the same kind, docs/fidelity-notes.md), tlb_flush1 and
// tlb_flush2 stay within 25% of the guest's figures. Runs with a spread are repeatable from their seed.
TEST(RealIpis, TheMatchedFlushCountsHoldWithAStepSpread) {
  const PerOp f1 = simulate_on_guest("tlb_flush1", 2, "linux-6.18", 0.1);
  expect_within(f1.requests, 1.96, 0.25, "tlb_flush1 requests/op, spread 0.1");
  expect_within(f1.ipis, 1.95, 0.25, "tlb_flush1 IPIs/op, spread 0.1");
  const PerOp f2 = simulate_on_guest("tlb_flush2", 2, "linux-6.18", 0.1);
  expect_within(f2.requests, 1.00, 0.25, "tlb_flush2 requests/op, spread 0.1");
  expect_within(f2.ipis, 0.97, 0.25, "tlb_flush2 IPIs/op, spread 0.1");
  const PerOp a = simulate_on_guest("mmap_storm", 2, "linux-6.18", 0.1, 5);
  const PerOp b = simulate_on_guest("mmap_storm", 2, "linux-6.18", 0.1, 5);
  const PerOp exact = simulate_on_guest("mmap_storm", 2, "linux-6.18", 0, 5);
  EXPECT_EQ(a.ipis, b.ipis);
  EXPECT_EQ(a.flushes, b.flushes);
  EXPECT_NE(a.flushes, exact.flushes) << "the spread changes the run";
}

// One thread: the guest's flushes per op (validate-table.txt: 1.985, 1.004 and 1.000). Its remote requests are not
// compared: the measuring process's sleeping main thread keeps the mm in mm_cpumask there, and the model has none.
TEST(RealIpis, OneThreadFlushesWithinFivePercentOfTheGuestKernel) {
  expect_within(simulate_on_guest("tlb_flush1", 1).flushes, 1.985, 0.05, "tlb_flush1 flushes/op");
  expect_within(simulate_on_guest("tlb_flush2", 1).flushes, 1.004, 0.05, "tlb_flush2 flushes/op");
  expect_within(simulate_on_guest("mmap_storm", 1).flushes, 1.000, 0.05, "mmap_storm flushes/op");
}

// A calibrated guest's HLT state with the percentiles of its single wake-ups (issue 31, part 7): each halt's exit is
// drawn from them, from the CPU's stream of the run's seed. The same seed gives the same run; without the
// percentiles (exit latency exact) the run is another, and so it is with another seed.
TEST(RealIpis, DrawnWakeUpsAreRepeatableFromTheSeed) {
  const hw::Machine drawn =
      hw::load_machine(std::string(TLBSIM_SOURCE_DIR) + "/tests/data/kvm-2vcpu-20261207-epyc-drawn-host.toml");
  ASSERT_FALSE(drawn.idle_states.empty());
  ASSERT_GT(drawn.idle_states[0].exit_latency_p90.count(), 0);
  hw::Machine exact = drawn;
  exact.idle_states[0].exit_latency_p10 = exact.idle_states[0].exit_latency_p90 = sim::Duration{0};
  const PerOp a = simulate_on(drawn, "mmap_storm", 2, "linux-6.18", 5);
  const PerOp b = simulate_on(drawn, "mmap_storm", 2, "linux-6.18", 5);
  const PerOp c = simulate_on(drawn, "mmap_storm", 2, "linux-6.18", 6);
  const PerOp e = simulate_on(exact, "mmap_storm", 2, "linux-6.18", 5);
  EXPECT_EQ(a.ipis, b.ipis);
  EXPECT_EQ(a.flushes, b.flushes);
  EXPECT_NE(a.flushes, c.flushes);
  EXPECT_NE(a.ipis, e.ipis);
  // Requests stay one per munmap, and tlb_flush1 and tlb_flush2 keep the guest's counts on this file too.
  expect_within(a.requests, 1.00, 0.25, "mmap_storm requests/op, drawn wake-ups");
  expect_within(simulate_on(drawn, "tlb_flush1", 2, "linux-6.18", 1).ipis, 1.95, 0.25, "tlb_flush1 IPIs/op, drawn");
  expect_within(simulate_on(drawn, "tlb_flush2", 2, "linux-6.18", 1).ipis, 0.97, 0.25, "tlb_flush2 IPIs/op, drawn");
}

// mmap_storm's mode B (issue 31, part 7): in a real run whose threads' mappings landed apart, a thread stack between
// them, every munmap's flush finds the other thread running and sends it an IPI (the pair calibrated and validated
// at once on 2026-12-07, tests/data/kvm-2vcpu-20261207-epyc-kick-host.toml: six runs, 0.993-0.997 IPIs/op and
// 1.000 requests/op). The model run with that layout (--param apart=1) does the same; the default layout, the
// mappings adjacent in one VMA (mode A), does not.
TEST(RealIpis, WithAThreadStackBetweenTheMappingsEveryMunmapInterruptsTheOtherThread) {
  const hw::Machine guest =
      hw::load_machine(std::string(TLBSIM_SOURCE_DIR) + "/tests/data/kvm-2vcpu-20261207-epyc-kick-host.toml");
  const PerOp apart = simulate_on(guest, "mmap_storm", 2, "linux-6.18", 1, "apart=1");
  expect_within(apart.requests, 1.000, 0.25, "mmap_storm requests/op, mappings apart");
  expect_within(apart.ipis, 0.995, 0.25, "mmap_storm IPIs/op, mappings apart");
  const PerOp adjacent = simulate_on(guest, "mmap_storm", 2, "linux-6.18", 1);
  EXPECT_LT(adjacent.ipis, 0.5) << "mappings adjacent: most munmaps find the other thread asleep";
}

// A halt's exit scaled by its length (issue 31, part 12): the shape `tlbsim calibrate` writes, a short halt of 50 us
// waking in half the exit of a 1.1 ms one. mmap_storm's threads halt for tens of microseconds, so their waits end
// sooner and the loop runs more operations. A short exit equal to the long one changes nothing at all.
TEST(RealIpis, BriefHaltsWakeFasterWhereTheMachineTimedThem) {
  const hw::Machine drawn =
      hw::load_machine(std::string(TLBSIM_SOURCE_DIR) + "/tests/data/kvm-2vcpu-20261207-epyc-drawn-host.toml");
  ASSERT_FALSE(drawn.idle_states.empty());
  ASSERT_EQ(drawn.idle_states[0].long_halt, sim::Duration{0}) << "the shipped file predates the fields";
  const auto with_short_exit = [&](sim::Duration exit_short) {
    hw::Machine m = drawn;
    m.idle_states[0].short_halt = sim::microseconds(50);
    m.idle_states[0].exit_latency_short = exit_short;
    m.idle_states[0].long_halt = sim::microseconds(1100);
    return m;
  };
  const sim::Duration exit = drawn.idle_states[0].exit_latency;
  const PerOp plain = simulate_on(drawn, "mmap_storm", 2, "linux-6.18", 5);
  const PerOp same = simulate_on(with_short_exit(exit), "mmap_storm", 2, "linux-6.18", 5);
  const PerOp brief = simulate_on(with_short_exit(exit / 2), "mmap_storm", 2, "linux-6.18", 5);
  EXPECT_EQ(same.ops, plain.ops);
  EXPECT_EQ(same.ipis, plain.ipis);
  EXPECT_EQ(same.flushes, plain.flushes);
  EXPECT_GT(brief.ops, plain.ops * 1.05) << "halts of tens of microseconds wake in half the exit";
}

}  // namespace
}  // namespace tlbsim::workloads
