// The x86 TLB code of Linux v5.17 (arch/x86/mm/tlb.c), modeled function by function with the kernel's names and
// branch structure: switch_mm_irqs_off, choose_new_asid, load_new_mm_cr3, enter_lazy_tlb, leave_mm,
// flush_tlb_mm_range, native_flush_tlb_multi, flush_tlb_func, and the batched-unmap flush.
#pragma once

#include <cstdint>

#include "arch/x86/mm/mm_stats.h"
#include "arch/x86/mm/tlb_state.h"
#include "kernel/kernel.h"
#include "lib/cpumask.h"

namespace tlbsim::x86 {

using kernel::Cpumask;
using kernel::MmStruct;
using kernel::PerCpu;

// switch_mm_irqs_off(prev, next, tsk): `prev` is ignored, as in the kernel (cpu_tlbstate.loaded_mm is what
// counts). Contract: called with interrupts disabled.
sim::Task<void> switch_mm_irqs_off(PerCpu& self, MmStruct& next);
// switch_mm(): switch_mm_irqs_off with interrupts disabled around it.
sim::Task<void> switch_mm(PerCpu& self, MmStruct& next);
// struct new_asid and choose_new_asid: the mm's global ASID (v6.15, never flushed), else this CPU's ASID slot for
// `next` if it has one, else the next slot round-robin. `use_global`: false only for a planted mutation.
struct NewAsid {
  std::uint16_t asid = 0;
  bool need_flush = false;
};
sim::Task<NewAsid> choose_new_asid(PerCpu& self, MmStruct& next, std::uint64_t next_tlb_gen, bool use_global = true);
// load_new_mm_cr3: a CR3 write for kern_pcid(new_asid), flushing that PCID if need_flush.
sim::Task<void> load_new_mm_cr3(PerCpu& self, MmStruct& next, std::uint16_t new_asid, bool need_flush);
// enter_lazy_tlb: mark this CPU lazy if it has a user mm loaded.
sim::Task<void> enter_lazy_tlb(PerCpu& self);
// leave_mm: switch a lazy CPU to init_mm.
sim::Task<void> leave_mm(PerCpu& self);

// flush_tlb_mm_range(mm, start, end, stride_shift, freed_tables).
sim::Task<void> flush_tlb_mm_range(PerCpu& self, MmStruct& mm, std::uint64_t start, std::uint64_t end,
                                   std::uint8_t stride_shift, bool freed_tables);
// flush_tlb_page(vma, addr) and flush_tlb_mm(mm).
sim::Task<void> flush_tlb_page(PerCpu& self, MmStruct& mm, std::uint64_t addr);
sim::Task<void> flush_tlb_mm(PerCpu& self, MmStruct& mm);
// native_flush_tlb_multi(cpumask, info).
sim::Task<void> native_flush_tlb_multi(PerCpu& self, const Cpumask& cpumask, const FlushTlbInfo& info);
// flush_tlb_func(info), on the initiator (local) and on every target (from the IPI).
sim::Task<void> flush_tlb_func(PerCpu& self, const void* info);

// flush_tlb_one_user (INVLPG in the current PCID) and flush_tlb_local (CR3 rewrite: flush the current PCID).
sim::Task<void> flush_tlb_one_user(PerCpu& self, std::uint64_t addr);
sim::Task<void> flush_tlb_local(PerCpu& self);

// The batched-unmap flush (ARCH_WANT_BATCHED_UNMAP_TLB_FLUSH, x86 since Linux 4.3): struct
// arch_tlbflush_unmap_batch holds the union of the mm_cpumasks of the mms whose PTEs were cleared.
using kernel::ArchTlbflushUnmapBatch;
sim::Task<void> arch_tlbbatch_add_mm(PerCpu& self, ArchTlbflushUnmapBatch& batch, MmStruct& mm);
sim::Task<void> arch_tlbbatch_flush(PerCpu& self, ArchTlbflushUnmapBatch& batch);

}  // namespace tlbsim::x86
