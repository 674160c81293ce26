// Builds the report page from a directory's reproduction, sweep, plot and trace files.
#include "report/html.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <vector>

#include "plot/svg_plot.h"
#include "util/atomic_file.h"
#include "util/error.h"

namespace tlbsim::report {

namespace {

namespace fs = std::filesystem;
using plot::xml_escape;

constexpr const char* kStyle = R"(body{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
h1{border-bottom:2px solid #1f77b4}h2{margin-top:2em;border-bottom:1px solid #ccc}
table{border-collapse:collapse;margin:.6em 0 1.2em}th,td{border:1px solid #ccc;padding:3px 8px;text-align:left}
th{background:#f0f4f8}td.no{color:#b00;font-weight:bold}td.yes{color:#070}
figure{margin:1em 0}figcaption{font-size:90%;color:#555}p.meta{color:#555}code{background:#f4f4f4;padding:0 3px}
)";

std::string value_text(const nlohmann::json& v) {
  if (!v.is_number()) return "not simulated";
  const double d = v.get<double>();
  return std::fabs(d) >= 100 ? fmt::format("{:.0f}", d) : fmt::format("{:.3f}", d);
}

std::string table(const std::vector<std::string>& columns, const std::vector<std::vector<std::string>>& rows,
                  const std::string& cls = "") {
  std::string s = fmt::format("<table{}>\n<tr>", cls.empty() ? "" : " class=\"" + cls + "\"");
  for (const auto& c : columns) s += "<th>" + xml_escape(c) + "</th>";
  s += "</tr>\n";
  for (const auto& row : rows) {
    s += "<tr>";
    for (const auto& c : row)
      s += (c == "NO" ? "<td class=\"no\">" : c == "yes" ? "<td class=\"yes\">" : "<td>") + xml_escape(c) + "</td>";
    s += "</tr>\n";
  }
  return s + "</table>\n";
}

std::string json_table(const nlohmann::json& t) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& r : t.at("rows")) rows.push_back(r.get<std::vector<std::string>>());
  return table(t.at("columns").get<std::vector<std::string>>(), rows);
}

// An SVG file's <svg> element, for inlining (an XML prolog or doctype is dropped).
std::string inline_svg(const fs::path& p) {
  const std::string text = read_file(p.string());
  const std::size_t at = text.find("<svg");
  if (at == std::string::npos) throw InputError(fmt::format("{}: not an SVG file (no <svg> element)", p.string()));
  return text.substr(at);
}

std::string figure(const fs::path& dir, const fs::path& svg, std::set<fs::path>& shown) {
  shown.insert(svg);
  return fmt::format("<figure>\n{}<figcaption>{}</figcaption>\n</figure>\n", inline_svg(svg),
                     xml_escape(fs::relative(svg, dir).string()));
}

nlohmann::json read_json(const fs::path& p) {
  try {
    return nlohmann::json::parse(read_file(p.string()));
  } catch (const nlohmann::json::exception& e) {
    throw InputError(fmt::format("{}: not JSON: {}", p.string(), e.what()));
  }
}

std::string reproduction_section(const fs::path& dir, std::set<fs::path>& shown) {
  const fs::path path = dir / "reproduce.json";
  const nlohmann::json seeds = read_json(path);
  std::string s = "<h2 id=\"reproduction\">Reproduction: published beside simulated</h2>\n";
  try {
    for (const auto& seed : seeds) {
      const std::string id = seed.at("seed").get<std::string>();
      s += fmt::format("<h3 id=\"seed-{0}\">Seed {0}: {1}</h3>\n", xml_escape(id),
                       xml_escape(seed.at("title").get<std::string>()));
      s += fmt::format("<p class=\"meta\">Machine <code>{}</code>. {}.</p>\n",
                       xml_escape(seed.at("machine").get<std::string>()),
                       xml_escape(seed.at("benchmark").get<std::string>()));
      s += fmt::format("<p>Published (<code>{}</code>):</p>\n", xml_escape(seed.at("source").get<std::string>()));
      s += json_table(seed.at("published")) + "<p>Simulated:</p>\n" + json_table(seed.at("simulated"));
      std::vector<std::vector<std::string>> rows;
      std::vector<std::string> notes;
      for (const auto& h : seed.at("headlines")) {
        std::string band = h.contains("target") ? h["target"].get<std::string>() : "-";
        if (!h.contains("target") && h.at("tolerance").is_array()) {
          band = value_text(h["tolerance"][0]) + " .. " + value_text(h["tolerance"][1]);
        }
        std::string simulated = value_text(h.at("simulated"));
        if (h.contains("spread") && h["spread"].is_array()) {
          simulated += " (" + value_text(h["spread"][0]) + " .. " + value_text(h["spread"][1]) + ")";
        }
        rows.push_back({h.at("name").get<std::string>(), h.at("published_text").get<std::string>(), simulated, band,
                        h.at("within").get<bool>() ? "yes" : "NO"});
        if (h.contains("note")) notes.push_back(h["name"].get<std::string>() + ": " + h["note"].get<std::string>());
      }
      s += "<p>Headlines:</p>\n" +
           table({"headline", "published", "simulated", "must lie in", "within"}, rows, "headlines");
      for (const auto& n : seed.at("notes")) notes.push_back(n.get<std::string>());
      if (!notes.empty()) {
        s += "<ul>\n";
        for (const auto& n : notes) s += "<li>" + xml_escape(n) + "</li>\n";
        s += "</ul>\n";
      }
      const fs::path svg = dir / fmt::format("seed-{}.svg", id);
      if (fs::exists(svg)) s += figure(dir, svg, shown);
    }
  } catch (const nlohmann::json::exception& e) {
    throw InputError(fmt::format("{}: not `tlbsim reproduce --format json` output: {}", path.string(), e.what()));
  }
  return s;
}

std::string sweep_section(const fs::path& dir, const fs::path& results, std::set<fs::path>& shown) {
  const nlohmann::json j = read_json(results);
  std::string s;
  try {
    const auto& g = j.at("grid");
    const std::string where = fs::relative(results.parent_path(), dir).string();
    const std::string prefix = where == "." ? "" : where + "/";
    s += fmt::format("<h2 id=\"sweep{0}\">Sweep{1}: {2} on {3}</h2>\n", where == "." ? "" : "-" + xml_escape(where),
                     where == "." ? "" : " " + xml_escape(where), xml_escape(g.at("workload").get<std::string>()),
                     xml_escape(g.at("machine").get<std::string>()));
    std::string kernels;
    for (const auto& k : g.at("kernels")) kernels += (kernels.empty() ? "" : ", ") + k.get<std::string>();
    s += fmt::format(
        "<p class=\"meta\">Kernels {}; threads {}; seeds {}; {} simulated per point; {} of {} points{}.</p>\n",
        xml_escape(kernels), xml_escape(g.at("threads").dump()), xml_escape(g.at("seeds").dump()),
        xml_escape(g.at("duration").get<std::string>()), j.at("points").size(),
        j.at("expected_points").get<std::size_t>(), j.at("complete").get<bool>() ? "" : " (incomplete)");
    const fs::path svg = results.parent_path() / "results.svg";
    if (fs::exists(svg)) s += figure(dir, svg, shown);
    std::vector<std::vector<std::string>> rows;
    for (const auto& r : j.at("summary")) {
      rows.push_back({r.at("kernel").get<std::string>(), r.at("threads").dump(), r.at("seeds").dump(),
                      value_text(r.at("min")), value_text(r.at("mean")), value_text(r.at("max"))});
    }
    const std::string label = j.at("metric_label").get<std::string>();
    s += table({"kernel", "threads", "seeds", "min " + label, "mean " + label, "max " + label}, rows, "sweep");
    s += fmt::format(
        "<p>Every point: <a href=\"{0}results.csv\">{0}results.csv</a>, <a href=\"{0}results.json\">"
        "{0}results.json</a>.</p>\n",
        xml_escape(prefix));
  } catch (const nlohmann::json::exception& e) {
    throw InputError(fmt::format("{}: not a sweep's results.json: {}", results.string(), e.what()));
  }
  return s;
}

bool is_trace(const fs::path& p) {
  const std::string name = p.filename().string();
  for (const char* ext : {".json", ".jsonl", ".json.gz", ".pftrace", ".perfetto-trace", ".trace"}) {
    const std::string e = ext;
    if (name.size() > e.size() && name.compare(name.size() - e.size(), e.size(), e) == 0) return true;
  }
  return false;
}

}  // namespace

std::string render_report_page(const std::string& dir_text) {
  const fs::path dir(dir_text);
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw InputError(fmt::format("report: '{}' is not a directory", dir_text));
  std::vector<fs::path> files, subdirs;
  for (const auto& e : fs::directory_iterator(dir, ec)) (e.is_directory() ? subdirs : files).push_back(e.path());
  if (ec) throw InputError(fmt::format("report: cannot list '{}': {}", dir_text, ec.message()));
  std::sort(files.begin(), files.end());
  std::sort(subdirs.begin(), subdirs.end());

  std::set<fs::path> shown;  // files already on the page
  std::string body;
  if (fs::exists(dir / "reproduce.json")) {
    body += reproduction_section(dir, shown);
    shown.insert(dir / "reproduce.json");
  }
  std::vector<fs::path> sweeps;
  if (fs::exists(dir / "results.json")) sweeps.push_back(dir / "results.json");
  for (const auto& d : subdirs) {
    if (fs::exists(d / "results.json")) sweeps.push_back(d / "results.json");
  }
  for (const auto& r : sweeps) {
    body += sweep_section(dir, r, shown);
    shown.insert(r);
    shown.insert(r.parent_path() / "results.csv");
  }
  std::string plots, traces;
  for (const auto& f : files) {
    if (shown.count(f) != 0 || f.filename() == "index.html") continue;
    if (f.extension() == ".svg")
      plots += figure(dir, f, shown);
    else if (is_trace(f)) {
      traces += fmt::format("<li><a href=\"{0}\">{0}</a> ({1} bytes)</li>\n", xml_escape(f.filename().string()),
                            fs::file_size(f));
    }
  }
  if (!plots.empty()) body += "<h2 id=\"plots\">Plots</h2>\n" + plots;
  if (!traces.empty()) {
    body +=
        "<h2 id=\"traces\">Traces and data</h2>\n<p>Open a trace in a trace viewer; the links are relative to "
        "this page.</p>\n<ul>\n" +
        traces + "</ul>\n";
  }
  if (body.empty()) body = "<p>Nothing to report: no reproduce.json, sweep results, plots or traces here.</p>\n";
  return fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>tlbsim report</title>\n"
      "<style>\n{}</style>\n</head>\n<body>\n<h1>tlbsim report</h1>\n{}</body>\n</html>\n",
      kStyle, body);
}

std::string write_report_page(const std::string& dir) {
  const std::string path = dir + "/index.html";
  write_file_atomic(path, render_report_page(dir));
  return path;
}

}  // namespace tlbsim::report
