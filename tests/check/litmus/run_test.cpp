// The classic x86-TSO litmus tests (tests/data/litmus/, written for tlbsim from the published shapes) give the
// published verdicts on the checker's engine: Owens, Sarkar and Sewell, "A Better x86 Memory Model: x86-TSO"
// (TPHOLs 2009), and Sewell et al., "x86-TSO" (CACM 53(7), 2010), with the Intel SDM vol. 3A 9.2.3 examples. Under
// sequential consistency every one of these conditions is unreachable.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "check/litmus/litmus.h"
#include "util/atomic_file.h"

namespace tlbsim::check::litmus {
namespace {

LitmusResult run_file(const std::string& name, hw::MemoryModel m) {
  const std::string path = std::string(TLBSIM_SOURCE_DIR) + "/tests/data/litmus/" + name + ".litmus";
  return run_litmus(parse_litmus(read_file(path), path), m);
}

TEST(Litmus, ClassicTestsGiveTheX86TsoVerdicts) {
  // true: the final condition is reachable on x86 (allowed); false: forbidden.
  const std::map<std::string, bool> tso = {
      {"SB", true},    {"SB+mfences", false}, {"SB+xchgs", false}, {"MP", false},       {"LB", false},
      {"IRIW", false}, {"2+2W", false},       {"R", true},         {"R+mfence", false}, {"WRC", false},
      {"n4", false},   {"n5", false},         {"n6", true},        {"MP+lock", false}};
  for (const auto& [name, allowed] : tso) {
    const LitmusResult r = run_file(name, hw::MemoryModel::kTso);
    EXPECT_TRUE(r.complete) << name;
    EXPECT_EQ(r.satisfying > 0, allowed) << name << " under tso: " << r.verdict;
    const LitmusResult sc = run_file(name, hw::MemoryModel::kSc);
    EXPECT_TRUE(sc.complete) << name;
    EXPECT_EQ(sc.satisfying, 0u) << name << " under sc";
    EXPECT_GT(sc.final_states, 0u) << name;
  }
}

// POWER (hw/power_memory.h) against the allowed/forbidden tables of Sarkar et al., "Understanding POWER
// Multiprocessors" (PLDI 2011) and Maranget, Sarkar and Sewell, "A Tutorial Introduction to the ARM and POWER Relaxed
// Memory Models" (2012), with the kernel's mapping (smp_mb = sync; smp_rmb, smp_wmb, release, acquire = lwsync).
// LB, 2+2W (and S) are allowed by the architecture but not by this model, which satisfies loads before later stores
// and orders each location's writes as they execute (docs/model.md, "Memory ordering"): pinned as the model's.
TEST(Litmus, PowerTestsGiveThePublishedVerdicts) {
  const std::map<std::string, bool> power = {{"MP", true},
                                             {"MP+wmb", true},
                                             {"MP+rmb", true},
                                             {"MP+wmb+rmb", false},
                                             {"SB", true},
                                             {"SB+rmbs", true},
                                             {"SB+mfences", false},
                                             {"SB+xchgs", false},
                                             {"IRIW", true},
                                             {"IRIW+rmbs", true},
                                             {"IRIW+mbs", false},
                                             {"WRC", true},
                                             {"WRC+release+acquire", false},
                                             {"R", true},
                                             {"R+mfence", true},
                                             {"MP+lock", false},
                                             {"n4", false},
                                             {"n5", false},
                                             {"n6", true},
                                             {"LB", false},
                                             {"2+2W", false},
                                             // Dependencies (pointers; the tutorial's sections 4.1 and 6).
                                             {"MP+mb+addr", false},
                                             {"MP+wmb+addr", false},
                                             {"MP+po+addr", true},
                                             {"WRC+wmb+addr", false},
                                             {"WRC+po+addr", true},
                                             {"ISA2+wmb+data+addr", false},
                                             {"ISA2+wmb+data+po", true}};
  for (const auto& [name, allowed] : power) {
    const LitmusResult r = run_file(name, hw::MemoryModel::kPower);
    EXPECT_TRUE(r.complete) << name;
    EXPECT_EQ(r.satisfying > 0, allowed) << name << " under power: " << r.verdict;
  }
  // Where x86 and POWER differ: load reordering (MP+wmb), store reordering (MP+rmb), multicopy atomicity (IRIW+rmbs).
  for (const char* name : {"MP+wmb", "MP+rmb", "IRIW+rmbs", "WRC", "MP+po+addr", "WRC+po+addr", "ISA2+wmb+data+po"}) {
    EXPECT_EQ(run_file(name, hw::MemoryModel::kTso).satisfying, 0u) << name << " under tso";
  }
}

// ARMv8 (the storage in its other-multicopy-atomic mode) against Pulte et al., "Simplifying ARM Concurrency" (POPL
// 2018) and the Maranget-Sarkar-Sewell tutorial's ARM columns, with the kernel's arm64 mapping (smp_mb = DMB ISH,
// smp_rmb = DMB ISHLD, smp_wmb = DMB ISHST): as POWER, except that a write reaches every other CPU at once, so IRIW
// with any load ordering is forbidden. WRC+po+addr is allowed by ARMv8 through load-to-store reordering (LB), which
// the model does not do (docs/model.md): pinned as the model's.
TEST(Litmus, ArmTestsGiveThePublishedVerdicts) {
  const std::map<std::string, bool> arm = {{"MP", true},
                                           {"MP+wmb", true},
                                           {"MP+rmb", true},
                                           {"MP+wmb+rmb", false},
                                           {"SB", true},
                                           {"SB+mfences", false},
                                           {"IRIW", true},
                                           {"IRIW+rmbs", false},
                                           {"IRIW+mbs", false},
                                           {"WRC", true},
                                           {"WRC+release+acquire", false},
                                           {"MP+po+addr", true},
                                           {"MP+wmb+addr", false},
                                           {"WRC+wmb+addr", false},
                                           {"WRC+po+addr", false},
                                           {"ISA2+wmb+data+addr", false}};
  for (const auto& [name, allowed] : arm) {
    const LitmusResult r = run_file(name, hw::MemoryModel::kArm);
    EXPECT_TRUE(r.complete) << name;
    EXPECT_EQ(r.satisfying > 0, allowed) << name << " under arm: " << r.verdict;
  }
  // Where POWER and ARMv8 differ: multicopy atomicity.
  EXPECT_GT(run_file("IRIW+rmbs", hw::MemoryModel::kPower).satisfying, 0u);
}

TEST(Litmus, AnAccessThroughARegisterThatHoldsNoAddressIsALocatedError) {
  const LitmusTest t = parse_litmus(
      "C bad\n{}\nP0(int *x)\n{\n\tint r0;\n\tint r1;\n\tr0 = READ_ONCE(*x);\n\tr1 = READ_ONCE(*r0);\n}\n"
      "exists (0:r1=0)\n",
      "bad.litmus");
  for (const hw::MemoryModel m : {hw::MemoryModel::kSc, hw::MemoryModel::kTso, hw::MemoryModel::kPower}) {
    try {
      run_litmus(t, m);
      ADD_FAILURE() << "ran";
    } catch (const InputError& e) {
      EXPECT_STREQ(e.what(), "bad.litmus:8: 'r0' holds 0, not the address of a shared variable");
    }
  }
}

TEST(Litmus, TheSearchIsCompleteAndFindsEveryFinalStateOfSb) {
  // SB's final states under TSO: (r0, r1) in {0,1}^2, x = y = 1: four; under SC (0,0) is missing.
  EXPECT_EQ(run_file("SB", hw::MemoryModel::kTso).final_states, 4u);
  EXPECT_EQ(run_file("SB", hw::MemoryModel::kSc).final_states, 3u);
  EXPECT_EQ(run_file("SB", hw::MemoryModel::kTso).verdict, "Sometimes");
  EXPECT_EQ(run_file("SB+mfences", hw::MemoryModel::kTso).verdict, "Never");
}

TEST(Litmus, RmwsControlFlowAndQuantifiers) {
  const char* text = R"(C rmw
{ x=5; }
P0(int *x, atomic_t *a)
{
	int r0; int r1 = 2;
	r0 = atomic_fetch_add(r1, a);
	atomic_inc(a);
	r1 = atomic_add_return_relaxed(3, a);
	if (r1 == 6) { WRITE_ONCE(*x, 7); } else WRITE_ONCE(*x, 8);
	r0 = cmpxchg(x, 7, 9);
}
forall (0:r0=7 /\ x=9 /\ a=6 /\ 0:r1=6)
)";
  const LitmusTest t = parse_litmus(text, "rmw.litmus");
  const LitmusResult r = run_litmus(t, hw::MemoryModel::kTso);
  EXPECT_EQ(r.final_states, 1u);
  EXPECT_EQ(r.verdict, "Always");
  EXPECT_TRUE(r.positive);
}

TEST(Litmus, ABudgetTooSmallLeavesTheSearchIncomplete) {
  const std::string path = std::string(TLBSIM_SOURCE_DIR) + "/tests/data/litmus/IRIW.litmus";
  const LitmusResult r = run_litmus(parse_litmus(read_file(path), path), hw::MemoryModel::kTso, 5);
  EXPECT_FALSE(r.complete);
  EXPECT_EQ(r.runs, 5u);
}

}  // namespace
}  // namespace tlbsim::check::litmus
