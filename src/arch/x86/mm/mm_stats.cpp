#include "arch/x86/mm/mm_stats.h"

namespace tlbsim::x86 {

void MmStats::register_stats(kernel::Stats& stats, std::uint32_t ncpus) {
  cr3_loads.assign(ncpus, 0);
  stats.registrar(this)
      .per_cpu("cr3_loads", "CR3 writes (load_new_mm_cr3, load_cr3, flush_tlb_local)", cr3_loads, kernel::kStatSummary)
      .count("cr3_loads_by_cause/switch_mm", "CR3 loads switching to a user mm", cr3_switch_mm)
      .count("cr3_loads_by_cause/to_init_mm", "CR3 loads leaving an mm for init_mm (leave_mm, lazy flush IPI, idle)",
             cr3_to_init_mm)
      .count("cr3_loads_by_cause/flush", "CR3 rewrites to flush the TLB (flush_tlb_local)", cr3_flush);
}

}  // namespace tlbsim::x86
