#include "workloads/run.h"

#include <chrono>
#include <numeric>

#include <fmt/format.h>

#include "hw/system.h"
#include "sim/timed_scheduler.h"
#include "util/registry.h"
#include "workloads/workload.h"

namespace tlbsim::workloads {

namespace {

// A profile whose configuration is a function of no arguments.
template <kernel::KernelConfig (*Make)()>
class ConfigProfile final : public KernelProfile {
 public:
  kernel::KernelConfig config() const override { return Make(); }
};

// Linux v5.17 as seed 000 benchmarked it: with Dave Hansen's revert of 6035152d8eeb, so native_flush_tlb_multi
// filters lazy CPUs with on_each_cpu_cond_mask(tlb_is_not_lazy).
kernel::KernelConfig linux_517() { return {}; }

// Linux v5.17 with commit 6035152d8eeb in place: the lazy filter open-coded before the cross-call.
kernel::KernelConfig linux_517_open_coded() {
  kernel::KernelConfig c;
  c.open_coded_cond_mask = true;
  return c;
}

// Seed 000's change on top of the benchmarked v5.17, as posted (v2), and with the later zero-generation fix.
kernel::KernelConfig linux_517_seed000() {
  kernel::KernelConfig c;
  c.avoid_mm_tlb_gen_read = true;
  return c;
}
kernel::KernelConfig linux_517_seed000_fixed() {
  kernel::KernelConfig c = linux_517_seed000();
  c.ignore_invalid_tlb_gen = true;
  return c;
}

using Linux517 = ConfigProfile<linux_517>;
using Linux517OpenCoded = ConfigProfile<linux_517_open_coded>;
using Linux517Seed000 = ConfigProfile<linux_517_seed000>;
using Linux517Seed000Fixed = ConfigProfile<linux_517_seed000_fixed>;

TLBSIM_REGISTER(KernelProfile, Linux517Seed000, "linux-5.17-seed000",
                "linux-5.17 + seed 000 as posted: flush_tlb_func avoids reading mm_tlb_gen when possible");
TLBSIM_REGISTER(KernelProfile, Linux517Seed000Fixed, "linux-5.17-seed000-fixed",
                "linux-5.17-seed000 + the later fix ignoring new_tlb_gen == TLB_GENERATION_INVALID");
TLBSIM_REGISTER(KernelProfile, Linux517, "linux-5.17",
                "x86 v5.17 as benchmarked in seed 000 (with the revert of 6035152d8eeb)");
TLBSIM_REGISTER(KernelProfile, Linux517OpenCoded, "linux-5.17-open-coded",
                "x86 v5.17 with 6035152d8eeb: lazy CPUs filtered into a cpumask before the cross-call");

}  // namespace

RunOutput run_workload(const hw::Machine& machine, const RunSpec& spec) {
  const auto profile = Registry<KernelProfile>::make("kernel", spec.kernel);
  Registry<Workload>::make("workload", spec.workload);  // validate the name before building anything
  // The x86 TLB code also runs on the powerpc machine models until the powerpc radix code exists (the
  // scheduler issue asks for exactly that, to see mm_count contention on the 1536-CPU POWER8 model).
  if (spec.duration.count() <= 0) throw InputError("--duration must be positive");
  const auto wall_start = std::chrono::steady_clock::now();

  kernel::KernelConfig cfg = profile->config();
  cfg.test_skip_remote_ipis = spec.test_skip_remote_ipis;
  hw::System sys(machine, [&](std::size_t n) { return std::make_unique<sim::TimedScheduler>(n, spec.seed); });
  kernel::Kernel k(sys, cfg);
  // Made after the kernel so that it (and any scheduler it owns) is destroyed before the kernel.
  const auto workload = Registry<Workload>::make("workload", spec.workload);
  std::vector<std::uint64_t> ops;
  const sim::Duration warmup = spec.warmup.count() < 0 ? spec.duration / 10 : spec.warmup;
  workload->start(k, WorkloadParams{spec.threads, warmup, spec.duration}, ops);
  const sim::RunResult r = sys.scheduler().run(sim::kTimeZero + warmup + spec.duration);

  RunOutput out;
  const std::uint64_t total = std::accumulate(ops.begin(), ops.end(), std::uint64_t{0});
  out.metric = static_cast<double>(total) / sim::to_seconds(spec.duration);
  out.violations = k.oracle().violations().size();
  out.events = r.events;
  out.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();

  nlohmann::json j;
  j["machine"] = hw::to_json(machine);
  j["kernel"] = spec.kernel;
  j["options"] = {{"open_coded_cond_mask", cfg.open_coded_cond_mask},
                  {"avoid_mm_tlb_gen_read", cfg.avoid_mm_tlb_gen_read},
                  {"ignore_invalid_tlb_gen", cfg.ignore_invalid_tlb_gen},
                  {"test_skip_remote_ipis", cfg.test_skip_remote_ipis}};
  j["workload"] = spec.workload;
  j["threads"] = spec.threads;
  j["seed"] = spec.seed;
  j["sim_time_ns"] = sim::to_nanoseconds(spec.duration);
  j["warmup_ns"] = sim::to_nanoseconds(warmup);
  j["ops"] = total;
  j["per_thread_ops"] = ops;
  j["metric"] = {{"name", workload->metric_name()}, {"value", out.metric}, {"unit", workload->unit()}};
  nlohmann::json counters = k.counters().to_json();
  nlohmann::json lines = nlohmann::json::object();
  for (const auto& [name, st] : sys.coherence().stats_by_name()) {
    lines[name] = {{"loads", st.loads}, {"stores", st.stores}, {"rmws", st.rmws}, {"transfers", st.transfers},
                   {"remote_transfers", st.remote_transfers},
                   {"wait_ns", sim::to_nanoseconds(st.wait)}};
  }
  counters["cache_lines"] = lines;
  hw::TlbCounters tlb;
  for (std::uint32_t c = 0; c < k.ncpus(); ++c) {
    const hw::TlbCounters& t = k.percpu(CpuId{c}).tlb.counters();
    tlb.lookups += t.lookups;
    tlb.hits += t.hits;
    tlb.misses += t.misses;
    tlb.fills += t.fills;
    tlb.speculative_fills += t.speculative_fills;
    tlb.evictions += t.evictions;
    tlb.invlpg += t.invlpg;
    tlb.flush_tag += t.flush_tag;
    tlb.flush_all += t.flush_all;
  }
  counters["tlb"] = {{"lookups", tlb.lookups},     {"hits", tlb.hits},
                     {"misses", tlb.misses},       {"walks", tlb.misses},
                     {"fills", tlb.fills},         {"speculative_fills", tlb.speculative_fills},
                     {"evictions", tlb.evictions}, {"invlpg", tlb.invlpg},
                     {"flush_pcid", tlb.flush_tag}, {"flush_all", tlb.flush_all}};
  j["counters"] = counters;
  j["violations"] = k.oracle().to_json();
  j["oracle_checks"] = k.oracle().checks();
  j["events"] = r.events;
  j["wall_seconds"] = out.wall_seconds;
  out.json = std::move(j);
  return out;
}

}  // namespace tlbsim::workloads
