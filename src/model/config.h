// The modeled kernel's identity (architecture and release) and its options: each seed's change, each later fix and
// each reviewed variant is one named boolean here, registered in model/options.cpp with the eras it exists in.
#pragma once

#include <algorithm>
#include <compare>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tlbsim::kernel {

// A kernel release, major.minor ("5.17"). Contract: parse() accepts only digits '.' digits.
struct KernelVersion {
  int major = 0;
  int minor = 0;
  auto operator<=>(const KernelVersion&) const = default;
  std::string str() const { return std::to_string(major) + "." + std::to_string(minor); }
  // Throws InputError naming `where` when `text` is not a version.
  static KernelVersion parse(std::string_view text, std::string_view where);
};

// The arch_spin_lock algorithm of a kernel release (KernelConfig::spinlock_kind).
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
  // The architecture ("x86" or "powerpc") and release whose code runs; they choose the ArchMmu implementation.
  std::string arch = "x86";
  KernelVersion version{5, 17};
  // CONFIG_HZ: the scheduler tick's rate (kernel/Kconfig.hz; its default, HZ_250, unless the profile's `HZ` key
  // says otherwise). The tick runs on busy CPUs only (NO_HZ_IDLE; kernel/sched/tick.cpp).
  std::uint32_t HZ = 250;
  // Whether spin_lock_irqsave spins with the caller's interrupts enabled: powerpc's arch_spin_lock_flags
  // (arch/powerpc/include/asm/spinlock.h, v4.14) restores `flags` after a failed trylock and spins on plain loads,
  // disabling interrupts again before the next trylock. It went with the generic spin_lock_flags() (v5.16, "locking:
  // Remove spin_lock_flags() etc"); x86's spin_lock_flags has always been plain spin_lock.
  bool spin_lock_flags_enables_irqs() const { return arch == "powerpc" && version < KernelVersion{5, 16}; }
  // arch_spin_lock's algorithm: x86 used ticket locks until qspinlock (v4.2, "locking/qspinlock, x86: Enable x86-64
  // to use queued spinlocks"); powerpc 64s used its test-and-set lock until queued spinlocks became its default
  // (v5.12, "powerpc: always enable queued spinlocks for 64s, disable for others").
  SpinlockKind spinlock_kind() const {
    if (arch == "x86") return version < KernelVersion{4, 2} ? SpinlockKind::kTicket : SpinlockKind::kQueued;
    return version < KernelVersion{5, 12} ? SpinlockKind::kTestAndSet : SpinlockKind::kQueued;
  }

  // The fair class's policy: EEVDF from v6.6 ("sched/fair: Implement an EEVDF-like scheduling policy"), with the
  // v6.13 defaults PLACE_LAG, PLACE_DEADLINE_INITIAL, PLACE_REL_DEADLINE, RUN_TO_PARITY and WAKEUP_PREEMPTION
  // (kernel/sched/fair.cpp); CFS's vruntime-gap wake-up preemption and sched_slice() tick preemption before it.
  bool sched_eevdf() const { return version >= KernelVersion{6, 6}; }
  // EEVDF's delayed dequeue and what came with it in v6.12 (Peter Zijlstra's "Complete EEVDF" series): DELAY_DEQUEUE
  // and DELAY_ZERO (a sleeper that is not eligible stays queued until picked or woken) and PLACE_REL_DEADLINE (a
  // migrating task keeps its relative deadline).
  bool sched_delay_dequeue() const { return version >= KernelVersion{6, 12}; }

  // do_read_fault's fault-around window in base pages: fault_around_bytes (64 KiB) >> PAGE_SHIFT, used only when it
  // is above 1 (mm/memory.c, from v3.15, "mm: introduce vm_ops->map_pages()"). x86's 4 KiB pages give 16; powerpc64
  // server kernels run 64 KiB base pages (CONFIG_PPC_64K_PAGES), which give 1: no fault-around. None before v3.15.
  std::uint64_t fault_around_pages() const {
    if (version < KernelVersion{3, 15}) return 1;
    return std::max<std::uint64_t>(1, 65536 / page_size());
  }
  // PAGE_SIZE in bytes: x86's 4 KiB; powerpc64 server kernels are built with 64 KiB base pages
  // (CONFIG_PPC_64K_PAGES, the default of book3s64's configs). The model's pages are 4 KiB of address space; where a
  // workload's per-page work scales with the page (a hole's zero fill, a reader's loads), it is charged for a whole
  // PAGE_SIZE page (docs/model.md, "Reclaim and lru_file_mmap_read").
  std::uint64_t page_size() const { return arch == "powerpc" ? 65536 : 4096; }

  // ---- Not a seed: the two forms of native_flush_tlb_multi of x86 v5.13-v5.17.
  // Commit 6035152d8eeb open-codes the lazy filter into a cpumask before the cross-call; the benchmarked kernels of
  // seed 000 carry its revert, which filters with on_each_cpu_cond_mask(tlb_is_not_lazy).
  bool open_coded_cond_mask = false;

  // ---- Seed 000 (x86 v5.17/5.18): x86/mm/tlb: avoid reading mm_tlb_gen when possible (v2, as posted).
  // flush_tlb_func returns early when f->new_tlb_gen <= local_tlb_gen and reads mm->context.tlb_gen after that test.
  bool avoid_mm_tlb_gen_read = false;
  // The later fix (x86/mm/tlb: Ignore f->new_tlb_gen when zero): no early return for TLB_GENERATION_INVALID.
  bool ignore_invalid_tlb_gen = false;

  // ---- Seed 002 (x86 v6.13): x86,tlb: update mm_cpumask lazily (patch 1/3 as posted).
  // switch_mm_irqs_off leaves the CPU in prev's mm_cpumask and sets next's bit only if clear; flush_tlb_func on a
  // CPU that no longer runs f->mm clears its bit there.
  bool lazy_mm_cpumask = false;
  // Its later fix, "x86,mm: only trim the mm_cpumask once a second" (Rik van Riel, v4 as posted 2024-12-04, merged
  // for v6.14): flush_tlb_mm_range sets info->trim_cpumask once per HZ per mm (should_trim_cpumask), and
  // native_flush_tlb_multi's filter (should_flush_tlb) IPIs a CPU that no longer runs the mm only then.
  bool should_trim_cpumask = false;
  // The fix of that fix, "x86/mm: Eliminate window where TLB flushes may be inadvertently skipped" (Dave Hansen,
  // fea4e317f9e7, 2025): switch_mm_irqs_off writes LOADED_MM_SWITCHING before it sets next's mm_cpumask bit and
  // reads tlb_gen, and should_flush_tlb IPIs a CPU in that state (docs/findings.md, F5).
  bool should_flush_tlb_switching = false;

  // ---- Seed 003 (x86 v3.3): x86, tlb: switch cr3 in leave_mm() only when needed.
  // As first posted: leave_mm does cpumask_test_and_clear_cpu and loads swapper_pg_dir only if the bit was set.
  bool leave_mm_cr3_when_needed = false;
  // As reviewed (Linus): a read-only cpumask_test_cpu first, then the clear and the load only when it was set.
  bool leave_mm_cr3_when_needed_test_first = false;

  // ---- Seed 004 (generic v6.2 + powerpc64s radix): shoot lazy tlbs.
  // CONFIG_MMU_LAZY_TLB_SHOOTDOWN: lazy-TLB mm references (mmgrab_lazy_tlb/mmdrop_lazy_tlb) do not touch mm_count;
  // __mmdrop calls cleanup_lazy_tlbs, which IPIs every CPU in mm_cpumask to switch lazy users to init_mm.
  bool MMU_LAZY_TLB_SHOOTDOWN = false;
  // CONFIG_DEBUG_VM_SHOOT_LAZIES: after the shootdown, check on every CPU that none still uses the mm lazily.
  bool DEBUG_VM_SHOOT_LAZIES = false;
  // Patch 5 (powerpc/64s/radix: combine final TLB flush and lazy tlb mm shootdown IPIs): the final exit flush is
  // done by IPI + tlbiel to mm_cpumask, and each target also switches a lazy use of the mm to init_mm.
  bool exit_flush_lazy_tlbs = false;

  // ---- Seed 001 (powerpc64 radix, 2017 RFC): ARCH_WANT_BATCHED_UNMAP_TLB_FLUSH on POWER.
  // Reclaim defers flushes into arch_tlbflush_unmap_batch (a cpumask and the list of mms) and flushes once per
  // batch by IPI, each target flushing each listed mm's PID locally with tlbiel.
  bool ARCH_WANT_BATCHED_UNMAP_TLB_FLUSH = false;
  // The follow-up variant: each target flushes the whole LPID instead of each mm.
  bool batched_unmap_flush_lpid = false;

  // ---- Mutations (model/mutation.h): planted bugs the checker must catch; never set by a profile.
  std::vector<std::string> mutations;
  // Whether mutation `name` is on. Cheap when none is (the normal case).
  bool mutated(std::string_view name) const;
};

}  // namespace tlbsim::kernel
