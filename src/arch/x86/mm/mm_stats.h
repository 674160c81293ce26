// The x86 MMU code's counters (CR3 loads, by CPU and by cause), owned by the kernel's x86 ArchMmu of every era.
#pragma once

#include <cstdint>
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

  void register_stats(kernel::Stats& stats, std::uint32_t ncpus);
};

// The ArchMmu base of the x86 eras: what they share is their counters.
class X86Mmu : public kernel::ArchMmu {
 public:
  kernel::Arch arch() const override { return kernel::Arch::kX86; }
  std::uint64_t page_size() const override { return 4096; }
  hw::FenceCosts fence_costs(const hw::Machine& m) const override;
  void register_stats(kernel::Stats& stats, std::uint32_t ncpus) override { mm_stats.register_stats(stats, ncpus); }
  MmStats mm_stats;
};

// The counters of `self`'s kernel, whose ArchMmu is an x86 one.
inline MmStats& mm_stats(kernel::PerCpu& self) { return static_cast<X86Mmu&>(self.k.arch()).mm_stats; }
inline MmStats& mm_stats(kernel::Kernel& k) { return static_cast<X86Mmu&>(k.arch()).mm_stats; }

}  // namespace tlbsim::x86
