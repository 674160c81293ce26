// `tlbsim check`: explore interleavings of a scenario on a kernel profile for violations; replay a counterexample;
// run the mutation suite. `tlbsim list scenarios|mutations` list what it knows.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <ostream>

#include "check/counterexample.h"
#include "check/explore.h"
#include "check/mutation_suite.h"
#include "check/scenario.h"
#include "cli/command.h"
#include "cli/profile_options.h"
#include "cli/trace_options.h"
#include "cli/validators.h"
#include "model/options.h"
#include "sim/time.h"
#include "util/atomic_file.h"
#include "util/error.h"
#include "util/registry.h"

namespace tlbsim::cli {

namespace {

// Every mutation, with its area, the code it breaks and the scenarios that should catch it.
class MutationListing final : public Listing {
 public:
  std::vector<std::pair<std::string, std::string>> rows() const override {
    std::vector<std::pair<std::string, std::string>> out;
    for (const kernel::MutationInfo& i : kernel::all_mutations()) {
      out.emplace_back(i.name, fmt::format("[{}, {} on {}; caught by {}] {}", i.area, kernel::to_string(i.arch),
                                           i.kernel, i.scenarios, i.doc));
    }
    return out;
  }
};
using ScenarioListing = RegistryListing<check::CheckScenario, Registry<check::CheckScenario>>;
TLBSIM_REGISTER(Listing, MutationListing, "mutations", "planted kernel bugs the checker must catch (--mutation)");
TLBSIM_REGISTER(Listing, ScenarioListing, "scenarios", "the checker's small scenarios (tlbsim check --scenario)");

class MemoryModelListing final : public Listing {
 public:
  std::vector<std::pair<std::string, std::string>> rows() const override {
    std::vector<std::pair<std::string, std::string>> out;
    for (const hw::MemoryModelInfo& i : hw::kMemoryModels) out.emplace_back(i.name, i.doc);
    return out;
  }
};
TLBSIM_REGISTER(Listing, MemoryModelListing, "memory-models",
                "hardware memory models of the checker and litmus (--memory-model)");

// Where scenario `name`'s counterexample goes when several scenarios run: beside --out, the scenario's name
// before the file name (`dir/cx.json` -> `dir/reclaim_two_mms.cx.json`).
std::string scenario_out_path(const std::string& out, const std::string& name) {
  const std::filesystem::path p(out);
  return (p.parent_path() / (name + "." + p.filename().string())).string();
}

class CheckCommand final : public Command {
 public:
  CLI::App* define(CLI::App& parent) override {
    CLI::App* c = parent.add_subcommand("check", "Explore interleavings for protocol violations; replay; mutation suite");
    c->add_option("--kernel", kernel_, "Kernel profile name or .toml file")->capture_default_str();
    c->add_option("--option", options_, "Override a profile option: NAME=on|off (repeatable)");
    c->add_option("--mutation", mutations_, "Plant a mutation (repeatable; `tlbsim list mutations`)");
    c->add_option("--scenario", scenario_, "Scenario name or 'all' (`tlbsim list scenarios`)")->capture_default_str();
    c->add_option("--strategy", spec_.strategy, "random | pct | exhaustive")->capture_default_str();
    c->add_option("--budget", spec_.budget, "Runs (schedules) per scenario at most")
        ->check(non_negative_integer())
        ->capture_default_str();
    c->add_option("--time", time_, "Wall-clock limit per scenario, e.g. 30s (default: none)");
    c->add_option("--seed", spec_.seed, "Random seed of the random and pct strategies")
        ->check(non_negative_integer())
        ->capture_default_str();
    c->add_option("--depth", spec_.pct_depth, "PCT bug depth d")->capture_default_str();
    c->add_option("--preemptions", spec_.preemptions, "Exhaustive: preemption bound")->capture_default_str();
    c->add_option("--hardware", hardware_, "Speculative page walks the hardware may make per run")->capture_default_str();
    c->add_option("--machine", machine_, "Machine whose latencies to use (default: by the kernel's arch)");
    c->add_option("--memory-model", memory_model_,
                  "sc | tso | power | arm: the hardware memory model to explore (default: the kernel's arch: tso for "
                  "x86, power for powerpc, arm for arm64)")
        ->check(CLI::IsMember({"sc", "tso", "power", "arm"}));
    c->add_option("--out", out_,
                  "Where to write a counterexample (with several scenarios, each's name is put before the file name)")
        ->check(non_empty())
        ->capture_default_str();
    c->add_flag("--no-shrink", no_shrink_, "Keep the counterexample as found");
    c->add_option("--replay", replay_, "Replay a counterexample file and print its interleaving");
    profile_.define(c);
    trace_.define(c);
    c->add_option("--mutations", suite_, "Run the mutation suite: all, or mutation names")->expected(0, -1);
    c->add_option("--format", format_, "Output format")->check(CLI::IsMember({"table", "json"}))->capture_default_str();
    suite_opt_ = c->get_option("--mutations");
    return c;
  }

