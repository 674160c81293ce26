// What x86's barriers cost in each era (arch/x86/barrier.cpp): smp_mb() is MFENCE up to v4.14 and a LOCK ADD from
// v4.15; everything else is barrier(); a machine without [barrier] figures prices nothing.
#include <gtest/gtest.h>

#include "hw/machine.h"
#include "kernel/arch_mmu.h"

namespace tlbsim::x86 {
namespace {

using hw::Fence;

sim::Duration cost(const hw::FenceCosts& c, Fence f) { return c[static_cast<std::size_t>(f)]; }

TEST(X86Barriers, SmpMbIsMfenceBeforeV415AndALockAddFrom) {
  const hw::Machine m = hw::load_machine("sandybridge-ep-2s8c2t");
  ASSERT_TRUE(m.barrier.given);
  const auto v33 = kernel::find_arch_mmu(kernel::Arch::kX86, {3, 3})->fence_costs(m);
  const auto v613 = kernel::find_arch_mmu(kernel::Arch::kX86, {6, 13})->fence_costs(m);
  EXPECT_EQ(cost(v33, Fence::kMb), m.barrier.mfence);
  EXPECT_EQ(cost(v613, Fence::kMb), m.coherence.local_rmw);
  EXPECT_GT(m.barrier.mfence, m.coherence.local_rmw);  // the reason 450cbdd0125c made the change
  for (const Fence f : {Fence::kCompiler, Fence::kRmb, Fence::kWmb, Fence::kRelease, Fence::kAcquire, Fence::kMbAtomic,
                        Fence::kSerializing, Fence::kPtesync}) {
    EXPECT_EQ(cost(v33, f), sim::Duration{0}) << static_cast<int>(f);
    EXPECT_EQ(cost(v613, f), sim::Duration{0}) << static_cast<int>(f);
  }
}

TEST(X86Barriers, AMachineWithoutBarrierFiguresPricesNothing) {
  hw::Machine m = hw::load_machine("small-2s2c");
  m.barrier = hw::BarrierCosts{};
  const auto c = kernel::find_arch_mmu(kernel::Arch::kX86, {6, 13})->fence_costs(m);
  for (const sim::Duration d : c) EXPECT_EQ(d, sim::Duration{0});
}

}  // namespace
}  // namespace tlbsim::x86
