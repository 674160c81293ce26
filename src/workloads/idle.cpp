// An idle machine, as in seed 003's measurement ("an idle system with 32 logical cpu's ... during an interval of
// 5 seconds"): each of the first --threads CPUs briefly runs a user process (a daemon that touches a page of its
// own mm and then sleeps past the end of the run), and every CPU is then woken periodically by a per-CPU kernel
// thread, standing in for the timer, RCU, device-interrupt and kworker wakeups an idle kernel still has. Each
// wakeup is a lazy switch (idle -> kthread -> idle) followed by a new pass through the idle loop, so the cpuidle
// governor enters a TLB-flushing C-state (and intel_idle calls leave_mm) again. Reports wakeups per second.
#include <memory>
#include <vector>

#include "kernel/sched/sched.h"
#include "mm/memory.h"
#include "util/registry.h"
#include "workloads/workload.h"

namespace tlbsim::workloads {

namespace {

// Wakeups per idle CPU per second. ASSUMPTION, not a measured figure: the order of magnitude of a NOHZ idle
// CPU's wakeups in 2012 (timers, RCU callbacks, device interrupts, kworkers); no public per-CPU figure for the
// seed's machine was found. The number of leave_mm calls (and so the "before" count of seed 003) scales linearly
// with it; the "after" count does not depend on it. Seed 003's own figures imply about 18.7 (2988 / 5 s / 32
// CPUs), a consistency check, not an input. `--param wakeups_per_s=N` changes it.
constexpr std::uint64_t kIdleWakeupsPerCpuPerSecond = 20;

sim::Task<void> daemon_body(kernel::Sched& s, kernel::TaskStruct& t, sim::SimTime end) {
  kernel::PerCpu& pc = s.cpu_of(t);
  kernel::MmStruct& mm = *t.mm;
  const std::uint64_t addr = co_await kernel::sys_mmap(pc, mm, kernel::kPageSize, false, nullptr, 0);
  co_await kernel::user_access(s.cpu_of(t), mm, addr, true);
  // Sleep past the end of the run (a daemon waiting for work that does not come).
  co_await s.sleep(t, (end - s.cpu_of(t).cpu.now()) + sim::milliseconds(1000));
}

sim::Task<void> wakeup_body(kernel::Sched& s, kernel::TaskStruct& t, sim::Duration phase, sim::Duration period,
                            sim::SimTime measure_from, sim::SimTime end, std::uint64_t& wakeups) {
  co_await s.sleep(t, phase);
  for (;;) {
    if (s.cpu_of(t).cpu.now() >= end) break;
    if (s.cpu_of(t).cpu.now() >= measure_from) ++wakeups;
    co_await s.sleep(t, period);
  }
}

class Idle final : public Workload {
 public:
  std::string metric_name() const override { return "wakeups_per_sec"; }
  std::string unit() const override { return "wakeups/s"; }
  // --threads 0: no user process ever runs, so no CPU ever leaves init_mm (seed 003's quietest case).
  std::uint32_t min_threads() const override { return 0; }
  void start(kernel::Kernel& k, const WorkloadParams& p, std::vector<std::uint64_t>& ops) override {
    const std::uint32_t n = k.ncpus();
    if (p.threads > n) {
      throw InputError("--threads: idle runs at most one user process per CPU (" + std::to_string(n) + " here)");
    }
    sched_ = std::make_unique<kernel::Sched>(k);
    sched_->start();
    ops.assign(n, 0);
    const sim::SimTime from = sim::kTimeZero + p.warmup, end = from + p.duration;
    const std::uint64_t rate =
        p.param("wakeups_per_s", kIdleWakeupsPerCpuPerSecond, 1, 10000, "wakeups per idle CPU per second");
    const sim::Duration period = sim::milliseconds(1000) / static_cast<std::int64_t>(rate);
    kernel::Sched& s = *sched_;
    for (std::uint32_t c = 0; c < n; ++c) {
      const CpuId cpu{c};
      kernel::Cpumask only(n);
      only.set(cpu);
      if (c < p.threads) {
        kernel::TaskStruct& d = s.create_task("daemon", &k.new_mm(), cpu,
                                              [&s, end](kernel::TaskStruct& t) { return daemon_body(s, t, end); });
        d.cpus_allowed = only;
      }
      // Phases spread over one period so that the CPUs do not wake in lockstep.
      const sim::Duration phase = period * static_cast<std::int64_t>(c + 1) / static_cast<std::int64_t>(n);
      std::uint64_t& counter = ops[c];
      kernel::TaskStruct& w = s.create_task("kworker/" + std::to_string(c), nullptr, cpu,
                                            [&s, phase, period, from, end, &counter](kernel::TaskStruct& t) {
                                              return wakeup_body(s, t, phase, period, from, end, counter);
                                            });
      w.cpus_allowed = only;
    }
  }

 private:
  std::unique_ptr<kernel::Sched> sched_;
};

TLBSIM_REGISTER(Workload, Idle, "idle",
                "an idle machine: a short user process on each of --threads CPUs, then periodic per-CPU wakeups");

}  // namespace
}  // namespace tlbsim::workloads