  int run(Streams& io) override {
    if (!time_.empty()) {
      spec_.time_limit_s = sim::to_seconds(
          duration_option("--time", time_, sim::milliseconds(1), sim::milliseconds(86'400'000), "1ms..24h"));
    }
    if (hardware_ > 1000) throw InputError("--hardware must be at most 1000");
    if (!replay_.empty()) return run_replay(io);
    if (trace_.enabled()) throw InputError("--trace and --ftrace apply to a run: use them with --replay FILE");
    if (profile_.enabled()) throw InputError("--profile and its files apply to a run: use them with --replay FILE");
    if (suite_opt_->count() > 0) return run_suite(io);
    return run_explore(io);
  }

 private:
  int run_replay(Streams& io) {
    const check::Counterexample cx = check::parse_counterexample(read_file(replay_), replay_);
    trace_.validate();
    check_distinct_outputs({{"--trace", &trace_.json_path},
                            {"--ftrace", &trace_.ftrace_path},
                            {"--profile-folded", &profile_.folded_path},
                            {"--profile-svg", &profile_.svg_path}});
    profile_.validate();
    std::unique_ptr<TraceSession> session;
    if (trace_.enabled()) {
      session = std::make_unique<TraceSession>(trace_, cx.target.machine.cpu_count(),
                                               fmt::format("tlbsim check replay of {}", cx.target.scenario),
                                               fmt::format("tlbsim check --replay {}", replay_));
    }
    const check::Replay r = check::replay(cx, session ? &session->tracer() : nullptr, profile_.enabled());
    if (!r.unapplied.empty()) {
      throw InputError(fmt::format("{}: counterexample file: not a schedule of scenario '{}': {}", replay_,
                                   cx.target.scenario, r.unapplied));
    }
    if (session) session->write_files(io.err);
    if (r.profile) profile_.write_files(*r.profile, fmt::format("tlbsim check --replay {}", replay_));
    if (format_ == "json") {
      nlohmann::json j{{"violation", r.violation}, {"what", r.what}, {"trace", r.text}};
      if (profile_.table && r.profile) j["profile"] = r.profile->to_json(ProfileOptions::kMinShare);
      io.out << j.dump(2) << "\n";
    } else {
      io.out << r.text;
      if (profile_.table && r.profile) io.out << r.profile->table(ProfileOptions::kMinShare);
    }
    return r.violation ? 1 : 0;
  }

  int run_suite(Streams& io) {
    std::optional<hw::MemoryModel> model;
    if (!memory_model_.empty()) model = hw::memory_model_from_string(memory_model_);
    const auto rows = check::run_mutation_suite(suite_, spec_, model);
    if (format_ == "json") io.out << check::mutation_rows_json(rows).dump(2) << "\n";
    else io.out << check::render_mutation_table(rows);
    for (const auto& r : rows) {
      if (!r.caught || !r.replays) return 1;
    }
    return 0;
  }

