// Models migrate_pages(2) for anonymous pages: mm/mempolicy.c (kernel_migrate_pages, do_migrate_pages,
// queue_pages_range), mm/migrate.c (migrate_pages; v5.17's unmap_and_move per page; v6.4's migrate_pages_batch with
// migrate_folio_unmap and migrate_folio_move) and mm/rmap.c (try_to_migrate_one, remove_migration_ptes).
// docs/model.md ("Page migration") names the trees read.
#include "mm/migrate.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <vector>

#include "kernel/barrier.h"
#include "kernel/options.h"
#include "mm/huge_memory.h"
#include "mm/rmap.h"

namespace tlbsim::kernel {

namespace {

const hw::KernelCosts& costs(PerCpu& self) { return self.k.machine().kernel; }

struct Isolated {
  MmStruct* mm;  // the mm the page was found in (its anon rmap's, for compaction)
  Vpn vpn;
  Pfn page;
  std::uint16_t target_nid = 0;  // the node the copy is allocated on
  bool huge = false;             // a THP mapped by its PMD at `vpn` (its first page), locked by queue_pages_range
  bool compaction = false;       // isolated by compaction: the copy comes from compaction_alloc
};

// thp_migration_supported (CONFIG_ARCH_ENABLE_THP_MIGRATION): x86 from v4.14, powerpc book3s64 from v4.20, arm64 from
// v5.10 (53fa117bb33c). Every modeled profile but linux-4.14-ppc has it; v3.3 has no THP migration at all.
bool thp_migration_supported(const PerCpu& self) {
  const KernelVersion v = self.k.config().version;
  switch (self.k.arch().arch()) {
    case Arch::kX86:
      return v >= KernelVersion{4, 14};
    case Arch::kPowerpc:
      return v >= KernelVersion{4, 20};
    case Arch::kArm64:
      return v >= KernelVersion{5, 10};
    case Arch::kAny:
      break;
  }
  return false;
}

// The node a page on `nid` moves to: do_migrate_pages from the node the page is on to the other one (the next, on
// more than two).
std::uint16_t other_node(PerCpu& self, std::uint16_t nid) {
  return static_cast<std::uint16_t>((nid + 1) % std::max<std::uint32_t>(1, self.k.nr_node_ids()));
}

// queue_pages_pmd: a THP's PMD, under the PMD lock. With THP migration the THP is isolated whole (its page lock
// stands for the isolation, so one a NUMA fault is migrating is left alone); the huge zero page is skipped. Without
// it (v4.14 powerpc) the THP is split (split_huge_page: the model splits the PMD, whose 512 pages the PTE walk then
// queues one by one). Returns whether the PTE walk must still visit the range.
sim::Task<bool> queue_pages_pmd(PerCpu& self, MmStruct& mm, std::uint64_t addr, std::vector<Isolated>& list) {
  if (!thp_migration_supported(self)) {
    co_await split_huge_pmd(self, mm, addr);
    co_return true;
  }
  const Vpn v = vpn_of(addr);
  Spinlock& ptl = mm.ptl(v);
  co_await ptl.lock(self.k.mem(), self.cpu);
  const HugePmd* h = mm.pgd.huge_pmd(v);
  if (h != nullptr && !h->zero && !h->migration && self.k.frames().trylock_page(h->page)) {
    list.push_back(Isolated{&mm, vpn_of(addr & ~(kHpagePmdSize - 1)), h->page,
                            other_node(self, self.k.frames().nid(h->page)), true});
    co_await self.cpu.delay(costs(self).lru_update);  // isolate_lru_page of the THP
  }
  co_await ptl.unlock(self.k.mem(), self.cpu);
  co_return false;
}

// queue_pages_range -> queue_pages_pte_range: under each page table's lock, every present anonymous PTE's page (not
// the zero page) is isolated from the LRU (isolate_lru_page) onto the list.
sim::Task<std::vector<Isolated>> queue_pages_range(PerCpu& self, MmStruct& mm) {
  std::vector<Isolated> list;
  for (const auto& [start, vma] : mm.vmas) {
    if (vma.file != nullptr) continue;  // the model migrates anonymous memory only
    for (std::uint64_t addr = vma.start; addr < vma.end;) {
      const Vpn first = vpn_of(addr);
      const std::uint64_t table_end = std::min(vma.end, (table_index(first) + 1) * kPtesPerTable * kPageSize);
      if (mm.pgd.huge_pmd(first) != nullptr && !co_await queue_pages_pmd(self, mm, addr, list)) {
        addr = table_end;
        continue;
      }
      if (mm.pgd.table(first) == nullptr) {
        addr = table_end;
        continue;
      }
      Spinlock& ptl = mm.ptl(first);
      co_await ptl.lock(self.k.mem(), self.cpu);
      for (; addr < table_end; addr += kPageSize) {
        const auto pte = mm.pgd.lookup(vpn_of(addr));
        if (!pte || !pte->anon || pte->pfn.get() == 0) continue;
        list.push_back(Isolated{&mm, vpn_of(addr), pte->pfn, other_node(self, self.k.frames().nid(pte->pfn))});
        co_await self.cpu.delay(costs(self).lru_update);  // isolate_lru_page, and the putback of the new page
      }
      co_await ptl.unlock(self.k.mem(), self.cpu);
    }
  }
  co_return list;
}

// Where an rmap walk of `p` looks (rmap_walk_anon): its anon rmap's VMAs, or, for a page without one (docs/model.md,
// "Compaction"), the address it was found at.
std::vector<Vpn> rmap_candidates(PerCpu& self, const Isolated& p) {
  if (const auto r = self.k.frames().anon_rmap(p.page)) return rmap_walk_anon(self, *r);
  if (p.vpn.get() == 0) return {};  // compaction's page, no longer anonymous: nothing to walk
  return {p.vpn};
}

// try_to_migrate(folio, flags) of a base page whose mapping is in `mm`, locked by the caller: rmap_walk_anon under
// anon_vma_lock_read, and try_to_migrate_one for each VMA: under the PTE lock, if the PTE still maps the page, replace
// it with a migration entry, then flush the address now (ptep_clear_flush) or defer the flush into `ubc`
// (TTU_BATCH_FLUSH: should_defer_flush, set_tlb_ubc_flush_pending). Returns whether the page was unmapped.
sim::Task<bool> try_to_migrate(PerCpu& self, TlbflushUnmapBatch& ubc, MmStruct& mm, const Isolated& p,
                               bool batch_flush) {
  bool unmapped = false;
  co_await mm.anon_vma_lock().down_read(self);
  for (const Vpn v : rmap_candidates(self, p)) {
    Spinlock& ptl = mm.ptl(v);
    co_await ptl.lock(self.k.mem(), self.cpu);
    const auto pte = mm.pgd.lookup(v);
    if (pte && pte->pfn == p.page && !pte->huge) {
      unmapped = true;
      const bool defer = co_await should_defer_flush(self, mm, batch_flush);
      mm.pgd.set(v, Pte{p.page, false, pte->writable, true, true});  // set_pte_at(make_migration_entry)
      if (!pte->protnone) self.k.events().on_pte_removed(mm, v, *pte, self.id, self.cpu.now());
      co_await self.cpu.delay(costs(self).rmap_update + costs(self).pte_update);
      const bool skip = planted(self.k.config(), Mutation::migrate_flush_skipped);  // never flushed: the planted bug
      // ptep_clear_flush flushes only an accessible PTE; set_tlb_ubc_flush_pending checks the same from v6.4.
      const bool accessible = co_await pte_accessible(self, mm, *pte);
      const bool batch_checks = self.k.config().version >= KernelVersion{6, 4};
      if (defer && !skip && (accessible || !batch_checks))
        co_await set_tlb_ubc_flush_pending(self, ubc, mm, pte->writable, v.get() << kPageShift);
      if (!defer && !skip && accessible) co_await self.k.arch().flush_tlb_page(self, mm, v.get() << kPageShift);
    }
    co_await ptl.unlock(self.k.mem(), self.cpu);
  }
  co_await mm.anon_vma_lock().up_read(self);
  co_return unmapped;
}

// migrate_folio_unmap: a THP by its PMD (set_pmd_migration_entry, whose flush is never deferred to the batch); a
// base page locked first (folio_trylock: one another migration holds is left alone), then unmapped through the rmap.
// Returns whether the page was unmapped (it stays locked); a base page that was not (zapped meanwhile, or a
// compaction page freed and reused, with no rmap left) is put back unlocked: no migration entry names it.
sim::Task<bool> try_to_migrate_one(PerCpu& self, TlbflushUnmapBatch& ubc, const Isolated& p, bool batch_flush) {
  if (p.huge) co_return co_await set_pmd_migration_entry(self, *p.mm, p.vpn.get() << kPageShift, p.page);
  bool unmapped = false;
  const bool locked = self.k.frames().trylock_page(p.page);
  const auto rmap = self.k.frames().anon_rmap(p.page);
  if (locked && (rmap || p.mm != nullptr)) {
    unmapped = co_await try_to_migrate(self, ubc, rmap ? *rmap->mm : *p.mm, p, batch_flush);
  }
  if (locked && !unmapped) self.k.frames().unlock_page(p.page);
  co_return unmapped;
}

// migrate_folio_move (move_to_new_folio, remove_migration_ptes, folio_unlock) for an unmapped page: a new frame,
// the copy, the PTE made again from the migration entry (unless something cleared the entry meanwhile: a zap), the
// page unlocked, which wakes its waiters, and the old page freed.
sim::Task<void> move_page(PerCpu& self, const Isolated& p) {
  if (p.huge) {
    // migrate_folio_move of a THP: the copy on the target node, remove_migration_pmd, the THP unlocked and freed.
    FrameAllocator& frames = self.k.frames();
    const Pfn copy = frames.alloc_huge(FrameUse::kAnon, p.target_nid);
    frames.set_last_nid(copy, frames.last_nid(p.page));
    co_await self.cpu.delay(costs(self).page_alloc + costs(self).memcg_charge +
                            costs(self).page_copy * static_cast<std::int64_t>(kHpagePmdNr));
    const bool remapped = co_await remove_migration_pmd(self, *p.mm, p.vpn.get() << kPageShift, p.page, copy);
    co_await folio_unlock(self, *p.mm, p.page);
    for (std::uint64_t i = 0; i < kHpagePmdNr; ++i) frames.free(Pfn{p.page.get() + i});
    if (!remapped) {
      for (std::uint64_t i = 0; i < kHpagePmdNr; ++i) frames.free(Pfn{copy.get() + i});
    }
    co_return;
  }
  const Pfn copy = p.compaction ? self.k.frames().alloc_high(FrameUse::kAnon, p.target_nid)
                                : self.k.frames().alloc(FrameUse::kAnon, p.target_nid);
  // folio_migrate_flags: the copy inherits the page's last hinting fault (folio_xchg_last_cpupid);
  // folio_migrate_mapping: its mapping and index.
  self.k.frames().set_last_nid(copy, self.k.frames().last_nid(p.page));
  const auto rmap = self.k.frames().anon_rmap(p.page);
  if (rmap) self.k.frames().set_anon_rmap(copy, *rmap);
  MmStruct& mm = rmap ? *rmap->mm : *p.mm;
  co_await self.cpu.delay(costs(self).page_alloc + costs(self).page_copy + costs(self).memcg_charge);
  // remove_migration_ptes: rmap_walk_anon under anon_vma_lock_read; each VMA's migration entry of the page, under its
  // PTE lock, becomes a PTE of the copy (remove_migration_pte), unless something cleared it meanwhile (a zap).
  bool remap = false;
  co_await mm.anon_vma_lock().down_read(self);
  for (const Vpn v : rmap_candidates(self, p)) {
    Spinlock& ptl = mm.ptl(v);
    co_await ptl.lock(self.k.mem(), self.cpu);
    const auto entry = mm.pgd.migration_entry(v);
    if (entry && entry->pfn == p.page) {
      remap = true;
      mm.pgd.set(v, Pte{copy, true, entry->writable, true});
    }
    co_await self.cpu.delay(costs(self).rmap_update + costs(self).pte_update);
    co_await ptl.unlock(self.k.mem(), self.cpu);
  }
  co_await mm.anon_vma_lock().up_read(self);
  co_await folio_unlock(self, mm, p.page);  // its waiters (migration_entry_wait) woken
  self.k.frames().free(p.page);             // the old page's last reference: freed
  if (!remap) self.k.frames().free(copy);   // no PTE to restore (the range was zapped): the copy goes too
}

}  // namespace

MigrateEra migrate_era(const KernelConfig& config) {
  MigrateEra e;
  e.batch_flush = config.version >= KernelVersion{6, 4} || config.on(Option::migrate_pages_batch_flush);
  e.mmap_lock_queue_only = config.version >= KernelVersion{6, 7};
  return e;
}

namespace {

// migrate_pages (mm/migrate.c) of the isolated pages: batched (v6.4+) or page by page. Returns the pages migrated.
sim::Task<std::uint64_t> migrate_pages(PerCpu& self, const std::vector<Isolated>& list,
                                       const std::function<void()>& on_migrated) {
  const MigrateEra era = migrate_era(self.k.config());
  TlbflushUnmapBatch ubc(self.k.ncpus());  // current->tlb_ubc of the migrating task
  std::uint64_t migrated = 0;
  // A migrated page or THP: pgmigrate_success counts its base pages (nr_succeeded += nr_pages).
  const auto done = [&](const Isolated& p) {
    const std::uint64_t pages = p.huge ? kHpagePmdNr : 1;
    migrated += pages;
    for (std::uint64_t i = 0; on_migrated && i < pages; ++i) on_migrated();
  };
  if (era.batch_flush) {
    // migrate_pages_batch: unmap folios up to NR_MAX_BATCHED_MIGRATION pages (a THP fills a batch alone), one flush,
    // then move them.
    for (std::size_t first = 0; first < list.size();) {
      std::size_t last = first;
      for (std::uint64_t pages = 0; last < list.size() && pages < NR_MAX_BATCHED_MIGRATION; ++last) {
        pages += list[last].huge ? kHpagePmdNr : 1;
      }
      std::vector<const Isolated*> unmapped;
      for (std::size_t i = first; i < last; ++i) {
        const bool unmapped_now = co_await try_to_migrate_one(self, ubc, list[i], true);
        if (unmapped_now) {
          unmapped.push_back(&list[i]);
        } else if (list[i].huge) {
          co_await folio_unlock(self, *list[i].mm, list[i].page);  // no longer mapped there: put back, unlocked
        }
      }
      if (!planted(self.k.config(), Mutation::migrate_flush_skipped)) co_await try_to_unmap_flush(self, ubc);
      for (const Isolated* p : unmapped) {
        co_await move_page(self, *p);
        done(*p);
      }
      first = last;
    }
  } else {
    // unmap_and_move, page by page: try_to_migrate(folio, 0) flushes each PTE as it goes.
    for (const Isolated& p : list) {
      const bool unmapped = co_await try_to_migrate_one(self, ubc, p, false);
      if (!unmapped) {
        if (p.huge) co_await folio_unlock(self, *p.mm, p.page);
        continue;
      }
      co_await move_page(self, p);
      done(p);
    }
  }
  co_return migrated;
}

}  // namespace

sim::Task<bool> pte_accessible(PerCpu& self, MmStruct& mm, const Pte& pte) {
  if (!pte.protnone) co_return true;
  // powerpc book3s64 has no pte_accessible of its own: the generic one answers true for every PTE.
  if (self.k.arch().arch() == Arch::kPowerpc) co_return true;
  // x86: a PROT_NONE PTE is accessible while a flush of it may still be pending (mm_tlb_flush_pending).
  const int pending = co_await self.k.mem().read(self.cpu, mm.tlb_flush_pending);
  co_return pending > 0;
}

sim::Task<std::uint64_t> sys_migrate_pages(PerCpu& self, MmStruct& mm, std::function<void()> on_migrated) {
  co_await self.cpu.delay(costs(self).syscall);
  // do_migrate_pages: mmap_read_lock for the whole migration; from v6.7 migrate_to_node holds it around
  // queue_pages_range only.
  const bool queue_only = migrate_era(self.k.config()).mmap_lock_queue_only;
  co_await mm.mmap_lock.down_read(self);
  const std::vector<Isolated> list = co_await queue_pages_range(self, mm);
  if (queue_only) co_await mm.mmap_lock.up_read(self);
  const std::uint64_t migrated = co_await migrate_pages(self, list, on_migrated);
  if (!queue_only) co_await mm.mmap_lock.up_read(self);
  self.k.events().on_syscall_return(self.id);
  co_return migrated;
}

sim::Task<std::uint64_t> migrate_pages_compaction(PerCpu& self, const std::vector<Pfn>& pages,
                                                  const std::function<void()>& on_migrated) {
  std::vector<Isolated> list;
  list.reserve(pages.size());
  for (const Pfn page : pages) {
    const auto rmap = self.k.frames().anon_rmap(page);
    // No address to fall back on: rmap_candidates finds nothing for a page without an anon rmap (Vpn 0).
    list.push_back(Isolated{rmap ? rmap->mm : nullptr, Vpn{0}, page, self.k.frames().nid(page), false, true});
  }
  co_return co_await migrate_pages(self, list, on_migrated);
}

sim::Task<bool> migrate_misplaced_page(PerCpu& self, MmStruct& mm, Vpn v, Pfn page, std::uint16_t node) {
  // numamigrate_isolate_page: isolate_lru_page (the destination's watermarks are not modeled).
  co_await self.cpu.delay(costs(self).lru_update);
  const std::vector<Isolated> list{Isolated{&mm, v, page, node}};
  // migrate_pages(&migratepages, alloc_misplaced_dst_page, NULL, node, MIGRATE_ASYNC, MR_NUMA_MISPLACED).
  const std::uint64_t migrated = co_await migrate_pages(self, list, {});
  co_return migrated == 1;
}

sim::Task<void> folio_unlock(PerCpu& self, MmStruct& mm, Pfn page) {
  hw::Shared<std::uint64_t>& queue = mm.page_waitqueue(page);
  self.k.frames().unlock_page(page);
  smp_store_release_fence(self.k.mem(), self.cpu);                // clear_bit_unlock(PG_locked): a release
  co_await self.k.mem().write(self.cpu, queue, queue.value + 1);  // folio_wake_bit wakes the waiters
}

sim::Task<void> wait_on_page_locked(PerCpu& self, MmStruct& mm, Pfn page) {
  hw::Memory& m = self.k.mem();
  hw::Shared<std::uint64_t>& queue = mm.page_waitqueue(page);
  for (;;) {
    // The queue's line is read, then the lock bit tested: an unlock after the test writes the line this CPU holds.
    co_await m.read(self.cpu, queue);
    if (!self.k.frames().page_locked(page)) co_return;
    co_await m.wait_for_write(self.cpu, queue.line);
  }
}

sim::Task<bool> migrate_misplaced_thp(PerCpu& self, MmStruct& mm, std::uint64_t haddr, Pfn page, std::uint16_t node) {
  // numamigrate_isolate_page (v6.13: migrate_misplaced_folio_prepare): isolate_lru_page fails for a THP that another
  // migration holds; migrate_pages' unmap_and_move then takes the folio lock (folio_trylock, MIGRATE_ASYNC).
  if (!self.k.frames().trylock_page(page)) co_return false;
  co_await self.cpu.delay(costs(self).lru_update);
  // migrate_pages(&migratepages, alloc_misplaced_dst_folio, NULL, node, MIGRATE_ASYNC, MR_NUMA_MISPLACED): the PMD
  // branch of try_to_migrate_one (set_pmd_migration_entry), then migrate_folio_move; a THP no longer mapped there
  // (zapped or replaced meanwhile) is put back unlocked.
  const std::vector<Isolated> list{Isolated{&mm, vpn_of(haddr), page, node, true}};
  co_return co_await migrate_pages(self, list, {}) == kHpagePmdNr;
}

sim::Task<bool> migrate_misplaced_transhuge_page(PerCpu& self, MmStruct& mm, const Vma& vma, std::uint64_t haddr,
                                                 const HugePmd& orig, std::uint16_t node) {
  FrameAllocator& frames = self.k.frames();
  hw::Memory& m = self.k.mem();
  const Vpn v = vpn_of(haddr);
  // numamigrate_isolate_page, alloc_pages_node(node, GFP_TRANSHUGE_LIGHT | __GFP_THISNODE), migrate_page_copy: with no
  // lock held, the old PMD still PROT_NONE (a fault on it waits for the page lock the caller holds).
  const Pfn copy = frames.alloc_huge(FrameUse::kAnon, node);
  frames.set_last_nid(copy, frames.last_nid(orig.page));
  co_await self.cpu.delay(costs(self).lru_update + costs(self).page_alloc + costs(self).memcg_charge +
                          costs(self).page_copy * static_cast<std::int64_t>(kHpagePmdNr));
  Spinlock& ptl = mm.ptl(v);
  co_await ptl.lock(m, self.cpu);
  const HugePmd* h = mm.pgd.huge_pmd(v);
  if (h == nullptr || !h->protnone || h->page != orig.page) {
    // !pmd_same: the new THP freed, the old one put back on the LRU and unlocked; the PMD is left as it is.
    co_await ptl.unlock(m, self.cpu);
    for (std::uint64_t i = 0; i < kHpagePmdNr; ++i) frames.free(Pfn{copy.get() + i});
    co_await folio_unlock(self, mm, orig.page);
    co_return false;
  }
  // page_add_anon_rmap of the copy; pmdp_huge_clear_flush_notify: the old PMD cleared, then flush_pmd_tlb_range; then
  // set_pmd_at of the copy (maybe_pmd_mkwrite(pmd_mkdirty(mk_huge_pmd(new_page, vma->vm_page_prot)))), the deposit
  // left where it is; page_remove_rmap of the old THP.
  const HugePmd old = *mm.pgd.clear_huge_pmd(v);
  if (!planted(self.k.config(), Mutation::thp_migration_flush_skipped)) co_await flush_pmd_tlb_range(self, mm, haddr);
  co_await self.cpu.delay(costs(self).pte_update + 2 * costs(self).rmap_update);
  mm.pgd.set_huge_pmd(v, HugePmd{copy, vma.writable, old.deposit});
  co_await ptl.unlock(m, self.cpu);
  // unlock_page of both; the old THP's last references dropped.
  co_await folio_unlock(self, mm, orig.page);
  for (std::uint64_t i = 0; i < kHpagePmdNr; ++i) frames.free(Pfn{orig.page.get() + i});
  co_return true;
}

sim::Task<void> migration_entry_wait(PerCpu& self, MmStruct& mm, Vpn v) {
  hw::Memory& m = self.k.mem();
  // Under the PTE lock: is it still a migration entry, and of which page? (The page's wait queue is read first, so
  // that an unlock after the check still ends the wait.)
  const std::optional<Pte> seen_entry = mm.pgd.migration_entry(v);
  if (!seen_entry) co_return;
  hw::Shared<std::uint64_t>& queue = mm.page_waitqueue(seen_entry->pfn);
  const std::uint64_t seen = co_await m.read(self.cpu, queue);
  Spinlock& ptl = mm.ptl(v);
  co_await ptl.lock(m, self.cpu);
  const auto entry = mm.pgd.migration_entry(v);
  const bool wait = entry && entry->pfn == seen_entry->pfn;
  // pfn_swap_entry_to_page (migration_entry_to_page before v5.14): BUG_ON(is_migration_entry(entry) &&
  // !PageLocked(p)). A migration entry exists only while its migration holds the page locked; one left behind (its
  // remove_migration_ptes did not find it) names a page that is unlocked and freed.
  if (wait && !self.k.frames().page_locked(entry->pfn)) {
    throw std::logic_error(fmt::format(
        "BUG_ON(!PageLocked) in pfn_swap_entry_to_page: cpu{} faulted on a migration entry at {:#x} of mm {} "
        "naming page {}, which no migration holds (remove_migration_ptes missed it)",
        self.id.get(), v.get() << kPageShift, mm.id(), entry->pfn.get()));
  }
  co_await ptl.unlock(m, self.cpu);
  if (!wait) co_return;
  // folio_put_wait_locked / migration_entry_wait_on_locked: sleep until the page is unlocked; the fault then returns
  // and the access faults again. The model parks the CPU on the page's wait-queue line (docs/model.md) and, as
  // wake_page_function wakes a waiter only for its own page once its lock bit is clear, tests the bit again after
  // anything that ends the park (an interrupt, another page's unlock on the same hashed line).
  const std::uint64_t now = co_await m.read(self.cpu, queue);
  if (now != seen) co_return;
  co_await wait_on_page_locked(self, mm, seen_entry->pfn);
}

}  // namespace tlbsim::kernel
