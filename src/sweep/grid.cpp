// Grid parsing, validation and its JSON form.
#include "sweep/grid.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <sstream>

#include "hw/machine.h"
#include "model/profile.h"
#include "sim/time.h"
#include "util/error.h"
#include "util/int_list.h"
#include "util/json_reader.h"
#include "util/registry.h"
#include "workloads/file/workload_file.h"
#include "workloads/workload.h"

namespace tlbsim::sweep {

std::vector<GridPoint> grid_points(const Grid& g) {
  std::vector<GridPoint> out;
  for (const std::string& k : g.kernels) {
    for (std::uint32_t t : g.threads) {
      for (std::uint64_t s : g.seeds) out.push_back(GridPoint{out.size(), k, t, s});
    }
  }
  return out;
}

std::size_t grid_size(const Grid& g) { return g.kernels.size() * g.threads.size() * g.seeds.size(); }

GridPoint grid_point(const Grid& g, std::size_t index) {
  const std::size_t seeds = g.seeds.size(), per_kernel = g.threads.size() * seeds;
  return GridPoint{index, g.kernels[index / per_kernel], g.threads[index % per_kernel / seeds], g.seeds[index % seeds]};
}

void validate_grid(const Grid& g) {
  const hw::Machine m = hw::load_machine(g.machine, g.machine_set);
  if (g.kernels.empty()) throw InputError("--kernel: no kernels given");
  for (const std::string& k : g.kernels) kernel::load_kernel_profile(k);
  workloads::make_workload(g.workload);
  for (std::uint32_t t : g.threads) {
    if (t < 1 || t > m.cpu_count()) {
      throw InputError(fmt::format("--threads: {} is outside 1..{} (the CPUs of {})", t, m.cpu_count(), m.name));
    }
  }
  if (g.threads.empty()) throw InputError("--threads: empty list");
  if (g.seeds.empty()) throw InputError("--seeds: empty list");
  sim::Duration d;
  try {
    d = sim::parse_duration(g.duration);
  } catch (const std::invalid_argument& e) {
    throw InputError(fmt::format("--duration: {}", e.what()));
  }
  if (d < sim::microseconds(1) || d > sim::milliseconds(60000)) {
    throw InputError(fmt::format("--duration: {} is outside 1us..60s", g.duration));
  }
  if (!g.warmup.empty()) {
    sim::Duration w;
    try {
      w = sim::parse_duration(g.warmup);
    } catch (const std::invalid_argument& e) {
      throw InputError(fmt::format("--warmup: {}", e.what()));
    }
    if (w < sim::Duration{0} || w > sim::milliseconds(60000)) {
      throw InputError(fmt::format("--warmup: {} is outside 0..60s", g.warmup));
    }
  }
  if (!g.metric.empty() &&
      (g.metric.front() == '.' || g.metric.back() == '.' || g.metric.find("..") != std::string::npos)) {
    throw InputError(fmt::format("--metric: '{}' is not a dotted path such as counters.nr_tlb_remote_flush", g.metric));
  }
}

nlohmann::json grid_to_json(const Grid& g) {
  nlohmann::json j = {{"machine", g.machine}, {"workload", g.workload}, {"duration", g.duration},
                      {"kernels", g.kernels}, {"threads", g.threads},   {"seeds", g.seeds},
                      {"metric", g.metric}};
  if (!g.params.empty()) j["params"] = g.params;  // absent when none, as in sweeps written before --param
  if (!g.warmup.empty()) j["warmup"] = g.warmup;  // absent for the default, as in sweeps written before --warmup
  if (!g.machine_set.empty()) j["machine_set"] = g.machine_set;  // absent when none, as before --set
  return j;
}

Grid grid_from_json(const nlohmann::json& j, const std::string& where, const std::string& component,
                    const std::string& path) {
  JsonReader r(j, where, component, path);
  Grid g;
  g.machine = r.string("machine");
  g.workload = r.string("workload");
  g.duration = r.string("duration");
  g.kernels = r.string_list("kernels");
  g.threads.clear();
  for (const std::uint64_t t : r.unsigned_list("threads", 1, kMaxGridThreads)) {
    g.threads.push_back(static_cast<std::uint32_t>(t));
  }
  g.seeds = r.unsigned_list("seeds", 0, kMaxGridSeed);
  g.metric = r.string("metric");
  if (r.has("params")) g.params = r.string_list("params");
  if (r.has("warmup")) g.warmup = r.string("warmup");
  if (r.has("machine_set")) g.machine_set = r.string_list("machine_set");
  r.finish();
  std::uint64_t points = 1;
  for (const auto& [key, size] : {std::pair{"kernels", g.kernels.size()}, std::pair{"threads", g.threads.size()},
                                  std::pair{"seeds", g.seeds.size()}}) {
    if (size == 0) r.fail(key, "expected a non-empty list");
    if (size > kMaxGridPoints / points) {
      r.fail(key, fmt::format("the grid has more than {} points (kernels x threads x seeds)", kMaxGridPoints));
    }
    points *= size;
  }
  return g;
}

std::vector<std::uint64_t> parse_seed_list(const std::string& text) {
  std::vector<std::uint64_t> out;
  for (std::uint32_t s : parse_int_list(text, "--seeds", 0, kMaxGridSeed)) out.push_back(s);
  return out;
}

std::vector<std::string> parse_name_list(const std::string& text, const std::string& what) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) throw InputError(fmt::format("{}: empty name in '{}'", what, text));
    if (std::find(out.begin(), out.end(), item) != out.end()) {
      throw InputError(fmt::format("{}: '{}' is listed twice in '{}'", what, item, text));
    }
    out.push_back(item);
  }
  if (out.empty()) throw InputError(fmt::format("{}: empty list", what));
  return out;
}

Shard parse_shard(const std::string& text) {
  const auto slash = text.find('/');
  Shard s;
  auto number = [&](std::string_view part, unsigned& v) {
    auto [p, ec] = std::from_chars(part.data(), part.data() + part.size(), v);
    return !part.empty() && ec == std::errc() && p == part.data() + part.size();
  };
  if (slash == std::string::npos || !number(std::string_view(text).substr(0, slash), s.index) ||
      !number(std::string_view(text).substr(slash + 1), s.count) || s.count == 0 || s.index < 1 || s.index > s.count) {
    throw InputError(fmt::format("--shard: '{}' is not i/N with 1 <= i <= N, e.g. 2/8", text));
  }
  return s;
}

}  // namespace tlbsim::sweep
