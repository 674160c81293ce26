// The points journal: a line that is not what a sweep writes is refused with file:line and the field; a half line
// from a killed writer is dropped; two sweeps never write one directory at once.
#include "sweep/journal.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include "sweep/sweep.h"
#include "util/error.h"

namespace tlbsim::sweep {
namespace {

namespace fs = std::filesystem;

Grid small_grid() {
  Grid g;
  g.machine = "small-2s2c";
  g.duration = "50us";
  g.kernels = {"linux-5.17", "linux-5.17-seed000"};
  g.threads = {1, 2};
  g.seeds = {1, 2};
  return g;
}

PointResult result_at(const Grid& g, std::size_t index) {
  PointResult p;
  p.point = grid_point(g, index);
  p.value = 1000.0 + static_cast<double>(index);
  p.unit = "ops/s";
  p.ops = 10;
  p.events = 100;
  return p;
}

// A journal of small_grid() with points 0, 1 and 2, each line passed through `edit` (line 1 is the header).
std::string journal_text(const std::function<void(std::size_t, nlohmann::json&)>& edit = {}) {
  const Grid g = small_grid();
  std::vector<nlohmann::json> lines = {{{"tlbsim_sweep", 1}, {"grid", grid_to_json(g)}, {"shard", "1/1"}}};
  for (std::size_t i = 0; i < 3; ++i) lines.push_back(point_to_json(result_at(g, i)));
  std::string text;
  for (std::size_t n = 0; n < lines.size(); ++n) {
    if (edit) edit(n + 1, lines[n]);
    text += lines[n].dump() + "\n";
  }
  return text;
}

std::string refusal(const std::string& text) {
  try {
    parse_journal(text, "points.jsonl");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(Journal, ReadsWhatASweepWrites) {
  const std::optional<Journal> j = parse_journal(journal_text(), "points.jsonl");
  ASSERT_TRUE(j.has_value());
  EXPECT_EQ(j->points.size(), 3u);
  EXPECT_EQ(j->points[2].point.seed, 1u);
  EXPECT_EQ(j->points[2].point.threads, 2u);
  EXPECT_EQ(grid_to_json(j->grid), grid_to_json(small_grid()));
  EXPECT_FALSE(parse_journal("", "points.jsonl").has_value());
}

TEST(Journal, APointThatDisagreesWithTheGridOrIsOutOfRangeIsRefusedWithFileAndLine) {
  struct Case {
    std::size_t line;
    std::function<void(nlohmann::json&)> edit;
    const char* message;
  };
  const std::vector<Case> cases = {
      {3, [](nlohmann::json& p) { p["seed"] = 1; },
       "points.jsonl:3: sweep journal: 'seed': point 1 of the header's grid has seed 2, not 1"},
      {3, [](nlohmann::json& p) { p["index"] = 0; },
       "points.jsonl:3: sweep journal: 'seed': point 0 of the header's grid has seed 1, not 2"},
      {2, [](nlohmann::json& p) { p["threads"] = 4; },
       "points.jsonl:2: sweep journal: 'threads': point 0 of the header's grid has 1 threads, not 4"},
      {2, [](nlohmann::json& p) { p["kernel"] = "linux-6.13"; }, "points.jsonl:2: sweep journal: 'kernel': point 0"},
      {4, [](nlohmann::json& p) { p["index"] = 999; },
       "points.jsonl:4: sweep journal: 'index': expected an integer from 0 to 7, got 999"},
      {4, [](nlohmann::json& p) { p["index"] = -1; },
       "points.jsonl:4: sweep journal: 'index': expected an integer from 0 to 7, got -1"},
      {4, [](nlohmann::json& p) { p = point_to_json(result_at(small_grid(), 0)); },
       "points.jsonl:4: sweep journal: 'index': point 0 is journaled already, on line 2"},
      {2, [](nlohmann::json& p) { p["ops"] = 1.5; }, "points.jsonl:2: sweep journal: 'ops': expected an integer"},
      {2, [](nlohmann::json& p) { p["value"] = "fast"; },
       "points.jsonl:2: sweep journal: 'value': expected a number, got a string"},
      {2, [](nlohmann::json& p) { p.erase("unit"); }, "points.jsonl:2: sweep journal: missing required field 'unit'"},
      {2, [](nlohmann::json& p) { p["colour"] = "red"; }, "points.jsonl:2: sweep journal: unknown field 'colour'"},
      {1, [](nlohmann::json& h) { h["shard"] = "2/2"; },
       "points.jsonl:2: sweep journal: 'index': point 0 is not in this journal's shard 2/2"},
      {1, [](nlohmann::json& h) { h["shard"] = "0/2"; }, "points.jsonl:1: sweep journal: 'shard': '0/2' is not i/N"},
      {1,
       [](nlohmann::json& h) {
         h["grid"]["threads"] = {1, -2};
       },
       "points.jsonl:1: sweep journal: 'grid.threads[1]': expected an integer from 1 to 1048576, got -2"},
      {1, [](nlohmann::json& h) { h["grid"]["seeds"] = nlohmann::json::array(); },
       "points.jsonl:1: sweep journal: 'grid.seeds': expected a non-empty list"},
      {1, [](nlohmann::json& h) { h["grid"]["kernels"] = "linux-5.17"; },
       "points.jsonl:1: sweep journal: 'grid.kernels': expected an array of strings, got a string"},
      {1, [](nlohmann::json& h) { h["tlbsim_sweep"] = 2; },
       "points.jsonl:1: sweep journal: 'tlbsim_sweep': version 2 is not 1"},
      {1, [](nlohmann::json& h) { h["shard"] = 1; },
       "points.jsonl:1: sweep journal: 'shard': expected a string, got 1"},
  };
  for (const Case& c : cases) {
    const std::string what = refusal(journal_text([&](std::size_t line, nlohmann::json& j) {
      if (line == c.line) c.edit(j);
    }));
    EXPECT_NE(what.find(c.message), std::string::npos) << "expected '" << c.message << "' in: " << what;
    EXPECT_EQ(what.find("json.exception"), std::string::npos) << what;
  }
}

TEST(Journal, AHalfLineFromAKilledWriterIsDroppedAndAMalformedCompleteLineIsRefused) {
  const std::string whole = journal_text();
  const std::size_t last_line = whole.rfind('\n', whole.size() - 2) + 1;
  for (std::size_t cut = last_line; cut < whole.size(); cut += 7) {
    const std::optional<Journal> j = parse_journal(whole.substr(0, cut), "points.jsonl");
    ASSERT_TRUE(j.has_value());
    EXPECT_EQ(j->points.size(), 2u);
    EXPECT_EQ(j->valid_bytes, last_line);  // the next append cuts the half line off
  }
  EXPECT_EQ(refusal(whole.substr(0, whole.size() - 5) + "\n").rfind("points.jsonl:4: sweep journal: not JSON: ", 0),
            0u);
  EXPECT_EQ(refusal("\n"),
            "points.jsonl:1: sweep journal: not JSON: parse error at line 1, column 1: syntax error while parsing "
            "value - unexpected "
            "end of input; expected '[', '{', or a literal");
  EXPECT_EQ(refusal("{\"index\": 0}\n"), "points.jsonl:1: not a tlbsim sweep journal (no header line)");
  std::string huge = journal_text();
  huge.replace(huge.find("\"value\":1000.0"), 14, "\"value\":1e999");
  EXPECT_EQ(refusal(huge), "points.jsonl:2: sweep journal: not JSON: number overflow parsing '1e999'");
}

TEST(Journal, TwoSweepsOnOneDirectoryAtOnceAreRefused) {
  const std::string dir = (fs::temp_directory_path() / ("tlbsim_journal_lock_" + std::to_string(::getpid()))).string();
  fs::remove_all(dir);
  fs::create_directories(dir);
  SweepOptions o;
  o.grid = small_grid();
  o.out_dir = dir;
  {
    // As a running sweep holds it: flock(2) on DIR/.sweep.lock through another open file description.
    const int first = ::open((dir + "/.sweep.lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    ASSERT_GE(first, 0);
    ASSERT_EQ(::flock(first, LOCK_EX | LOCK_NB), 0);
    EXPECT_THROW(DirectoryLock second(dir), InputError);
    std::ostringstream progress;
    try {
      run_sweep(o, progress, nullptr);
      ADD_FAILURE() << "a second sweep ran";
    } catch (const InputError& e) {
      EXPECT_EQ(std::string(e.what()), "'" + dir + "' is in use by another tlbsim sweep or merge (it holds " + dir +
                                           "/.sweep.lock); wait for it to end, or choose another output directory");
    }
    EXPECT_FALSE(fs::exists(dir + "/points.jsonl"));
    ::close(first);
  }
  const DirectoryLock again(dir);  // released with its holder
  fs::remove_all(dir);
}

TEST(Journal, ResumingACorruptedJournalIsRefusedWithFileAndLine) {
  const std::string dir = (fs::temp_directory_path() / ("tlbsim_journal_bad_" + std::to_string(::getpid()))).string();
  fs::remove_all(dir);
  fs::create_directories(dir);
  {
    std::ofstream(dir + "/points.jsonl") << journal_text([](std::size_t line, nlohmann::json& j) {
      if (line == 3) j["seed"] = 1;
    });
  }
  SweepOptions o;
  o.grid = small_grid();
  o.out_dir = dir;
  o.resume = true;
  std::ostringstream progress;
  try {
    run_sweep(o, progress, nullptr);
    ADD_FAILURE() << "the corrupted journal was resumed";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).rfind(dir + "/points.jsonl:3: sweep journal: 'seed': ", 0), 0u) << e.what();
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tlbsim::sweep
