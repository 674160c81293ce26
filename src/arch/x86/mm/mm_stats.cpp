#include "arch/x86/mm/mm_stats.h"

#include "arch/x86/mm/tlb_broadcast.h"

namespace tlbsim::x86 {

void MmStats::register_stats(kernel::Stats& stats, std::uint32_t ncpus) {
  cr3_loads.assign(ncpus, 0);
  stats.registrar(this)
      .per_cpu("cr3_loads", "CR3 writes (load_new_mm_cr3, load_cr3, flush_tlb_local)", cr3_loads, kernel::kStatSummary)
      .count("cr3_loads_by_cause/switch_mm", "CR3 loads switching to a user mm", cr3_switch_mm)
      .count("cr3_loads_by_cause/to_init_mm", "CR3 loads leaving an mm for init_mm (leave_mm, lazy flush IPI, idle)",
             cr3_to_init_mm)
      .count("cr3_loads_by_cause/flush", "CR3 rewrites to flush the TLB (flush_tlb_local)", cr3_flush);
  stats.registrar(this, "invlpgb")
      .count("invlpgb/invlpgb", "INVLPGB instructions (broadcast invalidations)", invlpgb,
             kernel::kStatSummary | kernel::kStatGate)
      .count("invlpgb/tlbsync", "TLBSYNC instructions", tlbsync, kernel::kStatSummary)
      .count("invlpgb/global_asid_assigned", "mms given a global ASID (use_global_asid)", global_asid_assigned)
      .count("invlpgb/asid_transition_done", "ASID transitions finished (mm_clear_asid_transition)",
             asid_transition_done)
      .count("invlpgb/asid_transition_ipis", "flush IPIs finish_asid_transition sent to CPUs on a dynamic ASID",
             asid_transition_ipis)
      .count("invlpgb/global_asid_space_reset", "global ASID space resets (reset_global_asid_space)",
             global_asid_space_reset);
}

X86Mmu::X86Mmu() = default;
X86Mmu::~X86Mmu() = default;

}  // namespace tlbsim::x86
