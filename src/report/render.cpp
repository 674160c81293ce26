// Renders reproduce results: an aligned text table, Markdown (docs/fidelity.md is written from it), and JSON.
#include <fmt/format.h>

#include <algorithm>

#include "report/reproduce.h"

namespace tlbsim::report {

namespace {

// "seed" for the five seeds ("000".."004"), "commit" for a published figure beyond them (named by its commit).
std::string entry_kind(const SeedReport& s, bool capital) {
  const bool seed =
      s.seed.size() == 3 && std::all_of(s.seed.begin(), s.seed.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (seed) return capital ? "Seed" : "seed";
  return capital ? "Commit" : "commit";
}

std::string fmt_value(double v) {
  if (std::isnan(v)) return "not simulated";
  if (std::isinf(v)) return "inf";
  return std::fabs(v) >= 100 ? fmt::format("{:.0f}", v) : fmt::format("{:.3f}", v);
}

std::string band(const Headline& h) {
  if (!h.target.empty()) return h.target;
  if (!h.tolerance) return "-";
  return fmt::format("{} .. {}", fmt_value(h.tolerance->first), fmt_value(h.tolerance->second));
}

std::string text_table(const Table& t, const std::string& indent) {
  std::vector<std::size_t> w(t.columns.size());
  for (std::size_t c = 0; c < t.columns.size(); ++c) w[c] = t.columns[c].size();
  for (const auto& row : t.rows) {
    for (std::size_t c = 0; c < row.size() && c < w.size(); ++c) w[c] = std::max(w[c], row[c].size());
  }
  std::string out;
  auto line = [&](const std::vector<std::string>& cells) {
    out += indent;
    for (std::size_t c = 0; c < cells.size() && c < w.size(); ++c) out += fmt::format("{:<{}}  ", cells[c], w[c]);
    while (!out.empty() && out.back() == ' ') out.pop_back();
    out += "\n";
  };
  line(t.columns);
  for (const auto& row : t.rows) line(row);
  return out;
}

std::string md_table(const Table& t) {
  std::string out = "|";
  for (const auto& c : t.columns) out += " " + c + " |";
  out += "\n|";
  for (std::size_t i = 0; i < t.columns.size(); ++i) out += "---|";
  out += "\n";
  for (const auto& row : t.rows) {
    out += "|";
    for (const auto& c : row) out += " " + c + " |";
    out += "\n";
  }
  return out;
}

// The simulated figure, with its range over the runs when there were several.
std::string simulated_cell(const Headline& h) {
  if (!h.spread) return fmt_value(h.simulated);
  return fmt::format("{} ({} .. {})", fmt_value(h.simulated), fmt_value(h.spread->first), fmt_value(h.spread->second));
}

Table headline_table(const SeedReport& s) {
  Table t{{"headline", "published", "simulated", "must lie in", "within"}, {}};
  for (const Headline& h : s.headlines) {
    t.rows.push_back({h.name, h.published_text, simulated_cell(h), band(h), h.within ? "yes" : "NO"});
  }
  return t;
}

}  // namespace

std::string render_table(const std::vector<SeedReport>& reports) {
  std::string out;
  for (const SeedReport& s : reports) {
    out += fmt::format("{} {}: {}\n  machine {}; {}\n  published ({}):\n", entry_kind(s, false), s.seed, s.title,
                       s.machine, s.benchmark, s.source);
    out += text_table(s.published, "    ");
    out += "  simulated:\n" + text_table(s.simulated, "    ");
    out += "  headlines:\n" + text_table(headline_table(s), "    ");
    for (const Headline& h : s.headlines) {
      if (!h.note.empty()) out += fmt::format("  note: {}: {}\n", h.name, h.note);
    }
    for (const std::string& n : s.notes) out += "  note: " + n + "\n";
    out += "\n";
  }
  return out;
}

std::string render_markdown(const std::vector<SeedReport>& reports) {
  std::string out =
      "# Fidelity: published beside simulated\n\n"
      "Written by `tlbsim reproduce --format markdown`; do not edit by hand. Each seed's published figures are\n"
      "transcribed from its seed file, and each later commit's from its message; the simulated ones come from the\n"
      "modeled kernels on the machine models.\n"
      "Where a headline is not within its band, [fidelity-notes.md](fidelity-notes.md) discusses the miss and its "
      "cause.\n\n";
  for (const SeedReport& s : reports) {
    out += fmt::format("## {} {}: {}\n\nMachine `{}`. {}.\n\nPublished (`{}`):\n\n", entry_kind(s, true), s.seed,
                       s.title, s.machine, s.benchmark, s.source);
    out += md_table(s.published) + "\nSimulated:\n\n" + md_table(s.simulated) + "\nHeadlines:\n\n" +
           md_table(headline_table(s)) + "\n";
    for (const Headline& h : s.headlines) {
      if (!h.note.empty()) out += fmt::format("- {}: {}\n", h.name, h.note);
    }
    for (const std::string& n : s.notes) out += "- " + n + "\n";
    out += "\n";
  }
  return out;
}

nlohmann::json render_json(const std::vector<SeedReport>& reports) {
  nlohmann::json j = nlohmann::json::array();
  auto num = [](double v) -> nlohmann::json { return std::isnan(v) || std::isinf(v) ? nlohmann::json(nullptr) : nlohmann::json(v); };
  for (const SeedReport& s : reports) {
    nlohmann::json seed;
    seed["seed"] = s.seed;
    seed["title"] = s.title;
    seed["source"] = s.source;
    seed["machine"] = s.machine;
    seed["benchmark"] = s.benchmark;
    seed["published"] = {{"columns", s.published.columns}, {"rows", s.published.rows}};
    seed["simulated"] = {{"columns", s.simulated.columns}, {"rows", s.simulated.rows}};
    seed["headlines"] = nlohmann::json::array();
    for (const Headline& h : s.headlines) {
      nlohmann::json x = {{"name", h.name}, {"published", num(h.published)}, {"published_text", h.published_text},
                          {"simulated", num(h.simulated)}, {"within", h.within}};
      x["tolerance"] = h.tolerance && h.target.empty() ? nlohmann::json::array({h.tolerance->first, h.tolerance->second})
                                                       : nlohmann::json(nullptr);
      if (!h.target.empty()) x["target"] = h.target;
      if (!h.note.empty()) x["note"] = h.note;
      x["runs"] = h.runs;
      x["spread"] = h.spread ? nlohmann::json::array({num(h.spread->first), num(h.spread->second)})
                             : nlohmann::json(nullptr);
      seed["headlines"].push_back(x);
    }
    seed["notes"] = s.notes;
    j.push_back(seed);
  }
  return j;
}

}  // namespace tlbsim::report
