// The kernel's barriers as the hardware layer sees them (hw::Memory::fence) and what each costs in the timed model.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "sim/time.h"

namespace tlbsim::hw {

// The barriers of the kernel's memory model (include/asm-generic/barrier.h and each arch's asm/barrier.h), as the
// modeled code states them; kernel/barrier.h gives them their kernel names. What each one does is the memory
// model's business: under x86-TSO only kMb and kSerializing wait for the store buffer.
// An address dependency: the moment, on the reading CPU's clock of the POWER storage, from which a load whose
// address was computed from earlier loads may be satisfied. `at` 0 is none; under SC and TSO, which never satisfy
// loads out of order, it is always 0.
struct Dependency {
  std::uint32_t at = 0;
};

enum class Fence : std::uint8_t {
  kCompiler,     // barrier(): orders nothing the hardware does
  kMb,           // smp_mb(): a full barrier (x86: a LOCK'd add to the stack or MFENCE)
  kRmb,          // smp_rmb(): load -> load (x86: barrier())
  kWmb,          // smp_wmb(): store -> store (x86: barrier())
  kSerializing,  // an instruction the Intel SDM (vol. 3A, 9.3) lists as serializing: MOV to CR3, INVLPG, IRET, ...
  kRelease,      // the ordering smp_store_release() puts before its store (x86: barrier(); powerpc: lwsync)
  kAcquire,      // the ordering smp_load_acquire() puts after its load (x86: barrier(); powerpc: lwsync)
  kMbAtomic,     // smp_mb__{before,after}_atomic() and a fully ordered RMW's own barriers (x86: none; powerpc: sync)
  kPtesync,      // powerpc ptesync: a sync to the memory models; its time is part of the tlb.* invalidation costs
};
inline constexpr std::size_t kFenceKinds = 9;

// What each barrier costs the CPU that executes it in the timed model, indexed by Fence (ArchMmu::fence_costs: the
// instruction each compiles to in the era, from the machine's [barrier] figures). All zero unless set: the checker
// leaves them so.
using FenceCosts = std::array<sim::Duration, kFenceKinds>;

}  // namespace tlbsim::hw
