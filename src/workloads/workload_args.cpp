// Parses and checks `--param NAME=VALUE` for a workload (workload_args.h).
#include "workloads/workload_args.h"

#include <fmt/format.h>

#include <charconv>

#include "util/error.h"

namespace tlbsim::workloads {

WorkloadArgs::WorkloadArgs(std::string workload, const std::vector<std::string>& items)
    : workload_(std::move(workload)) {
  for (const std::string& item : items) {
    const std::size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == item.size()) {
      throw InputError(fmt::format("--param {}: expected NAME=VALUE", item));
    }
    const std::string name = item.substr(0, eq);
    if (!values_.emplace(name, item.substr(eq + 1)).second) {
      throw InputError(fmt::format("--param {}: '{}' is given twice", item, name));
    }
  }
}

std::uint64_t WorkloadArgs::integer(const std::string& name, std::uint64_t fallback, std::uint64_t min,
                                    std::uint64_t max, const std::string& doc) {
  read_.insert(name);
  known_.push_back(fmt::format("{} ({}; {}..{}, default {})", name, doc, min, max, fallback));
  const auto it = values_.find(name);
  if (it == values_.end()) return fallback;
  const std::string& text = it->second;
  std::uint64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc{} || end != text.data() + text.size() || v < min || v > max) {
    throw InputError(fmt::format("--param {}={}: workload {}: {} must be an integer in {}..{}", name, text, workload_,
                                 name, min, max));
  }
  return v;
}

void WorkloadArgs::finish() const {
  for (const auto& [name, value] : values_) {
    if (read_.contains(name)) continue;
    throw InputError(fmt::format("--param {}={}: workload {} has no parameter '{}' (it has: {})", name, value,
                                 workload_, name,
                                 known_.empty() ? "none" : fmt::format("{}", fmt::join(known_, ", "))));
  }
}

}  // namespace tlbsim::workloads
