// `tlbsim list KIND`: lists registered names (machines, patterns, ...) with one-line descriptions.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <ostream>

#include "cli/command.h"
#include "hw/machine.h"
#include "util/registry.h"
#include "workloads/contention.h"

namespace tlbsim::cli {

namespace {

class MachineListing final : public Listing {
 public:
  std::vector<std::pair<std::string, std::string>> rows() const override {
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto& f : hw::builtin_machine_files()) {
      const hw::Machine m = hw::parse_machine(f.text, fmt::format("builtin:{}", f.name));
      out.emplace_back(m.name, fmt::format("{} CPUs, {}: {}", m.cpu_count(), m.arch, m.description));
    }
    return out;
  }
};

using PatternListing =
    RegistryListing<workloads::ContentionPattern, Registry<workloads::ContentionPattern>>;

TLBSIM_REGISTER(Listing, MachineListing, "machines", "built-in machine models (configs/machines)");
TLBSIM_REGISTER(Listing, PatternListing, "patterns", "access patterns of `tlbsim bench contention`");

class ListCommand final : public Command {
 public:
  CLI::App* define(CLI::App& parent) override {
    std::string kinds;
    for (const auto& e : Registry<Listing>::list()) kinds += (kinds.empty() ? "" : ", ") + e.name;
    CLI::App* sub = parent.add_subcommand("list", "List what exists: " + kinds);
    sub->add_option("kind", kind_, "What to list: " + kinds)->required();
    return sub;
  }
  int run(Streams& io) override {
    auto listing = Registry<Listing>::make("list kind", kind_);
    const auto rows = listing->rows();
    std::size_t width = 0;
    for (const auto& r : rows) width = std::max(width, r.first.size());
    for (const auto& [name, desc] : rows) io.out << fmt::format("{:<{}}  {}\n", name, width, desc);
    return 0;
  }

 private:
  std::string kind_;
};

TLBSIM_REGISTER(Command, ListCommand, "list", "list registered names");

}  // namespace
}  // namespace tlbsim::cli
