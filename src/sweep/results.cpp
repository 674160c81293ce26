// Rendering a sweep's points as CSV, JSON and a plot.
#include "sweep/results.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "util/atomic_file.h"

namespace tlbsim::sweep {

namespace {

struct Summary {
  std::string kernel;
  std::uint32_t threads;
  double min, mean, max;
  std::size_t n;
};

// Min, mean and max over seeds for each (kernel, threads), in grid order.
std::vector<Summary> summarize(const Grid& grid, const std::vector<PointResult>& points) {
  std::vector<Summary> out;
  for (const std::string& k : grid.kernels) {
    for (std::uint32_t t : grid.threads) {
      Summary s{k, t, 0, 0, 0, 0};
      double sum = 0;
      for (const PointResult& p : points) {
        if (p.point.kernel != k || p.point.threads != t) continue;
        s.min = s.n == 0 ? p.value : std::min(s.min, p.value);
        s.max = s.n == 0 ? p.value : std::max(s.max, p.value);
        sum += p.value;
        ++s.n;
      }
      if (s.n == 0) continue;
      s.mean = sum / static_cast<double>(s.n);
      out.push_back(s);
    }
  }
  return out;
}

std::string metric_label(const Grid& grid, const std::vector<PointResult>& points) {
  if (!grid.metric.empty()) return grid.metric;
  return points.empty() ? "metric" : points.front().unit;
}

}  // namespace

std::string render_csv(const std::vector<PointResult>& points) {
  std::string out = "index,kernel,threads,seed,value,unit,ops,events,violations\n";
  for (const PointResult& p : points) {
    out += fmt::format("{},{},{},{},{},{},{},{},{}\n", p.point.index, p.point.kernel, p.point.threads, p.point.seed,
                       p.value, p.unit, p.ops, p.events, p.violations);
  }
  return out;
}

nlohmann::json render_results_json(const Grid& grid, const std::vector<PointResult>& points) {
  nlohmann::json j;
  j["tlbsim_sweep_results"] = 1;
  j["grid"] = grid_to_json(grid);
  j["metric_label"] = metric_label(grid, points);
  j["expected_points"] = grid_points(grid).size();
  j["complete"] = points.size() == grid_points(grid).size();
  j["points"] = nlohmann::json::array();
  for (const PointResult& p : points) j["points"].push_back(point_to_json(p));
  j["summary"] = nlohmann::json::array();
  for (const Summary& s : summarize(grid, points)) {
    j["summary"].push_back({{"kernel", s.kernel},
                            {"threads", s.threads},
                            {"seeds", s.n},
                            {"min", s.min},
                            {"mean", s.mean},
                            {"max", s.max}});
  }
  return j;
}

plot::LinePlot sweep_plot(const Grid& grid, const std::vector<PointResult>& points) {
  plot::LinePlot p;
  const std::string label = metric_label(grid, points);
  p.title = fmt::format("{} on {}{}: {} against threads", grid.workload, grid.machine,
                        grid.machine_set.empty() ? "" : fmt::format(" ({})", fmt::join(grid.machine_set, ", ")), label);
  p.x_label = "threads";
  p.y_label =
      grid.seeds.size() > 1 ? fmt::format("{} (mean, min-max band over {} seeds)", label, grid.seeds.size()) : label;
  std::map<std::string, plot::Series> by_kernel;
  for (const Summary& s : summarize(grid, points)) {
    plot::Series& ser = by_kernel[s.kernel];
    ser.x.push_back(s.threads);
    ser.y.push_back(s.mean);
    ser.lo.push_back(s.min);
    ser.hi.push_back(s.max);
  }
  for (const std::string& k : grid.kernels) {
    auto it = by_kernel.find(k);
    if (it == by_kernel.end()) continue;
    it->second.name = k;
    if (grid.seeds.size() < 2) {  // one seed: no band to draw
      it->second.lo.clear();
      it->second.hi.clear();
    }
    p.series.push_back(std::move(it->second));
  }
  return p;
}

void write_results(const std::string& dir, const Grid& grid, const std::vector<PointResult>& points) {
  write_file_atomic(dir + "/results.csv", render_csv(points));
  write_file_atomic(dir + "/results.json", render_results_json(grid, points).dump(2) + "\n");
  write_file_atomic(dir + "/results.svg", plot::render_svg(sweep_plot(grid, points)));
}

}  // namespace tlbsim::sweep
