// A sweep's results: CSV (one row per point), JSON (the grid, the points, a min/mean/max summary over seeds) and an
// SVG plot (metric against threads, one line per kernel, a min-max band over seeds).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "plot/svg_plot.h"
#include "sweep/journal.h"

namespace tlbsim::sweep {

// Contract: every function below takes the points sorted by index without duplicates, and is a pure function of
// grid and points (no times, no paths), so an interrupted-and-resumed or sharded-and-merged sweep gives the same
// bytes as one uninterrupted run.
std::string render_csv(const std::vector<PointResult>& points);
nlohmann::json render_results_json(const Grid& grid, const std::vector<PointResult>& points);
plot::LinePlot sweep_plot(const Grid& grid, const std::vector<PointResult>& points);

// Writes DIR/results.csv, DIR/results.json and DIR/results.svg, each atomically.
void write_results(const std::string& dir, const Grid& grid, const std::vector<PointResult>& points);

}  // namespace tlbsim::sweep
