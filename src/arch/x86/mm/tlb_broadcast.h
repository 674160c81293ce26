// The broadcast TLB invalidation of Linux v6.15 x86 (CONFIG_BROADCAST_TLB_FLUSH; Rik van Riel's "AMD broadcast TLB
// invalidation" series as merged through tip x86/mm): global ASID allocation and the transition to it, the INVLPGB
// flush of an mm with a global ASID, and the asm/tlb.h INVLPGB/TLBSYNC helpers. Read against Kingxukai/linux
// arch/x86/mm/tlb.c and asm/tlb.h @9b44fff655e2 and asm/tlbflush.h @0291023e7330 (v6.16-era trees that carry the
// v6.15 code unchanged for what is modeled here; docs/model.md). The flush paths that call these (flush_tlb_mm_range,
// switch_mm_irqs_off, flush_tlb_func, native_flush_tlb_multi, arch_tlbbatch_flush) are in tlb.cpp.
#pragma once

#include <cstdint>
#include <vector>

#include "arch/x86/mm/tlb_state.h"
#include "kernel/locking/locks.h"

namespace tlbsim::x86 {

using kernel::MmStruct;
using kernel::PerCpu;

// tlb.c's global ASID space: global_asid_lock and the state it protects. MAX_ASID_AVAILABLE is
// (1 << CR3_AVAIL_PCID_BITS) - 2, CR3_AVAIL_PCID_BITS being the machine's PCID bits less the one that
// CONFIG_MITIGATION_PAGE_TABLE_ISOLATION (on in distribution kernels) reserves.
struct GlobalAsidSpace {
  GlobalAsidSpace(hw::CoherenceModel& model, kernel::SpinlockKind kind, std::uint16_t max_asid_available);
  kernel::Spinlock global_asid_lock;
  std::uint16_t MAX_ASID_AVAILABLE;
  std::uint16_t last_global_asid;
  // DECLARE_BITMAP(..., MAX_ASID_AVAILABLE), rounded up to whole words as the kernel's bitmaps are.
  std::vector<bool> global_asid_used;
  std::vector<bool> global_asid_freed;
  int global_asid_available;
};

// cpu_feature_enabled(X86_FEATURE_INVLPGB): the kernel has the code (option BROADCAST_TLB_FLUSH) and the machine the
// instructions ([tlb] invlpgb).
bool cpu_feature_invlpgb(PerCpu& self);

// mm_global_asid (smp_load_acquire of mm->context.global_asid; 0 without INVLPGB), mm_in_asid_transition,
// mm_clear_asid_transition.
sim::Task<std::uint16_t> mm_global_asid(PerCpu& self, MmStruct& mm);
sim::Task<bool> mm_in_asid_transition(PerCpu& self, MmStruct* mm);
sim::Task<void> mm_clear_asid_transition(PerCpu& self, MmStruct& mm);
// mm_needs_global_asid(mm, asid): the mm has a global ASID and `asid` is not it.
sim::Task<bool> mm_needs_global_asid(PerCpu& self, MmStruct& mm, std::uint16_t asid);

// consider_global_asid(mm), from flush_tlb_mm_range after an IPI flush: once every 32 jiffies per task, give the mm
// a global ASID if it runs (loaded, not lazy) on more than 3 CPUs.
sim::Task<void> consider_global_asid(PerCpu& self, MmStruct& mm);
// use_global_asid(mm): allocate and assign one under global_asid_lock.
sim::Task<void> use_global_asid(PerCpu& self, MmStruct& mm);
// mm_free_global_asid(mm), from destroy_context: the ASID is reusable after the next reset of the space.
sim::Task<void> mm_free_global_asid(PerCpu& self, MmStruct& mm);

// broadcast_tlb_flush(info): INVLPGBs for the range in the mm's global PCID, finish_asid_transition, TLBSYNC.
sim::Task<void> broadcast_tlb_flush(PerCpu& self, const FlushTlbInfo& info);

// The asm/tlb.h helpers. The _nosync ones issue INVLPGBs that a later __tlbsync on this CPU waits for.
sim::Task<void> invlpgb_flush_user_nr_nosync(PerCpu& self, std::uint16_t pcid, std::uint64_t addr, std::uint32_t nr,
                                             bool pmd_stride);
sim::Task<void> invlpgb_flush_single_pcid_nosync(PerCpu& self, std::uint16_t pcid);
// invlpgb_flush_all_nonglobals: the INVLPGB of every non-global entry and a TLBSYNC (the _nosync half alone serves
// the mutation tlbbatch_invlpgb_skips_tlbsync).
sim::Task<void> invlpgb_flush_all_nonglobals(PerCpu& self);
sim::Task<void> invlpgb_flush_all_nonglobals_nosync(PerCpu& self);
sim::Task<void> __tlbsync(PerCpu& self);

}  // namespace tlbsim::x86
