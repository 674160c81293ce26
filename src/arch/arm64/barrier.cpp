// What arm64's barriers compile to (arch/arm64/include/asm/barrier.h, v6.5/v6.6), priced from the machine's [barrier]
// figures for the timed model.
#include "arch/arm64/mm/context.h"
#include "hw/machine.h"

namespace tlbsim::arm64 {

// smp_mb() is dmb(ish); smp_rmb() dmb(ishld); smp_wmb() dmb(ishst). The fully ordered atomics are single LSE
// instructions with acquire and release semantics (LDADDAL, SWPAL, CASAL): no barrier instruction around them, so
// kMbAtomic, which hw::Memory charges twice per fully ordered RMW, is free (smp_mb__{before,after}_atomic, which are
// dmb(ish), are left unpriced with it: a simplification, docs/model.md). smp_store_release and smp_load_acquire are
// STLR and LDAR: no separate barrier. isb (kSerializing) and DSB (kPtesync, inside the tlb.* figures) are not priced.
hw::FenceCosts Arm64Mmu::fence_costs(const hw::Machine& m) const {
  hw::FenceCosts c{};
  if (!m.barrier.given) return c;
  c[static_cast<std::size_t>(hw::Fence::kMb)] = m.barrier.dmb_ish;
  c[static_cast<std::size_t>(hw::Fence::kRmb)] = m.barrier.dmb_ishld;
  c[static_cast<std::size_t>(hw::Fence::kWmb)] = m.barrier.dmb_ishst;
  return c;
}

}  // namespace tlbsim::arm64
