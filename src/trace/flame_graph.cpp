#include "trace/flame_graph.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <functional>

#include "plot/svg_plot.h"

namespace tlbsim::trace {

namespace {

constexpr double kWidth = 1200;
constexpr double kFrameHeight = 16;
constexpr double kPad = 10;
constexpr double kTitleHeight = 40;

// flamegraph.pl's "hot" palette, chosen by the name so that one function keeps one colour; the classes and the
// pseudo-frames (cache lines, spins, halts) get their own hues.
std::string colour(std::string_view name) {
  const std::uint32_t h = static_cast<std::uint32_t>(std::hash<std::string_view>{}(name)&0xffffffu);
  const auto v = [h](int shift, int range) {
    return static_cast<int>((h >> shift) % static_cast<std::uint32_t>(range));
  };
  if (!name.empty() && name.front() == '[') return "rgb(180,180,190)";
  if (name.starts_with("line: ")) return fmt::format("rgb({},{},255)", 80 + v(0, 60), 140 + v(8, 60));
  if (name.starts_with("spin: ") || name.starts_with("poll: "))
    return fmt::format("rgb(255,{},{})", 60 + v(0, 60), 60 + v(8, 40));
  if (name == "halt") return "rgb(160,200,160)";
  return fmt::format("rgb({},{},{})", 205 + v(0, 50), v(8, 230), v(16, 55));
}

}  // namespace

std::string flame_graph_svg(const Profiler& profile, std::string_view title) {
  const auto& nodes = profile.nodes();
  const auto& names = profile.names();
  const std::vector<sim::Duration> sub = profile.subtree_times();
  std::vector<std::size_t> depth(nodes.size(), 0);
  std::size_t depth_max = 0;
  for (std::size_t i = 1; i < nodes.size(); ++i) {
    depth[i] = depth[nodes[i].parent] + 1;
    if (sub[i].count() > 0) depth_max = std::max(depth_max, depth[i]);
  }
  const double total = static_cast<double>(std::max<std::int64_t>(sub[0].count(), 1));
  // The root row at the bottom, callees above their callers.
  const double height = kTitleHeight + static_cast<double>(depth_max) * kFrameHeight + kPad;
  std::string out;
  const auto draw = [&](auto& self_ref, std::uint32_t n, double x) -> void {
    std::vector<std::uint32_t> kids = nodes[n].children;
    std::sort(kids.begin(), kids.end(),
              [&](std::uint32_t a, std::uint32_t b) { return names[nodes[a].name] < names[nodes[b].name]; });
    for (const std::uint32_t c : kids) {
      const double w = (kWidth - 2 * kPad) * static_cast<double>(sub[c].count()) / total;
      if (w >= 0.1) {
        const std::string& name = names[nodes[c].name];
        const double y = height - kPad - static_cast<double>(depth[c]) * kFrameHeight;
        out += fmt::format("<g><title>{} ({}, {:.2f}%)</title>", plot::xml_escape(name), sim::format_duration(sub[c]),
                           100.0 * static_cast<double>(sub[c].count()) / total);
        out += fmt::format(R"(<rect x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{}" fill="{}" rx="2"/>)", x, y, w,
                           kFrameHeight - 1, colour(name));
        const auto fit = static_cast<std::size_t>(w / 7);
        if (fit >= 3) {
          const std::string shown = name.size() <= fit ? name : name.substr(0, fit - 2) + "..";
          out += fmt::format(R"(<text x="{:.1f}" y="{:.1f}">{}</text>)", x + 3, y + kFrameHeight - 4,
                             plot::xml_escape(shown));
        }
        out += "</g>\n";
        self_ref(self_ref, c, x);
      }
      x += w;
    }
  };
  draw(draw, 0, kPad);
  return fmt::format(
      R"svg(<?xml version="1.0" standalone="no"?>
<svg version="1.1" width="{:.0f}" height="{:.0f}" xmlns="http://www.w3.org/2000/svg" font-family="Verdana" font-size="12">
<rect x="0" y="0" width="100%" height="100%" fill="rgb(248,248,240)"/>
<text x="{:.0f}" y="24" text-anchor="middle" font-size="17">{}</text>
{}</svg>
)svg",
      kWidth, height, kWidth / 2, plot::xml_escape(std::string(title)), out);
}

}  // namespace tlbsim::trace
