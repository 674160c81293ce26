// The architecture's MMU-context and TLB-flush hooks that generic kernel code calls (asm/mmu_context.h,
// asm/tlbflush.h, asm/tlb.h, asm/tlbbatch.h), one implementation per modeled architecture and era, self-registered
// and chosen by the kernel profile's arch and version.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "hw/fence.h"
#include "lib/cpumask.h"
#include "model/config.h"
#include "sim/task.h"

namespace tlbsim::hw {
class CoherenceModel;
struct Machine;
}

namespace tlbsim::kernel {

class Kernel;
class MmStruct;
class PerCpu;
class Stats;
struct MmuGather;

// struct arch_tlbflush_unmap_batch: x86 keeps the union of the mms' cpumasks; seed 001's powerpc version also keeps
// the list of mms (each target flushes each of them).
struct ArchTlbflushUnmapBatch {
  explicit ArchTlbflushUnmapBatch(std::uint32_t ncpus) : cpumask(ncpus) {}
  Cpumask cpumask;
  std::vector<MmStruct*> mms;
  std::size_t nr_mm = 0;  // seed 001: the count of adds since the last flush (powerpc's batch->nr_mm)
  bool unmapped_pages = false;  // x86 v6.15: arch_tlbbatch_add_pending cleared PTEs since the last flush
};

// The architecture's per-CPU state (x86: cpu_tlbstate and cpu_tlbstate_shared). Contract: made by
// ArchMmu::alloc_cpu_state once per CPU; only that architecture's code looks inside (each arch casts it back to its own
// type in one accessor).
class ArchCpuState {
 public:
  virtual ~ArchCpuState() = default;
};

// mm_context_t: the architecture's part of an mm_struct (x86: ctx_id, tlb_gen; powerpc: the PID, active_cpus).
// Contract: made by ArchMmu::init_new_context for every mm, init_mm included; read only by that architecture's code.
class ArchMmContext {
 public:
  virtual ~ArchMmContext() = default;
};

// Contract: one instance per Kernel, stateless apart from per-CPU state kept in PerCpu and an era's global flush
// data (x86 v3.3 flush_state[]), which the instance may own; every method runs on
// `self`'s CPU. switch_mm_irqs_off is called with interrupts disabled. init_cpu runs once per CPU before any task.
class ArchMmu {
 public:
  virtual ~ArchMmu() = default;
  virtual Arch arch() const = 0;
  virtual KernelVersion since() const = 0;  // the releases this code models (inclusive)
  virtual KernelVersion until() const = 0;

  // Era facts. arch_spin_lock's algorithm in these releases.
  virtual SpinlockKind spinlock_kind() const = 0;
  // Whether spin_lock_irqsave spins with the caller's interrupts enabled (powerpc's arch_spin_lock_flags before
  // v5.16; x86's spin_lock_flags has always been plain spin_lock).
  virtual bool spin_lock_flags_enables_irqs() const { return false; }
  // What each of the kernel's barriers costs on `m` in these releases: the instruction it compiles to, priced from the
  // machine's [barrier] figures (all zero when the machine gives none).
  virtual hw::FenceCosts fence_costs(const hw::Machine& m) const = 0;
  // PAGE_SIZE in bytes. The model's pages are 4 KiB of address space; where a workload's per-page work scales with
  // the page (a hole's zero fill, a reader's loads), it is charged for a whole PAGE_SIZE page (docs/model.md).
  virtual std::uint64_t page_size() const = 0;

  // The per-CPU areas: this CPU's arch state, made when the kernel sets up the CPU (before init_mm exists).
  virtual std::unique_ptr<ArchCpuState> alloc_cpu_state(hw::CoherenceModel& model) = 0;
  // init_new_context(tsk, mm), and for init_mm its static INIT_MM_CONTEXT: the mm's arch context.
  virtual std::unique_ptr<ArchMmContext> init_new_context(Kernel& k, MmStruct& mm) = 0;
  // Sizes the architecture's per-CPU counters and registers them (the x86 CR3 loads, radix tlbie counts).
  virtual void register_stats(Stats&, std::uint32_t /*ncpus*/) {}

  // Boot: this CPU runs in init_mm.
  virtual void init_cpu(PerCpu& self, MmStruct& init_mm) = 0;

