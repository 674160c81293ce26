// What powerpc64's barriers cost (arch/powerpc/barrier.cpp): smp_mb() and the atomics' barriers are sync; smp_rmb(),
// smp_wmb(), release and acquire are lwsync; ptesync's time is in the tlb.* figures.
#include <gtest/gtest.h>

#include "hw/machine.h"
#include "kernel/arch_mmu.h"

namespace tlbsim::powerpc {
namespace {

using hw::Fence;

TEST(PowerpcBarriers, SyncForFullBarriersLwsyncForTheRest) {
  const hw::Machine m = hw::load_machine("power9-2s16c-smt4");
  ASSERT_TRUE(m.barrier.given);
  EXPECT_GT(m.barrier.sync, m.barrier.lwsync);
  for (const kernel::KernelVersion v : {kernel::KernelVersion{4, 14}, kernel::KernelVersion{6, 2}}) {
    const hw::FenceCosts c = kernel::find_arch_mmu(kernel::Arch::kPowerpc, v)->fence_costs(m);
    auto cost = [&](Fence f) { return c[static_cast<std::size_t>(f)]; };
    EXPECT_EQ(cost(Fence::kMb), m.barrier.sync);
    EXPECT_EQ(cost(Fence::kMbAtomic), m.barrier.sync);
    for (const Fence f : {Fence::kRmb, Fence::kWmb, Fence::kRelease, Fence::kAcquire}) {
      EXPECT_EQ(cost(f), m.barrier.lwsync) << static_cast<int>(f);
    }
    for (const Fence f : {Fence::kCompiler, Fence::kSerializing, Fence::kPtesync}) {
      EXPECT_EQ(cost(f), sim::Duration{0}) << static_cast<int>(f);
    }
  }
}

}  // namespace
}  // namespace tlbsim::powerpc
