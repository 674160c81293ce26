// What x86's barriers compile to, era by era (arch/x86/include/asm/barrier.h; asm/system.h in v3.3), priced from the
// machine's [barrier] figures for the timed model.
#include "arch/x86/mm/mm_stats.h"
#include "hw/machine.h"

namespace tlbsim::x86 {

// x86-64 smp_mb(): mfence up to v4.14 (mb(), v3.3's asm/system.h); from v4.15 "lock; addl $0,-4(%rsp)"
// (450cbdd0125c, "locking/x86: Use LOCK ADD for smp_mb() instead of MFENCE"), a LOCK'd RMW on the stack's line,
// held exclusively: coherence.local_rmw. smp_rmb(), smp_wmb(), the release and acquire orderings and
// smp_mb__{before,after}_atomic() are barrier() (x86-TSO needs no instruction; CONFIG_X86_PPRO_FENCE and
// CONFIG_X86_OOSTORE are off on x86-64). Serializing instructions (a CR3 write, INVLPG) cost what the tlb.* figures
// say they do.
hw::FenceCosts X86Mmu::fence_costs(const hw::Machine& m) const {
  hw::FenceCosts c{};
  if (!m.barrier.given) return c;
  const bool lock_add = !(since() < kernel::KernelVersion{4, 15});
  c[static_cast<std::size_t>(hw::Fence::kMb)] = lock_add ? m.coherence.local_rmw : m.barrier.mfence;
  return c;
}

}  // namespace tlbsim::x86
