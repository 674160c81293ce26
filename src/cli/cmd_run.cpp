// `tlbsim run`: one workload on one machine and kernel; prints the benchmark's figure and the kernel counters.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <ostream>

#include "cli/command.h"
#include "cli/profile_options.h"
#include "cli/trace_options.h"
#include "cli/validators.h"
#include "hw/machine.h"
#include "kernel/arch_mmu.h"
#include "model/options.h"
#include "model/profile.h"
#include "util/atomic_file.h"
#include "util/registry.h"
#include "workloads/file/workload_file.h"
#include "workloads/run.h"
#include "workloads/workload.h"

namespace tlbsim::cli {

namespace {

// Built-in kernel profiles (configs/kernels), with their arch, release, fair-class policy, seed and role.
class KernelListing final : public Listing {
 public:
  std::vector<std::pair<std::string, std::string>> rows() const override {
    std::vector<std::pair<std::string, std::string>> out;
    for (const std::string& name : kernel::builtin_kernel_names()) {
      const kernel::KernelProfile p = kernel::load_kernel_profile(name);
      const std::string seed = p.seed.empty() ? "" : fmt::format(", seed {} {}", p.seed, p.role);
      const char* fair = p.config.sched_eevdf() ? "EEVDF" : "CFS";
      out.emplace_back(p.name, fmt::format("[{} {} {}{}] {}", kernel::to_string(p.config.arch), p.config.version.str(),
                                           fair, seed, p.description));
    }
    return out;
  }
};
// Every kernel option, with its seed, arch and releases.
class OptionListing final : public Listing {
 public:
  std::vector<std::pair<std::string, std::string>> rows() const override {
    std::vector<std::pair<std::string, std::string>> out;
    for (const kernel::OptionInfo& o : kernel::all_options()) out.emplace_back(o.name, kernel::describe_option(o));
    return out;
  }
};
// The architecture code of each era.
class EraListing final : public Listing {
 public:
  std::vector<std::pair<std::string, std::string>> rows() const override {
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto& e : Registry<kernel::ArchMmu>::list()) {
      const auto a = e.make();
      out.emplace_back(e.name, fmt::format("[{} {}..{}] {}", kernel::to_string(a->arch()), a->since().str(),
                                           a->until().str(), e.description));
    }
    return out;
  }
};
// The C++ workloads, then the workload files built in (configs/workloads; run as NAME.toml), with their parameters.
class WorkloadListing final : public Listing {
 public:
  std::vector<std::pair<std::string, std::string>> rows() const override {
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto& e : Registry<workloads::Workload>::list()) out.emplace_back(e.name, e.description);
    for (const auto& f : workloads::builtin_workload_files()) {
      const workloads::WorkloadFile w = workloads::parse_workload_file(f.text, fmt::format("builtin:{}.toml", f.name));
      std::string params;
      for (const auto& p : w.params) params += fmt::format(" [--param {}={}: {}]", p.name, p.fallback, p.doc);
      out.emplace_back(fmt::format("{}.toml", f.name), fmt::format("(file) {}{}", w.description, params));
    }
    return out;
  }
};
TLBSIM_REGISTER(Listing, KernelListing, "kernels", "kernel profiles (configs/kernels): arch, release, options");
TLBSIM_REGISTER(Listing, OptionListing, "options", "kernel options: each seed's change, its variants and fixes");
TLBSIM_REGISTER(Listing, EraListing, "eras", "the architecture code modeled for each kernel era");
TLBSIM_REGISTER(Listing, WorkloadListing, "workloads", "benchmarks `tlbsim run` can run");

