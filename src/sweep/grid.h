// A sweep's grid: one workload on one machine, every combination of kernel x threads x seed, in a fixed order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace tlbsim::sweep {

// Bounds on a grid read from a file: threads per point, seed values, and points (kernels x threads x seeds).
inline constexpr std::uint64_t kMaxGridThreads = 1u << 20;
inline constexpr std::uint64_t kMaxGridSeed = 1'000'000'000;
inline constexpr std::uint64_t kMaxGridPoints = 1'000'000'000;

struct Grid {
  std::string machine = "skylake-sp-2s28c";
  std::string workload = "tlb_flush1";
  std::string duration = "10ms";  // simulated time per point, as sim::parse_duration reads it
  std::string warmup;             // simulated warm-up before each point's window; "": a tenth of the duration
  std::vector<std::string> kernels = {"linux-5.17"};
  std::vector<std::uint32_t> threads = {1};
  std::vector<std::uint64_t> seeds = {1};
  // "" for the workload's own figure (ops/s, messages/s, ...); otherwise a dotted path into `tlbsim run --format
  // json`'s object, e.g. "counters.nr_tlb_remote_flush".
  std::string metric;
  // The workload's own parameters, NAME=VALUE (`--param`), the same at every point.
  std::vector<std::string> params;
  // Machine parameters replaced, KEY=VALUE (`--set`, hw/machine_set.h), the same at every point.
  std::vector<std::string> machine_set;
};

// One point of the grid; `index` is its place in grid_points() order.
struct GridPoint {
  std::size_t index = 0;
  std::string kernel;
  std::uint32_t threads = 1;
  std::uint64_t seed = 1;
};

// Kernel-major, then threads, then seed: the order shards and journals refer to.
std::vector<GridPoint> grid_points(const Grid& g);
// The number of grid_points() and the one at `index` (< grid_size(g)), without listing them all.
std::size_t grid_size(const Grid& g);
GridPoint grid_point(const Grid& g, std::size_t index);

// Checks every name and number (machine, kernels, workload, threads against the machine's CPUs, duration, metric
// path) before any point runs. Throws InputError saying which option and what is wrong.
void validate_grid(const Grid& g);

// The grid as recorded in journals and results; equal grids give equal JSON.
nlohmann::json grid_to_json(const Grid& g);
// Throws InputError "WHERE: COMPONENT: 'PATH.key': what was expected" when the JSON is not a grid (a missing, unknown
// or wrong-typed field, an empty list, threads or seeds outside their bounds, too many points).
Grid grid_from_json(const nlohmann::json& j, const std::string& where, const std::string& component = "sweep grid",
                    const std::string& path = "");

// Parses a list of seeds as parse_int_list does ("1..5", "1,3,7", "1-9:2").
std::vector<std::uint64_t> parse_seed_list(const std::string& text);
// Splits "A,B" into names; throws InputError for an empty name.
std::vector<std::string> parse_name_list(const std::string& text, const std::string& what);

// A slice of the grid: points whose index % count == index - 1.
struct Shard {
  unsigned index = 1, count = 1;
  bool owns(std::size_t point) const { return point % count == index - 1; }
};
// Parses "i/N" with 1 <= i <= N; throws InputError otherwise.
Shard parse_shard(const std::string& text);

}  // namespace tlbsim::sweep
