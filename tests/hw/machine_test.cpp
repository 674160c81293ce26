#include "hw/machine.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "util/atomic_file.h"
#include "util/error.h"

namespace tlbsim::hw {
namespace {

std::string small_text() {
  for (const auto& f : builtin_machine_files()) {
    if (f.name == "small-2s2c") return std::string(f.text);
  }
  return {};
}

// Expects parsing to fail with a message containing every fragment.
void expect_error(const std::string& text, std::initializer_list<const char*> fragments) {
  try {
    parse_machine(text, "test.toml");
    ADD_FAILURE() << "no error for:\n" << text;
  } catch (const InputError& e) {
    for (const char* f : fragments) EXPECT_NE(std::string(e.what()).find(f), std::string::npos) << e.what();
  }
}

std::string replace(std::string s, const std::string& from, const std::string& to) {
  const auto pos = s.find(from);
  EXPECT_NE(pos, std::string::npos) << from;
  if (pos != std::string::npos) s.replace(pos, from.size(), to);
  return s;
}

TEST(Machine, EveryBuiltinMachineLoadsWithASourceForEveryLatency) {
  ASSERT_GE(builtin_machine_files().size(), 7u);
  for (const auto& f : builtin_machine_files()) {
    SCOPED_TRACE(std::string(f.name));
    const Machine m = load_machine(f.name);
    EXPECT_EQ(m.name, f.name);
    EXPECT_GE(m.latencies.size(), 15u);
    for (const auto& p : m.latencies) EXPECT_FALSE(p.source.empty()) << p.key;
    const Topology t(m.topology);
    EXPECT_EQ(t.cpu_count(), m.cpu_count());
  }
}

TEST(Machine, SeedMachinesHaveTheAuthorsTopologies) {
  EXPECT_EQ(load_machine("skylake-sp-2s28c").cpu_count(), 56u);
  EXPECT_EQ(load_machine("sandybridge-ep-2s8c2t").cpu_count(), 32u);
  EXPECT_EQ(load_machine("power8-16s192c-smt8").cpu_count(), 1536u);
  EXPECT_EQ(load_machine("power9-2s18c-smt4").cpu_count(), 144u);
  EXPECT_EQ(load_machine("milan-36c").topology.cores_per_socket * load_machine("milan-36c").topology.sockets, 36u);
  EXPECT_EQ(load_machine("sandybridge-ep-2s8c2t").tlb.tag, TlbTag::kNone);
  EXPECT_TRUE(load_machine("power8-16s192c-smt8").tlb.tlbie.has_value());
}

// INVLPGB (x86_64 only): invlpgb, tlbsync and invlpgb_count_max come together, with PCID tags.
TEST(Machine, InvlpgbKeysComeTogetherOnX86Only) {
  const std::string small = small_text();
  const std::string lat = "invlpgb = { ns = 40.0, source = \"s\" }\ntlbsync = { ns = 300.0, source = \"s\" }\n";
  const auto with = [&](const std::string& keys) {
    return replace(small, "tag_bits = 12\n", "tag_bits = 12\n" + keys);
  };
  const Machine m = parse_machine(with(lat + "invlpgb_count_max = 8\n"), "test.toml");
  ASSERT_TRUE(m.tlb.invlpgb.has_value());
  EXPECT_EQ(m.tlb.invlpgb_count_max, 8u);
  EXPECT_FALSE(parse_machine(small, "test.toml").tlb.invlpgb.has_value());
  expect_error(with(lat), {"test.toml", "invlpgb_count_max", "together"});
  expect_error(with(lat + "invlpgb_count_max = 0\n"), {"invlpgb_count_max"});
  expect_error(
      replace(with(lat + "invlpgb_count_max = 8\n"), "tag = \"pcid\"\ntag_bits = 12", "tag = \"none\"\ntag_bits = 0"),
      {"invlpgb", "pcid"});
  EXPECT_EQ(load_machine("milan-36c").tlb.invlpgb_count_max, 8u);  // CPUID Fn8000_0008 EDX[15:0] = 7 on EPYC 7713/7763
}

// aarch64: ASID tags of 8 or 16 bits, and the broadcast TLBI's issue and DSB ISH costs, which only aarch64 has.
TEST(Machine, Aarch64NeedsAsidTagsAndTheBroadcastCosts) {
  const std::string rpi = read_file(std::string(TLBSIM_SOURCE_DIR) + "/configs/machines/rpi4-a72-4c.toml");
  const Machine m = parse_machine(rpi, "test.toml");
  EXPECT_EQ(m.tlb.tag, TlbTag::kAsid);
  ASSERT_TRUE(m.tlb.tlbi_is.has_value());
  ASSERT_TRUE(m.tlb.dsb_ish.has_value());
  EXPECT_GT(*m.tlb.dsb_ish, *m.tlb.tlbi_is);
  expect_error(replace(rpi, "tag_bits = 16", "tag_bits = 12"), {"test.toml", "tag_bits", "8 or 16"});
  expect_error(replace(rpi, "tag = \"asid\"", "tag = \"pcid\""), {"tag", "ASID", "pcid"});
  const auto pos = rpi.find("dsb_ish = {");
  ASSERT_NE(pos, std::string::npos);
  const std::string dsb = rpi.substr(pos, rpi.find('\n', pos) - pos);
  expect_error(replace(rpi, dsb, ""), {"dsb_ish", "required", "aarch64"});
  expect_error(replace(rpi, "[tlb]\n", "[barrier]\nmfence = { ns = 1.0, source = \"s\" }\n\n[tlb]\n"),
               {"mfence", "x86_64"});
  // x86_64 and powerpc64 machines have neither key nor ASID tags.
  const std::string small = small_text();
  expect_error(replace(small, "tag_bits = 12\n", "tag_bits = 12\n" + dsb + "\n"), {"dsb_ish", "aarch64"});
  expect_error(replace(small, "tag = \"pcid\"", "tag = \"asid\""), {"tag", "aarch64"});
  const std::string lat =
      "dmb_ish = { ns = 5.0, source = \"s\" }\ndmb_ishld = { ns = 2.0, source = \"s\" }\n"
      "dmb_ishst = { ns = 2.0, source = \"s\" }\n";
  const Machine with = parse_machine(replace(rpi, "[tlb]\n", "[barrier]\n" + lat + "\n[tlb]\n"), "test.toml");
  EXPECT_EQ(with.barrier.dmb_ish, sim::picoseconds(5000));
  expect_error(replace(rpi, "[tlb]\n", "[barrier]\ndmb_ish = { ns = 5.0, source = \"s\" }\n\n[tlb]\n"), {"dmb_ishld"});
  EXPECT_EQ(load_machine("kunpeng920-2s64c").cpu_count(), 128u);
}

TEST(Machine, SwapCostsAreOptionalAndCitedWhereGiven) {
  const Machine kunpeng = load_machine("kunpeng920-2s64c");
  ASSERT_TRUE(kunpeng.kernel.swap_out && kunpeng.kernel.swap_in);
  EXPECT_GT(*kunpeng.kernel.swap_out, kunpeng.kernel.page_alloc);
  bool cited = false;
  for (const auto& l : kunpeng.latencies) cited = cited || (l.key == "kernel.swap_out" && !l.source.empty());
  EXPECT_TRUE(cited);
  const Machine small = load_machine("small-2s2c");
  EXPECT_FALSE(small.kernel.swap_out || small.kernel.swap_in);
  const std::string rpi = read_file(std::string(TLBSIM_SOURCE_DIR) + "/configs/machines/rpi4-a72-4c.toml");
  const auto pos = rpi.find("swap_in = {");
  ASSERT_NE(pos, std::string::npos);
  expect_error(replace(rpi, rpi.substr(pos, rpi.find('}', pos) + 1 - pos), "swap_in = { ns = -1.0, source = \"s\" }"),
               {"swap_in"});
}

TEST(Machine, UnknownNameListsTheKnownOnes) {
  try {
    load_machine("skylake");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown machine 'skylake'"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("skylake-sp-2s28c"), std::string::npos);
  }
}

TEST(Machine, MissingFileIsAnInputError) {
  EXPECT_THROW(load_machine("/nonexistent/dir/m.toml"), InputError);
}

TEST(Machine, ErrorsNameFileLineKeyAndExpectation) {
  const std::string ok = small_text();
  ASSERT_FALSE(ok.empty());
  expect_error(replace(ok, "sockets = 2", "sockets = \"two\""),
               {"test.toml:", "topology.sockets", "expected an integer from 1 to 64, got a string"});
  expect_error(replace(ok, "sockets = 2", "sockets = 100000"), {"topology.sockets", "got 100000"});
  expect_error(replace(ok, "sockets = 2", "sockets = 2\nsockets_total = 3"), {"unknown key 'topology.sockets_total'"});
  expect_error(replace(ok, "[tlb]", "[tlbx]"), {"missing required key 'tlb'"});
  expect_error(replace(ok, "cpu_numbering = \"smt-last\"", "cpu_numbering = \"zigzag\""),
               {"topology.cpu_numbering", "expected one of smt-last, smt-consecutive"});
  expect_error(replace(ok, "cores_per_llc = 2", "cores_per_llc = 3"), {"cores_per_llc", "must divide"});
  expect_error("[machine\nname=", {"test.toml:1", "TOML syntax error"});
}

TEST(Machine, LatenciesNeedPositiveValueAndSource) {
  const std::string ok = small_text();
  const auto pos = ok.find("l1_hit = {");
  ASSERT_NE(pos, std::string::npos);
  const auto end = ok.find('\n', pos);
  const std::string line = ok.substr(pos, end - pos);
  expect_error(replace(ok, line, "l1_hit = { ns = -1.0, source = \"x\" }"), {"coherence.l1_hit", "got ns = -1"});
  expect_error(replace(ok, line, "l1_hit = { ns = 1.0 }"), {"coherence.l1_hit", "source"});
  expect_error(replace(ok, line, "l1_hit = 1.0"), {"coherence.l1_hit", "inline table"});
  expect_error(replace(ok, line, "l1_hit = { ns = 1e300, source = \"x\" }"), {"coherence.l1_hit"});
}

// [barrier] is optional; when given it takes its arch's instructions and refuses the other arch's.
TEST(Machine, BarrierFiguresAreTheArchsInstructions) {
  const std::string ok = small_text();
  const auto pos = ok.find("mfence = {");
  ASSERT_NE(pos, std::string::npos);
  const std::string line = ok.substr(pos, ok.find('\n', pos) - pos);
  expect_error(replace(ok, line, line + "\nsync = { ns = 4.0, source = \"x\" }"),
               {"barrier.sync", "is for powerpc64 machines only"});
  expect_error(replace(ok, line, "lwsync = { ns = 1.0, source = \"x\" }"), {"barrier.lwsync", "powerpc64"});
  expect_error(replace(ok, line, "mfence = { ns = 17.6 }"), {"barrier.mfence", "source"});
  const Machine with = parse_machine(ok, "test.toml");
  EXPECT_TRUE(with.barrier.given);
  EXPECT_EQ(with.barrier.mfence, sim::picoseconds(17600));
  const Machine without = parse_machine(replace(ok, "[barrier]\n" + line + "\n", ""), "test.toml");
  EXPECT_FALSE(without.barrier.given);
  EXPECT_EQ(without.barrier.mfence, sim::Duration{0});
  const Machine p9 = load_machine("power9-2s16c-smt4");
  EXPECT_TRUE(p9.barrier.given);
  EXPECT_GT(p9.barrier.sync, sim::Duration{0});
  EXPECT_GT(p9.barrier.lwsync, sim::Duration{0});
}

TEST(Machine, JsonCarriesTheResolvedParameters) {
  const Machine m = load_machine("small-2s2c");
  const nlohmann::json j = to_json(m);
  EXPECT_EQ(j["name"], "small-2s2c");
  EXPECT_EQ(j["topology"]["cpus"], 8);
  EXPECT_TRUE(j["latencies"].contains("coherence.remote_transfer"));
  EXPECT_FALSE(j["latencies"]["coherence.remote_transfer"]["source"].get<std::string>().empty());
}

// An idle state may give the 10th and 90th percentiles of its exit latency (calibrate writes them for a KVM guest's
// HLT): both or neither, around exit_latency, each with its source.
TEST(Machine, AnIdleStatesExitLatencyMayGiveItsPercentiles) {
  const std::string ok = small_text();
  const auto with = [&](const std::string& extra) {
    return ok + "\n[[idle.states]]\nname = \"HLT\"\nexit_latency = { ns = 30000.0, source = \"m\" }\n" + extra +
           "target_residency = { ns = 1000000.0, source = \"r\" }\nflushes_tlb = false\npolls = false\n";
  };
  const Machine plain = parse_machine(with(""), "t.toml");
  ASSERT_FALSE(plain.idle_states.empty());
  EXPECT_EQ(plain.idle_states.back().exit_latency_p90, sim::Duration{0});
  const Machine drawn = parse_machine(
      with(
          "exit_latency_p10 = { ns = 20000.0, source = \"a\" }\nexit_latency_p90 = { ns = 50000.0, source = \"b\" }\n"),
      "t.toml");
  EXPECT_EQ(drawn.idle_states.back().exit_latency_p10, sim::nanoseconds(20000));
  EXPECT_EQ(drawn.idle_states.back().exit_latency_p90, sim::nanoseconds(50000));
  expect_error(with("exit_latency_p10 = { ns = 20000.0, source = \"a\" }\n"), {"test.toml", "HLT", "exit_latency_p90"});
  expect_error(with("exit_latency_p10 = { ns = 40000.0, source = \"a\" }\nexit_latency_p90 = { ns = 50000.0, "
                    "source = \"b\" }\n"),
               {"HLT", "exit_latency_p10 <= exit_latency <= exit_latency_p90"});
  expect_error(with("exit_latency_p90 = { ns = 50000.0 }\nexit_latency_p10 = { ns = 20000.0, source = \"a\" }\n"),
               {"exit_latency_p90", "source"});
}

// An idle state may give the exit after a short halt (calibrate: a wake-up after 30 us asleep) beside exit_latency's
// long one: all three of short_halt, exit_latency_short and long_halt, or none; each halt's exit is then scaled by
// its length (sim::HaltLengthScaling).
TEST(Machine, AnIdleStatesExitMayDependOnHowLongItHalted) {
  const std::string ok = small_text();
  const auto with = [&](const std::string& extra) {
    return ok + "\n[[idle.states]]\nname = \"HLT\"\nexit_latency = { ns = 40000.0, source = \"m\" }\n" + extra +
           "target_residency = { ns = 1000000.0, source = \"r\" }\nflushes_tlb = false\npolls = false\n";
  };
  const std::string three =
      "short_halt = { ns = 30000.0, source = \"s\" }\nexit_latency_short = { ns = 10000.0, source = \"e\" }\n"
      "long_halt = { ns = 1000000.0, source = \"l\" }\n";
  const Machine plain = parse_machine(with(""), "t.toml");
  EXPECT_EQ(plain.idle_states.back().by_length().at(sim::microseconds(30)), 1.0);  // no fields: no scaling
  const Machine m = parse_machine(with(three), "t.toml");
  const IdleState& st = m.idle_states.back();
  EXPECT_EQ(st.short_halt, sim::microseconds(30));
  EXPECT_EQ(st.exit_latency_short, sim::microseconds(10));
  EXPECT_EQ(st.long_halt, sim::milliseconds(1));
  EXPECT_DOUBLE_EQ(st.by_length().at(sim::microseconds(5)), 0.25);  // 10 us of 40 us
  EXPECT_DOUBLE_EQ(st.by_length().at(sim::milliseconds(2)), 1.0);
  expect_error(with("short_halt = { ns = 30000.0, source = \"s\" }\n"),
               {"HLT", "1 of short_halt, exit_latency_short and long_halt"});
  expect_error(with("short_halt = { ns = 2000000.0, source = \"s\" }\nexit_latency_short = { ns = 10000.0, source = "
                    "\"e\" }\nlong_halt = { ns = 1000000.0, source = \"l\" }\n"),
               {"HLT", "short_halt < long_halt"});
  expect_error(with("short_halt = { ns = 30000.0, source = \"s\" }\nexit_latency_short = { ns = 10000.0 }\n"
                    "long_halt = { ns = 1000000.0, source = \"l\" }\n"),
               {"exit_latency_short", "source"});
  // The brief point (calibrate: a wake-up 5 us after the sleeper blocked): both fields, with the three above.
  const std::string brief =
      "brief_halt = { ns = 5000.0, source = \"b\" }\nexit_latency_brief = { ns = 2000.0, source = \"eb\" }\n";
  const Machine mb = parse_machine(with(three + brief), "t.toml");
  const IdleState& sb = mb.idle_states.back();
  EXPECT_EQ(sb.brief_halt, sim::microseconds(5));
  EXPECT_EQ(sb.exit_latency_brief, sim::microseconds(2));
  EXPECT_DOUBLE_EQ(sb.by_length().at(sim::microseconds(1)), 0.05);     // 2 us of 40 us
  EXPECT_DOUBLE_EQ(sb.by_length().at(sim::microseconds(30)), 0.25);    // the short point, as before
  EXPECT_DOUBLE_EQ(sb.by_length().at(sim::nanoseconds(17500)), 0.15);  // halfway between: 6 us of 40 us
  EXPECT_DOUBLE_EQ(st.by_length().at(sim::microseconds(1)), 0.25);     // without it, the short point's scale
  expect_error(with(brief), {"HLT", "brief_halt or exit_latency_brief", "give both with those three"});
  expect_error(with(three + "brief_halt = { ns = 5000.0, source = \"b\" }\n"), {"HLT", "without the other"});
  expect_error(with(three + "brief_halt = { ns = 30000.0, source = \"b\" }\nexit_latency_brief = { ns = 2000.0, "
                            "source = \"eb\" }\n"),
               {"HLT", "brief_halt < short_halt"});
}

}  // namespace
}  // namespace tlbsim::hw

namespace tlbsim::hw {
namespace {

// [timing] is optional: without it every cost is exact (step_spread 0); with it, a spread in 0..0.5 and its source.
TEST(Machine, StepSpreadIsOptionalBoundedAndCited) {
  const std::string ok = small_text();
  EXPECT_EQ(parse_machine(ok, "test.toml").timing.step_spread, 0.0);
  EXPECT_FALSE(to_json(parse_machine(ok, "test.toml")).contains("timing"));
  const Machine m = parse_machine(ok + "\n[timing]\nstep_spread = { value = 0.12, source = \"measured\" }\n", "t.toml");
  EXPECT_EQ(m.timing.step_spread, 0.12);
  EXPECT_EQ(m.timing.source, "measured");
  EXPECT_EQ(to_json(m)["timing"]["step_spread"]["value"], 0.12);
  expect_error(ok + "\n[timing]\nstep_spread = { value = 0.9, source = \"x\" }\n",
               {"timing.step_spread.value", "got 0.9"});
  expect_error(ok + "\n[timing]\nstep_spread = { value = 0.1 }\n", {"timing.step_spread", "source"});
  expect_error(ok + "\n[timing]\nspread = 0.1\n", {"timing"});
}

}  // namespace
}  // namespace tlbsim::hw
