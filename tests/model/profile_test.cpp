// Kernel profiles and options: every built-in profile parses, and malformed profiles are refused with the file,
// line and what is wrong.
#include "model/profile.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "arch/arm64/options.h"
#include "arch/powerpc/options.h"
#include "kernel/arch_mmu.h"
#include "model/options.h"
#include "util/error.h"

namespace tlbsim::kernel {
namespace {

std::string error_of(const std::string& text) {
  try {
    parse_kernel_profile(text, "t", "t.toml");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(Profile, EveryBuiltinProfileParsesAndHasCodeForItsEra) {
  ASSERT_GE(builtin_kernel_files().size(), 6u);
  for (const std::string& name : builtin_kernel_names()) {
    const KernelProfile p = load_kernel_profile(name);
    EXPECT_EQ(p.name, name);
    EXPECT_FALSE(p.description.empty()) << name;
    EXPECT_NE(find_arch_mmu(p.config.arch, p.config.version), nullptr) << name;
  }
}

TEST(Profile, EachSeedProfileHasABeforeAndAnAfter) {
  std::map<std::string, std::set<std::string>> roles;
  for (const std::string& name : builtin_kernel_names()) {
    const KernelProfile p = load_kernel_profile(name);
    if (!p.seed.empty()) roles[p.seed].insert(p.role);
  }
  for (const auto& [seed, r] : roles) {
    EXPECT_TRUE(r.contains("before")) << "seed " << seed;
    EXPECT_TRUE(r.contains("after")) << "seed " << seed;
  }
}

TEST(Profile, OptionsSetTheirOwnFieldOnly) {
  for (const OptionInfo& i : all_options()) {
    KernelConfig c;
    c.arch = i.arch == Arch::kAny ? Arch::kX86 : i.arch;
    c.version = i.since;
    const std::vector<std::string> before = enabled_options(c);
    set_option(c, i.name, true, "test");
    std::vector<std::string> expect = before;
    expect.emplace_back(i.name);
    std::sort(expect.begin(), expect.end());
    EXPECT_EQ(enabled_options(c), expect) << i.name;
  }
}

// The 128-bit masks: every declared option and mutation has a bit of its own below kDeclBits, and planting every
// mutation of an architecture lists each of them (arm64's sit at bits 96 and up, above a 64-bit word).
TEST(Profile, EveryOptionAndMutationHasItsOwnBit) {
  std::set<std::pair<int, unsigned>> bits;
  for (const OptionInfo& i : all_options()) {
    EXPECT_LT(i.bit, kDeclBits) << i.name;
    EXPECT_TRUE(bits.insert({0, i.bit}).second) << i.name;
  }
  for (const MutationInfo& m : all_mutations()) {
    EXPECT_LT(m.bit, kDeclBits) << m.name;
    EXPECT_TRUE(bits.insert({1, m.bit}).second) << m.name;
  }
  for (const Arch arch : {Arch::kX86, Arch::kPowerpc, Arch::kArm64}) {
    KernelConfig c;
    c.arch = arch;
    std::vector<std::string> expect;
    for (const MutationInfo& m : all_mutations()) {
      if (m.arch != arch && m.arch != Arch::kAny) continue;
      set_mutation(c, m.name, "test");
      expect.emplace_back(m.name);
    }
    std::sort(expect.begin(), expect.end());
    EXPECT_EQ(planted_mutations(c), expect) << to_string(arch);
  }
}

// One Kconfig symbol modeled for two architectures resolves to the kernel's own architecture's declaration.
TEST(Profile, AnOptionNamedForTwoArchesIsTheKernelsArchs) {
  KernelConfig ppc;
  ppc.arch = Arch::kPowerpc;
  ppc.version = {4, 14};
  set_option(ppc, "ARCH_WANT_BATCHED_UNMAP_TLB_FLUSH", true, "test");
  EXPECT_TRUE(ppc.on(powerpc::Option::ARCH_WANT_BATCHED_UNMAP_TLB_FLUSH));
  EXPECT_FALSE(ppc.on(arm64::Option::ARCH_WANT_BATCHED_UNMAP_TLB_FLUSH));
  KernelConfig a64;
  a64.arch = Arch::kArm64;
  a64.version = {6, 6};
  set_option(a64, "ARCH_WANT_BATCHED_UNMAP_TLB_FLUSH", true, "test");
  EXPECT_TRUE(a64.on(arm64::Option::ARCH_WANT_BATCHED_UNMAP_TLB_FLUSH));
  EXPECT_FALSE(a64.on(powerpc::Option::ARCH_WANT_BATCHED_UNMAP_TLB_FLUSH));
  a64.version = {6, 3};  // the series was posted on v6.3-rc and v6.4-rc: modeled from v6.4
  EXPECT_THROW(set_option(a64, "ARCH_WANT_BATCHED_UNMAP_TLB_FLUSH", true, "test"), InputError);
  KernelConfig x86;
  EXPECT_THROW(set_option(x86, "ARCH_WANT_BATCHED_UNMAP_TLB_FLUSH", true, "test"), InputError);
}

TEST(Profile, MalformedProfilesSayWhereAndWhat) {
  const std::string head = "[kernel]\ndescription = \"d\"\narch = \"x86\"\nversion = \"5.17\"\n";
  EXPECT_EQ(error_of(head), "");
  EXPECT_NE(error_of(head + "[options]\nno_such = true\n")
                .find("t.toml:6:11: kernel profile: options.no_such: unknown option 'no_such'"),
            std::string::npos)
      << error_of(head + "[options]\nno_such = true\n");
  EXPECT_NE(error_of(head + "[options]\nlazy_mm_cpumask = true\n").find("not for this kernel's version 5.17"),
            std::string::npos);
  EXPECT_NE(error_of(head + "[options]\navoid_mm_tlb_gen_read = \"yes\"\n").find("avoid_mm_tlb_gen_read"),
            std::string::npos);
  EXPECT_NE(error_of(head + "colour = \"red\"\n").find("unknown key 'kernel.colour'"), std::string::npos);
  EXPECT_NE(error_of("[kernel]\ndescription = \"d\"\narch = \"x86\"\nversion = \"five\"\n")
                .find("'five' is not a kernel version"),
            std::string::npos);
  EXPECT_NE(error_of("[kernel]\ndescription = \"d\"\narch = \"x86\"\nversion = \"4.9\"\n")
                .find("no modeled x86 code for Linux 4.9"),
            std::string::npos);
  EXPECT_NE(error_of("[kernel]\ndescription = \"d\"\narch = \"riscv\"\nversion = \"5.17\"\n").find("arch"),
            std::string::npos);
  EXPECT_NE(error_of("[kernel]\ndescription = \"d\"\narch = \"arm64\"\nversion = \"5.17\"\n")
                .find("no modeled arm64 code for Linux 5.17"),
            std::string::npos);
  EXPECT_NE(error_of(head + "role = \"sideways\"\n").find("'sideways' is not one of"), std::string::npos);
  EXPECT_NE(error_of("[kernel\n").find("t.toml:1"), std::string::npos);
}

}  // namespace
}  // namespace tlbsim::kernel

#include "workloads/run.h"

namespace tlbsim::kernel {
namespace {

// Every built-in profile (each seed's before, after and variants) runs the three core workloads without a
// violation, except where docs/findings.md records one (none of these workloads triggers F1-F4).
TEST(Profile, EveryProfileRunsTheCoreWorkloadsClean) {
  for (const std::string& name : builtin_kernel_names()) {
    const KernelProfile p = load_kernel_profile(name);
    const hw::Machine m = hw::load_machine(p.config.arch == kernel::Arch::kPowerpc ? "power9-2s16c-smt4"
                                           : p.config.arch == kernel::Arch::kArm64 ? "rpi4-a72-4c"
                                                                                   : "small-2s2c");
    for (const char* w : {"tlb_flush1", "context_switch1", "proc_churn"}) {
      workloads::RunSpec spec;
      spec.kernel = name;
      spec.workload = w;
      spec.threads = 4;
      spec.duration = sim::microseconds(300);
      const auto r = workloads::run_workload(m, spec);
      EXPECT_EQ(r.violations, 0u) << name << " " << w;
      EXPECT_GT(r.metric, 0) << name << " " << w;
    }
  }
}

}  // namespace
}  // namespace tlbsim::kernel
