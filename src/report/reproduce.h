// `tlbsim reproduce`: for each seed, the author's benchmark on a model of the author's machine, before and after
// the change, beside the figures the author published. Each seed is a self-registered Reproduction.
#pragma once

#include <cmath>
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "plot/svg_plot.h"
#include "workloads/run.h"

namespace tlbsim::report {

// One headline comparison. `simulated` is NaN when the model cannot produce it yet (then `within` is false and
// `note` says why). `tolerance` is [low, high]; without one, `target` states the inequality. Over several runs
// (run seeds 1..runs), `simulated` is the runs' mean and `spread` their [min, max].
struct Headline {
  std::string name;
  std::string published_text;  // as the author wrote it, e.g. "778913 / 614363 = 1.268"
  double published = NAN;
  double simulated = NAN;
  std::optional<std::pair<double, double>> tolerance;
  std::string target;  // e.g. "at least 30", used when there is no tolerance band
  bool within = false;
  std::string note;
  std::uint32_t runs = 1;
  std::optional<std::pair<double, double>> spread;
};

// A table: column names and rows of cells, already formatted.
struct Table {
  std::vector<std::string> columns;
  std::vector<std::vector<std::string>> rows;
};

struct SeedReport {
  std::string seed;      // "000".."004"
  std::string title;     // the change
  std::string source;    // the seed file the published figures come from
  std::string machine;   // the machine model
  std::string benchmark; // the author's command
  Table published;
  Table simulated;
  std::vector<Headline> headlines;
  std::vector<std::string> notes;
  plot::LinePlot curves;  // the figure against threads, published and simulated, when the seed measures one
  plot::BarChart bars;    // otherwise: published beside simulated, before and after
};

// One simulation a seed needs.
struct Point {
  std::string machine;
  workloads::RunSpec spec;
};

// Contract: plan() is a pure function of `quick`; evaluate() receives the outputs of plan()'s points in order.
class Reproduction {
 public:
  virtual ~Reproduction() = default;
  virtual std::vector<Point> plan(bool quick) const = 0;
  virtual SeedReport evaluate(const std::vector<workloads::RunOutput>& results, bool quick) const = 0;
};

// A run of `workload` with `threads` on `kernel` for `d` of simulated time (seed 1, default warm-up).
inline workloads::RunSpec run_spec(const char* kernel, const char* workload, std::uint32_t threads, sim::Duration d) {
  workloads::RunSpec s;
  s.kernel = kernel;
  s.workload = workload;
  s.threads = threads;
  s.duration = d;
  return s;
}
// A count for a table cell ("-" when not simulated).
std::string count_cell(double v);

// Sets `within` from the band (or leaves it to the caller when only a target is given).
// Whether `v` is simulated and lies in [low, high].
inline bool in_band(double v, double low, double high) { return !std::isnan(v) && v >= low && v <= high; }
Headline banded(std::string name, std::string published_text, double published, double simulated, double low,
                double high);

// A published before/after pair of figures at one thread count.
struct ThreadsPoint {
  std::uint32_t threads;
  double before, after;
};
// The curves of a change measured against threads: the published points, labelled "published " + each of `names`,
// and the simulated ones, "simulated before" and "simulated after", from `results` in plan order (before then after
// at each of `threads`).
plot::LinePlot threads_curves(std::string title, std::string y_label, const std::vector<ThreadsPoint>& published,
                              std::pair<std::string, std::string> names, const std::vector<std::uint32_t>& threads,
                              const std::vector<workloads::RunOutput>& results);

// A bar chart of published beside simulated figures per category (NaN: no bar).
plot::BarChart published_vs_simulated(std::string title, std::string y_label, std::vector<std::string> categories,
                                      std::vector<double> published, std::vector<double> simulated);

struct ReproduceOptions {
  std::vector<std::string> seeds;  // empty: all
  bool quick = false;
  unsigned runs = 0;               // runs of each point, with run seeds 1..runs (0: kDefaultRuns, 1 with quick)
  unsigned jobs = 1;               // simulations run in parallel
  bool progress_bar = false;       // redraw a bar (stderr is a terminal) instead of a line per point
};

// Runs of each point in a full reproduction, so that a headline carries its run-to-run spread.
inline constexpr unsigned kDefaultRuns = 3;

// Runs every point of the chosen seeds on `jobs` threads, printing progress to `progress`.
std::vector<SeedReport> reproduce(const ReproduceOptions& o, std::ostream& progress);
// One seed's report from its per-run reports (same plan, run seeds 1..n, in order): run 1's tables, plots and
// notes; each headline's mean and range over the runs. A banded headline is within when its mean is in the band;
// one with a target only when every run meets it.
SeedReport merge_runs(std::vector<SeedReport> per_run);

std::string render_table(const std::vector<SeedReport>& reports);
std::string render_markdown(const std::vector<SeedReport>& reports);
nlohmann::json render_json(const std::vector<SeedReport>& reports);

// The seed's plot (its curves, else its bars) as SVG; empty when the seed has neither.
std::string render_seed_svg(const SeedReport& s);
// Writes DIR/seed-NNN.svg for each seed that has a plot, atomically; returns the files' names.
std::vector<std::string> write_seed_plots(const std::vector<SeedReport>& reports, const std::string& dir);

}  // namespace tlbsim::report
