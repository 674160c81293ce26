// Counterexamples: shrinking to few decisions, the file round trip, and the replay printed in kernel terms.
#include "check/counterexample.h"

#include <gtest/gtest.h>

#include <functional>
#include <nlohmann/json.hpp>
#include <utility>

#include "check/explore.h"
#include "util/atomic_file.h"
#include "util/error.h"

namespace tlbsim::check {
namespace {

Counterexample found(const std::string& mutation, const std::string& scenario) {
  const CheckTarget t = make_target("linux-5.17", {}, {mutation}, scenario, "");
  ExploreSpec spec;
  spec.strategy = "random";  // random walks make many needless decisions: something to shrink
  spec.budget = 20000;
  const ExploreResult r = explore(t, spec);
  EXPECT_TRUE(r.found.has_value());
  return Counterexample{t, r.found->decisions, r.found->what, r.found->steps};
}

TEST(Counterexample, ShrinkingKeepsTheViolationWithFewerDecisions) {
  const Counterexample cx = found("switch_mm_reads_tlb_gen_before_cpumask", "switch_vs_madvise");
  const Counterexample small = shrink(cx);
  EXPECT_LT(small.decisions.size(), cx.decisions.size());
  EXPECT_LE(small.decisions.size(), 4u);
  EXPECT_TRUE(replay(small).violation);
  // 1-minimal: dropping any one decision loses the violation.
  for (std::size_t i = 0; i < small.decisions.size(); ++i) {
    Counterexample fewer = small;
    fewer.decisions.erase(fewer.decisions.begin() + static_cast<std::ptrdiff_t>(i));
    EXPECT_FALSE(replay(fewer).violation) << "decision " << i << " was not needed";
  }
}

TEST(Counterexample, FileRoundTripReplaysTheSameInterleaving) {
  const Counterexample cx = shrink(found("asid_slot_reuse_skips_tlb_gen", "switch_vs_madvise"));
  const std::string text = to_json_text(cx);
  const Counterexample back = parse_counterexample(text, "cx.json");
  EXPECT_EQ(back.decisions, cx.decisions);
  EXPECT_EQ(back.target.mutations, cx.target.mutations);
  const Replay a = replay(cx), b = replay(back);
  EXPECT_TRUE(a.violation);
  EXPECT_EQ(a.text, b.text);
  // Per-CPU columns in kernel terms, ending at the violation.
  EXPECT_NE(a.text.find("switch_mm_irqs_off"), std::string::npos) << a.text;
  EXPECT_NE(a.text.find("mm.tlb_gen"), std::string::npos) << a.text;
  EXPECT_NE(a.text.find("cpu1"), std::string::npos);
  EXPECT_EQ(a.text.rfind("VIOLATION: ", std::string::npos), a.text.find("VIOLATION: "));
  EXPECT_EQ(a.text.back(), '\n');
}

TEST(Counterexample, MalformedFilesAreInputErrorsNamingTheFile) {
  EXPECT_THROW(parse_counterexample("{", "bad.json"), InputError);
  EXPECT_THROW(parse_counterexample("{}", "bad.json"), InputError);
  try {
    parse_counterexample(R"({"tlbsim_counterexample": 1, "kernel": "linux-5.17", "options": [], "mutations": [],
      "scenario": "nosuch", "machine": "", "hardware_budget": 2, "max_steps": 100, "decisions": [],
      "violation": "", "steps": 0})",
                         "bad.json");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("bad.json"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("nosuch"), std::string::npos);
  }
}

