// A flame graph of a profile (`tlbsim run --profile-svg`), as Brendan Gregg's flamegraph.pl draws one: each
// frame a box as wide as its time with everything above it, callers below callees, siblings in name order.
#pragma once

#include <string>
#include <string_view>

#include "trace/profile.h"

namespace tlbsim::trace {

// A standalone SVG document; hovering a box shows its function, time and share in a tooltip.
std::string flame_graph_svg(const Profiler& profile, std::string_view title);

}  // namespace tlbsim::trace
