#include "hw/machine_set.h"

#include <fmt/format.h>
#include <toml++/toml.h>

#include <stdexcept>

#include "sim/time.h"
#include "util/error.h"

namespace tlbsim::hw {

namespace {

constexpr const char* kStepSpread = "timing.step_spread";

// Every latency the file gives (a table with `ns`), as section.key or idle.NAME.key.
std::vector<std::string> latency_keys(const toml::table& root) {
  std::vector<std::string> out;
  for (const auto& [section, node] : root) {
    const toml::table* t = node.as_table();
    if (t == nullptr) continue;
    for (const auto& [key, value] : *t) {
      const toml::table* v = value.as_table();
      if (v != nullptr && v->contains("ns")) out.push_back(fmt::format("{}.{}", section.str(), key.str()));
    }
  }
  if (const toml::array* states = root.at_path("idle.states").as_array()) {
    for (const toml::node& s : *states) {
      const toml::table* st = s.as_table();
      const auto name = st != nullptr ? (*st)["name"].value<std::string>() : std::nullopt;
      if (!name) continue;
      for (const auto& [key, value] : *st) {
        const toml::table* v = value.as_table();
        if (v != nullptr && v->contains("ns")) out.push_back(fmt::format("idle.{}.{}", *name, key.str()));
      }
    }
  }
  out.emplace_back(kStepSpread);
  return out;
}

// The table that holds `key` (section.key or idle.NAME.key) and the key's last part; nullptr when the file has no
// such latency.
std::pair<toml::table*, std::string> holder_of(toml::table& root, const std::string& key) {
  const std::size_t dot = key.find('.');
  if (dot == std::string::npos) return {nullptr, ""};
  const std::string section = key.substr(0, dot);
  std::string rest = key.substr(dot + 1);
  toml::table* t = nullptr;
  if (section == "idle") {
    const std::size_t d2 = rest.rfind('.');
    if (d2 == std::string::npos) return {nullptr, ""};
    const std::string state = rest.substr(0, d2);
    rest = rest.substr(d2 + 1);
    if (toml::array* states = root.at_path("idle.states").as_array()) {
      for (toml::node& s : *states) {
        toml::table* st = s.as_table();
        if (st != nullptr && (*st)["name"].value<std::string>() == state) t = st;
      }
    }
  } else {
    t = root[section].as_table();
  }
  if (t == nullptr) return {nullptr, ""};
  const toml::table* v = (*t)[rest].as_table();
  if (v == nullptr || !v->contains("ns")) return {nullptr, ""};
  return {t, rest};
}

}  // namespace

std::vector<MachineSetting> parse_machine_settings(const std::vector<std::string>& args) {
  std::vector<MachineSetting> out;
  for (const std::string& a : args) {
    const std::size_t eq = a.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == a.size()) {
      throw InputError(fmt::format("--set {}: expected KEY=VALUE, e.g. kernel.page_alloc=400ns", a));
    }
    MachineSetting s{a.substr(0, eq), a.substr(eq + 1)};
    for (const MachineSetting& seen : out) {
      if (seen.key == s.key) throw InputError(fmt::format("--set {}: {} is set twice", a, s.key));
    }
    out.push_back(std::move(s));
  }
  return out;
}

void apply_machine_settings(toml::table& root, const std::vector<MachineSetting>& settings) {
  for (const MachineSetting& s : settings) {
    const std::string arg = fmt::format("--set {}={}", s.key, s.text);
    if (s.key == kStepSpread) {
      double v = 0;
      std::size_t used = 0;
      try {
        v = std::stod(s.text, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != s.text.size()) throw InputError(fmt::format("{}: expected a number, e.g. 0.2", arg));
      toml::table* timing = root["timing"].as_table();
      if (timing == nullptr) timing = root.insert_or_assign("timing", toml::table{}).first->second.as_table();
      const auto old = timing->at_path("step_spread.value").value<double>();
      timing->insert_or_assign(
          "step_spread",
          toml::table{{"value", v},
                      {"source", fmt::format("SET on the command line ({}); the machine file gives {}", arg,
                                             old ? fmt::format("{}", *old) : std::string("none (0)"))}});
      continue;
    }
    auto [holder, last] = holder_of(root, s.key);
    if (holder == nullptr) {
      const std::vector<std::string> keys = latency_keys(root);
      throw InputError(
          fmt::format("{}: the machine file gives no latency {} (it gives: {})", arg, s.key, fmt::join(keys, ", ")));
    }
    sim::Duration d{};
    try {
      d = sim::parse_duration(s.text);
    } catch (const std::invalid_argument& e) {
      throw InputError(fmt::format("{}: {}", arg, e.what()));
    }
    const auto old = (*holder)[last]["ns"].value<double>();
    const double ns = static_cast<double>(d.count()) / 1e3;
    holder->insert_or_assign(
        last, toml::table{{"ns", ns},
                          {"source", fmt::format("SET on the command line ({}); the machine file gives {} ns", arg,
                                                 old ? fmt::format("{}", *old) : std::string("?"))}});
  }
}

}  // namespace tlbsim::hw
