// mprotect(2) as mm/mprotect.c has it in each modeled era: the VMA flags change under mmap_lock held for write,
// change_protection rewrites the PTEs under each page table's lock, and the TLB flush follows the walk, by
// flush_tlb_range (before v5.19) or by the mmu_gather that "mm/mprotect: use mmu_gather" introduced (v5.19).
#pragma once

#include <cstdint>

#include "kernel/kernel.h"

namespace tlbsim::kernel {

// pte_needs_flush(oldpte, newpte) of a present PTE whose write permission may change: which changes the gather
// flushes (v5.19+; before the gather every present PTE counted toward the flush).
enum class PteNeedsFlush : std::uint8_t {
  kAlways,        // the generic definition (include/asm-generic/tlb.h): every PTE rewritten
  kX86,           // arch/x86/include/asm/tlbflush.h (c9fe66560bf2, v5.19): any change of RW, either way
  kPowerpcRadix,  // arch/powerpc/include/asm/book3s/64/tlbflush.h (Piggin, "powerpc/64s: add pte_needs_flush and
                  // huge_pmd_needs_flush", posted 2022-08-31, v6.1): a permission cleared, not one relaxed
};

// What an era's mprotect does, by release (each field names the kernel change that brought it).
struct MprotectEra {
  // change_protection_range's inc_tlb_flush_pending / dec_tlb_flush_pending around the walk and its flush
  // (set_tlb_flush_pending from v3.13, "mm: numa: defer TLB flush for THP migration as long as possible"; the
  // counter from v4.13, 16af97dc5a89).
  bool flush_pending = false;
  // change_pte_range's flush_tlb_batched_pending under the PTE lock (v4.13, 3ea277194daa, "mm, mprotect: flush
  // TLB if potentially racing with a parallel reclaim leaving stale TLB entries").
  bool batched_pending = false;
  // Before the gather: flush_tlb_range(vma, start, end) for each VMA, unconditionally (v3.x), or only when the walk
  // rewrote a present PTE (`pages`, v4.x-v5.18; every present PTE counts, changed or not).
  bool flush_range_always = false;
  // do_mprotect_pkey's one mmu_gather over every VMA, flushed by tlb_finish_mmu before mmap_write_unlock (v5.19,
  // 4a18419f71cd, "mm/mprotect: use mmu_gather"); each PTE that pte_needs_flush says needs it widens the range.
  bool mmu_gather = false;
  PteNeedsFlush needs_flush = PteNeedsFlush::kAlways;
  // MM_CP_TRY_CHANGE_WRITABLE (v6.0, 64fe24a3e05e, "mm/mprotect: try avoiding write faults for exclusive anonymous
  // pages when changing protection"; dirty pages only until v6.2, and the model's anonymous pages are all dirty):
  // making a private mapping writable also makes its exclusive anonymous pages' PTEs writable; before it they stay
  // read-only and the next write takes a fault (wp_page_reuse).
  bool upgrade_exclusive_anon = false;
};
MprotectEra mprotect_era(KernelVersion version, Arch arch);

struct MmuGather;

// change_protection's cp_flags and new protection, as far as the model uses them.
struct ChangeProt {
  bool writable = false;    // mprotect's new protection: PROT_READ, or PROT_READ | PROT_WRITE
  bool prot_numa = false;   // MM_CP_PROT_NUMA (change_prot_numa): make PROT_NONE hinting PTEs instead
  bool skip_flush = false;  // the planted mprotect_flush_skipped: the walk's PTE changes are never flushed
  bool skip_batched_pending = false;  // the planted mprotect_skips_batched_pending: no flush_tlb_batched_pending
};
// change_protection over [start, end) of one VMA (mm/mprotect.c): the PTE walk under each table's lock and, without
// a gather (before v5.19), tlb_flush_pending raised around it and flush_tlb_range after it; with one, the gather's
// range widened for the caller's tlb_finish_mmu. Returns the PTEs changed (`pages`).
sim::Task<std::uint64_t> change_protection(PerCpu& self, MmStruct& mm, std::uint64_t start, std::uint64_t end,
                                           ChangeProt cp, MmuGather* tlb);

// mprotect(addr, len, PROT_READ | (writable ? PROT_WRITE : 0)) of a page-aligned range that mappings cover
// (ENOMEM otherwise: throws std::invalid_argument, a caller's error in the model). VMAs that straddle the range's
// ends are split (vma_modify_flags / split_vma); a changed VMA is write-locked first (v6.4+).
sim::Task<void> sys_mprotect(PerCpu& self, MmStruct& mm, std::uint64_t addr, std::uint64_t len, bool writable);

}  // namespace tlbsim::kernel
