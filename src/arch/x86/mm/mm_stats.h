// The x86 MMU code's counters (CR3 loads, by CPU and by cause), owned by the kernel's x86 ArchMmu of every era.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "kernel/arch_mmu.h"
#include "kernel/kernel.h"
#include "model/stats.h"

namespace tlbsim::x86 {

struct MmStats {
  std::vector<std::uint64_t> cr3_loads;  // CR3 writes, per CPU
  std::uint64_t cr3_switch_mm = 0;       // CR3 loads by cause: switching to a user mm,
  std::uint64_t cr3_to_init_mm = 0;      // leaving an mm for init_mm (leave_mm, lazy flush IPI, idle),
  std::uint64_t cr3_flush = 0;           // and rewriting CR3 to flush (flush_tlb_local)
  // v6.15 broadcast invalidation (shown once an INVLPGB was issued).
  std::uint64_t invlpgb = 0;                  // INVLPGB instructions
  std::uint64_t tlbsync = 0;                  // TLBSYNC instructions
  std::uint64_t global_asid_assigned = 0;     // mm_assign_global_asid
  std::uint64_t asid_transition_done = 0;     // mm_clear_asid_transition (every CPU on the global ASID)
  std::uint64_t asid_transition_ipis = 0;     // finish_asid_transition's flush_tlb_multi to stragglers
  std::uint64_t global_asid_space_reset = 0;  // reset_global_asid_space (ASID rollover)

  void register_stats(kernel::Stats& stats, std::uint32_t ncpus);
};

struct GlobalAsidSpace;

// The ArchMmu base of the x86 eras: what they share is their counters (and v6.15's global ASID space).
class X86Mmu : public kernel::ArchMmu {
 public:
  X86Mmu();
  ~X86Mmu() override;
  kernel::Arch arch() const override { return kernel::Arch::kX86; }
  std::uint64_t page_size() const override { return 4096; }
  hw::FenceCosts fence_costs(const hw::Machine& m) const override;
  void register_stats(kernel::Stats& stats, std::uint32_t ncpus) override { mm_stats.register_stats(stats, ncpus); }
  MmStats mm_stats;
  // tlb.c's global ASID allocator (v6.15), made at its first use (arch/x86/mm/tlb_broadcast.h).
  std::unique_ptr<GlobalAsidSpace> global_asids;
};

// The counters of `self`'s kernel, whose ArchMmu is an x86 one.
inline MmStats& mm_stats(kernel::PerCpu& self) { return static_cast<X86Mmu&>(self.k.arch()).mm_stats; }
inline MmStats& mm_stats(kernel::Kernel& k) { return static_cast<X86Mmu&>(k.arch()).mm_stats; }

}  // namespace tlbsim::x86
