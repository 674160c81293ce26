#include "hw/machine_set.h"

#include <gtest/gtest.h>

#include <string>

#include "hw/machine.h"
#include "sim/time.h"
#include "util/error.h"

namespace tlbsim::hw {
namespace {

const std::string kDrawn = std::string(TLBSIM_SOURCE_DIR) + "/tests/data/kvm-2vcpu-20261207-epyc-drawn-host.toml";

const ParamRecord* record(const Machine& m, const std::string& key) {
  for (const ParamRecord& p : m.latencies) {
    if (p.key == key) return &p;
  }
  return nullptr;
}

// Expects loading with these settings to fail with a message containing every fragment.
void expect_error(const std::string& machine, const std::vector<std::string>& settings,
                  std::initializer_list<const char*> fragments) {
  try {
    load_machine(machine, settings);
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    for (const char* f : fragments) EXPECT_NE(std::string(e.what()).find(f), std::string::npos) << e.what();
  }
}

TEST(MachineSet, ALatencyReplacesTheFilesAndItsSourceSaysWhatTheFileGave) {
  const Machine base = load_machine(kDrawn);
  const Machine m = load_machine(kDrawn, {"kernel.page_alloc=400ns", "ipi.send=1.5us"});
  EXPECT_EQ(base.kernel.page_alloc, sim::from_nanoseconds(1697.1));
  EXPECT_EQ(m.kernel.page_alloc, sim::nanoseconds(400));
  EXPECT_EQ(m.ipi.send, sim::nanoseconds(1500));
  EXPECT_EQ(m.kernel.page_fault, base.kernel.page_fault);  // nothing else moves
  const ParamRecord* r = record(m, "kernel.page_alloc");
  ASSERT_NE(r, nullptr);
  EXPECT_DOUBLE_EQ(r->ns, 400);
  EXPECT_NE(r->source.find("SET on the command line (--set kernel.page_alloc=400ns)"), std::string::npos) << r->source;
  EXPECT_NE(r->source.find("1697.1 ns"), std::string::npos) << r->source;
}

TEST(MachineSet, AnIdleStatesLatencyIsNamedByTheStatesName) {
  const Machine m = load_machine(
      kDrawn, {"idle.HLT.exit_latency=12us", "idle.HLT.exit_latency_p10=8us", "idle.HLT.exit_latency_p90=17us"});
  ASSERT_EQ(m.idle_states.size(), 1u);
  EXPECT_EQ(m.idle_states[0].exit_latency, sim::microseconds(12));
  EXPECT_EQ(m.idle_states[0].exit_latency_p10, sim::microseconds(8));
  EXPECT_EQ(m.idle_states[0].exit_latency_p90, sim::microseconds(17));
  // The file's own rules still hold: a median above the file's p90 is refused.
  expect_error(kDrawn, {"idle.HLT.exit_latency=100us"}, {"exit_latency_p10 <= exit_latency <= exit_latency_p90"});
}

TEST(MachineSet, TheStepSpreadCanBeGivenToAMachineWithoutOne) {
  const Machine base = load_machine("small-2s2c");
  EXPECT_EQ(base.timing.step_spread, 0);
  const Machine m = load_machine("small-2s2c", {"timing.step_spread=0.2"});
  EXPECT_DOUBLE_EQ(m.timing.step_spread, 0.2);
  EXPECT_NE(m.timing.source.find("the machine file gives none"), std::string::npos) << m.timing.source;
  const Machine d = load_machine(kDrawn, {"timing.step_spread=0.3"});
  EXPECT_DOUBLE_EQ(d.timing.step_spread, 0.3);
  EXPECT_NE(d.timing.source.find("gives 0.069"), std::string::npos) << d.timing.source;
  expect_error("small-2s2c", {"timing.step_spread=0.6"},
               {"step_spread", "0 to 0.5", "(with --set timing.step_spread=0.6)"});
  expect_error("small-2s2c", {"timing.step_spread=nan"}, {"step_spread", "got nan"});
  expect_error("small-2s2c", {"timing.step_spread=wide"}, {"--set timing.step_spread=wide", "expected a number"});
}

TEST(MachineSet, BadSettingsSayWhichArgumentAndWhatWasExpected) {
  expect_error("small-2s2c", {"kernel.page_alocc=1ns"},
               {"--set kernel.page_alocc=1ns", "gives no latency kernel.page_alocc", "kernel.page_alloc"});
  expect_error(kDrawn, {"ipi.deliver_remote=1us"}, {"gives no latency ipi.deliver_remote"});      // one socket
  expect_error("small-2s2c", {"topology.sockets=2ns"}, {"gives no latency topology.sockets"});    // not a latency
  expect_error(kDrawn, {"idle.C6.exit_latency=1us"}, {"gives no latency idle.C6.exit_latency"});  // HLT only
  expect_error("small-2s2c", {"ipi.send"}, {"--set ipi.send", "expected KEY=VALUE"});
  expect_error("small-2s2c", {"=1ns"}, {"expected KEY=VALUE"});
  expect_error("small-2s2c", {"ipi.send="}, {"expected KEY=VALUE"});
  expect_error("small-2s2c", {"ipi.send=fast"}, {"--set ipi.send=fast", "not a duration"});
  expect_error("small-2s2c", {"ipi.send=1ns", "ipi.send=2ns"}, {"ipi.send is set twice"});
  expect_error("small-2s2c", {"ipi.send=0", "kernel.syscall=1us"},
               {"ipi.send", "0.001", "(with --set ipi.send=0 --set kernel.syscall=1us)"});  // the file's range applies
}

}  // namespace
}  // namespace tlbsim::hw
