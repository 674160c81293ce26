#include "report/reproduce.h"

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
  h.within = !std::isnan(simulated) && simulated >= low && simulated <= high;
  return h;
}

std::vector<SeedReport> reproduce(const ReproduceOptions& o, std::ostream& progress) {
  std::vector<std::string> seeds = o.seeds;
  if (seeds.empty()) {
    for (const auto& e : Registry<Reproduction>::list()) seeds.push_back(e.name);
  }
  struct Job {
    std::size_t seed;
    std::size_t index;
    Point point;
  };
  std::vector<std::unique_ptr<Reproduction>> repros;
  std::vector<std::vector<workloads::RunOutput>> results;
  std::vector<Job> jobs;
  for (const std::string& s : seeds) {
    repros.push_back(Registry<Reproduction>::make("seed", s));
    const std::vector<Point> plan = repros.back()->plan(o.quick);
    results.emplace_back(plan.size());
    for (std::size_t i = 0; i < plan.size(); ++i) jobs.push_back(Job{repros.size() - 1, i, plan[i]});
  }
  // Validate every machine before starting any thread, so bad input fails fast and on this thread.
  std::vector<hw::Machine> machines;
  for (const Job& j : jobs) machines.push_back(hw::load_machine(j.point.machine));

  Progress bar(progress, "reproduce", jobs.size(), 0, o.progress_bar);
  run_parallel(
      jobs.size(), o.jobs,
      [&](std::size_t i) {
        results[jobs[i].seed][jobs[i].index] = workloads::run_workload(machines[i], jobs[i].point.spec);
      },
      [&](std::size_t i) {
        bar.point_done(fmt::format("{} {} {} threads", seeds[jobs[i].seed], jobs[i].point.spec.kernel,
                                   jobs[i].point.spec.threads));
      });
  bar.finish();

  std::vector<SeedReport> out;
  for (std::size_t s = 0; s < repros.size(); ++s) out.push_back(repros[s]->evaluate(results[s], o.quick));
  return out;
}

}  // namespace tlbsim::report
