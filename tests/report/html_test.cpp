// The report page: built from a directory's reproduction, sweep, plots and traces; self-contained; and rendered by
// headless Chromium (Debian's chromium package; the test skips, saying so, where it is not installed).
#include "report/html.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "report/reproduce.h"
#include "sweep/sweep.h"
#include "util/atomic_file.h"
#include "util/error.h"

namespace tlbsim::report {
namespace {

namespace fs = std::filesystem;

std::size_t count(const std::string& s, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

// A seed report as a reproduction makes one, without its simulations.
SeedReport fake_seed() {
  SeedReport s;
  s.seed = "000";
  s.title = "x86/mm/tlb: avoid reading mm_tlb_gen <when possible>";
  s.source = "seeds/000.txt";
  s.machine = "skylake-sp-2s28c";
  s.benchmark = "will-it-scale tlb_flush1_threads";
  s.published = {{"threads", "baseline ops/s"}, {{"1", "159960"}, {"55", "614363"}}};
  s.simulated = {{"threads", "before ops/s"}, {{"1", "150000"}, {"55", "600000"}}};
  s.headlines.push_back(banded("ops/s after / before, 55 threads", "778913 / 614363 = 1.268", 1.268, 1.2, 1.1, 1.4));
  s.headlines.push_back(banded("ops/s after / before, 1 thread", "1.002", 1.002, 0.9, 0.97, 1.03));
  s.headlines[0].runs = 3;  // as merge_runs leaves a headline of three runs
  s.headlines[0].spread = std::make_pair(1.15, 1.25);
  s.notes.push_back("50ms simulated per point");
  s.curves.title = "seed 000";
  s.curves.series.push_back({"simulated before", {1, 55}, {150000, 600000}, {}, {}, false, 0});
  return s;
}

// A directory with a reproduction, its plot, a small sweep and a trace.
std::string fixture(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("tlbsim_report_test_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::vector<SeedReport> reports = {fake_seed()};
  write_file_atomic((dir / "reproduce.json").string(), render_json(reports).dump(2));
  write_seed_plots(reports, dir.string());
  sweep::SweepOptions o;
  o.grid.machine = "small-2s2c";
  o.grid.duration = "50us";
  o.grid.kernels = {"linux-5.17", "linux-5.17-seed000"};
  o.grid.threads = {1, 2};
  o.grid.seeds = {1, 2};
  o.out_dir = (dir / "sweep-a").string();
  o.jobs = 2;
  std::ostringstream progress;
  sweep::run_sweep(o, progress, nullptr);
  write_file_atomic((dir / "run1.trace.json").string(), "{\"traceEvents\": []}\n");
  return dir.string();
}

TEST(Report, PageHasTablesPlotsAndTraceLinksAndIsSelfContained) {
  const std::string dir = fixture("page");
  const std::string path = write_report_page(dir);
  EXPECT_EQ(path, dir + "/index.html");
  const std::string html = read_file(path);
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html.find("Seed 000: x86/mm/tlb: avoid reading mm_tlb_gen &lt;when possible&gt;"), std::string::npos);
  EXPECT_NE(html.find("<td>778913 / 614363 = 1.268</td>"), std::string::npos);
  EXPECT_NE(html.find("<td>1.200 (1.150 .. 1.250)</td>"), std::string::npos) << "the mean with its runs' range";
  EXPECT_NE(html.find("<td>0.900</td>"), std::string::npos) << "a single run has no range";
  EXPECT_NE(html.find("<td class=\"no\">NO</td>"), std::string::npos);  // 0.9 is outside 0.97 .. 1.03
  EXPECT_EQ(count(html, "<svg"), 2u);                                   // the seed's plot and the sweep's
  EXPECT_EQ(count(html, "<table"), 4u);                                 // published, simulated, headlines, sweep
  EXPECT_NE(html.find("<a href=\"run1.trace.json\">"), std::string::npos);
  EXPECT_NE(html.find("<a href=\"sweep-a/results.csv\">"), std::string::npos);
  // Self-contained: nothing to fetch.
  const std::regex external(R"((src|href)\s*=\s*"(https?:|//|file:))", std::regex::icase);
  EXPECT_FALSE(std::regex_search(html, external));
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
  EXPECT_EQ(html.find("@import"), std::string::npos);
  EXPECT_EQ(html.find(dir), std::string::npos);  // no absolute paths
  EXPECT_EQ(render_report_page(dir), html);      // deterministic
  fs::remove_all(dir);
}

TEST(Report, MissingOrUnwritableDirectoryIsAnInputError) {
  EXPECT_THROW(render_report_page("/nonexistent/tlbsim"), InputError);
  try {
    write_report_page("/proc/self");
    ADD_FAILURE();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("/proc/self/index.html"), std::string::npos) << e.what();
  }
}

TEST(Report, EmptyDirectorySaysThereIsNothing) {
  const fs::path dir = fs::temp_directory_path() / ("tlbsim_report_empty_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  EXPECT_NE(render_report_page(dir.string()).find("Nothing to report"), std::string::npos);
  fs::remove_all(dir);
}

// Runs a shell command; returns its exit status.
int shell(const std::string& cmd) { return std::system(cmd.c_str()); }

// Appended to a copy of the page (the page itself has no scripts): after loading, what the browser fetched, the
// plots it laid out with a size, and the broken images, as JSON in <pre id="tlbsim-check">.
constexpr const char* kCheckScript = R"(<script>
window.addEventListener('load', () => {
  const visible = sel => [...document.querySelectorAll(sel)].filter(e => e.getBoundingClientRect().width > 0).length;
  const p = document.createElement('pre');
  p.id = 'tlbsim-check';
  p.textContent = JSON.stringify({resources: performance.getEntriesByType('resource').map(e => e.name),
    svgs: visible('svg'), tables: visible('table'), rows: document.querySelectorAll('tr').length,
    broken_images: [...document.images].filter(i => !(i.complete && i.naturalWidth > 0)).length});
  document.body.appendChild(p);
});
</script>
)";

TEST(ReportChromium, HeadlessChromiumRendersTheTablesAndPlotsAndLoadsNothing) {
  if (shell("command -v chromium >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "chromium is not installed (Debian package 'chromium'; scripts/setup.sh installs it)";
  }
  const std::string dir = fixture("chromium");
  const std::string page = write_report_page(dir);
  std::string html = read_file(page);
  html.insert(html.rfind("</body>"), kCheckScript);
  const std::string checked = dir + "/check.html", dom = dir + "/dom.txt", log = dir + "/chromium.log";
  write_file_atomic(checked, html);
  const std::string chromium =
      "timeout 120 chromium --headless --no-sandbox --disable-gpu --no-first-run "
      "--disable-extensions --virtual-time-budget=5000 --user-data-dir=" +
      dir + "/profile";
  ASSERT_EQ(shell(chromium + " --dump-dom file://" + checked + " >" + dom + " 2>" + log), 0) << read_file(log);
  const std::string rendered = read_file(dom);
  EXPECT_NE(rendered.find("<h1>tlbsim report</h1>"), std::string::npos) << rendered.substr(0, 2000);
  EXPECT_EQ(count(rendered, "<table"), 4u);
  EXPECT_EQ(count(rendered, "<svg"), 2u);
  EXPECT_GE(count(rendered, "<polyline class=\"series\""), 3u);  // the seed's curve and the sweep's two kernels
  const std::size_t at = rendered.find("<pre id=\"tlbsim-check\">");
  ASSERT_NE(at, std::string::npos) << "the check script did not run:\n" << read_file(log);
  const std::size_t from = at + std::string("<pre id=\"tlbsim-check\">").size();
  const auto check = nlohmann::json::parse(rendered.substr(from, rendered.find("</pre>", from) - from));
  EXPECT_EQ(check["resources"], nlohmann::json::array()) << "the page fetched something";
  EXPECT_EQ(check["broken_images"], 0);
  EXPECT_EQ(check["svgs"], 2) << "a plot was not laid out";
  EXPECT_EQ(check["tables"], 4);
  EXPECT_GE(check["rows"].get<int>(), 10);
  EXPECT_EQ(read_file(log).find("net::ERR"), std::string::npos) << read_file(log);
  const std::string png = dir + "/page.png";
  EXPECT_EQ(shell(chromium + " --window-size=1200,2600 --screenshot=" + png + " file://" + page + " >/dev/null 2>&1"),
            0);
  EXPECT_GT(fs::exists(png) ? fs::file_size(png) : 0, 10000u);
  if (std::getenv("TLBSIM_KEEP_REPORT") == nullptr) fs::remove_all(dir);
}

}  // namespace
}  // namespace tlbsim::report
