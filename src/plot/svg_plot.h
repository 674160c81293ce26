// Small SVG charts (line plots with min-max bands, grouped bars) for sweeps, reproductions and the report page.
#pragma once

#include <string>
#include <vector>

namespace tlbsim::plot {

// One line (or one bar per category). Non-finite values are left out.
struct Series {
  std::string name;
  std::vector<double> x, y;
  std::vector<double> lo, hi;  // a min-max band around y, same length as x; empty: no band
  bool dashed = false;
  int color = -1;  // palette index; -1: the series' position
};

struct LinePlot {
  std::string title, x_label, y_label;
  std::vector<Series> series;
};

// Bars grouped by category: series[s].y[c] is the bar of series s in category c (x is unused).
struct BarChart {
  std::string title, y_label;
  std::vector<std::string> categories;
  std::vector<Series> series;
};

// Contract: the output is a standalone <svg> element (no XML prolog, no external references, no scripts) and a
// pure function of the input: numbers are printed with fixed precision, so equal inputs give equal bytes.
std::string render_svg(const LinePlot& p);
std::string render_svg(const BarChart& c);

// A tick label: "0", "2.5", "150k", "1.25M".
std::string format_tick(double v);
// Escapes &, <, >, " and ' for XML text and attributes.
std::string xml_escape(const std::string& s);

}  // namespace tlbsim::plot
