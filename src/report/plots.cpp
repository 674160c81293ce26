// Each seed's plot for `tlbsim reproduce --plot DIR` and the report page.
#include <fmt/format.h>

#include "report/reproduce.h"
#include "util/atomic_file.h"

namespace tlbsim::report {

plot::BarChart published_vs_simulated(std::string title, std::string y_label, std::vector<std::string> categories,
                                      std::vector<double> published, std::vector<double> simulated) {
  plot::BarChart c;
  c.title = std::move(title);
  c.y_label = std::move(y_label);
  c.categories = std::move(categories);
  c.series = {plot::Series{"published", {}, std::move(published), {}, {}, false, 7},
              plot::Series{"simulated", {}, std::move(simulated), {}, {}, false, 0}};
  return c;
}

std::string render_seed_svg(const SeedReport& s) {
  if (!s.curves.series.empty()) return plot::render_svg(s.curves);
  if (!s.bars.categories.empty()) return plot::render_svg(s.bars);
  return "";
}

std::vector<std::string> write_seed_plots(const std::vector<SeedReport>& reports, const std::string& dir) {
  std::vector<std::string> names;
  for (const SeedReport& s : reports) {
    const std::string svg = render_seed_svg(s);
    if (svg.empty()) continue;
    names.push_back(fmt::format("seed-{}.svg", s.seed));
    write_file_atomic(dir + "/" + names.back(), svg);
  }
  return names;
}

plot::LinePlot threads_curves(std::string title, std::string y_label, const std::vector<ThreadsPoint>& published,
                              std::pair<std::string, std::string> names, const std::vector<std::uint32_t>& threads,
                              const std::vector<workloads::RunOutput>& results) {
  plot::LinePlot c;
  c.title = std::move(title);
  c.x_label = "threads";
  c.y_label = std::move(y_label);
  plot::Series pub_b{"published " + names.first, {}, {}, {}, {}, true, 0};
  plot::Series pub_a{"published " + names.second, {}, {}, {}, {}, true, 1};
  plot::Series sim_b{"simulated before", {}, {}, {}, {}, false, 0}, sim_a{"simulated after", {}, {}, {}, {}, false, 1};
  for (const ThreadsPoint& p : published) {
    pub_b.x.push_back(p.threads), pub_b.y.push_back(p.before);
    pub_a.x.push_back(p.threads), pub_a.y.push_back(p.after);
  }
  for (std::size_t i = 0; i < threads.size(); ++i) {
    sim_b.x.push_back(threads[i]), sim_b.y.push_back(results[2 * i].metric);
    sim_a.x.push_back(threads[i]), sim_a.y.push_back(results[2 * i + 1].metric);
  }
  c.series = {pub_b, pub_a, sim_b, sim_a};
  return c;
}

}  // namespace tlbsim::report
