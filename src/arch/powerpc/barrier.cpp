// What powerpc64's barriers compile to (arch/powerpc/include/asm/barrier.h and asm/synch.h; the same in v4.14 and
// v6.2), priced from the machine's [barrier] figures for the timed model.
#include "arch/powerpc/mm/book3s64/radix_tlb.h"
#include "hw/machine.h"

namespace tlbsim::powerpc {

// smp_mb() is sync (hwsync); smp_rmb() is lwsync (__lwsync on 64-bit); smp_wmb() is SMPWMB, lwsync on 64-bit
// server; smp_store_release() and smp_load_acquire() put an lwsync before the store and after the load;
// smp_mb__{before,after}_atomic() are smp_mb(), and the fully ordered value-returning atomics have a sync on each
// side (PPC_ATOMIC_ENTRY_BARRIER and PPC_ATOMIC_EXIT_BARRIER, hw::Memory::rmw). ptesync's time is inside the tlb.*
// invalidation figures; isync and rfid (Fence::kSerializing) are not priced.
hw::FenceCosts RadixMmu::fence_costs(const hw::Machine& m) const {
  hw::FenceCosts c{};
  if (!m.barrier.given) return c;
  for (const hw::Fence f : {hw::Fence::kMb, hw::Fence::kMbAtomic}) c[static_cast<std::size_t>(f)] = m.barrier.sync;
  for (const hw::Fence f : {hw::Fence::kRmb, hw::Fence::kWmb, hw::Fence::kRelease, hw::Fence::kAcquire}) {
    c[static_cast<std::size_t>(f)] = m.barrier.lwsync;
  }
  return c;
}

}  // namespace tlbsim::powerpc
