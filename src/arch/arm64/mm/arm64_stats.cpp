#include "arch/arm64/mm/arm64_stats.h"

namespace tlbsim::arm64 {

void Arm64Stats::register_stats(kernel::Stats& stats, std::uint32_t ncpus) {
  using kernel::kStatGate;
  using kernel::kStatSummary;
  cr3_loads.assign(ncpus, 0);
  stats.registrar(this)
      .per_cpu("cr3_loads", "TTBR writes (cpu_switch_mm, cpu_set_reserved_ttbr0)", cr3_loads, kStatSummary)
      .count("cr3_loads_by_cause/switch_mm", "TTBR writes switching to a user mm", cr3_switch_mm)
      .count("cr3_loads_by_cause/to_init_mm", "reserved TTBR0 writes switching to init_mm", cr3_to_init_mm);
  // Shown when the kernel issued any of them.
  constexpr unsigned kRow = kStatSummary | kStatGate;
  stats.registrar(this, "arm64")
      .count("arm64/tlbi_aside1is", "TLBI ASIDE1IS (broadcast, whole ASID)", tlbi_aside1is, kRow)
      .count("arm64/tlbi_vae1is", "TLBI VAE1IS (broadcast, one page and its walk-cache entries)", tlbi_vae1is, kRow)
      .count("arm64/tlbi_vale1is", "TLBI VALE1IS (broadcast, one page, last level)", tlbi_vale1is, kRow)
      .count("arm64/dsb_ish", "DSB ISH waits for broadcast TLBIs to complete", dsb_ish, kRow)
      .count("arm64/local_flush_tlb_all", "TLBI VMALLE1 at the first switch after a rollover", local_flush_tlb_all,
             kRow)
      .count("arm64/switch_fastpath", "check_and_switch_context fast paths (cmpxchg of active_asids)", switch_fastpath,
             kRow)
      .count("arm64/switch_slowpath", "check_and_switch_context slow paths (cpu_asid_lock)", switch_slowpath, kRow)
      .count("arm64/new_context", "ASIDs (re)allocated by new_context", new_context, kRow)
      .count("arm64/asid_rollovers", "ASID generation rollovers (flush_context)", asid_rollovers, kRow);
}

}  // namespace tlbsim::arm64
