// The SVG writer: axes with nice ticks, labels, a legend, polylines, translucent bands and bars.
#include "plot/svg_plot.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace tlbsim::plot {

namespace {

constexpr double kWidth = 760, kHeight = 440;
constexpr double kLeft = 80, kRight = 210, kTop = 40, kBottom = 64;
constexpr double kPlotW = kWidth - kLeft - kRight, kPlotH = kHeight - kTop - kBottom;
constexpr const char* kPalette[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd",
                                    "#ff7f0e", "#8c564b", "#e377c2", "#7f7f7f"};

std::string num(double v) { return fmt::format("{:.1f}", v); }

const char* color(const Series& s, std::size_t i) {
  const std::size_t k = s.color >= 0 ? static_cast<std::size_t>(s.color) : i;
  return kPalette[k % std::size(kPalette)];
}

struct Range {
  double lo = std::numeric_limits<double>::infinity(), hi = -std::numeric_limits<double>::infinity();
  void add(double v) {
    if (!std::isfinite(v)) return;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  void settle() {
    if (!(lo <= hi)) lo = 0, hi = 1;
    if (hi == lo) hi = lo + (lo == 0 ? 1 : std::fabs(lo) * 0.1);
  }
};

double nice_step(double span, int target) {
  const double raw = span / target;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double norm = raw / mag;
  return (norm < 1.5 ? 1 : norm < 3 ? 2 : norm < 7 ? 5 : 10) * mag;
}

std::vector<double> ticks(double lo, double hi, double step) {
  std::vector<double> t;
  for (double k = std::ceil(lo / step - 1e-9); k * step <= hi + step * 1e-9; k += 1) t.push_back(k * step);
  return t;
}

// A y range from zero (or below, for negative data) up to a tick above the largest value.
Range y_range(Range r) {
  r.lo = std::min(0.0, r.lo);
  r.settle();
  const double step = nice_step(r.hi - r.lo, 5);
  r.hi = std::ceil(r.hi / step - 1e-9) * step;
  r.lo = std::floor(r.lo / step + 1e-9) * step;
  return r;
}

std::string header(const std::string& title) {
  std::string s = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n",
      kWidth, kHeight);
  s += fmt::format("<title>{}</title>\n", xml_escape(title));
  s += fmt::format("<rect x=\"0\" y=\"0\" width=\"{}\" height=\"{}\" fill=\"#ffffff\"/>\n", kWidth, kHeight);
  s += fmt::format("<text x=\"{}\" y=\"24\" text-anchor=\"middle\" font-size=\"15\" font-weight=\"bold\">{}</text>\n",
                   num(kLeft + kPlotW / 2), xml_escape(title));
  return s;
}

// Horizontal grid lines with y tick labels, the axes, and the y label.
std::string y_axis(const Range& y, const std::string& label) {
  auto py = [&](double v) { return kTop + kPlotH - (v - y.lo) / (y.hi - y.lo) * kPlotH; };
  std::string s;
  for (double t : ticks(y.lo, y.hi, nice_step(y.hi - y.lo, 5))) {
    s += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"#dddddd\"/>\n", num(kLeft), num(py(t)),
                     num(kLeft + kPlotW));
    s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\n", num(kLeft - 6), num(py(t) + 4),
                     format_tick(t));
  }
  s += fmt::format("<text x=\"16\" y=\"{0}\" text-anchor=\"middle\" transform=\"rotate(-90 16 {0})\">{1}</text>\n",
                   num(kTop + kPlotH / 2), xml_escape(label));
  s += fmt::format("<path d=\"M{0} {1} V{2} H{3}\" fill=\"none\" stroke=\"#333333\"/>\n", num(kLeft), num(kTop),
                   num(kTop + kPlotH), num(kLeft + kPlotW));
  return s;
}

std::string legend(const std::vector<Series>& series, bool bars) {
  std::string s;
  for (std::size_t i = 0; i < series.size(); ++i) {
    const double y = kTop + 10 + 20 * static_cast<double>(i);
    const double x = kLeft + kPlotW + 16;
    if (bars) {
      s += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"18\" height=\"10\" fill=\"{}\"/>\n", num(x), num(y - 5),
                       color(series[i], i));
    } else {
      s += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"{3}\" stroke-width=\"2\"{4}/>\n",
                       num(x), num(y), num(x + 18), color(series[i], i),
                       series[i].dashed ? " stroke-dasharray=\"5 3\"" : "");
    }
    s += fmt::format("<text x=\"{}\" y=\"{}\">{}</text>\n", num(x + 24), num(y + 4), xml_escape(series[i].name));
  }
  return s;
}

}  // namespace

std::string format_tick(double v) {
  auto trim = [](std::string s) {
    if (s.find('.') != std::string::npos) {
      while (s.back() == '0') s.pop_back();
      if (s.back() == '.') s.pop_back();
    }
    return s == "-0" ? "0" : s;
  };
  const double a = std::fabs(v);
  if (a >= 1e9) return trim(fmt::format("{:.3f}", v / 1e9)) + "G";
  if (a >= 1e6) return trim(fmt::format("{:.3f}", v / 1e6)) + "M";
  if (a >= 1e4) return trim(fmt::format("{:.3f}", v / 1e3)) + "k";
  return trim(fmt::format("{:.4f}", v));
}

