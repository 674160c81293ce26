#include "arch/powerpc/mm/book3s64/radix_stats.h"

namespace tlbsim::powerpc {

void RadixStats::register_stats(kernel::Stats& stats, std::uint32_t ncpus) {
  using kernel::kStatGate;
  using kernel::kStatSummary;
  cr3_loads.assign(ncpus, 0);
  stats.registrar(this)
      .per_cpu("cr3_loads", "PIDR writes (radix__switch_mmu_context)", cr3_loads, kStatSummary)
      .count("cr3_loads_by_cause/switch_mm", "PIDR writes switching to a user mm", cr3_switch_mm)
      .count("cr3_loads_by_cause/to_init_mm", "PIDR writes leaving an mm for init_mm", cr3_to_init_mm);
  // Shown when the kernel issued any of them.
  constexpr unsigned kRow = kStatSummary | kStatGate;
  stats.registrar(this, "radix")
      .count("radix/tlbie_pid", "_tlbie_pid sequences (broadcast, whole PID)", tlbie_pid, kRow)
      .count("radix/tlbie_va", "tlbie of one page (broadcast)", tlbie_va, kRow)
      .count("radix/tlbiel_pid", "_tlbiel_pid sequences (this CPU, whole PID)", tlbiel_pid, kRow)
      .count("radix/tlbiel_va", "tlbiel of one page (this CPU)", tlbiel_va, kRow)
      .count("radix/tlbiel_lpid", "flushes of the partition on this CPU (seed 001 -lpid)", tlbiel_lpid, kRow)
      .count("radix/mm_cpumask_trims", "mm_cpumask bits cleared by exit_lazy_flush_tlb (v6.2)", mm_cpumask_trims, kRow)
      .count("radix/tlbbatch_missed_mm", "seed 001: batch adds that found the batch full", tlbbatch_missed_mm, kRow);
}

}  // namespace tlbsim::powerpc
