// The x86 TLB code of the lazy-TLB era, Linux v3.3: arch/x86/mm/tlb.c (the invalidate-vector flush IPIs,
// leave_mm, flush_tlb_mm/page/all) and arch/x86/include/asm/mmu_context.h (switch_mm, enter_lazy_tlb), read
// against the v3.0 and v3.6 copies listed in SOURCES.md. No PCID, no tlb_gen: mm_cpumask is the only shared
// per-mm TLB state and every CR3 write flushes every non-global entry.
#pragma once

#include <cstdint>
#include <vector>

#include "arch/x86/mm/mm_stats.h"
#include "arch/x86/mm/tlb_state.h"
#include "kernel/kernel.h"
#include "lib/cpumask.h"

namespace tlbsim::x86::v3 {

using kernel::Cpumask;
using kernel::MmStruct;
using kernel::PerCpu;
using kernel::SharedCpumask;

// NUM_INVALIDATE_TLB_VECTORS (arch/x86/include/asm/irq_vectors.h, v2.6.39..v3.5): NR_CPUS if NR_CPUS <= 32, else
// 32. The model assumes a distribution kernel's NR_CPUS > 32, so 32 vectors.
inline constexpr std::uint32_t NUM_INVALIDATE_TLB_VECTORS = 32;
// INVALIDATE_TLB_VECTOR_START: the model's number for the first of them (the generic vectors are 1..3 in
// kernel/kernel.h); the vectors are START .. START + NUM - 1.
inline constexpr int INVALIDATE_TLB_VECTOR_START = 16;

// union smp_flush_state: one per vector, padded to its own (internode) cache line, holding the sender's
// flush_mm, flush_va, tlbstate_lock and flush_cpumask. Values are plain; every access touches `line`.
struct SmpFlushState {
  LineId line{};
  MmStruct* flush_mm = nullptr;
  std::uint64_t flush_va = 0;
  int tlbstate_lock = 0;
  Cpumask flush_cpumask;
};

// The era's global flush data: flush_state[] and the per-CPU, read-mostly tlb_vector_offset.
struct FlushGlobals {
  std::vector<SmpFlushState> flush_state;
  std::vector<std::uint32_t> tlb_vector_offset;  // per CPU
  std::uint32_t nr_cpu_ids = 0;
};

// init_smp_flush + calculate_tlb_offset: the vectors are split evenly over the nodes (sockets here), and the CPUs
// of each node take that node's vectors round-robin.
void init_smp_flush(FlushGlobals& g, kernel::Kernel& k);
// The FlushGlobals of `self`'s kernel (the registered v3.3 ArchMmu owns them).
FlushGlobals& flush_globals(PerCpu& self);

// load_cr3(pgd): a CR3 write; without PCID it flushes every non-global TLB entry.
sim::Task<void> load_cr3(PerCpu& self, MmStruct& mm);
// local_flush_tlb / __flush_tlb(): rewrite CR3 with its own value (not a load_cr3 call).
sim::Task<void> local_flush_tlb(PerCpu& self);
// __flush_tlb_one(va): INVLPG.
sim::Task<void> flush_tlb_one(PerCpu& self, std::uint64_t va);
// __flush_tlb_all(): toggle CR4.PGE, dropping global entries too.
sim::Task<void> flush_tlb_all_local(PerCpu& self);

// switch_mm(prev, next, tsk), prev being this CPU's cpu_tlbstate.active_mm. Called with interrupts disabled.
sim::Task<void> switch_mm(PerCpu& self, MmStruct& next);
// enter_lazy_tlb(mm, tsk): OK becomes LAZY; nothing shared is touched.
sim::Task<void> enter_lazy_tlb(PerCpu& self);
// leave_mm(cpu): before seed 003, and seed 003 as posted and as merged (KernelConfig options).
sim::Task<void> leave_mm(PerCpu& self);

// smp_invalidate_interrupt: the handler of INVALIDATE_TLB_VECTOR_START + `sender`.
sim::Task<void> smp_invalidate_interrupt(PerCpu& self, std::uint32_t sender);
// flush_tlb_others_ipi / native_flush_tlb_others(cpumask, mm, va): reads `cpumask` (an mm_cpumask).
sim::Task<void> native_flush_tlb_others(PerCpu& self, SharedCpumask& cpumask, MmStruct& mm, std::uint64_t va);
// flush_tlb_mm(mm), flush_tlb_page(vma, va) and flush_tlb_all().
sim::Task<void> flush_tlb_mm(PerCpu& self, MmStruct& mm);
sim::Task<void> flush_tlb_page(PerCpu& self, MmStruct& mm, std::uint64_t va);
sim::Task<void> flush_tlb_all(PerCpu& self);

}  // namespace tlbsim::x86::v3
