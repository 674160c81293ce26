// The arm64 MMU code's counters, owned by the kernel's Arm64Mmu: TTBR writes (reported under x86's CR3 names, as the
// same event), TLBIs by operation, DSB ISH waits, local flushes, and the ASID allocator's work.
#pragma once

#include <cstdint>
#include <vector>

#include "model/stats.h"

namespace tlbsim::arm64 {

struct Arm64Stats {
  std::vector<std::uint64_t> cr3_loads;  // TTBR0/TTBR1 writes, per CPU
  std::uint64_t cr3_switch_mm = 0, cr3_to_init_mm = 0;
  std::uint64_t tlbi_aside1is = 0, tlbi_vae1is = 0, tlbi_vale1is = 0, dsb_ish = 0, local_flush_tlb_all = 0;
  std::uint64_t switch_fastpath = 0, switch_slowpath = 0, new_context = 0, asid_rollovers = 0;

  void register_stats(kernel::Stats& stats, std::uint32_t ncpus);
};

}  // namespace tlbsim::arm64
