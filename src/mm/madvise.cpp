// Models madvise(MADV_PAGEOUT) of a shmem VMA and the reclaim it runs: Linux v6.5/v6.6 mm/madvise.c and
// mm/vmscan.c (read in sndrzt/linux-6.5 @f5744aac, v6.5.0, and mihaelbh/adding-new-sched-policy-to-linux-6.6.9
// @ad8d9458, v6.6.9; the two differ on this path only in the arm64 batched flush and v6.6's folio_set_workingset).
// The unmap and its flush are mm/rmap.cpp's try_to_unmap_one; the swap-out mm/shmem.cpp's.
#include "mm/madvise.h"

#include <vector>

#include "mm/mmu_gather.h"
#include "mm/rmap.h"
#include "mm/shmem.h"

namespace tlbsim::kernel {

namespace {

const hw::KernelCosts& costs(PerCpu& self) { return self.k.machine().kernel; }

// folio_mapcount: the PTEs of the file's mappings that map the page at `index`.
std::uint32_t mapcount(const File& file, std::uint64_t index, Pfn pfn) {
  std::uint32_t n = 0;
  for (const FileMapping& fm : file.i_mmap) {
    const auto v = fm.vpn_of_index(index);
    if (!v) continue;
    const auto pte = fm.mm->pgd.lookup(*v);
    if (pte && pte->pfn == pfn) ++n;
  }
  return n;
}

// A folio isolated from the LRU for reclaim: its shmem file and page offset (folio->mapping, folio->index).
struct IsolatedFolio {
  File* mapping = nullptr;
  std::uint64_t index = 0;
  Pfn pfn;
};

// shrink_folio_list (v6.5/v6.6) for the shmem folios madvise isolated, with reclaim_folio_list's scan_control
// (may_writepage, may_unmap, may_swap; ignore_references false). Each folio in turn:
// - folio_check_references: folio_referenced's rmap walk finds the PTE old (madvise cleared it, and
//   ptep_clear_flush_young flushes only a young PTE): FOLIOREF_RECLAIM.
// - try_to_unmap(folio, TTU_BATCH_FLUSH): every PTE that maps it (rmap_walk_file over i_mmap) is cleared by
//   try_to_unmap_one, which flushes at once or defers the flush into current->tlb_ubc.
// - The folio is dirty (written, or swapped in: shmem_swapin_folio marks it dirty): try_to_unmap_flush_dirty, then
//   pageout -> shmem_writepage. zram completes the write synchronously, so the folio, clean and unlocked, is removed
//   from the swap cache (__remove_mapping) and freed in this call.
// At the end: try_to_unmap_flush, then free_unref_page_list.
sim::Task<std::uint64_t> shrink_folio_list(PerCpu& self, std::vector<IsolatedFolio>& folio_list) {
  ShmemSwap& swap = self.k.shmem_swap();
  TlbflushUnmapBatch& tlb_ubc = swap.tlb_ubc(self.id);
  std::vector<Pfn> free_folios;
  for (const IsolatedFolio& f : folio_list) {
    // The page may have left the mapping meanwhile (madvise ran with mmap_lock for read only).
    const Pfn* cached = f.mapping->pages.find(f.index);
    if (cached == nullptr || *cached != f.pfn) continue;
    const std::vector<FileMapping> i_mmap = f.mapping->i_mmap;  // i_mmap_lock_read holds it still
    for (const FileMapping& fm : i_mmap) {
      if (const auto v = fm.vpn_of_index(f.index)) {
        co_await try_to_unmap_one(self, tlb_ubc, *fm.mm, *v, f.pfn, /*ttu_batch_flush=*/true);
      }
    }
    co_await try_to_unmap_flush_dirty(self, tlb_ubc);
    // folio_mapped after try_to_unmap: a fault that mapped the page again keeps it (activate_locked). The kernel's
    // folio lock keeps faults off the page from here to the swap-out; the model takes the page out of the cache
    // without yielding between this test and shmem_writepage's first step.
    if (mapcount(*f.mapping, f.index, f.pfn) != 0) continue;
    co_await swap.shmem_writepage(self, *f.mapping, f.index);
    free_folios.push_back(f.pfn);
  }
  co_await try_to_unmap_flush(self, tlb_ubc);
  for (Pfn p : free_folios) self.k.frames().free(p);
  co_return free_folios.size();
}

// madvise_cold_or_pageout_pte_range for one PTE table's part [addr, end) of the VMA (pageout = true), then
// reclaim_pages of what it isolated.
sim::Task<void> madvise_pageout_pte_range(PerCpu& self, MmuGather& tlb, MmStruct& mm, const Vma& vma,
                                          std::uint64_t addr, std::uint64_t end) {
  hw::Memory& m = self.k.mem();
  const Vpn first = vpn_of(addr);
  if (mm.pgd.table(first) == nullptr) co_return;
  std::vector<IsolatedFolio> folio_list;
  Spinlock& ptl = mm.ptl(first);
  co_await ptl.lock(m, self.cpu);
  co_await flush_tlb_batched_pending(self, mm);
  for (; addr < end; addr += kPageSize) {
    const Vpn v = vpn_of(addr);
    const auto pte = mm.pgd.lookup(v);
    if (!pte || pte->huge || pte->migration || pte->protnone) continue;
    const std::uint64_t index = vma.pgoff + (v.get() - (vma.start >> kPageShift));
    if (mapcount(*vma.file, index, pte->pfn) != 1) continue;  // a page other processes map too is left alone
    // pte_young: the model's PTEs are young while mapped (a fault installs the entry for an access; see
    // docs/model.md): ptep_get_and_clear_full, pte_mkold, set_pte_at, and tlb_remove_tlb_entry grows the gather's
    // range. Then folio_clear_referenced, folio_test_clear_young and folio_isolate_lru (lru_lock once a folio; its
    // cost is in lru_update, charged when the page was added).
    co_await self.cpu.delay(costs(self).pte_update);
    tlb.adjust_range(addr);
    folio_list.push_back(IsolatedFolio{vma.file, index, pte->pfn});
  }
  co_await ptl.unlock(m, self.cpu);
  // reclaim_pages -> reclaim_folio_list -> shrink_folio_list, one call per PTE table.
  if (!folio_list.empty()) co_await shrink_folio_list(self, folio_list);
}

}  // namespace

// madvise_pageout (v6.5/v6.6): mmap_lock for read; lru_add_drain; tlb_gather_mmu; madvise_pageout_page_range
// (tlb_start_vma, walk_page_range with madvise_cold_or_pageout_pte_range per PMD, tlb_end_vma); tlb_finish_mmu.
sim::Task<void> sys_madvise_pageout(PerCpu& self, MmStruct& mm, std::uint64_t addr, std::uint64_t len) {
  co_await self.cpu.delay(costs(self).syscall);
  co_await mm.mmap_lock.down_read(self);
  const Vma* vma = mm.find_vma(addr);
  MmuGather tlb(mm);
  co_await tlb_gather_mmu(self, tlb);
  if (vma != nullptr && vma->file != nullptr && vma->file->shmem) {  // can_do_file_pageout: the caller's own file
    const std::uint64_t end = std::min(addr + len, vma->end);
    for (std::uint64_t a = addr; a < end;) {
      const std::uint64_t table_end = std::min(end, (table_index(vpn_of(a)) + 1) * kPtesPerTable * kPageSize);
      co_await madvise_pageout_pte_range(self, tlb, mm, *vma, a, table_end);
      a = table_end;
    }
  }
  co_await tlb_end_vma(self, tlb);
  co_await tlb_finish_mmu(self, tlb);
  co_await mm.mmap_lock.up_read(self);
  self.k.events().on_syscall_return(self.id);
}

}  // namespace tlbsim::kernel
