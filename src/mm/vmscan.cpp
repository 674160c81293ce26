// Models the page-cache reclaim path of Linux v4.14: mm/vmscan.c (try_to_free_pages -> shrink_node ->
// shrink_inactive_list -> shrink_page_list, page_check_references), mm/swap.c (lru_cache_add, __pagevec_lru_add,
// lru_add_drain), mm/filemap.c (page_cache_read), mm/rmap.c (page_referenced, try_to_unmap(TTU_BATCH_FLUSH) via
// mm/rmap.cpp's try_to_unmap_one) and the zonelist walk of mm/page_alloc.c. Costs are composed from the
// machine's [kernel] section (docs/calibration.md, "Reclaim costs").
#include "mm/vmscan.h"

#include <algorithm>
#include <utility>

#include "kernel/options.h"

namespace tlbsim::kernel {

namespace {

const hw::KernelCosts& costs(PerCpu& self) { return self.k.machine().kernel; }
sim::Duration times(sim::Duration d, std::size_t n) { return d * static_cast<std::int64_t>(n); }

}  // namespace

// __setup_per_zone_wmarks (v4.14 mm/page_alloc.c): tmp = max(min / 4, managed * watermark_scale_factor / 10000),
// with the default watermark_scale_factor = 10; low = min + tmp, high = min + 2 * tmp.
PgData::PgData(hw::CoherenceModel& model, std::uint64_t present, std::uint64_t min_wmark, SpinlockKind lock_kind)
    : lru_lock(model, "pgdat.lru_lock", lock_kind),
      inactive_age{0, model.add_line("lruvec.inactive_age")},
      present_pages(present),
      watermark_min(min_wmark) {
  constexpr std::uint64_t watermark_scale_factor = 10;
  const std::uint64_t tmp = std::max(min_wmark / 4, present * watermark_scale_factor / 10000);
  watermark_low = min_wmark + tmp;
  watermark_high = min_wmark + 2 * tmp;
}

Vmscan::Vmscan(Kernel& k, std::vector<std::uint64_t> present_pages_per_node, std::vector<std::uint64_t> min_wmark)
    : k_(k), pagevecs_(k.ncpus()), ubc_(k.ncpus()) {
  for (std::size_t n = 0; n < present_pages_per_node.size(); ++n) {
    nodes_.push_back(std::make_unique<PgData>(k.sys().coherence(), present_pages_per_node[n], min_wmark.at(n),
                                              k.arch().spinlock_kind()));
    nodes_.back()->node_id = static_cast<std::uint32_t>(n);
  }
  stats.register_stats(k.stats());
}

Vmscan::~Vmscan() { k_.stats().drop(&stats); }

void VmscanStats::register_stats(Stats& s) const {
  // Shown when reclaim scanned.
  s.registrar(this, "vmscan")
      .count("vmscan/allocstall", "direct reclaim entries", allocstall, kStatSummary)
      .count("vmscan/pgscan_direct", "pages scanned by direct reclaim", pgscan_direct, kStatSummary | kStatGate)
      .count("vmscan/pgsteal_direct", "pages reclaimed by direct reclaim", pgsteal_direct, kStatSummary)
      .count("vmscan/pgactivate", "referenced pages moved to the active list", pgactivate, kStatSummary)
      .count("vmscan/pgscan_kswapd", "pages scanned by kswapd", pgscan_kswapd, kStatSummary | kStatGate)
      .count("vmscan/pgsteal_kswapd", "pages reclaimed by kswapd", pgsteal_kswapd, kStatSummary)
      .count("vmscan/pageoutrun", "kswapd balance_pgdat runs", pageoutrun, kStatSummary)
      .duration("vmscan/kswapd_time_ns", "kswapd's CPU time after the warm-up", kswapd_time, kStatSummary);
}

CachePage& Vmscan::info(Pfn p) {
  if (p.get() >= pages_.size()) pages_.resize(p.get() + 1);
  return pages_[p.get()];
}

void Vmscan::add_file(File& file) {
  if (!tree_lock_.contains(&file)) {
    tree_lock_.emplace(
        &file, std::make_unique<Spinlock>(k_.sys().coherence(), "mapping.tree_lock", k_.arch().spinlock_kind()));
  }
}

void Vmscan::prefill(File& file, std::uint64_t index, std::uint32_t n, bool scanned_once) {
  const Pfn p = k_.frames().alloc(FrameUse::kPageCache);
  file.pages.emplace(index, p);
  info(p) = CachePage{&file, index, n, !scanned_once, scanned_once};
  PgData& pgdat = node(n);
  ++pgdat.nr_used;
  pgdat.inactive_file.push_back(p);
  if (file.i_mmap.empty()) return;
  const FileMapping& m = file.i_mmap.front();
  if (const auto v = m.vpn_of_index(index)) m.mm->pgd.set(*v, Pte{p, true, false, false});
}

std::vector<RmapHit> Vmscan::mapped_at(Pfn pfn) const {
  std::vector<RmapHit> hits;
  const CachePage& c = pages_[pfn.get()];
  if (c.mapping == nullptr) return hits;
  for (const FileMapping& m : c.mapping->i_mmap) {
    const auto v = m.vpn_of_index(c.index);
    if (!v) continue;
    const auto pte = m.mm->pgd.lookup(*v);  // page_vma_mapped_walk: the PTE must still map this page
    if (pte && pte->pfn == pfn) hits.push_back(RmapHit{m.mm, *v});
  }
  return hits;
}

void Vmscan::free_page(Pfn p) {
  CachePage& c = info(p);
  --node(c.node).nr_used;
  c = CachePage{};
  k_.frames().free(p);  // free_hot_cold_page_list
}

sim::Task<void> Vmscan::pagevec_lru_add(PerCpu& self, std::vector<Pfn>& pvec) {
  if (pvec.empty()) co_return;
  std::vector<Pfn> pages = std::exchange(pvec, {});
  // __pagevec_lru_add -> pagevec_lru_move_fn: spin_lock_irqsave(&pgdat->lru_lock) of the first page's node, kept
  // while the pages that follow are of the same node and swapped for the next node's where they are not.
  for (std::size_t i = 0; i < pages.size();) {
    PgData& pgdat = node(info(pages[i]).node);
    co_await pgdat.lru_lock.lock_irqsave(k_.mem(), self.cpu, k_.arch().spin_lock_flags_enables_irqs());
    for (; i < pages.size() && info(pages[i]).node == pgdat.node_id; ++i) {
      pgdat.inactive_file.push_back(pages[i]);  // add_page_to_lru_list: the list head
    }
    co_await pgdat.lru_lock.unlock(k_.mem(), self.cpu);
    co_await self.cpu.local_irq_enable();
  }
}

sim::Task<void> Vmscan::lru_cache_add(PerCpu& self, Pfn pfn) {
  std::vector<Pfn>& pvec = pagevecs_[self.id.get()];
  pvec.push_back(pfn);
  if (pvec.size() >= PAGEVEC_SIZE) co_await pagevec_lru_add(self, pvec);
}

std::vector<std::uint32_t> Vmscan::zonelist(std::uint32_t nid) const {
  std::vector<std::uint32_t> order;
  for (std::uint32_t i = 0; i < nr_nodes(); ++i) order.push_back((nid + i) % nr_nodes());
  return order;
}

sim::Task<std::uint32_t> Vmscan::alloc_page_node(PerCpu& self) {
  const std::vector<std::uint32_t> zl = zonelist(node_of(self.id));
  const auto first_above = [&](std::uint64_t PgData::*mark) -> std::optional<std::uint32_t> {
    for (std::uint32_t n : zl) {
      if (node(n).nr_free() > node(n).*mark) return n;
    }
    return std::nullopt;
  };
  // get_page_from_freelist at ALLOC_WMARK_LOW: node_reclaim_mode is 0 (the default since v3.16), so a node at or
  // below its low watermark is skipped for the next one.
  if (const auto n = first_above(&PgData::watermark_low)) co_return *n;
  // __alloc_pages_slowpath: wake_all_kswapds, then get_page_from_freelist at ALLOC_WMARK_MIN.
  for (std::uint32_t n : zl) wakeup_kswapd(self, node(n));
  if (const auto n = first_above(&PgData::watermark_min)) co_return *n;
  // __alloc_pages_direct_reclaim, then the same retry. The allocation proceeds on this CPU's node even if reclaim
  // fell short (the model has no OOM path; frames are unbounded).
  co_await try_to_free_pages(self);
  const auto n = first_above(&PgData::watermark_min);
  co_return n ? *n : zl.front();
}

sim::Task<void> Vmscan::page_cache_read(PerCpu& self, File& file, std::uint64_t index) {
  const std::uint32_t n = co_await alloc_page_node(self);
  PgData& pgdat = node(n);
  const Pfn p = k_.frames().alloc(FrameUse::kPageCache);
  ++pgdat.nr_used;
  // The page (allocated and later freed), the hole's zero fill of a PAGE_SIZE page (readpage of a hole; page_zero
  // clears 4 KiB), add_to_page_cache_lru's memcg charge (and the uncharge at free) and its LRU insertion (and the
  // removal at free).
  const hw::KernelCosts& c = costs(self);
  const auto zero_4k_pages = static_cast<std::int64_t>(k_.arch().page_size() / 4096);
  co_await self.cpu.delay(c.page_alloc + c.page_zero * zero_4k_pages + c.memcg_charge + c.lru_update);
  // __add_to_page_cache_locked: the radix-tree insertion under spin_lock_irq(&mapping->tree_lock).
  Spinlock& tree_lock = *tree_lock_.at(&file);
  self.cpu.local_irq_disable();
  co_await tree_lock.lock(k_.mem(), self.cpu);
  file.pages.emplace(index, p);
  co_await tree_lock.unlock(k_.mem(), self.cpu);
  co_await self.cpu.local_irq_enable();
  // The fault that follows installs the PTE young (book3s64 PAGE_READONLY includes _PAGE_ACCESSED).
  info(p) = CachePage{&file, index, n, true, false};
  co_await lru_cache_add(self, p);
}

sim::Task<void> Vmscan::adopt(PerCpu& self, File& file, std::uint64_t index, Pfn pfn) {
  const std::uint32_t n = node_of(self.id);
  ++node(n).nr_used;
  info(pfn) = CachePage{&file, index, n, true, false};
  co_await lru_cache_add(self, pfn);
}

sim::Task<std::uint64_t> Vmscan::try_to_free_pages(PerCpu& self) {
  ++stats.allocstall;
  auto& slot = ubc_[self.id.get()];
  if (!slot) slot = std::make_unique<TlbflushUnmapBatch>(k_.ncpus());
  ScanControl sc{slot.get(), false};
  // do_try_to_free_pages: shrink_zones at each priority from DEF_PRIORITY down, until nr_to_reclaim
  // (SWAP_CLUSTER_MAX) pages are reclaimed. shrink_zones: shrink_node on every node of the zonelist, this CPU's
  // first.
  for (sc.priority = DEF_PRIORITY; sc.priority >= 0; --sc.priority) {
    for (std::uint32_t nid : zonelist(node_of(self.id))) co_await shrink_node(self, node(nid), sc);
    if (sc.nr_reclaimed >= SWAP_CLUSTER_MAX) break;
  }
  co_return sc.nr_reclaimed;
}

sim::Task<void> Vmscan::shrink_node(PerCpu& self, PgData& pgdat, ScanControl& sc) {
  // shrink_node -> shrink_node_memcg for the root memcg. get_scan_count: with no swap, SCAN_FILE, and the inactive
  // file list's size >> priority pages to scan (the model has no active list: a use-once page is never activated).
  // At DEF_PRIORITY, global direct reclaim does not stop at nr_to_reclaim (scan_adjusted: "multiple streaming
  // readers/writers ... it is best to do a batch of work at once"); below it, it stops once this call reclaimed
  // nr_to_reclaim, the anon lists being empty (nr_anon == 0 ends the proportional adjustment).
  std::uint64_t nr = pgdat.inactive_file.size() >> sc.priority;
  const bool scan_adjusted = !sc.kswapd && sc.priority == DEF_PRIORITY;
  std::uint64_t nr_reclaimed = 0;
  while (nr > 0) {
    const std::uint64_t nr_to_scan = std::min(nr, SWAP_CLUSTER_MAX);
    nr -= nr_to_scan;
    bool isolated_any = false;
    nr_reclaimed += co_await shrink_inactive_list(self, pgdat, sc, isolated_any, nr_to_scan);
    if (nr_reclaimed < SWAP_CLUSTER_MAX || scan_adjusted) continue;
    break;
  }
  sc.nr_reclaimed += nr_reclaimed;
}

sim::Task<std::uint64_t> Vmscan::shrink_inactive_list(PerCpu& self, PgData& pgdat, ScanControl& sc, bool& isolated_any,
                                                      std::uint64_t nr_to_scan) {
  hw::Memory& m = k_.mem();
  const hw::KernelCosts& c = costs(self);
  co_await pagevec_lru_add(self, pagevecs_[self.id.get()]);  // lru_add_drain()
  // isolate_lru_pages under spin_lock_irq(&pgdat->lru_lock): up to SWAP_CLUSTER_MAX pages from the tail.
  std::vector<Pfn> page_list;
  self.cpu.local_irq_disable();
  co_await pgdat.lru_lock.lock(m, self.cpu);
  while (page_list.size() < nr_to_scan && !pgdat.inactive_file.empty()) {
    page_list.push_back(pgdat.inactive_file.front());
    pgdat.inactive_file.pop_front();
  }
  co_await self.cpu.delay(times(c.lru_update / 2, page_list.size()));
  co_await pgdat.lru_lock.unlock(m, self.cpu);
  co_await self.cpu.local_irq_enable();
  isolated_any = !page_list.empty();
  if (!isolated_any) co_return 0;
  (sc.kswapd ? stats.pgscan_kswapd : stats.pgscan_direct) += page_list.size();

  std::vector<Pfn> keep;
  const std::uint64_t nr_reclaimed = co_await shrink_page_list(self, pgdat, sc, page_list, keep);
  if (nr_reclaimed != 0) pgdat.kswapd.kswapd_failures = 0;  // shrink_node: a reclaimable node is not hopeless

  // spin_lock_irq(&pgdat->lru_lock) whether or not any page was kept (the PGSTEAL counters and reclaim_stat are
  // updated under it), then putback_inactive_pages: kept pages go back to the head of the inactive list.
  self.cpu.local_irq_disable();
  co_await pgdat.lru_lock.lock(m, self.cpu);
  for (Pfn p : keep) pgdat.inactive_file.push_back(p);
  co_await self.cpu.delay(times(c.lru_update / 2, keep.size()));
  co_await pgdat.lru_lock.unlock(m, self.cpu);
  co_await self.cpu.local_irq_enable();
  co_return nr_reclaimed;
}

sim::Task<std::uint64_t> Vmscan::shrink_page_list(PerCpu& self, PgData& pgdat, ScanControl& sc,
                                                  std::vector<Pfn>& page_list, std::vector<Pfn>& keep) {
  (void)pgdat;
  hw::Memory& m = k_.mem();
  const hw::KernelCosts& c = costs(self);
  TlbflushUnmapBatch& ubc = *sc.tlb_ubc;
  std::vector<Pfn> free_pages;
  for (Pfn p : page_list) {
    CachePage& pg = info(p);
    // page_check_references -> page_referenced: rmap_walk_file under i_mmap_rwsem; page_referenced_one takes the
    // PTE lock (page_vma_mapped_walk) and ptep_clear_flush_young: book3s64 clears the accessed bit, no flush.
    bool referenced_ptes = false;
    for (const RmapHit& h : mapped_at(p)) {
      Spinlock& ptl = h.mm->ptl(h.vpn);
      co_await ptl.lock(m, self.cpu);
      if (std::exchange(pg.young, false)) referenced_ptes = true;
      co_await self.cpu.delay(c.rmap_update + c.pte_update);
      co_await ptl.unlock(m, self.cpu);
    }
    const bool referenced_page = std::exchange(pg.referenced, false);  // TestClearPageReferenced
    if (referenced_ptes) {
      // SetPageReferenced; PAGEREF_KEEP for a use-once file page (PAGEREF_ACTIVATE if it was referenced too, or
      // mapped twice: the model has no active list and keeps such a page on the inactive list as well).
      pg.referenced = true;
      if (referenced_page) ++stats.pgactivate;
      keep.push_back(p);
      continue;
    }
    // PAGEREF_RECLAIM_CLEAN. A mapped page: try_to_unmap(page, TTU_BATCH_FLUSH) over every mapping that maps it.
    for (const RmapHit& h : mapped_at(p)) {
      co_await try_to_unmap_one(self, ubc, *h.mm, h.vpn, p, true);
      co_await self.cpu.delay(c.rmap_update);  // the walk and page_remove_rmap
    }
    // The page is clean (read-only, a hole): __remove_mapping, under spin_lock_irqsave(&mapping->tree_lock),
    // deletes it from the page cache, unless page_ref_freeze(page, 2) fails because a fault mapped it again
    // meanwhile (the model has no page lock, which in the kernel keeps filemap_fault off a page under reclaim):
    // then the page is kept. A page it deletes leaves a shadow entry stamped by workingset_eviction.
    File& mapping = *pg.mapping;
    Spinlock& tree_lock = *tree_lock_.at(&mapping);
    co_await tree_lock.lock_irqsave(m, self.cpu, k_.arch().spin_lock_flags_enables_irqs());
    if (!mapped_at(p).empty()) {
      co_await tree_lock.unlock(m, self.cpu);
      co_await self.cpu.local_irq_enable();
      keep.push_back(p);
      continue;
    }
    co_await m.rmw(self.cpu, node(pg.node).inactive_age, [](long age) { return age + 1; });
    mapping.pages.erase(pg.index);
    co_await self.cpu.delay(c.rmap_update);
    co_await tree_lock.unlock(m, self.cpu);
    co_await self.cpu.local_irq_enable();
    free_pages.push_back(p);
  }
  // mem_cgroup_uncharge_list; try_to_unmap_flush(); free_hot_cold_page_list(&free_pages).
  if (planted(k_.config(), Mutation::reclaim_frees_before_batched_flush)) {
    for (Pfn p : free_pages) free_page(p);  // Mutation: freed before the batched flush, then flushed
    co_await try_to_unmap_flush(self, ubc);
  } else {
    co_await try_to_unmap_flush(self, ubc);
    for (Pfn p : free_pages) free_page(p);
  }
  (sc.kswapd ? stats.pgsteal_kswapd : stats.pgsteal_direct) += free_pages.size();
  co_return free_pages.size();
}

}  // namespace tlbsim::kernel
