// Fuzzes the sweep-journal reader (DIR/points.jsonl, read by `tlbsim sweep --resume` and `sweep merge`): any input
// must parse or raise InputError, never crash or throw otherwise; a journal that parses must render its results.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "sweep/journal.h"
#include "sweep/results.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    std::optional<tlbsim::sweep::Journal> j = tlbsim::sweep::parse_journal(text, "fuzz.jsonl");
    if (!j) return 0;
    // As `sweep merge` and the end of a sweep do: the points in index order, then the results files' texts.
    std::sort(j->points.begin(), j->points.end(),
              [](const auto& a, const auto& b) { return a.point.index < b.point.index; });
    (void)tlbsim::sweep::render_csv(j->points);
    (void)tlbsim::sweep::render_results_json(j->grid, j->points).dump();
    (void)tlbsim::plot::render_svg(tlbsim::sweep::sweep_plot(j->grid, j->points));
  } catch (const tlbsim::InputError&) {
  }
  return 0;
}