// The file of finding F5, with `edit` applied to its JSON; the InputError's message ("" when it parses).
std::string refusal_of_f5_with(const std::function<void(nlohmann::json&)>& edit) {
  nlohmann::json j = nlohmann::json::parse(
      read_file(std::string(TLBSIM_SOURCE_DIR) + "/docs/counterexamples/f5-seed002-trim-skips-switching-cpu.json"));
  edit(j);
  try {
    parse_counterexample(j.dump(), "cx.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(Counterexample, EveryFieldIsCheckedAndErrorsNameTheFileAndTheField) {
  struct Case {
    std::function<void(nlohmann::json&)> edit;
    const char* message;
  };
  const std::vector<Case> cases = {
      {[](nlohmann::json& j) { j["decisions"][1]["action"] = "cpu99"; },
       "cx.json: counterexample file: 'decisions[1].action': expected an action cpuN, irqV@cpuN, timerT, hw@cpuN or "
       "sb@cpuN "
       "with N a CPU of the scenario (0..1), got \"cpu99\""},
      {[](nlohmann::json& j) { j["decisions"][0]["action"] = "hw:999999"; },
       "'decisions[0].action': expected an action cpuN"},
      {[](nlohmann::json& j) { j["decisions"][0]["action"] = "cpu01"; }, "'decisions[0].action'"},
      {[](nlohmann::json& j) { j["decisions"][0]["action"] = "sb@cpu9"; }, "'decisions[0].action'"},
      {[](nlohmann::json& j) { j["memory_model"] = "rvwmo"; },
       "cx.json: counterexample file: 'memory_model': unknown memory model 'rvwmo' (known: sc, tso, power, arm)"},
      {[](nlohmann::json& j) { j["memory_model"] = "Power"; }, "cx.json: counterexample file: 'memory_model'"},
      {[](nlohmann::json& j) { j["memory_model"] = ""; }, "cx.json: counterexample file: 'memory_model'"},
      {[](nlohmann::json& j) { j["memory_model"] = 3; }, "cx.json: counterexample file: 'memory_model'"},
      {[](nlohmann::json& j) { j["decisions"][0]["action"] = "irq1@cpu2"; }, "'decisions[0].action'"},
      {[](nlohmann::json& j) { j["steps"] = -5; },
       "cx.json: counterexample file: 'steps': expected an integer from 0 to 20000, got -5"},
      {[](nlohmann::json& j) { j["hardware_budget"] = -1; },
       "'hardware_budget': expected an integer from 0 to 1000, got -1"},
      {[](nlohmann::json& j) { j["decisions"][1]["step"] = 1e30; },
       "'decisions[1].step': expected an integer from 0 to 19999, got 1e+30"},
      {[](nlohmann::json& j) { j["decisions"][1]["step"] = 1.5; },
       "'decisions[1].step': expected an integer from 0 to 19999, got 1.5"},
      {[](nlohmann::json& j) { j["decisions"][1]["step"] = 0; },
       "'decisions[1].step': 0 does not follow step 0 of the decision before: steps must increase"},
      {[](nlohmann::json& j) { j["max_steps"] = 0; }, "'max_steps': expected an integer from 1 to 100000000, got 0"},
      {[](nlohmann::json& j) { j["options"] = "trim=on"; }, "'options': expected an array of strings, got a string"},
      {[](nlohmann::json& j) { j["mutations"] = {7}; }, "'mutations[0]': expected a string, got 7"},
      {[](nlohmann::json& j) {
         j["decisions"] = {{{"step", 3}}};
       },
       "missing required field 'decisions[0].action'"},
      {[](nlohmann::json& j) { j["decisions"][0]["why"] = "x"; }, "unknown field 'decisions[0].why'"},
      {[](nlohmann::json& j) { j["hardware_budgte"] = 2; }, "unknown field 'hardware_budgte'"},
      {[](nlohmann::json& j) { j["kernel"] = true; }, "'kernel': expected a string, got true"},
      {[](nlohmann::json& j) { j["kernel"] = "linux-9.9"; }, "'kernel': unknown kernel 'linux-9.9'"},
      {[](nlohmann::json& j) { j["options"] = {"nosuch=on"}; }, "'options[0]': "},
      {[](nlohmann::json& j) { j["tlbsim_counterexample"] = 2; }, "'tlbsim_counterexample': version 2 is not 1"},
      {[](nlohmann::json& j) { j = nlohmann::json::array(); }, "cx.json: counterexample file: expected a JSON object"},
  };
  // A number too large for a double is not JSON nlohmann reads (its out_of_range, not a parse_error).
  try {
    parse_counterexample(R"({"tlbsim_counterexample": 1e999})", "cx.json");
    ADD_FAILURE() << "1e999 was read";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "cx.json: counterexample file: not JSON: number overflow parsing '1e999'");
  }
  for (const Case& c : cases) {
    const std::string what = refusal_of_f5_with(c.edit);
    EXPECT_NE(what.find(c.message), std::string::npos) << "expected '" << c.message << "' in: " << what;
    EXPECT_EQ(what.find("json.exception"), std::string::npos) << what;
  }
  EXPECT_EQ(refusal_of_f5_with([](nlohmann::json&) {}), "");
  EXPECT_EQ(refusal_of_f5_with([](nlohmann::json& j) { j["decisions"][0]["action"] = "hw@cpu1"; }), "");
}

TEST(Counterexample, AReplayWhoseDecisionsAreNotAScheduleOfTheScenarioSaysWhichDecision) {
  const Counterexample cx = parse_counterexample(
      read_file(std::string(TLBSIM_SOURCE_DIR) + "/docs/counterexamples/f5-seed002-trim-skips-switching-cpu.json"),
      "f5");
  EXPECT_EQ(replay(cx).unapplied, "");
  Counterexample bad = cx;
  bad.decisions[0].label = "irq999@cpu1";  // a well-formed action, but no such interrupt is pending
  EXPECT_EQ(replay(bad).unapplied,
            "'decisions[0]' (step 0): action 'irq999@cpu1' is not offered at that step "
            "(offered: cpu0, cpu1, hw@cpu0, hw@cpu1)");
  bad = cx;
  bad.decisions.push_back(Decision{5000, "cpu0"});
  EXPECT_EQ(replay(bad).unapplied, "'decisions[2]' (step 5000): never reached: the run ended after 36 steps");
}

}  // namespace
}  // namespace tlbsim::check

