#include "report/reproduce.h"

#include <algorithm>
#include <cmath>
#include <ostream>

#include <fmt/format.h>

#include "hw/machine.h"
#include "util/error.h"
#include "util/parallel.h"
#include "util/progress.h"
#include "util/registry.h"

namespace tlbsim::report {

std::string count_cell(double v) { return std::isnan(v) ? "-" : fmt::format("{:.0f}", v); }

Headline banded(std::string name, std::string published_text, double published, double simulated, double low,
                double high) {
  Headline h;
  h.name = std::move(name);
  h.published_text = std::move(published_text);
  h.published = published;
  h.simulated = simulated;
  h.tolerance = std::make_pair(low, high);
  h.within = in_band(simulated, low, high);
  return h;
}

SeedReport merge_runs(std::vector<SeedReport> per_run) {
  SeedReport out = std::move(per_run.front());
  const std::size_t n = per_run.size();
  if (n == 1) return out;
  for (std::size_t i = 0; i < out.headlines.size(); ++i) {
    Headline& h = out.headlines[i];
    double sum = 0, lo = INFINITY, hi = -INFINITY;
    bool every_run_within = true;
    for (std::size_t r = 0; r < n; ++r) {
      const Headline& x = r == 0 ? h : per_run[r].headlines.at(i);
      sum += x.simulated;  // a NaN in any run makes the mean NaN: not simulated
      lo = std::min(lo, x.simulated);
      hi = std::max(hi, x.simulated);
      every_run_within = every_run_within && x.within;
    }
    h.runs = static_cast<std::uint32_t>(n);
    h.simulated = sum / static_cast<double>(n);
    if (std::isnan(h.simulated)) {
      h.within = false;
      continue;
    }
    h.spread = std::make_pair(lo, hi);
    h.within = h.target.empty() && h.tolerance ? in_band(h.simulated, h.tolerance->first, h.tolerance->second)
                                               : every_run_within;
  }
  out.notes.push_back(fmt::format(
      "Headlines: the mean of {} runs (--seed 1..{}), their range in brackets; the tables and the plot are run 1's.", n,
      n));
  return out;
}

std::vector<SeedReport> reproduce(const ReproduceOptions& o, std::ostream& progress) {
  std::vector<std::string> seeds = o.seeds;
  if (seeds.empty()) {
    for (const auto& e : Registry<Reproduction>::list()) seeds.push_back(e.name);
  }
  const unsigned runs = o.runs != 0 ? o.runs : (o.quick ? 1 : kDefaultRuns);
  struct Job {
    std::size_t seed;
    unsigned run;
    std::size_t index;
    Point point;
  };
  std::vector<std::unique_ptr<Reproduction>> repros;
  std::vector<std::vector<std::vector<workloads::RunOutput>>> results;  // [seed][run][point]
  std::vector<Job> jobs;
  for (const std::string& s : seeds) {
    repros.push_back(Registry<Reproduction>::make("seed", s));
    const std::vector<Point> plan = repros.back()->plan(o.quick);
    results.emplace_back(runs, std::vector<workloads::RunOutput>(plan.size()));
    for (unsigned r = 0; r < runs; ++r) {
      for (std::size_t i = 0; i < plan.size(); ++i) {
        Job j{repros.size() - 1, r, i, plan[i]};
        j.point.spec.seed += r;
        jobs.push_back(std::move(j));
      }
    }
  }
  // Validate every machine before starting any thread, so bad input fails fast and on this thread.
  std::vector<hw::Machine> machines;
  for (const Job& j : jobs) machines.push_back(hw::load_machine(j.point.machine));

  Progress bar(progress, "reproduce", jobs.size(), 0, o.progress_bar);
  run_parallel(
      jobs.size(), o.jobs,
      [&](std::size_t i) {
        results[jobs[i].seed][jobs[i].run][jobs[i].index] = workloads::run_workload(machines[i], jobs[i].point.spec);
      },
      [&](std::size_t i) {
        bar.point_done(fmt::format("{} {} {} threads{}", seeds[jobs[i].seed], jobs[i].point.spec.kernel,
                                   jobs[i].point.spec.threads,
                                   runs > 1 ? fmt::format(" run {}", jobs[i].run + 1) : std::string()));
      });
  bar.finish();

  std::vector<SeedReport> out;
  for (std::size_t s = 0; s < repros.size(); ++s) {
    std::vector<SeedReport> per_run;
    for (unsigned r = 0; r < runs; ++r) per_run.push_back(repros[s]->evaluate(results[s][r], o.quick));
    out.push_back(merge_runs(std::move(per_run)));
  }
  return out;
}

}  // namespace tlbsim::report