class RunCommand final : public Command {
 public:
  CLI::App* define(CLI::App& parent) override {
    CLI::App* c = parent.add_subcommand("run", "Run a workload on a modeled machine and kernel");
    c->add_option("--machine", machine_, "Built-in machine name or machine .toml file")->capture_default_str();
    c->add_option("--set", machine_set_,
                  "Replace a machine parameter for this run: KEY=VALUE, e.g. kernel.page_alloc=400ns or "
                  "timing.step_spread=0.2 (repeatable; keys as `tlbsim machine show` lists them)");
    kernel_opt_ = c->add_option("--kernel", spec_.kernel,
                                "Kernel profile name or .toml file (see `tlbsim list kernels`; default: linux-5.17 on "
                                "x86_64 machines, linux-6.2-ppc on powerpc64)");
    c->add_option("--option", spec_.options, "Override a profile option: NAME=on|off (repeatable; `tlbsim list options`)");
    c->add_option("--workload", spec_.workload,
                  "Workload: a name (`tlbsim list workloads`) or a workload .toml file (docs/usage.md)")
        ->capture_default_str();
    c->add_option("--threads", spec_.threads, "Benchmark threads")
        ->check(non_negative_integer())
        ->capture_default_str();
    c->add_option("--param", spec_.params,
                  "A workload parameter NAME=VALUE (repeatable; a wrong name lists the workload's parameters)");
    c->add_option("--duration", duration_, "Simulated time, e.g. 10ms")->capture_default_str();
    c->add_option("--warmup", warmup_,
                  "Simulated time before the measured --duration, e.g. 160ms (default: a tenth of --duration)");
    c->add_option("--seed", spec_.seed, "Random seed")->check(non_negative_integer())->capture_default_str();
    c->add_option("--stall-limit", stall_limit_,
                  "A CPU spinning on one line this long while others run stops the run as a livelock, e.g. 1s "
                  "(0: never; default 100ms)");
    c->add_option("--format", format_, "Output format")->check(CLI::IsMember({"table", "json"}))->capture_default_str();
    c->add_option("--counters", counters_,
                  "Counters in the table: all, the summary (the stable subset the goldens print), or all described")
        ->check(CLI::IsMember({"all", "summary", "describe"}))
        ->capture_default_str();
    c->add_option("--output", output_, "Write the result to this file (atomically) instead of stdout")
        ->check(non_empty());
    profile_.define(c);
    c->add_flag("--offcpu", offcpu_,
                "Print where tasks waited off their CPU: each wait by the kernel functions it began in, per op, as "
                "sched_switch stack traces show it on a real kernel (docs/usage.md, \"Where tasks wait\")");
    c->add_option(
         "--offcpu-folded", offcpu_folded_,
         "Write the off-CPU waits as folded stacks (picoseconds per stack) to this file, for flame-graph tools")
        ->check(non_empty());
    trace_.define(c);
    return c;
  }

