#include "check/mutation_suite.h"

#include <fmt/format.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <sstream>

#include "model/options.h"
#include "util/error.h"

namespace tlbsim::check {

namespace {

std::vector<std::string> split_commas(std::string_view s) {
  std::vector<std::string> out;
  std::string cur;
  for (char ch : s) {
    if (ch == ',') {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else if (ch != ' ') {
      cur += ch;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

MutationRow run_one(const std::string& name, const ExploreSpec& spec, std::optional<hw::MemoryModel> model) {
  const kernel::MutationInfo& info = kernel::mutation_named(name, "--mutation");
  MutationRow row;
  row.mutation = name;
  row.area = std::string(info.area);
  row.kernel = std::string(info.kernel);
  const auto start = std::chrono::steady_clock::now();
  for (const std::string& scenario : split_commas(info.scenarios)) {
    row.scenario = scenario;
    CheckTarget target = make_target(row.kernel, {}, {name}, scenario, "");
    target.memory_model = model.value_or(arch_memory_model(target.config.arch));
    row.memory_model = hw::to_string(target.memory_model);
    const ExploreResult r = explore(target, spec);
    row.runs += r.runs;
    if (!r.found) continue;
    row.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    row.caught = true;
    const Counterexample minimal = shrink(Counterexample{target, r.found->decisions, r.found->what, r.found->steps});
    row.counterexample = minimal;
    row.decisions = minimal.decisions.size();
    row.steps = minimal.steps;
    row.violation = minimal.violation;
    row.replays = replay(minimal).violation;
    break;
  }
  if (!row.caught) row.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return row;
}

}  // namespace

std::vector<MutationRow> run_mutation_suite(const std::vector<std::string>& names, const ExploreSpec& spec,
                                            std::optional<hw::MemoryModel> model) {
  std::vector<std::string> chosen;
  if (names.empty() || (names.size() == 1 && names[0] == "all")) {
    for (const kernel::MutationInfo& i : kernel::all_mutations()) chosen.emplace_back(i.name);
  } else {
    for (const std::string& n : names) {
      kernel::mutation_named(n, "--mutation");  // unknown names fail before anything runs
      chosen.push_back(n);
    }
  }
  std::vector<MutationRow> rows;
  for (const std::string& n : chosen) rows.push_back(run_one(n, spec, model));
  return rows;
}

std::string render_mutation_table(const std::vector<MutationRow>& rows) {
  std::string out = fmt::format("{:<40} {:<10} {:<7} {:<24} {:<6} {:>6} {:>10} {:>9} {:>6}\n", "mutation", "area",
                                "result", "scenario", "memory", "runs", "to catch", "decisions", "steps");
  std::size_t caught = 0;
  for (const MutationRow& r : rows) {
    caught += r.caught ? 1 : 0;
    out += fmt::format("{:<40} {:<10} {:<7} {:<24} {:<6} {:>6} {:>8.1f}ms {:>9} {:>6}{}\n", r.mutation, r.area,
                       r.caught ? "caught" : "missed", r.scenario, r.memory_model, r.runs, r.seconds * 1e3,
                       r.caught ? std::to_string(r.decisions) : "-", r.caught ? std::to_string(r.steps) : "-",
                       r.caught && !r.replays ? "  (does not replay!)" : "");
  }
  out += fmt::format("{} of {} mutations caught\n", caught, rows.size());
  return out;
}

nlohmann::json mutation_rows_json(const std::vector<MutationRow>& rows) {
  nlohmann::json out = nlohmann::json::array();
  for (const MutationRow& r : rows) {
    out.push_back({{"mutation", r.mutation},
                   {"area", r.area},
                   {"kernel", r.kernel},
                   {"scenario", r.scenario},
                   {"memory_model", r.memory_model},
                   {"result", r.caught ? "caught" : "missed"},
                   {"replays", r.replays},
                   {"seconds", r.seconds},
                   {"runs", r.runs},
                   {"decisions", r.decisions},
                   {"steps", r.steps},
                   {"violation", r.violation}});
  }
  return out;
}

}  // namespace tlbsim::check
