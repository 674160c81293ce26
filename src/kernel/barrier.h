// The kernel's barriers under their names (include/asm-generic/barrier.h, arch/x86/include/asm/barrier.h,
// arch/powerpc/include/asm/barrier.h), as explicit points of the modeled code. They take no step: in the timed model
// (sequentially consistent) each costs what the instruction it compiles to costs on the machine (ArchMmu::fence_costs,
// carried into the CPU's next step); the checker's memory model (hw::Memory::set_memory_model) decides what each one
// orders. Where an era had only barrier(), the model has only barrier().
#pragma once

#include "hw/memory.h"
#include "sim/cpu.h"

namespace tlbsim::kernel {

// Orders the compiler only.
inline void barrier(hw::Memory& m, sim::Cpu& cpu) { m.fence(cpu, hw::Fence::kCompiler); }
// A full barrier: x86 "lock; addl $0,-4(%rsp)" (v4.15+) or mfence; powerpc sync.
inline void smp_mb(hw::Memory& m, sim::Cpu& cpu) { m.fence(cpu, hw::Fence::kMb); }
// x86: barrier(); powerpc: lwsync.
inline void smp_rmb(hw::Memory& m, sim::Cpu& cpu) { m.fence(cpu, hw::Fence::kRmb); }
inline void smp_wmb(hw::Memory& m, sim::Cpu& cpu) { m.fence(cpu, hw::Fence::kWmb); }
// After or before an atomic RMW: x86's are LOCK'd, so these are barrier() there; powerpc: smp_mb().
inline void smp_mb__after_atomic(hw::Memory& m, sim::Cpu& cpu) { m.fence(cpu, hw::Fence::kMbAtomic); }
inline void smp_mb__before_atomic(hw::Memory& m, sim::Cpu& cpu) { m.fence(cpu, hw::Fence::kMbAtomic); }
// The orderings that smp_store_release() puts before its store and smp_load_acquire() after its load; the access
// itself is the caller's (x86: a plain mov, ordered by TSO; powerpc: lwsync).
inline void smp_store_release_fence(hw::Memory& m, sim::Cpu& cpu) { m.fence(cpu, hw::Fence::kRelease); }
inline void smp_load_acquire_fence(hw::Memory& m, sim::Cpu& cpu) { m.fence(cpu, hw::Fence::kAcquire); }
// powerpc ptesync (Power ISA v3.0B, Book III 5.9.2): a sync that also orders page-table updates before later
// invalidations and walks. Its time is counted in the tlb.* invalidation costs of the machine.
inline void ptesync(hw::Memory& m, sim::Cpu& cpu) { m.fence(cpu, hw::Fence::kPtesync); }
// arm64 dsb(ish) and dsb(ishst) (and the non-shareable dsb(nsh*) around a local TLBI): the CPU's earlier accesses,
// page-table stores included, complete before it goes on; the same to the memory models as ptesync. Its time is
// counted in the tlb.* invalidation costs of the machine (DSB ISH's wait for TLBIs: tlb.dsb_ish).
inline void dsb(hw::Memory& m, sim::Cpu& cpu) { m.fence(cpu, hw::Fence::kPtesync); }
// An instruction that the Intel SDM (vol. 3A, 9.3 "Serializing instructions") lists as serializing: MOV to CR3,
// INVLPG, IRET, WRMSR (but not to the x2APIC MSRs). It waits for the store buffer to drain.
inline void serializing_instruction(hw::Memory& m, sim::Cpu& cpu) { m.fence(cpu, hw::Fence::kSerializing); }

}  // namespace tlbsim::kernel