std::string xml_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string render_svg(const LinePlot& p) {
  Range xr, yr;
  for (const Series& s : p.series) {
    for (std::size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
      if (!std::isfinite(s.x[i]) || !std::isfinite(s.y[i])) continue;
      xr.add(s.x[i]);
      yr.add(s.y[i]);
      if (i < s.lo.size()) yr.add(s.lo[i]);
      if (i < s.hi.size()) yr.add(s.hi[i]);
    }
  }
  xr.settle();
  const Range y = y_range(yr);
  auto px = [&](double v) { return kLeft + (v - xr.lo) / (xr.hi - xr.lo) * kPlotW; };
  auto py = [&](double v) { return kTop + kPlotH - (v - y.lo) / (y.hi - y.lo) * kPlotH; };
  std::string s = header(p.title) + y_axis(y, p.y_label);
  for (double t : ticks(xr.lo, xr.hi, nice_step(xr.hi - xr.lo, 6))) {
    s += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"#333333\"/>\n", num(px(t)),
                     num(kTop + kPlotH), num(kTop + kPlotH + 5));
    s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", num(px(t)), num(kTop + kPlotH + 19),
                     format_tick(t));
  }
  s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", num(kLeft + kPlotW / 2),
                   num(kHeight - 18), xml_escape(p.x_label));
  for (std::size_t k = 0; k < p.series.size(); ++k) {
    const Series& ser = p.series[k];
    std::vector<std::size_t> ok;
    for (std::size_t i = 0; i < ser.x.size() && i < ser.y.size(); ++i) {
      if (std::isfinite(ser.x[i]) && std::isfinite(ser.y[i])) ok.push_back(i);
    }
    const bool band = ser.lo.size() == ser.x.size() && ser.hi.size() == ser.x.size() && !ok.empty();
    if (band) {
      std::string pts;
      for (std::size_t i : ok) pts += fmt::format("{},{} ", num(px(ser.x[i])), num(py(ser.hi[i])));
      for (auto it = ok.rbegin(); it != ok.rend(); ++it) {
        pts += fmt::format("{},{} ", num(px(ser.x[*it])), num(py(ser.lo[*it])));
      }
      pts.pop_back();
      s += fmt::format("<polygon class=\"band\" points=\"{}\" fill=\"{}\" fill-opacity=\"0.18\" stroke=\"none\"/>\n",
                       pts, color(ser, k));
    }
    std::string pts;
    for (std::size_t i : ok) pts += fmt::format("{},{} ", num(px(ser.x[i])), num(py(ser.y[i])));
    if (!pts.empty()) pts.pop_back();
    s += fmt::format("<polyline class=\"series\" points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"{}/>\n",
                     pts, color(ser, k), ser.dashed ? " stroke-dasharray=\"5 3\"" : "");
    for (std::size_t i : ok) {
      s += fmt::format("<circle cx=\"{}\" cy=\"{}\" r=\"2.5\" fill=\"{}\"/>\n", num(px(ser.x[i])), num(py(ser.y[i])),
                       color(ser, k));
    }
  }
  return s + legend(p.series, false) + "</svg>\n";
}

std::string render_svg(const BarChart& c) {
  Range yr;
  for (const Series& s : c.series) {
    for (double v : s.y) yr.add(v);
  }
  const Range y = y_range(yr);
  auto py = [&](double v) { return kTop + kPlotH - (v - y.lo) / (y.hi - y.lo) * kPlotH; };
  std::string s = header(c.title) + y_axis(y, c.y_label);
  const double group = kPlotW / static_cast<double>(std::max<std::size_t>(1, c.categories.size()));
  const double bar = group * 0.8 / static_cast<double>(std::max<std::size_t>(1, c.series.size()));
  for (std::size_t ci = 0; ci < c.categories.size(); ++ci) {
    const double x0 = kLeft + group * static_cast<double>(ci) + group * 0.1;
    for (std::size_t k = 0; k < c.series.size(); ++k) {
      if (ci >= c.series[k].y.size() || !std::isfinite(c.series[k].y[ci])) continue;
      const double v = c.series[k].y[ci];
      const double top = py(std::max(v, 0.0)), bottom = py(std::min(v, 0.0));
      s += fmt::format(
          "<rect class=\"bar\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"><title>{}: {}</title></rect>\n",
          num(x0 + bar * static_cast<double>(k)), num(top), num(bar), num(bottom - top), color(c.series[k], k),
          xml_escape(c.series[k].name), format_tick(v));
    }
    s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" font-size=\"11\">{}</text>\n",
                     num(x0 + group * 0.4), num(kTop + kPlotH + 18), xml_escape(c.categories[ci]));
  }
  return s + legend(c.series, true) + "</svg>\n";
}

}  // namespace tlbsim::plot
