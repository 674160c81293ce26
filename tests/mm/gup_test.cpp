// Scenario tests of GUP-fast (mm/gup.cpp): the pin of a present page, the cases where the fast path gives up, and
// which rechecks each era makes after the pin.
#include "mm/gup.h"

#include <gtest/gtest.h>

#include <optional>

#include "kernel/options.h"
#include "kernel/scenario.h"
#include "mm/memory.h"
#include "mm/mprotect.h"
#include "model/options.h"
#include "model/profile.h"

namespace tlbsim::kernel {
namespace {

using testing::Scenario;

TEST(GupFast, EachEraRechecksWhatItsGupPteRangeRechecks) {
  const GupFastEra v33 = gup_fast_era(load_kernel_profile("linux-3.3").config);
  EXPECT_FALSE(v33.pte_recheck || v33.pmd_recheck) << "arch/x86/mm/gup.c takes the reference and returns";
  const GupFastEra v517 = gup_fast_era(load_kernel_profile("linux-5.17").config);
  EXPECT_TRUE(v517.pte_recheck);
  EXPECT_FALSE(v517.pmd_recheck) << "before 70cbc3cc78a9";
  EXPECT_TRUE(gup_fast_era(load_kernel_profile("linux-4.14-ppc").config).pte_recheck);
  for (const char* later : {"linux-6.2-ppc", "linux-6.6-arm64", "linux-6.13"}) {
    const GupFastEra e = gup_fast_era(load_kernel_profile(later).config);
    EXPECT_TRUE(e.pte_recheck && e.pmd_recheck) << later;
  }
  KernelConfig mutated = load_kernel_profile("linux-6.6-arm64").config;
  mutated.plant(Mutation::collapse_skips_gup_fast_sync);
  EXPECT_FALSE(gup_fast_era(mutated).pmd_recheck);
}

sim::Task<void> map_and_write(PerCpu& self, MmStruct& mm, std::uint64_t pages, std::uint64_t& addr) {
  addr = co_await sys_mmap(self, mm, pages * kPageSize, false, nullptr, 0);
  for (std::uint64_t i = 0; i < pages; ++i) co_await user_access(self, mm, addr + i * kPageSize, true);
}
sim::Task<void> pin(PerCpu& self, MmStruct& mm, std::uint64_t addr, bool write, std::optional<Pfn>& out) {
  out = co_await pin_user_pages_fast(self, mm, addr, write);
}
sim::Task<void> protect(PerCpu& self, MmStruct& mm, std::uint64_t addr) {
  co_await sys_mprotect(self, mm, addr, kPageSize, false);
}

// A written page pins (and is unpinned again); a page never touched, or a read-only one asked for writing, is left
// to the slow path; interrupts are on again when it returns.
TEST(GupFast, PinsAPresentPageAndLeavesTheRestToTheSlowPath) {
  for (const char* kernel : {"linux-3.3", "linux-5.17", "linux-6.13", "linux-6.6-arm64"}) {
    SCOPED_TRACE(kernel);
    const KernelConfig cfg = load_kernel_profile(kernel).config;
    Scenario s(cfg, cfg.arch == Arch::kArm64 ? "rpi4-a72-4c" : "small-2s2c");
    MmStruct& mm = s.k.new_mm();
    s.oracle().set_user_context(CpuId{0}, mm.id());
    std::uint64_t addr = 0;
    s.run_on(0, testing::switch_to_mm(s.cpu(0), mm));
    s.run_on(0, map_and_write(s.cpu(0), mm, 2, addr));
    s.run_on(0, protect(s.cpu(0), mm, addr + kPageSize));
    std::optional<Pfn> got;
    s.run_on(0, pin(s.cpu(0), mm, addr, true, got));
    ASSERT_TRUE(got.has_value());
    EXPECT_EQ(*got, mm.pgd.lookup(vpn_of(addr))->pfn);
    EXPECT_EQ(s.k.frames().pins(*got), 1u);
    EXPECT_FALSE(s.cpu(0).cpu.irqs_disabled());
    unpin_user_page(s.cpu(0), *got);
    EXPECT_EQ(s.k.frames().pins(*got), 0u);
    s.run_on(0, pin(s.cpu(0), mm, addr + kPageSize, true, got));
    EXPECT_FALSE(got.has_value()) << "read-only, asked for writing";
    s.run_on(0, pin(s.cpu(0), mm, addr + kPageSize, false, got));
    EXPECT_TRUE(got.has_value()) << "read-only, asked for reading";
    unpin_user_page(s.cpu(0), *got);
    s.run_on(0, pin(s.cpu(0), mm, addr + 16 * kPageSize, false, got));
    EXPECT_FALSE(got.has_value()) << "no PTE";
  }
}

}  // namespace
}  // namespace tlbsim::kernel
