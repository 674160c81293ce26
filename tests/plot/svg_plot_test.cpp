// The SVG writer: well-formed, deterministic, every series and band drawn, non-finite values left out.
#include "plot/svg_plot.h"

#include <gtest/gtest.h>

#include <cmath>

#include "plot/xml_check.h"

namespace tlbsim::plot {
namespace {

std::size_t count(const std::string& s, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

LinePlot two_kernels() {
  LinePlot p;
  p.title = "tlb_flush1 <on> \"small\" & co";
  p.x_label = "threads";
  p.y_label = "ops/s";
  p.series.push_back({"linux-5.17", {1, 5, 10}, {1.6e5, 3.1e5, 4.8e5}, {1.5e5, 3e5, 4.7e5}, {1.7e5, 3.2e5, 4.9e5}});
  p.series.push_back({"linux-5.17-seed000", {1, 5, 10}, {1.6e5, NAN, 4.9e5}, {}, {}, true, -1});
  return p;
}

TEST(Plot, LinePlotIsWellFormedWithLinesBandsAndLegend) {
  const std::string svg = render_svg(two_kernels());
  EXPECT_EQ(testing::xml_problem(svg), "") << svg;
  EXPECT_EQ(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0), 0u);
  EXPECT_EQ(count(svg, "<polyline class=\"series\""), 2u);
  EXPECT_EQ(count(svg, "<polygon class=\"band\""), 1u);
  EXPECT_NE(svg.find("fill-opacity=\"0.18\""), std::string::npos);
  EXPECT_NE(svg.find(">linux-5.17-seed000</text>"), std::string::npos);
  EXPECT_NE(svg.find("tlb_flush1 &lt;on&gt; &quot;small&quot; &amp; co"), std::string::npos);
  EXPECT_NE(svg.find(">threads</text>"), std::string::npos);
  EXPECT_EQ(count(svg, "<circle"), 5u);  // the NaN point is left out
  EXPECT_NE(svg.find(">500k</text>"), std::string::npos) << svg;
  EXPECT_EQ(svg, render_svg(two_kernels()));
}

TEST(Plot, BarChartIsWellFormed) {
  BarChart c;
  c.title = "seed 002";
  c.y_label = "time (s)";
  c.categories = {"before", "after"};
  c.series = {{"published", {}, {4.5, 4.2}, {}, {}, false, 7}, {"simulated", {}, {4.4, NAN}, {}, {}, false, 0}};
  const std::string svg = render_svg(c);
  EXPECT_EQ(testing::xml_problem(svg), "") << svg;
  EXPECT_EQ(count(svg, "<rect class=\"bar\""), 3u);
  EXPECT_NE(svg.find(">after</text>"), std::string::npos);
}

TEST(Plot, EmptyAndDegenerateInputsStillRender) {
  EXPECT_EQ(testing::xml_problem(render_svg(LinePlot{})), "");
  LinePlot one;
  one.series.push_back({"one", {3}, {0}, {}, {}, false, -1});
  EXPECT_EQ(testing::xml_problem(render_svg(one)), "");
  EXPECT_EQ(testing::xml_problem(render_svg(BarChart{})), "");
}

TEST(Plot, TickLabels) {
  EXPECT_EQ(format_tick(0), "0");
  EXPECT_EQ(format_tick(2.5), "2.5");
  EXPECT_EQ(format_tick(150000), "150k");
  EXPECT_EQ(format_tick(1250000), "1.25M");
  EXPECT_EQ(format_tick(-0.0), "0");
}

TEST(Plot, TheCheckerCatchesBrokenSvg) {
  EXPECT_NE(testing::xml_problem("<svg><g></svg>"), "");
  EXPECT_NE(testing::xml_problem("<svg><line x1=\"nan\"/></svg>"), "");
  EXPECT_NE(testing::xml_problem("<svg a=\"1></svg>"), "");
}

}  // namespace
}  // namespace tlbsim::plot
