// Models shmem swap-out and swap-in to zram, Linux v6.5/v6.6 (mm/shmem.c, mm/swap_state.c, mm/swapfile.c,
// mm/page_io.c, drivers/block/zram/zram_drv.c). Costs: the machine's [kernel] section; the swap bookkeeping is
// swap_out / swap_in (docs/calibration.md, "Swap costs").
#include "mm/shmem.h"

#include <fmt/format.h>

#include <stdexcept>

namespace tlbsim::kernel {

namespace {

const hw::KernelCosts& costs(PerCpu& self) { return self.k.machine().kernel; }

// The swap bookkeeping costs, which a machine file may leave out (workloads that swap check for them first).
sim::Duration swap_cost(PerCpu& self, const std::optional<sim::Duration>& c, const char* key) {
  if (!c) {
    throw std::logic_error(
        fmt::format("machine {} has no [kernel] {}, which swapping needs", self.k.machine().name, key));
  }
  return *c;
}

}  // namespace

void SwapStats::register_stats(Stats& s) const {
  // Shown when anything was swapped.
  s.registrar(this, "swap")
      .count("swap/pswpout", "pages written to swap (zram)", pswpout, kStatSummary | kStatGate)
      .count("swap/pswpin", "pages read from swap (zram)", pswpin, kStatSummary)
      .count("swap/zram_same_pages", "same-filled pages zram stored as their value (mm_stat same_pages)", same_pages,
             kStatSummary)
      .count("swap/pgmajfault", "faults that read a page from swap (PGMAJFAULT)", pgmajfault, kStatSummary);
}

ShmemSwap::ShmemSwap(Kernel& k) : k_(k) {
  for (std::uint32_t c = 0; c < k.ncpus(); ++c) ubc_.push_back(std::make_unique<TlbflushUnmapBatch>(k.ncpus()));
  stats.register_stats(k.stats());
}

ShmemSwap::~ShmemSwap() { k_.stats().drop(&stats); }

sim::Task<void> ShmemSwap::shmem_writepage(PerCpu& self, File& file, std::uint64_t index) {
  // folio_alloc_swap (get_swap_page through the per-CPU swap slots cache), add_to_swap_cache,
  // shmem_delete_from_page_cache(folio, swp_to_radix_entry(swap)), swap_shmem_alloc: the shmem xarray holds the
  // swap entry from here on.
  std::uint64_t slot = next_slot_;
  if (free_slots_.empty()) {
    ++next_slot_;
  } else {
    slot = free_slots_.back();
    free_slots_.pop_back();
  }
  file.pages.erase(index);
  file.swap_entries[index] = slot;
  // swap_writepage -> __swap_writepage -> swap_writepage_bdev_sync: folio_start_writeback, submit_bio_wait of one
  // page to zram (zram_write_page: page_same_filled reads the page, finds one value: ZRAM_SAME, no compression),
  // __end_swap_bio_write. Then shrink_folio_list, the folio clean and not under writeback, __remove_mapping from
  // the swap cache (__delete_from_swap_cache, put_swap_folio).
  co_await self.cpu.delay(costs(self).page_zero + swap_cost(self, costs(self).swap_out, "swap_out"));
  ++stats.pswpout;
  ++stats.same_pages;
}

sim::Task<Pfn> ShmemSwap::shmem_swapin_folio(PerCpu& self, File& file, std::uint64_t index) {
  if (!file.swap_entries.contains(index)) throw std::logic_error("shmem_swapin_folio: no swap entry at the index");
  // swap_cache_get_folio misses; shmem_swapin (swap_cluster_readahead) -> __read_swap_cache_async: a new folio,
  // charged (mem_cgroup_swapin_charge_folio), added to the swap cache and the LRU, swap_readpage ->
  // swap_readpage_bdev_sync: zram_read_page fills the same-filled page (zram_fill_page, a store of every word).
  ++stats.pgmajfault;
  const Pfn p = self.k.frames().alloc(FrameUse::kPageCache);
  const hw::KernelCosts& c = costs(self);
  co_await self.cpu.delay(c.page_alloc + c.memcg_charge + c.lru_update + c.page_zero +
                          swap_cost(self, c.swap_in, "swap_in"));
  // Another fault on the same page may have read it in meanwhile (the kernel's second fault finds the folio in the
  // swap cache, swapcache_prepare having failed for it): this one's folio goes back and the cached page is used.
  const auto it = file.swap_entries.find(index);
  if (it == file.swap_entries.end()) {
    self.k.frames().free(p);
    const Pfn* cached = file.pages.find(index);
    co_return cached != nullptr ? *cached : Pfn{0};
  }
  // shmem_add_to_page_cache in place of the swap entry, delete_from_swap_cache, folio_mark_dirty, swap_free: the
  // slot goes back to the device.
  free_slots_.push_back(it->second);
  file.swap_entries.erase(it);
  file.pages.emplace(index, p);
  ++stats.pswpin;
  co_return p;
}

sim::Task<void> shmem_get_folio(PerCpu& self, File& file, std::uint64_t pgoff) {
  // (Again if the page went back to swap while this fault read it in.)
  while (file.shmem && file.swap_entries.contains(pgoff)) {
    co_await self.k.shmem_swap().shmem_swapin_folio(self, file, pgoff);
  }
}

}  // namespace tlbsim::kernel
