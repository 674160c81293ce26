// Swapping shmem pages to a zram device, modeled on Linux v6.5/v6.6 mm/shmem.c (shmem_writepage,
// shmem_swapin_folio), mm/swap_state.c and mm/swapfile.c (the swap cache and the swap slots), mm/page_io.c
// (swap_writepage_bdev_sync, swap_readpage_bdev_sync: zram is SWP_SYNCHRONOUS_IO) and drivers/block/zram/zram_drv.c
// (a same-filled page is stored as its fill value, ZRAM_SAME). This is what madvise(MADV_PAGEOUT) of a
// MAP_SHARED | MAP_ANONYMOUS mapping and the faults that read it back run (swap_bench, the arm64 batched reclaim
// series' benchmark; docs/model.md, "Swap").
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "kernel/kernel.h"
#include "mm/rmap.h"

namespace tlbsim::kernel {

// /proc/vmstat's swap counters and zram's mm_stat same_pages. Registered while the ShmemSwap lives.
struct SwapStats {
  std::uint64_t pswpout = 0;     // pages written to swap
  std::uint64_t pswpin = 0;      // pages read from swap
  std::uint64_t same_pages = 0;  // zram: same-filled pages stored (every page of this model)
  std::uint64_t pgmajfault = 0;  // shmem_swapin_folio's PGMAJFAULT
  void register_stats(Stats& s) const;
};

// The one swap device (a zram disk) and the per-task state reclaim by madvise uses.
// Contract: one per Kernel (Kernel::shmem_swap, made on first use); a swap slot is owned by at most one shmem page
// offset at a time; every CPU runs one task, whose current->tlb_ubc is this CPU's (tasks do not migrate here).
class ShmemSwap {
 public:
  explicit ShmemSwap(Kernel& k);
  ~ShmemSwap();
  ShmemSwap(const ShmemSwap&) = delete;
  ShmemSwap& operator=(const ShmemSwap&) = delete;

  SwapStats stats;
  // current->tlb_ubc of the task on `cpu`.
  TlbflushUnmapBatch& tlb_ubc(CpuId cpu) { return *ubc_[cpu.get()]; }

  // shmem_writepage of the page at `index` of `file` (a clean, unmapped folio after try_to_unmap and pageout's
  // clear_page_dirty_for_io): folio_alloc_swap, add_to_swap_cache, shmem_delete_from_page_cache (the xarray slot now
  // holds the swap entry), swap_writepage to zram (page_same_filled: ZRAM_SAME), and, the write being synchronous,
  // shrink_folio_list's __remove_mapping from the swap cache. The caller frees the frame after try_to_unmap_flush.
  sim::Task<void> shmem_writepage(PerCpu& self, File& file, std::uint64_t index);
  // shmem_swapin_folio for a fault at `index` of `file`, whose slot holds a swap entry: a new folio charged and put
  // on the LRU, zram_read_page's fill of the same-filled page, shmem_add_to_page_cache in place of the swap entry,
  // delete_from_swap_cache, folio_mark_dirty, swap_free. Returns the frame, now in the page cache.
  sim::Task<Pfn> shmem_swapin_folio(PerCpu& self, File& file, std::uint64_t index);

 private:
  Kernel& k_;
  std::vector<std::uint64_t> free_slots_;  // freed slots, reused last in first out
  std::uint64_t next_slot_ = 1;            // slot 0 holds the swap header
  std::vector<std::unique_ptr<TlbflushUnmapBatch>> ubc_;
};

// shmem_fault -> shmem_get_folio_gfp (v6.5/v6.6 mm/shmem.c) for the fault path: where the slot at `pgoff` of a shmem
// file holds a swap entry, the page is read back first (ShmemSwap::shmem_swapin_folio); the fault then maps it as any
// page-cache page. Nothing for other files.
sim::Task<void> shmem_get_folio(PerCpu& self, File& file, std::uint64_t pgoff);

}  // namespace tlbsim::kernel