  int run(Streams& io) override {
    const hw::Machine m = hw::load_machine(machine_, machine_set_);
    if (kernel_opt_->count() == 0) spec_.kernel = kernel::default_kernel_for(m.arch);
    spec_.duration =
        duration_option("--duration", duration_, sim::microseconds(1), sim::milliseconds(60000), "1us..60s");
    if (!warmup_.empty()) {
      spec_.warmup = duration_option("--warmup", warmup_, sim::Duration{0}, sim::milliseconds(60000), "0..60s");
    }
    if (!stall_limit_.empty()) {
      spec_.stall_limit =
          duration_option("--stall-limit", stall_limit_, sim::Duration{0}, sim::milliseconds(60000), "0..60s");
    }
    trace_.validate();
    check_distinct_outputs({{"--output", &output_},
                            {"--trace", &trace_.json_path},
                            {"--ftrace", &trace_.ftrace_path},
                            {"--profile-folded", &profile_.folded_path},
                            {"--profile-svg", &profile_.svg_path},
                            {"--offcpu-folded", &offcpu_folded_}});
    if (!output_.empty()) check_output_path(output_, "--output");  // before the run, not after it
    if (!offcpu_folded_.empty()) check_output_path(offcpu_folded_, "--offcpu-folded");
    profile_.validate();
    spec_.profile = profile_.enabled();
    spec_.offcpu = offcpu_ || !offcpu_folded_.empty();
    std::unique_ptr<TraceSession> session;
    if (trace_.enabled()) {
      session = std::make_unique<TraceSession>(
          trace_, m.cpu_count(), fmt::format("tlbsim {} on {}", spec_.workload, m.name),
          fmt::format("tlbsim run --machine {}{} --kernel {} --workload {} --threads {} --duration {}{} --seed {}",
                      machine_, set_args(), spec_.kernel, spec_.workload, spec_.threads, duration_,
                      warmup_.empty() ? "" : " --warmup " + warmup_, spec_.seed));
    }
    // A long run says how far it has got, every few seconds of wall time, on stderr.
    const auto wall_start = std::chrono::steady_clock::now();
    auto last_report = wall_start;
    const workloads::RunProgress progress = [&](sim::Duration reached, sim::Duration end, std::uint64_t events) {
      const auto now = std::chrono::steady_clock::now();
      if (now - last_report < std::chrono::seconds(5)) return;
      last_report = now;
      const double wall = std::chrono::duration<double>(now - wall_start).count();
      io.err << fmt::format("tlbsim: simulated {} of {} ({:.0f}%), {:.1f} M events in {:.0f} s of wall time\n",
                            sim::format_duration(reached), sim::format_duration(end),
                            100.0 * sim::to_seconds(reached) / sim::to_seconds(end), static_cast<double>(events) / 1e6,
                            wall);
    };
    const workloads::RunOutput r =
        workloads::run_workload(m, spec_, session ? &session->tracer() : nullptr, progress);
    if (session) session->write_files(io.err);
    std::string text;
    if (format_ == "json") {
      nlohmann::json j = r.json;
      j.erase("wall_seconds");  // keep the output a function of the inputs; speed goes to stderr
      if (profile_.table && r.profile) j["profile"] = r.profile->to_json(ProfileOptions::kMinShare);
      if (offcpu_ && r.offcpu) j["offcpu"] = r.offcpu->to_json(j["ops"].get<std::uint64_t>());
      text = j.dump(2) + "\n";
    } else {
      const auto& j = r.json;
      text += fmt::format("{} on {} ({} threads), kernel {}, seed {}, {} simulated\n", spec_.workload, m.name,
                          spec_.threads, spec_.kernel, spec_.seed, sim::format_duration(spec_.duration));
      for (const std::string& a : machine_set_) text += fmt::format("{:<34} {}\n", "machine parameter set", a);
      std::string opts;
      for (const auto& o : j["options"]) opts += (opts.empty() ? "" : " ") + o.get<std::string>();
      text += fmt::format("{:<34} {} {}: {}; {} spinlocks\n", "kernel code", j["kernel_arch"].get<std::string>(),
                          j["kernel_version"].get<std::string>(), opts.empty() ? "(no options)" : opts,
                          j["kernel_spinlock"].get<std::string>());
      text += fmt::format("{:<34} {:.0f} {}\n", j["metric"]["name"].get<std::string>(), r.metric,
                          j["metric"]["unit"].get<std::string>());
      if (j.contains("benchmark")) {
        for (const auto& [what, v] : j["benchmark"].items()) text += fmt::format("benchmark {:<24} {}\n", what, v.dump());
      }
      // The counters after the warm-up, as their subsystems registered them.
      for (const kernel::Stats::Row& row : r.counter_rows) {
        if (counters_ == "summary" && !row.summary) continue;
        text += fmt::format("{:<34} {}", row.label, row.value);
        text += counters_ == "describe" ? fmt::format("  ({})\n", row.description) : "\n";
      }
      text += fmt::format("oracle: {} checks, {} violations\n", j["oracle_checks"].dump(), r.violations);
      if (r.seed_changes_nothing) {
        text += "seed: no simultaneous events to order and no draws: every --seed gives this run\n";
      }
      for (const auto& v : j["violations"]) text += fmt::format("  violation: {}\n", v["what"].get<std::string>());
      if (profile_.table && r.profile) text += r.profile->table(ProfileOptions::kMinShare);
      if (offcpu_ && r.offcpu) text += r.offcpu->table(j["ops"].get<std::uint64_t>());
    }
    write_result(io, output_, text);
    if (r.profile) {
      profile_.write_files(*r.profile, fmt::format("tlbsim run: {} on {}, kernel {}, {} threads", spec_.workload,
                                                   m.name, spec_.kernel, spec_.threads));
    }
    if (r.offcpu && !offcpu_folded_.empty()) write_file_atomic(offcpu_folded_, r.offcpu->folded());
    io.err << fmt::format("tlbsim: {} events in {:.3f} s of wall time ({:.1f} M events/s)\n", r.events,
                          r.wall_seconds, r.wall_seconds > 0 ? static_cast<double>(r.events) / r.wall_seconds / 1e6 : 0);
    return r.violations == 0 ? 0 : 1;
  }

 private:
  std::string set_args() const {
    std::string out;
    for (const std::string& a : machine_set_) out += " --set " + a;
    return out;
  }

  std::string machine_ = "skylake-sp-2s28c";
  std::vector<std::string> machine_set_;
  CLI::Option* kernel_opt_ = nullptr;
  workloads::RunSpec spec_;
  std::string duration_ = "10ms";
  std::string warmup_;  // empty: RunSpec's default, a tenth of the duration
  std::string stall_limit_;  // empty: RunSpec's default
  std::string format_ = "table";
  std::string counters_ = "all";
  std::string output_;
  ProfileOptions profile_;
  bool offcpu_ = false;
  std::string offcpu_folded_;
  TraceOptions trace_;
};

TLBSIM_REGISTER(Command, RunCommand, "run", "run a workload on the modeled kernel");

}  // namespace
}  // namespace tlbsim::cli
