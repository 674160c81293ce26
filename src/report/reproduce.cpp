#include "report/reproduce.h"

#include <atomic>
#include <chrono>
#include <mutex>
#include <ostream>
#include <thread>

#include <fmt/format.h>

#include "hw/machine.h"
#include "util/error.h"
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

  std::atomic<std::size_t> next{0}, done{0};
  std::mutex mu;
  std::exception_ptr error;
  const auto start = std::chrono::steady_clock::now();
  auto worker = [&] {
    for (;;) {
      const std::size_t i = next.fetch_add(1);
      if (i >= jobs.size()) return;
      try {
        workloads::RunOutput r = workloads::run_workload(machines[i], jobs[i].point.spec);
        std::lock_guard lock(mu);
        results[jobs[i].seed][jobs[i].index] = std::move(r);
        const std::size_t n = ++done;
        const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        progress << fmt::format("reproduce: {}/{} points ({} {} {} threads) {:.0f} s elapsed, about {:.0f} s left\n",
                                n, jobs.size(), seeds[jobs[i].seed], jobs[i].point.spec.kernel,
                                jobs[i].point.spec.threads, elapsed, elapsed / n * (jobs.size() - n));
      } catch (...) {
        std::lock_guard lock(mu);
        if (!error) error = std::current_exception();
        next = jobs.size();
      }
    }
  };
  std::vector<std::thread> threads;
  for (unsigned t = 1; t < std::max(1u, o.jobs); ++t) threads.emplace_back(worker);
  worker();
  for (auto& t : threads) t.join();
  if (error) std::rethrow_exception(error);

  std::vector<SeedReport> out;
  for (std::size_t s = 0; s < repros.size(); ++s) out.push_back(repros[s]->evaluate(results[s], o.quick));
  return out;
}

}  // namespace tlbsim::report
