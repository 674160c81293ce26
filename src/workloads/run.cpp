#include "workloads/run.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <numeric>

#include "check/oracle.h"
#include "hw/system.h"
#include "kernel/locking/locks.h"
#include "kernel/sched/sched.h"
#include "model/options.h"
#include "model/profile.h"
#include "sim/timed_scheduler.h"
#include "trace/tracer.h"
#include "util/registry.h"
#include "workloads/file/workload_file.h"
#include "workloads/workload.h"

namespace tlbsim::workloads {

namespace {

// Closes the trace on every way out of a run, before the kernel and machine (and the coroutine frames whose spans
// are still open) are destroyed.
class TraceCloser {
 public:
  TraceCloser(trace::Tracer* t, hw::System& sys) : t_(t), sys_(sys) {}
  ~TraceCloser() {
    if (t_ != nullptr) t_->close(sys_.scheduler().now());
  }
  TraceCloser(const TraceCloser&) = delete;
  TraceCloser& operator=(const TraceCloser&) = delete;

 private:
  trace::Tracer* t_;
  hw::System& sys_;
};

// The kernel's configuration for `spec`: its profile with the --option overrides; refuses an unknown workload, too
// few threads and a duration that is not positive.
kernel::KernelConfig checked_config(const RunSpec& spec) {
  const kernel::KernelProfile profile = kernel::load_kernel_profile(spec.kernel);
  kernel::KernelConfig cfg = profile.config;
  kernel::apply_option_overrides(cfg, spec.options);
  kernel::validate_options(cfg, "--option");
  // Validate the name before building anything, and the thread count by one rule; each workload then states its
  // upper bound against the machine.
  if (const auto w = make_workload(spec.workload); spec.threads < w->min_threads()) {
    throw InputError(
        fmt::format("--threads: {}; {} runs at least {} thread", spec.threads, spec.workload, w->min_threads()));
  }
  // A kernel may run on a machine of another architecture (the x86 code on the POWER8 model shows mm_count
  // contention the way the scheduler issue asked); the output records both.
  if (spec.duration.count() <= 0) throw InputError("--duration must be positive");
  return cfg;
}

// A finished run, as its JSON report reads it.
struct FinishedRun {
  const hw::Machine& machine;
  const RunSpec& spec;
  const kernel::KernelConfig& cfg;
  const WorkloadArgs& args;
  const sim::RunResult& r;
  const RunOutput& out;
  sim::Duration warmup;
  const std::vector<std::uint64_t>& ops;
  std::uint64_t total;
  Workload& workload;
  kernel::Kernel& k;
  const check::Oracle& oracle;
};

// Registers the hardware's counters a run reports: each class of cache line's, and the TLBs' summed over CPUs.
void register_hw_stats(kernel::Kernel& k, hw::System& sys) {
  k.stats()
      .registrar(&sys)
      .source("cache_lines", "coherence traffic by class of cache line",
              [&sys] {
                nlohmann::json lines = nlohmann::json::object();
                for (const auto& [name, st] : sys.coherence().stats_by_name()) {
                  lines[name] = {{"loads", st.loads},
                                 {"stores", st.stores},
                                 {"rmws", st.rmws},
                                 {"transfers", st.transfers},
                                 {"remote_transfers", st.remote_transfers},
                                 {"wait_ns", sim::to_nanoseconds(st.wait)}};
                }
                return lines;
              })
      .source("tlb", "TLB events summed over CPUs", [&k] {
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
        return nlohmann::json{{"lookups", tlb.lookups},      {"hits", tlb.hits},
                              {"misses", tlb.misses},        {"walks", tlb.misses},
                              {"fills", tlb.fills},          {"speculative_fills", tlb.speculative_fills},
                              {"evictions", tlb.evictions},  {"invlpg", tlb.invlpg},
                              {"flush_pcid", tlb.flush_tag}, {"flush_all", tlb.flush_all}};
      });
}

// Runs to `end` with the counters covering the window ops do: the run stops at the warm-up's end for a snapshot of
// every counter, then goes on (stopping changes nothing simulated: the scheduler resumes with the same queue).
sim::RunResult run_measured(hw::System& sys, kernel::Kernel& k, sim::Duration warmup, sim::SimTime end,
                            trace::Profiler* profiler) {
  register_hw_stats(k, sys);
  if (warmup.count() > 0) {
    sys.scheduler().run(sim::kTimeZero + warmup);
    k.stats().snapshot();
  }
  if (profiler != nullptr) profiler->start(sim::kTimeZero + warmup);
  sim::RunResult r = sys.scheduler().run(end);
  if (profiler != nullptr) profiler->finish(sys.scheduler(), r.end);
  return r;
}

// The run's JSON report: what ran, on what, for how long, what it measured, its counters and the oracle's verdict.
nlohmann::json run_json(const FinishedRun& f) {
  const RunSpec& spec = f.spec;
  const kernel::KernelConfig& cfg = f.cfg;
  nlohmann::json j;
  j["machine"] = hw::to_json(f.machine);
  j["kernel"] = spec.kernel;
  j["kernel_arch"] = kernel::to_string(cfg.arch);
  j["kernel_version"] = cfg.version.str();
  j["kernel_spinlock"] = kernel::to_string(f.k.arch().spinlock_kind());  // arch_spin_lock's algorithm in that release
  j["options"] = kernel::enabled_options(cfg);
  if (cfg.mutation_bits.any()) j["mutations"] = kernel::planted_mutations(cfg);
  j["workload"] = spec.workload;
  j["threads"] = spec.threads;
  if (!f.args.given().empty()) j["params"] = f.args.given();
  j["seed"] = spec.seed;
  // What the seed decided: the order within each set of simultaneous events (the model has no other noise), and
  // the workload's own draws. With neither, every seed gives this run's bytes.
  j["seeded_tie_sets"] = f.r.seeded_choices;
  j["seed_changes_nothing"] = f.out.seed_changes_nothing;
  j["sim_time_ns"] = sim::to_nanoseconds(spec.duration);
  j["warmup_ns"] = sim::to_nanoseconds(f.warmup);
  j["ops"] = f.total;
  j["per_thread_ops"] = f.ops;
  j["metric"] = {{"name", f.workload.metric_name()}, {"value", f.out.metric}, {"unit", f.workload.unit()}};
  if (nlohmann::json b = f.workload.benchmark_report(f.out.metric); !b.is_null()) j["benchmark"] = std::move(b);
  j["counters"] = f.k.stats().to_json();  // over the same window as ops: after the warm-up
  j["violations"] = f.oracle.to_json();
  j["oracle_checks"] = f.oracle.checks();
  j["events"] = f.r.events;
  j["wall_seconds"] = f.out.wall_seconds;
  return j;
}

}  // namespace

RunOutput run_workload(const hw::Machine& machine, const RunSpec& spec, trace::Tracer* tracer,
                       const RunProgress& progress) {
  kernel::KernelConfig cfg = checked_config(spec);
  const auto wall_start = std::chrono::steady_clock::now();

  for (const std::string& m : spec.mutations) kernel::set_mutation(cfg, m, "--mutation");
  const sim::Duration warmup = spec.warmup.count() < 0 ? spec.duration / 10 : spec.warmup;
  // The off-CPU profile reads the timeline's spans at each switch: without a trace, a tracer that writes nothing.
  // Made before the system and kernel, whose coroutine frames may still end spans when they are destroyed.
  std::unique_ptr<trace::Tracer> own_tracer;
  std::shared_ptr<trace::OffCpuProfile> offcpu;
  if (spec.offcpu) {
    offcpu = std::make_shared<trace::OffCpuProfile>();
    offcpu->start(sim::kTimeZero + warmup);
    if (tracer == nullptr) {
      trace::TraceFilter everything;
      everything.max_events = 0;
      own_tracer = std::make_unique<trace::Tracer>(machine.cpu_count(), everything);
      tracer = own_tracer.get();
    }
    tracer->set_offcpu(offcpu.get());
  }
  hw::System sys(machine, [&](std::size_t n) { return std::make_unique<sim::TimedScheduler>(n, spec.seed); });
  sys.scheduler().set_stall_limit(spec.stall_limit);
  const bool drawn_wakeups = std::any_of(machine.idle_states.begin(), machine.idle_states.end(),
                                         [](const hw::IdleState& st) { return st.exit_latency_p90.count() > 0; });
  if (machine.timing.step_spread > 0 || drawn_wakeups) {  // each CPU its own stream of the run's seed
    const sim::Rng spread(sim::Rng(spec.seed).split(0x73707264));
    for (std::uint32_t i = 0; i < machine.cpu_count(); ++i) {
      sys.cpu(CpuId{i}).set_step_spread(machine.timing.step_spread, spread.split(i));
    }
  }
  kernel::Kernel k(sys, cfg);
  sys.memory().set_fence_costs(k.arch().fence_costs(machine));  // the barriers' instructions, priced
  const auto oracle = check::Oracle::attach(k);
  if (tracer != nullptr) {
    k.set_tracer(tracer);
    tracer->set_coherence(&sys.coherence());
  }
  // Made after the kernel so that it (and any scheduler it owns) is destroyed before the kernel.
  const auto workload = make_workload(spec.workload);
  TraceCloser closer(tracer, sys);
  std::vector<std::uint64_t> ops;
  WorkloadArgs args(spec.workload, spec.params);
  WorkloadParams params{spec.threads, warmup, spec.duration, spec.seed};
  params.args = &args;
  workload->start(k, params, ops);
  args.finish();
  if (progress) {
    sys.scheduler().set_progress([&progress, end = warmup + spec.duration](sim::SimTime now, std::uint64_t events) {
      progress(now - sim::kTimeZero, end, events);
    });
  }
  std::shared_ptr<trace::Profiler> profiler;
  if (spec.profile) {
    profiler = std::make_shared<trace::Profiler>([&sys](LineId l) { return std::string(sys.coherence().name(l)); },
                                                 [&k](CpuId c) { return kernel::Sched::runs_idle_task(k, c); });
    profiler->attach(sys.scheduler());
  }
  const sim::RunResult r = run_measured(sys, k, warmup, sim::kTimeZero + warmup + spec.duration, profiler.get());
  workload->finish(k, sim::kTimeZero + warmup + spec.duration);
  if (tracer != nullptr) {
    tracer->close(sim::kTimeZero + warmup + spec.duration);
    tracer->set_offcpu(nullptr);  // the profile outlives a caller's tracer's use
  }

  RunOutput out;
  const std::uint64_t total = std::accumulate(ops.begin(), ops.end(), std::uint64_t{0});
  out.metric = static_cast<double>(total) / sim::to_seconds(spec.duration);
  out.violations = oracle->violations().size();
  out.events = r.events;
  out.seed_changes_nothing = r.seeded_choices == 0 && !workload->draws_from_seed();
  out.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  out.json = run_json({machine, spec, cfg, args, r, out, warmup, ops, total, *workload, k, *oracle});
  out.counter_rows = k.stats().rows();
  out.profile = std::move(profiler);
  out.offcpu = std::move(offcpu);
  return out;
}

}  // namespace tlbsim::workloads
