// `tlbsim machine show NAME|FILE`: the resolved parameters of a machine, each latency with its source.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <ostream>

#include "cli/command.h"
#include "hw/machine.h"
#include "util/registry.h"

namespace tlbsim::cli {

namespace {

class MachineCommand final : public Command {
 public:
  CLI::App* define(CLI::App& parent) override {
    CLI::App* sub = parent.add_subcommand("machine", "Inspect machine models");
    sub->require_subcommand(1);
    CLI::App* show = sub->add_subcommand("show", "Show a machine's resolved parameters and their sources");
    show->add_option("machine", machine_, "Built-in machine name or path to a machine .toml file")->required();
    show->add_option("--set", settings_,
                     "Replace a parameter: KEY=VALUE, e.g. ipi.send=100ns (repeatable; as `tlbsim run --set`)");
    show->add_option("--format", format_, "Output format")->check(CLI::IsMember({"table", "json"}));
    return sub;
  }
  int run(Streams& io) override {
    const hw::Machine m = hw::load_machine(machine_, settings_);
    if (format_ == "json") {
      io.out << hw::to_json(m).dump(2) << "\n";
      return 0;
    }
    const hw::Topology topo(m.topology);
    io.out << fmt::format("machine   {}\n", m.name);
    io.out << fmt::format("about     {}\n", m.description);
    io.out << fmt::format("arch      {}\n", m.arch);
    io.out << fmt::format("from      {}\n", m.origin);
    io.out << fmt::format("seeds     {}\n", m.seeds.empty() ? "-" : fmt::format("{}", fmt::join(m.seeds, ", ")));
    io.out << fmt::format("topology  {}\n", topo.summary());
    io.out << fmt::format("ipi       {}\n", m.ipi.cluster_size > 1
                                                ? fmt::format("one send per cluster of {} CPUs", m.ipi.cluster_size)
                                                : std::string("one send per target"));
    io.out << fmt::format("tlb       {} entries, {}-way, tag {} ({} bits)\n", m.tlb.entries, m.tlb.ways,
                          hw::to_string(m.tlb.tag), m.tlb.tag_bits);
    if (m.timing.step_spread > 0) {
      io.out << fmt::format("timing    step spread {:.3f}: each step and wake-up within -+{:.1f}% of its cost ({})\n",
                            m.timing.step_spread, 100 * m.timing.step_spread, m.timing.source);
    }
    io.out << "\nlatencies\n";
    std::size_t width = 0;
    for (const auto& p : m.latencies) width = std::max(width, p.key.size());
    for (const auto& p : m.latencies) {
      io.out << fmt::format("  {:<{}} {:>9.2f} ns  {}\n", p.key, width, p.ns, p.source);
    }
    return 0;
  }

 private:
  std::string machine_;
  std::string format_ = "table";
  std::vector<std::string> settings_;
};

TLBSIM_REGISTER(Command, MachineCommand, "machine", "inspect machine models");

}  // namespace
}  // namespace tlbsim::cli
