// `tlbsim litmus FILE...`: runs C litmus tests (the kernel's tools/memory-model format, a subset) on the checker's
// engine under each memory model and prints whether the final condition is reachable.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <nlohmann/json.hpp>
#include <ostream>

#include "check/litmus/litmus.h"
#include "cli/command.h"
#include "util/atomic_file.h"
#include "util/error.h"
#include "util/registry.h"

namespace tlbsim::cli {

namespace {

class LitmusCommand final : public Command {
 public:
  CLI::App* define(CLI::App& parent) override {
    CLI::App* c = parent.add_subcommand(
        "litmus", "Run C litmus tests (tools/memory-model format, a subset) under each memory model");
    c->add_option("files", files_, "Litmus files (.litmus)")->required();
    c->add_option("--memory-model", model_, "sc | tso | power | arm | all")
        ->check(CLI::IsMember({"sc", "tso", "power", "arm", "all"}))
        ->capture_default_str();
    c->add_option("--budget", budget_, "Schedules per test and model at most")->capture_default_str();
    c->add_flag("--skip-unsupported", skip_,
                "Report a test outside the subset and go on (default: it is an error, exit status 2)");
    c->add_option("--format", format_, "Output format")->check(CLI::IsMember({"table", "json"}))->capture_default_str();
    return c;
  }

  int run(Streams& io) override {
    if (budget_ == 0 || budget_ > 1'000'000'000) throw InputError("--budget must be between 1 and 1e9 schedules");
    std::vector<hw::MemoryModel> models;
    if (model_ == "all" || model_ == "sc") models.push_back(hw::MemoryModel::kSc);
    if (model_ == "all" || model_ == "tso") models.push_back(hw::MemoryModel::kTso);
    if (model_ == "all" || model_ == "power") models.push_back(hw::MemoryModel::kPower);
    if (model_ == "all" || model_ == "arm") models.push_back(hw::MemoryModel::kArm);
    nlohmann::json rows = nlohmann::json::array();
    std::size_t width = 36;
    for (const std::string& f : files_) width = std::max(width, f.size() - std::min(f.size(), f.rfind('/') + 1));
    std::string table = fmt::format("{:<{}} {:<9}", "test", width, "expected");
    for (const hw::MemoryModel m : models) table += fmt::format(" {:<11}", hw::to_string(m));
    table += " schedules  states\n";
    int status = 0;
    std::size_t ran = 0, rejected = 0, disagree = 0;
    for (const std::string& f : files_) {
      check::litmus::LitmusTest t;
      try {
        t = check::litmus::parse_litmus(read_file(f), f);
      } catch (const check::litmus::Unsupported& e) {
        if (!skip_) throw;
        ++rejected;
        table += fmt::format("{:<{}} rejected: {}\n", f.substr(f.rfind('/') + 1), width, e.what());
        rows.push_back({{"file", f}, {"rejected", e.what()}});
        continue;
      }
      ++ran;
      nlohmann::json row{{"file", f}, {"test", t.name}, {"expected", t.expected}};
      std::string line = fmt::format("{:<{}} {:<9}", t.name, width, t.expected.empty() ? "-" : t.expected);
      std::uint64_t runs = 0, states = 0;
      bool bad = false;
      for (const hw::MemoryModel m : models) {
        const check::litmus::LitmusResult r = check::litmus::run_litmus(t, m, budget_);
        runs += r.runs;
        states += r.states;
        const std::string v = r.complete ? r.verdict : "incomplete";
        // The kernel's memory model is weaker than each hardware model: what it forbids, no hardware may allow.
        if (r.complete && t.expected == "Never" && r.verdict != "Never") bad = true;
        line += fmt::format(" {:<11}", v);
        row[hw::to_string(m)] = {
            {"verdict", v},       {"reachable", r.satisfying > 0}, {"final_states", r.final_states}, {"runs", r.runs},
            {"states", r.states}, {"complete", r.complete}};
      }
      line += fmt::format(" {:>9} {:>7}{}\n", runs, states, bad ? "  DISAGREES with the file's Result" : "");
      table += line;
      row["disagrees"] = bad;
      rows.push_back(row);
      if (bad) {
        ++disagree;
        status = 1;
      }
    }
    if (format_ == "json") {
      io.out << nlohmann::json{{"tests", rows}, {"ran", ran}, {"rejected", rejected}, {"disagree", disagree}}.dump(2)
             << "\n";
    } else {
      io.out << table
             << fmt::format("{} ran, {} outside the subset, {} disagree with their Result line\n", ran, rejected,
                            disagree);
    }
    return status;
  }

 private:
  std::vector<std::string> files_;
  std::string model_ = "all";
  std::uint64_t budget_ = 10'000'000;
  bool skip_ = false;
  std::string format_ = "table";
};

TLBSIM_REGISTER(Command, LitmusCommand, "litmus", "run C litmus tests under each memory model");

}  // namespace
}  // namespace tlbsim::cli
