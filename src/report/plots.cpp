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

}  // namespace tlbsim::report
