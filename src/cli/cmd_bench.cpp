// `tlbsim bench contention`: the coherence model's contention demo (ops/s against CPU count per pattern).
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <ostream>

#include "cli/command.h"
#include "cli/validators.h"
#include "hw/machine.h"
#include "util/atomic_file.h"
#include "util/int_list.h"
#include "util/registry.h"
#include "workloads/contention.h"

namespace tlbsim::cli {

namespace {

// Powers of two, each socket boundary and the whole machine: the points where the shape changes.
std::vector<std::uint32_t> default_cpus(const hw::Machine& m) {
  std::vector<std::uint32_t> v;
  const std::uint32_t n = m.cpu_count();
  for (std::uint32_t c = 1; c < n; c *= 2) v.push_back(c);
  const std::uint32_t per_socket = m.topology.cores_per_socket * m.topology.threads_per_core;
  for (std::uint32_t c = per_socket; c < n; c += per_socket) v.push_back(c);
  v.push_back(n);
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

class BenchCommand final : public Command {
 public:
  CLI::App* define(CLI::App& parent) override {
    CLI::App* sub = parent.add_subcommand("bench", "Microbenchmarks of the machine model");
    sub->require_subcommand(1);
    CLI::App* c = sub->add_subcommand("contention", "N CPUs repeat an access pattern on modeled cache lines");
    c->add_option("--machine", machine_, "Built-in machine name or machine .toml file")->capture_default_str();
    c->add_option("--cpus", cpus_, "CPU counts, e.g. 1,2,4-8,16-56:8 (default: powers of two and socket boundaries)");
    c->add_option("--pattern", pattern_, "Access pattern (see `tlbsim list patterns`), or 'all'")
        ->capture_default_str();
    c->add_option("--duration", duration_, "Simulated time per point, e.g. 20us, 1ms")->capture_default_str();
    c->add_option("--seed", seed_, "Random seed (orders simultaneous events)")
        ->check(non_negative_integer())
        ->capture_default_str();
    c->add_option("--format", format_, "Output format")->check(CLI::IsMember({"table", "json"}))->capture_default_str();
    c->add_option("--output", output_, "Write the result to this file (atomically) instead of stdout")->check(non_empty());
    return sub;
  }

  int run(Streams& io) override {
    if (!output_.empty()) check_output_path(output_, "--output");  // before the work, not after it
    const hw::Machine m = hw::load_machine(machine_);
    const sim::Duration duration =
        duration_option("--duration", duration_, sim::nanoseconds(10), sim::milliseconds(1000), "10ns..1s");
    const std::vector<std::uint32_t> cpus =
        cpus_.empty() ? default_cpus(m) : parse_int_list(cpus_, "--cpus", 1, m.cpu_count());
    std::vector<std::string> patterns;
    if (pattern_ == "all") {
      for (const auto& e : Registry<workloads::ContentionPattern>::list()) patterns.push_back(e.name);
    } else {
      Registry<workloads::ContentionPattern>::make("pattern", pattern_);  // validates the name up front
      patterns.push_back(pattern_);
    }

    std::vector<std::pair<std::string, workloads::ContentionPoint>> points;
    double wall = 0;
    std::uint64_t events = 0;
    for (const auto& p : patterns) {
      for (std::uint32_t n : cpus) {
        points.emplace_back(p, workloads::run_contention(m, p, n, duration, seed_));
        wall += points.back().second.wall_seconds;
        events += points.back().second.events;
      }
    }

    std::string text;
    if (format_ == "json") {
      nlohmann::json j;
      j["machine"] = hw::to_json(m);
      j["seed"] = seed_;
      j["pattern"] = pattern_;
      j["duration_ns"] = sim::to_nanoseconds(duration);
      j["results"] = nlohmann::json::array();
      for (const auto& [p, pt] : points) {
        nlohmann::json r = workloads::to_json(pt);
        r["pattern"] = p;
        j["results"].push_back(std::move(r));
      }
      text = j.dump(2) + "\n";
    } else {
      const hw::Topology topo(m.topology);
      text += fmt::format("machine {}: {}\n", m.name, topo.summary());
      text += fmt::format("seed {}, {} simulated per point\n", seed_, sim::format_duration(duration));
      std::string current;
      for (const auto& [p, pt] : points) {
        if (p != current) {
          current = p;
          text += fmt::format("\npattern {}\n{:>6} {:>16} {:>14} {:>10} {:>10} {:>12}\n", p, "cpus", "ops/s",
                              "ops/s/cpu", "transfers", "remote", "wait/op ns");
        }
        const double wait_per_op = pt.ops ? sim::to_nanoseconds(pt.lines.wait) / static_cast<double>(pt.ops) : 0;
        text += fmt::format("{:>6} {:>16.0f} {:>14.0f} {:>10} {:>10} {:>12.1f}\n", pt.cpus, pt.ops_per_sec,
                            pt.ops_per_sec / pt.cpus, pt.lines.transfers, pt.lines.remote_transfers, wait_per_op);
      }
    }
    write_result(io, output_, text);
    io.err << fmt::format("tlbsim: {} events in {:.3f} s of wall time ({:.1f} M events/s)\n", events, wall,
                          wall > 0 ? static_cast<double>(events) / wall / 1e6 : 0.0);
    return 0;
  }

 private:
  std::string machine_ = "skylake-sp-2s28c";
  std::string cpus_;
  std::string pattern_ = "all";
  std::string duration_ = "20us";
  std::uint64_t seed_ = 1;
  std::string format_ = "table";
  std::string output_;
};

TLBSIM_REGISTER(Command, BenchCommand, "bench", "microbenchmarks of the machine model");

}  // namespace
}  // namespace tlbsim::cli
