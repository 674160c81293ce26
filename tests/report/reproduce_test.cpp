// `tlbsim reproduce --quick`: the headlines the model meets today stay met, and the report's shape is what
// docs/fidelity.md and the JSON consumers read.
#include "report/reproduce.h"

#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "util/error.h"

namespace tlbsim::report {
namespace {

const Headline& find(const SeedReport& s, const std::string& name) {
  for (const Headline& h : s.headlines) {
    if (h.name == name) return h;
  }
  throw std::runtime_error("no headline " + name);
}

std::vector<SeedReport> quick(std::vector<std::string> seeds) {
  std::ostringstream progress;
  ReproduceOptions o;
  o.seeds = std::move(seeds);
  o.quick = true;
  o.jobs = 2;
  auto r = reproduce(o, progress);
  EXPECT_NE(progress.str().find("points"), std::string::npos);
  return r;
}

TEST(Reproduce, Seed000HeadlinesLieInTheirBands) {
  const auto r = quick({"000"});
  ASSERT_EQ(r.size(), 1u);
  for (const char* name : {"ops/s after / before, 55 threads", "ops/s after / before, 1 thread",
                           "baseline ops/s at 1 thread, simulated / published",
                           "baseline ops/s at 55 threads, simulated / published"}) {
    EXPECT_TRUE(find(r[0], name).within) << name << ": " << find(r[0], name).simulated;
  }
}

TEST(Reproduce, Seed003AndSeed004HeadlinesLieInTheirBands) {
  const auto r = quick({"003", "004"});
  ASSERT_EQ(r.size(), 2u);
  EXPECT_TRUE(find(r[0], "cr3 loads in leave_mm, 5 s idle, before").within);
  EXPECT_TRUE(find(r[0], "cr3 loads in leave_mm, 5 s idle, after").within);
  EXPECT_TRUE(find(r[1], "context switches/s after / before, -t 768").within);
  const Headline& ipis = find(r[1], "lazy-mm shootdown IPIs, kernel build, patch 5 / patches 1-4");
  EXPECT_TRUE(ipis.within) << ipis.simulated;  // defined only when patches 1-4 sent some
}

TEST(Reproduce, Seed001KernelBuildTimeLiesInItsBand) {
  const auto r = quick({"001"});
  ASSERT_EQ(r.size(), 1u);
  EXPECT_TRUE(find(r[0], "kernel build wall time after / before").within);
}

// The headlines the model misses (seed 001's sys ratio, seed 002's time ratio; docs/fidelity-notes.md gives the
// causes found so far) are still computed from both kernels' runs and judged by their bands: a miss is printed as
// a miss, and the day the model meets a band the report says so. That the batched flush still defers is pinned by
// LruFileMmapRead.BatchingReplacesPerPageTlbieByOneIpiFanOutPerBatch; the lazy mm_cpumask by the Hackbench tests.
TEST(Reproduce, MissedHeadlinesAreComputedAndJudgedByTheirBands) {
  const auto r = quick({"001", "002"});
  ASSERT_EQ(r.size(), 2u);
  for (const Headline* h : {&find(r[0], "sys time after / before (lru-file-mmap-read)"),
                            &find(r[1], "hackbench time after / before")}) {
    ASSERT_TRUE(h->tolerance.has_value()) << h->name;
    ASSERT_TRUE(std::isfinite(h->simulated)) << h->name;
    EXPECT_GT(h->simulated, 0.5) << h->name << ": a ratio of two runs of the same workload";
    EXPECT_LT(h->simulated, 2.0) << h->name;
    const bool in_band = h->simulated >= h->tolerance->first && h->simulated <= h->tolerance->second;
    EXPECT_EQ(h->within, in_band) << h->name << ": " << h->simulated;
  }
  // Seed 001's table has a row per kernel (before, after, the LPID variant), each with its own sys time per page.
  ASSERT_EQ(r[0].simulated.rows.size(), 3u);
  for (const auto& row : r[0].simulated.rows) EXPECT_NE(row.at(2), "-") << row.at(0);
}

// The arm64 batched reclaim series' swap_bench (43b3dfdd0455): the Kunpeng ratio and the flush's share lie in their
// bands; the small part's target is judged (a miss today, docs/fidelity-notes.md), and the batch turns about one DSB
// ISH per page into two per round.
TEST(Reproduce, Arm64BatchedReclaimHeadlines) {
  const auto r = quick({"43b3dfdd0455"});
  ASSERT_EQ(r.size(), 1u);
  const Headline& kunpeng = find(r[0], "kunpeng920-2s64c: swap_bench time after / before");
  EXPECT_TRUE(kunpeng.within) << kunpeng.simulated;
  const Headline& share = find(r[0], "kunpeng920-2s64c: flush_tlb_page's share of the before run (ptep_clear_flush)");
  EXPECT_TRUE(share.within) << share.simulated;
  const Headline& small = find(r[0], "rpi4-a72-4c: swap_bench time after / before");
  ASSERT_TRUE(std::isfinite(small.simulated));
  EXPECT_EQ(small.within, small.simulated >= 0.97) << small.simulated;
  EXPECT_GT(small.simulated, kunpeng.simulated);  // the DSB ISH saved costs less on the 4-core part
  ASSERT_EQ(r[0].simulated.rows.size(), 2u);
  // DSB ISH per round, before (256 pages + tlb_end_vma; the window ends inside a round) and after.
  const std::string dsb = r[0].simulated.rows[0].at(4);
  EXPECT_NEAR(std::stod(dsb), 257, 15) << dsb;
  EXPECT_NEAR(std::stod(dsb.substr(dsb.find(", ") + 2)), 2, 0.5) << dsb;
  // The v6.6 release beside the series on v6.5: its shmem faults give up under the VMA lock after their fault-around
  // and run it again under mmap_lock, so it is slower than the series as measured.
  EXPECT_GT(std::stod(r[0].simulated.rows[0].at(6)), std::stod(r[0].simulated.rows[0].at(2)));
}

TEST(Reproduce, JsonHasTheHeadlineFieldsAndMarkdownEveryTable) {
  const auto r = quick({"003"});
  const nlohmann::json j = render_json(r);
  ASSERT_EQ(j.size(), 1u);
  for (const auto& h : j[0]["headlines"]) {
    for (const char* k : {"name", "published", "simulated", "tolerance", "within"}) EXPECT_TRUE(h.contains(k)) << k;
  }
  const std::string md = render_markdown(r);
  EXPECT_NE(md.find("## Seed 003"), std::string::npos);
  EXPECT_NE(md.find("| cr3 loads in leave_mm, 5 s idle, before | 2988 |"), std::string::npos) << md;
}

// merge_runs: the headline is the runs' mean with their range; a band judges the mean, a target every run.
TEST(Reproduce, RunsAreMergedIntoMeanAndRangeAndABandJudgesTheMean) {
  auto report = [](double banded_value, double target_value, bool target_met) {
    SeedReport s;
    s.seed = "00x";
    s.headlines.push_back(banded("ratio", "1.0", 1.0, banded_value, 0.80, 0.95));
    Headline t;
    t.name = "count";
    t.simulated = target_value;
    t.target = "at most 50";
    t.within = target_met;
    s.headlines.push_back(t);
    return s;
  };
  const SeedReport one = merge_runs({report(0.79, 10, true)});
  EXPECT_FALSE(one.headlines[0].spread) << "a single run has no range";
  EXPECT_EQ(one.headlines[0].runs, 1u);
  EXPECT_TRUE(one.notes.empty());

  // 0.79 alone is out of the band, but the mean of the three runs, 0.82, is in it.
  const SeedReport three = merge_runs({report(0.79, 10, true), report(0.84, 60, false), report(0.83, 20, true)});
  const Headline& h = three.headlines[0];
  EXPECT_EQ(h.runs, 3u);
  EXPECT_NEAR(h.simulated, 0.82, 1e-12);
  ASSERT_TRUE(h.spread);
  EXPECT_DOUBLE_EQ(h.spread->first, 0.79);
  EXPECT_DOUBLE_EQ(h.spread->second, 0.84);
  EXPECT_TRUE(h.within);
  // The target's mean (30) meets "at most 50", but one run did not: not within.
  EXPECT_NEAR(three.headlines[1].simulated, 30, 1e-12);
  EXPECT_FALSE(three.headlines[1].within);
  ASSERT_EQ(three.notes.size(), 1u);
  EXPECT_NE(three.notes[0].find("mean of 3 runs"), std::string::npos);

  // A run that could not simulate the figure makes it not simulated.
  const SeedReport nan = merge_runs({report(0.85, 10, true), report(NAN, 10, true)});
  EXPECT_TRUE(std::isnan(nan.headlines[0].simulated));
  EXPECT_FALSE(nan.headlines[0].within);
  EXPECT_FALSE(nan.headlines[0].spread);

  const nlohmann::json j = render_json({three});
  EXPECT_EQ(j[0]["headlines"][0]["runs"], 3);
  EXPECT_DOUBLE_EQ(j[0]["headlines"][0]["spread"][0].get<double>(), 0.79);
  EXPECT_NE(render_markdown({three}).find("| 0.820 (0.790 .. 0.840) |"), std::string::npos);
}

TEST(Reproduce, UnknownSeedIsRefused) {
  std::ostringstream progress;
  ReproduceOptions o;
  o.seeds = {"999"};
  EXPECT_THROW(reproduce(o, progress), InputError);
}

}  // namespace
}  // namespace tlbsim::report