  // switch_mm_irqs_off(prev, next, tsk) / activate_mm.
  virtual sim::Task<void> switch_mm_irqs_off(PerCpu& self, MmStruct& next) = 0;
  // enter_lazy_tlb(mm, tsk): the CPU switches to a task without an mm and keeps `mm` loaded.
  virtual sim::Task<void> enter_lazy_tlb(PerCpu& self, MmStruct& mm) = 0;
  // The idle driver entering a state that loses the TLB (intel_idle: leave_mm when CPUIDLE_FLAG_TLB_FLUSHED).
  virtual sim::Task<void> leave_mm(PerCpu& self) = 0;

  // flush_tlb_mm_range / flush_tlb_page / flush_tlb_mm.
  virtual sim::Task<void> flush_tlb_mm_range(PerCpu& self, MmStruct& mm, std::uint64_t start, std::uint64_t end,
                                             std::uint8_t stride_shift, bool freed_tables) = 0;
  virtual sim::Task<void> flush_tlb_page(PerCpu& self, MmStruct& mm, std::uint64_t addr) = 0;
  virtual sim::Task<void> flush_tlb_mm(PerCpu& self, MmStruct& mm) = 0;
  // CONFIG_MMU_GATHER_MERGE_VMAS (x86 and powerpc select it from v6.0; their tlb_end_vma was empty before): whether
  // tlb_end_vma leaves the gathered range for later. Where it is not set (arm64) tlb_end_vma flushes the VMA's range.
  virtual bool mmu_gather_merge_vmas() const { return true; }
  // Whether the arch's remote invalidations are broadcast by the hardware to every CPU's TLB (POWER's tlbie): the
  // kernel then keeps hw::TagHolders, so that the model visits only the TLBs that hold the tag (a simulator
  // shortcut; what is simulated is the same).
  virtual bool broadcasts_tlb_invalidations() const { return false; }
  // tlb_flush(struct mmu_gather *): the gathered range, or the whole mm when tlb->fullmm (exit).
  virtual sim::Task<void> tlb_flush(PerCpu& self, MmuGather& tlb) = 0;

  // ARCH_WANT_BATCHED_UNMAP_TLB_FLUSH: whether reclaim may defer flushes into a batch with this kernel's options.
  virtual bool batched_unmap(const KernelConfig& cfg) const = 0;
  // arch_tlbbatch_should_defer(mm) (seed 001 patch 1 makes the generic test an arch hook).
  virtual sim::Task<bool> arch_tlbbatch_should_defer(PerCpu& self, MmStruct& mm);
  // arch_tlbbatch_add_mm(batch, mm), v6.5+ arch_tlbbatch_add_pending(batch, mm, uaddr): `uaddr` is the unmapped
  // page's address (arm64 issues its TLBI there).
  virtual sim::Task<void> arch_tlbbatch_add_mm(PerCpu& self, ArchTlbflushUnmapBatch& batch, MmStruct& mm,
                                               std::uint64_t uaddr) = 0;
  virtual sim::Task<void> arch_tlbbatch_flush(PerCpu& self, ArchTlbflushUnmapBatch& batch) = 0;
  // What flush_tlb_batched_pending does for an mm that reclaim unmapped with its flush deferred: flush_tlb_mm (x86,
  // powerpc; v6.5's arch_flush_tlb_batched_pending, which arm64 makes a dsb(ish)).
  virtual sim::Task<void> arch_flush_tlb_batched_pending(PerCpu& self, MmStruct& mm);

  // __switch_to's architecture work that matters to the TLB, at every task switch (arm64: dsb(ish)), where
  // has_switch_to() says there is any (so that the other architectures' context switches start no coroutine).
  virtual bool has_switch_to() const { return false; }
  virtual sim::Task<void> switch_to(PerCpu& self);
  // destroy_context(mm), from __mmdrop before the mm is freed (x86 v6.15: mm_free_global_asid).
  virtual sim::Task<void> destroy_context(PerCpu& self, MmStruct& mm);
  // An interrupt vector the architecture owns (beyond the generic call-function and timer vectors). Returns false
  // when the vector is not this architecture's.
  virtual sim::Task<bool> handle_arch_irq(PerCpu& self, int vector);
};

// The ArchMmu registered for `arch` whose releases include `version`, or nullptr.
std::unique_ptr<ArchMmu> find_arch_mmu(Arch arch, KernelVersion version);
// "x86 3.3, x86 5.17..6.13, powerpc ..." for messages and `tlbsim list eras`.
std::string modeled_arch_eras();

}  // namespace tlbsim::kernel
