// The modeled kernel's identity (architecture and release), its era facts, and which declared options are on and
// which mutations are planted (model/declare.h; each owner declares its own in its options.h).
#pragma once

#include <algorithm>
#include <cstdint>

#include "model/arch.h"
#include "model/declare.h"

namespace tlbsim::kernel {

// The arch_spin_lock algorithm of a kernel release (an era fact: ArchMmu::spinlock_kind).
enum class SpinlockKind : std::uint8_t {
  // powerpc before queued spinlocks (arch/powerpc/include/asm/spinlock.h, v4.14): an lwarx/stwcx. trylock, and
  // spinning on plain loads while the lock is held; every spinner retries the trylock after a release.
  kTestAndSet,
  // x86 ticket spinlocks (arch/x86/include/asm/spinlock.h, v2.6.25-v4.1): xadd takes a ticket, the waiter spins
  // until `head` reaches it, and unlock increments `head` with a plain (unlocked) add.
  kTicket,
  // qspinlock (kernel/locking/qspinlock.c; x86 from v4.2, powerpc 64s from v5.12): a trylock, then one pending
  // waiter spinning on the lock word, then an MCS queue whose waiters each spin on their own per-CPU node.
  kQueued,
};
struct KernelConfig {
  // The architecture and release whose code runs; they choose the ArchMmu implementation (the era).
  Arch arch = Arch::kX86;
  KernelVersion version{5, 17};
  // CONFIG_HZ: the scheduler tick's rate (kernel/Kconfig.hz; its default, HZ_250, unless the profile's `HZ` key
  // says otherwise). The tick runs on busy CPUs only (NO_HZ_IDLE; kernel/sched/tick.cpp).
  std::uint32_t HZ = 250;
  // The fair class's policy: EEVDF from v6.6 ("sched/fair: Implement an EEVDF-like scheduling policy"), with the
  // v6.13 defaults PLACE_LAG, PLACE_DEADLINE_INITIAL, PLACE_REL_DEADLINE, RUN_TO_PARITY and WAKEUP_PREEMPTION
  // (kernel/sched/fair.cpp); CFS's vruntime-gap wake-up preemption and sched_slice() tick preemption before it.
  bool sched_eevdf() const { return version >= KernelVersion{6, 6}; }
  // EEVDF's delayed dequeue and what came with it in v6.12 (Peter Zijlstra's "Complete EEVDF" series): DELAY_DEQUEUE
  // and DELAY_ZERO (a sleeper that is not eligible stays queued until picked or woken) and PLACE_REL_DEADLINE (a
  // migrating task keeps its relative deadline).
  bool sched_delay_dequeue() const { return version >= KernelVersion{6, 12}; }


  // The options that are on and the mutations planted: one bit per declared id (model/declare.h). The declarations
  // are each owner's options.h (kernel/options.h, arch/x86/options.h, arch/powerpc/options.h).
  DeclBits option_bits;
  DeclBits mutation_bits;

  // Whether option `o` is on: `cfg.on(x86::Option::lazy_mm_cpumask)`.
  template <OptionId E>
  bool on(E o) const {
    return option_bits[decl_bit(o)];  // in range by TLBSIM_DECLARE_SPACE's static_assert; no test()'s check
  }
  template <OptionId E>
  void set(E o, bool value) {
    option_bits.set(decl_bit(o), value);
  }
  template <MutationId E>
  void plant(E m) {
    mutation_bits.set(decl_bit(m));
  }
};

// A planted bug's switch: true only when `--mutation` planted `m`. Model code writes `if (planted(cfg, m))` so that a
// mutation point reads apart from the kernel's own logic; no profile ever turns one on.
template <MutationId E>
bool planted(const KernelConfig& cfg, E m) {
  return cfg.mutation_bits[decl_bit(m)];
}

}  // namespace tlbsim::kernel