namespace tlbsim::check {
namespace {

// docs/findings.md cites these files; each must still replay its violation, and the later fix (where one is
// modeled) must not violate on the same schedule.
TEST(Counterexample, TheFindingsCounterexamplesReplay) {
  const std::string dir = std::string(TLBSIM_SOURCE_DIR) + "/docs/counterexamples/";
  for (const char* name :
       {"f1-seed000-batched-flush-skipped.json", "f4-seed001-reclaimer-not-flushed.json",
        "f5-seed002-trim-skips-switching-cpu.json", "f6-mremap-flush-after-ptl-cve-2018-18281.json",
        "f7-thp-collapse-deposit-freed-under-lazy-pwc.json", "f8-seed002-switch-mm-no-smp-mb-tso.json"}) {
    const Counterexample cx = parse_counterexample(read_file(dir + name), name);
    const Replay r = replay(cx);
    EXPECT_TRUE(r.violation) << name;
    EXPECT_EQ(r.what, cx.violation) << name;
  }
  Counterexample f1 = parse_counterexample(read_file(dir + "f1-seed000-batched-flush-skipped.json"), "f1");
  f1.target = make_target("linux-5.17-seed000-fixed", {}, {}, f1.target.scenario, "");
  EXPECT_FALSE(replay(f1).violation) << "ignore_invalid_tlb_gen fixes F1 on the same schedule";
  Counterexample f5 = parse_counterexample(read_file(dir + "f5-seed002-trim-skips-switching-cpu.json"), "f5");
  f5.target = make_target("linux-6.13-seed002-trim-fixed", {}, {}, f5.target.scenario, "");
  EXPECT_FALSE(replay(f5).violation) << "should_flush_tlb_switching fixes F5 on the same schedule";
  f5.target = make_target("linux-6.13-seed002", {}, {}, f5.target.scenario, "");
  EXPECT_FALSE(replay(f5).violation) << "patch 1/3 alone IPIs every CPU in the mask that is not lazy";
  Counterexample f6 = parse_counterexample(read_file(dir + "f6-mremap-flush-after-ptl-cve-2018-18281.json"), "f6");
  f6.target = make_target("linux-3.3", {"move_ptes_flush_present=on"}, {}, f6.target.scenario, "");
  EXPECT_FALSE(replay(f6).violation) << "move_ptes_flush_present (eb66ae030829) fixes F6 on the same schedule";
  // F7 is x86's from v5.0 (lazy CPUs skipped by a flush that frees no table): powerpc's collapse flushes every CPU
  // of the mm; x86 v3.3 interrupts lazy CPUs too.
  Counterexample f7 = parse_counterexample(read_file(dir + "f7-thp-collapse-deposit-freed-under-lazy-pwc.json"), "f7");
  f7.target = make_target("linux-6.18", {}, {}, f7.target.scenario, "");
  EXPECT_TRUE(replay(f7).violation) << "F7 is still in v6.18's code";
  // F8 needs x86-TSO's store buffer; 83b0177a6c48's smp_mb() fixes it on the same schedule.
  Counterexample f8 = parse_counterexample(read_file(dir + "f8-seed002-switch-mm-no-smp-mb-tso.json"), "f8");
  EXPECT_EQ(f8.target.memory_model, hw::MemoryModel::kTso);
  const Counterexample f8_tso = f8;
  f8.target.memory_model = hw::MemoryModel::kSc;
  EXPECT_FALSE(replay(f8).violation) << "F8 is not a violation under sequential consistency";
  f8 = f8_tso;
  f8.target = make_target("linux-6.13-seed002", {"switch_mm_smp_mb=on"}, {}, f8.target.scenario, "");
  f8.target.memory_model = hw::MemoryModel::kTso;
  const Replay fixed = replay(f8);
  EXPECT_FALSE(fixed.violation) << "switch_mm_smp_mb (83b0177a6c48) fixes F8 on the same schedule";
  EXPECT_EQ(fixed.unapplied, "");
  // F9 needs POWER's propagation of the PTE clear; the later flush-side smp_mb() fixes it on the same schedule.
  Counterexample f9 = parse_counterexample(read_file(dir + "f9-radix-v414-flush-no-smp-mb-power.json"), "f9");
  EXPECT_EQ(f9.target.memory_model, hw::MemoryModel::kPower);
  EXPECT_TRUE(replay(f9).violation);
  const Counterexample f9_power = f9;
  f9.target.memory_model = hw::MemoryModel::kSc;
  EXPECT_FALSE(replay(f9).violation) << "F9 is not a violation under sequential consistency";
  f9 = f9_power;
  f9.target = make_target("linux-4.14-ppc", {"radix_flush_smp_mb=on"}, {}, f9.target.scenario, "");
  f9.target.memory_model = hw::MemoryModel::kPower;
  EXPECT_FALSE(replay(f9).violation) << "radix_flush_smp_mb fixes F9 on the same schedule";
  // F10: the later fix's flush_tlb_mm, and v6.5 (no batching), pass the same schedule.
  Counterexample f10 = parse_counterexample(read_file(dir + "f10-arm64-batched-pending-local-dsb.json"), "f10");
  EXPECT_EQ(f10.target.memory_model, hw::MemoryModel::kArm);
  const Replay posted = replay(f10);
  EXPECT_TRUE(posted.violation);
  EXPECT_EQ(posted.what, f10.violation);
  f10.target = make_target("linux-6.6-arm64", {"batched_pending_flush_tlb_mm=on"}, {}, f10.target.scenario, "");
  f10.target.memory_model = hw::MemoryModel::kArm;
  EXPECT_FALSE(replay(f10).violation) << "batched_pending_flush_tlb_mm fixes F10 on the same schedule";
  f10.target = make_target("linux-6.5-arm64", {}, {}, f10.target.scenario, "");
  f10.target.memory_model = hw::MemoryModel::kArm;
  EXPECT_FALSE(replay(f10).violation) << "v6.5 flushes each page before the PTE lock is released";
  // F10 through compaction (migrate_pages_batch defers its flush as reclaim does), from compact_memory and from
  // kcompactd, the kernel thread whose proactive pass compacts the node lazily in cpu1's mm.
  for (const auto& [file, scenario] : {std::pair{"f10b-arm64-compaction-vs-mprotect.json", "compact_vs_mprotect"},
                                       std::pair{"f10c-arm64-kcompactd-vs-mprotect.json", "kcompactd_vs_mprotect"}}) {
    Counterexample c = parse_counterexample(read_file(dir + file), file);
    EXPECT_EQ(c.target.scenario, scenario);
    EXPECT_TRUE(replay(c).violation) << file;
    c.target = make_target("linux-6.6-arm64", {"batched_pending_flush_tlb_mm=on"}, {}, c.target.scenario, "");
    c.target.memory_model = hw::MemoryModel::kArm;
    EXPECT_FALSE(replay(c).violation) << file << ": batched_pending_flush_tlb_mm fixes F10 this way too";
  }
}

// F10 is the TLBI's completion rule, not a memory ordering: PCT finds it under sequential consistency too, and not
// with the later fix.
TEST(Counterexample, F10IsFoundUnderScAndNotWithTheFix) {
  ExploreSpec spec;
  spec.strategy = "pct";
  spec.budget = 3000;
  CheckTarget t = make_target("linux-6.6-arm64", {}, {}, "mprotect_vs_reclaim", "");
  t.memory_model = hw::MemoryModel::kSc;
  EXPECT_TRUE(explore(t, spec).found.has_value());
  CheckTarget fixed = make_target("linux-6.6-arm64-fixed", {}, {}, "mprotect_vs_reclaim", "");
  fixed.memory_model = arch_memory_model(fixed.config.arch);
  EXPECT_EQ(fixed.memory_model, hw::MemoryModel::kArm);
  EXPECT_FALSE(explore(fixed, spec).found.has_value());
}

// POWER finds v4.14's radix flush without a barrier (F9) when a CPU joins the mm; the option with the later
// smp_mb(), v6.2 (which has it) and sequential consistency pass.
TEST(Counterexample, PowerFindsV414RadixFlushWithoutBarrierAndScDoesNot) {
  ExploreSpec spec;
  spec.strategy = "pct";
  spec.budget = 3000;
  CheckTarget t = make_target("linux-4.14-ppc", {}, {}, "join_vs_madvise", "");
  EXPECT_FALSE(explore(t, spec).found.has_value()) << "under sc";
  t.memory_model = arch_memory_model(t.config.arch);
  EXPECT_EQ(t.memory_model, hw::MemoryModel::kPower);
  EXPECT_TRUE(explore(t, spec).found.has_value());
  CheckTarget fixed = make_target("linux-4.14-ppc", {"radix_flush_smp_mb=on"}, {}, "join_vs_madvise", "");
  fixed.memory_model = hw::MemoryModel::kPower;
  EXPECT_FALSE(explore(fixed, spec).found.has_value());
  CheckTarget v62 = make_target("linux-6.2-ppc", {}, {}, "join_vs_madvise", "");
  v62.memory_model = hw::MemoryModel::kPower;
  EXPECT_FALSE(explore(v62, spec).found.has_value());
}

// x86-TSO finds seed 002's missing barrier on every profile that has the posted patch without 83b0177a6c48's fix,
// and sequential consistency never does; v6.18 (with the fix) and v5.17 (no lazy mm_cpumask) pass.
TEST(Counterexample, TsoFindsSeed002sMissingBarrierAndScDoesNot) {
  ExploreSpec spec;
  spec.strategy = "pct";
  spec.budget = 1000;
  for (const char* kernel : {"linux-6.13-seed002", "linux-6.13-seed002-trim-fixed", "linux-6.18", "linux-5.17"}) {
    CheckTarget t = make_target(kernel, {}, {}, "lazy_switch_vs_madvise", "");
    EXPECT_EQ(t.memory_model, hw::MemoryModel::kSc);
    EXPECT_FALSE(explore(t, spec).found.has_value()) << kernel << " under sc";
    t.memory_model = arch_memory_model(t.config.arch);
    const bool fixed = std::string(kernel) == "linux-6.18" || std::string(kernel) == "linux-5.17";
    EXPECT_EQ(explore(t, spec).found.has_value(), !fixed) << kernel << " under tso";
  }
}

}  // namespace
}  // namespace tlbsim::check
