// The powerpc radix MMU code's counters, owned by the kernel's RadixMmu: PIDR writes (reported under x86's CR3
// names, as the same event), invalidation sequences (tlbie = broadcast, tlbiel = this CPU only), mm_cpumask bits
// trimmed by exit_lazy_flush_tlb (v6.2), and seed 001 batch adds that found the batch full.
#pragma once

#include <cstdint>
#include <vector>

#include "model/stats.h"

namespace tlbsim::powerpc {

struct RadixStats {
  std::vector<std::uint64_t> cr3_loads;  // PIDR writes, per CPU
  std::uint64_t cr3_switch_mm = 0, cr3_to_init_mm = 0;
  std::uint64_t tlbie_pid = 0, tlbie_va = 0, tlbiel_pid = 0, tlbiel_va = 0, tlbiel_lpid = 0;
  std::uint64_t mm_cpumask_trims = 0, tlbbatch_missed_mm = 0;

  void register_stats(kernel::Stats& stats, std::uint32_t ncpus);
};

}  // namespace tlbsim::powerpc