  int run_explore(Streams& io) {
    std::vector<std::string> scenarios;
    if (scenario_ == "all") {
      for (const auto& e : Registry<check::CheckScenario>::list()) scenarios.push_back(e.name);
    } else {
      scenarios.push_back(scenario_);
    }
    // A counterexample's file must be writable before the search runs, not after it.
    check_output_path(scenarios.size() == 1 ? out_ : scenario_out_path(out_, scenarios.front()), "--out");
    nlohmann::json rows = nlohmann::json::array();
    std::string table = fmt::format("{:<24} {:<10} {:>8} {:>10} {:<9} {}\n", "scenario", "strategy", "runs", "steps",
                                    "complete", "result");
    int status = 0;
    for (const std::string& name : scenarios) {
      check::CheckTarget t;
      try {
        t = check::make_target(kernel_, options_, mutations_, name, machine_);
      } catch (const check::NotApplicable& e) {
        if (scenario_ != "all") throw;
        table += fmt::format("{:<24} skipped: {}\n", name, e.what());
        continue;
      }
      t.hardware_budget = hardware_;
      t.memory_model = memory_model(t.config);
      const check::ExploreResult r = check::explore(t, spec_);
      const double rate = r.wall_s > 0 ? static_cast<double>(r.steps) / r.wall_s : 0;
      std::string result = "no violation";
      nlohmann::json row{{"scenario", name}, {"strategy", spec_.strategy}, {"runs", r.runs}, {"steps", r.steps},
                         {"cut_off", r.cut_off}, {"complete", r.complete}};
      if (r.found) {
        status = 1;
        check::Counterexample cx{t, r.found->decisions, r.found->what, r.found->steps};
        if (!no_shrink_) cx = check::shrink(cx);
        const std::string path = scenarios.size() == 1 ? out_ : scenario_out_path(out_, name);
        write_file_atomic(path, check::to_json_text(cx));
        result = fmt::format("VIOLATION at run {} ({} forced choices, {} steps): {}; written to {}", r.found_at_run,
                             cx.decisions.size(), cx.steps, cx.violation, path);
        row["violation"] = cx.violation;
        row["counterexample"] = path;
        row["found_at_run"] = r.found_at_run;
      }
      table += fmt::format("{:<24} {:<10} {:>8} {:>10} {:<9} {}\n", name, spec_.strategy, r.runs, r.steps,
                           spec_.strategy == "exhaustive" ? (r.complete ? "yes" : "no") : "-", result);
      io.err << fmt::format("tlbsim: {}: {} runs, {} steps in {:.2f} s ({:.0f} steps/s, {:.0f} runs/s)\n", name, r.runs,
                            r.steps, r.wall_s, rate, r.wall_s > 0 ? static_cast<double>(r.runs) / r.wall_s : 0);
      rows.push_back(row);
    }
    if (format_ == "json") io.out << rows.dump(2) << "\n";
    else io.out << table;
    return status;
  }

  std::string kernel_ = "linux-5.17";
  std::vector<std::string> options_;
  std::vector<std::string> mutations_;
  std::string scenario_ = "all";
  check::ExploreSpec spec_;
  std::string time_;
  std::uint32_t hardware_ = 2;
  std::string machine_;
  std::string memory_model_;

  hw::MemoryModel memory_model(const kernel::KernelConfig& cfg) const {
    if (memory_model_.empty()) return check::arch_memory_model(cfg.arch);
    const auto m = hw::memory_model_from_string(memory_model_);
    if (!m)
      throw InputError("--memory-model: unknown memory model '" + memory_model_ + "' (known: sc, tso, power, arm)");
    return *m;
  }
  std::string out_ = "counterexample.json";
  bool no_shrink_ = false;
  TraceOptions trace_;
  std::string replay_;
  ProfileOptions profile_;
  std::vector<std::string> suite_;
  CLI::Option* suite_opt_ = nullptr;
  std::string format_ = "table";
};

TLBSIM_REGISTER(Command, CheckCommand, "check", "explore interleavings for violations");

}  // namespace

}  // namespace tlbsim::cli
