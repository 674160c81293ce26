// struct mmu_gather (mm/mmu_gather.c, include/asm-generic/tlb.h, arch/x86/include/asm/tlb.h): PTE clears are
// gathered, the TLB is flushed, and only then are the pages and page-table pages freed.
#pragma once

#include <cstdint>
#include <vector>

#include "kernel/kernel.h"

namespace tlbsim::kernel {

struct MmuGather {
  // MMU_GATHER_BUNDLE local slots plus MAX_GATHER_BATCH_COUNT batches of MAX_GATHER_BATCH pointers.
  static constexpr std::size_t kBatchCapacity = 8 + 19 * 510;

  explicit MmuGather(MmStruct& m) : mm(m) {}
  MmStruct& mm;
  bool fullmm = false;
  bool need_flush_all = false;
  bool freed_tables = false;
  bool cleared_ptes = false;
  bool cleared_pmds = false;  // a THP's PMD was cleared (tlb_flush_pmd_range)
  std::uint64_t start = ~std::uint64_t{0};
  std::uint64_t end = 0;
  std::vector<Pfn> pages;  // pages to free after the flush (data pages and page-table pages)

  void reset_range();
  // tlb_remove_tlb_entry: the range grows to cover [addr, addr + PAGE_SIZE).
  void adjust_range(std::uint64_t addr);
  // tlb_flush_pmd_range (tlb_remove_pmd_tlb_entry): the range grows to cover the 2 MiB at haddr.
  void adjust_pmd_range(std::uint64_t haddr);
  // tlb_get_unmap_shift: the flush's stride, PMD_SHIFT when only THP PMDs were cleared (v5.0+, "asm-generic/tlb: Track
  // which levels of the page tables have been cleared").
  std::uint8_t unmap_shift() const;
};

// tlb_gather_mmu: starts a gather (inc_tlb_flush_pending).
sim::Task<void> tlb_gather_mmu(PerCpu& self, MmuGather& tlb);
// tlb_flush_mmu_tlbonly: flush the gathered range (x86 tlb_flush -> flush_tlb_mm_range) and reset it.
sim::Task<void> tlb_flush_mmu_tlbonly(PerCpu& self, MmuGather& tlb);
// tlb_flush_mmu: flush, then free the gathered pages.
sim::Task<void> tlb_flush_mmu(PerCpu& self, MmuGather& tlb);
// tlb_end_vma (include/asm-generic/tlb.h, v6.0+): after a VMA's PTEs are gathered, flush their range unless the gather
// is fullmm or the architecture merges VMAs (ArchMmu::mmu_gather_merge_vmas).
sim::Task<void> tlb_end_vma(PerCpu& self, MmuGather& tlb);
// tlb_finish_mmu: a full flush with freed_tables when another gather runs on the mm concurrently
// (mm_tlb_flush_nested), then flush and free, then dec_tlb_flush_pending.
sim::Task<void> tlb_finish_mmu(PerCpu& self, MmuGather& tlb);

}  // namespace tlbsim::kernel
