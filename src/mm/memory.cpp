// Models the fault and madvise paths of mm/memory.c and mm/madvise.c (Linux v5.15-v5.17, with the later eras'
// changes where named) as far as TLB shootdown depends on them; mmap and munmap are mm/mmap.cpp's. Costs of the
// surrounding kernel code come from the machine's [kernel] section.
#include "mm/memory.h"

#include <fmt/format.h>

#include <stdexcept>

#include "kernel/barrier.h"
#include "kernel/sched/sched.h"
#include "mm/huge_memory.h"
#include "mm/mempolicy.h"
#include "mm/migrate.h"
#include "mm/mmu_gather.h"
#include "mm/rmap.h"
#include "mm/shmem.h"
#include "trace/tracer.h"

namespace tlbsim::kernel {

std::uint64_t fault_around_pages(KernelVersion version, std::uint64_t page_size) {
  if (version < KernelVersion{3, 15}) return 1;
  return std::max<std::uint64_t>(1, 65536 / page_size);
}

namespace {

const hw::KernelCosts& costs(PerCpu& self) { return self.k.machine().kernel; }

// The lifetime costs of a new anonymous page, charged when it is mapped: memcg charge and uncharge, LRU insertion
// and removal, reverse-mapping add and remove.
sim::Duration anon_page_costs(PerCpu& self) {
  const hw::KernelCosts& c = costs(self);
  return c.page_alloc + c.memcg_charge + c.lru_update + c.rmap_update + c.pte_update;
}

// Installs a PTE (set_pte_at) for a page-cache page, read-only.
Pfn page_cache_page(PerCpu& self, File& file, std::uint64_t pgoff, bool& allocated) {
  const Pfn* cached = file.pages.find(pgoff);
  allocated = cached == nullptr;
  if (!allocated) return *cached;
  const Pfn p = self.k.frames().alloc(FrameUse::kPageCache);
  file.pages.emplace(pgoff, p);
  return p;
}

// __do_fault returns the page locked, and reclaim takes the page out of the cache only under that lock
// (shrink_folio_list
// -> shmem_writepage, __remove_mapping): a fault that finds the page gone once it holds the lock retries (the folio's
// mapping no longer matches). The model has no page lock; a fault maps the page it found only if the cache still
// holds it after the fault's own work, and otherwise returns for the access to fault again.
bool still_cached(const File& file, std::uint64_t pgoff, Pfn p) {
  const Pfn* cached = file.pages.find(pgoff);
  return cached != nullptr && *cached == p;
}

// do_read_fault with do_fault_around: map the faulting page and the cached pages of its aligned window
// whose PTEs are none, read-only. filemap_map_pages (v4.x-v6.x) visits every cached page of the window: it takes
// the page's reference and lock (next_uptodate_page, or the radix-tree loop before v5.12) before it tests the PTE,
// and drops both again when the PTE is already set.
// Under the VMA lock in v6.6 the fault gives up (false: VM_FAULT_RETRY) once the fault-around is done, unless
// filemap_map_pages mapped the faulting page itself (VM_FAULT_NOPAGE): it does when the page is in the cache, which
// the model maps below as __do_fault would, at the same cost.
sim::Task<bool> do_read_fault(PerCpu& self, MmStruct& mm, const Vma& vma, Vpn v, bool vma_locked) {
  // The aligned window; a window of one page is the faulting page alone, which is do_read_fault without
  // do_fault_around.
  const std::uint64_t window = fault_around_pages(self.k.config().version, self.k.arch().page_size());
  const std::uint64_t first = std::max(v.get() / window * window, vma.start >> kPageShift);
  const std::uint64_t last = std::min(first + window, vma.end >> kPageShift);
  for (std::uint64_t u = first; u < last; ++u) {
    if (u == v.get()) continue;
    const std::uint64_t pgoff = vma.pgoff + (u - (vma.start >> kPageShift));
    if (!vma.file->pages.contains(pgoff)) continue;  // filemap_map_pages maps only pages already in the cache
    if (mm.pgd.lookup(Vpn{u})) {
      co_await self.cpu.delay(costs(self).fault_around_skip);  // !pte_none: unlock_page, put_page
      continue;
    }
    co_await self.cpu.delay(costs(self).fault_around_page);  // includes the PTE write and the file rmap
    // The kernel holds the page's lock from before the PTE test, which keeps reclaim (trylock_page in
    // shrink_page_list) off it. The model has no page lock, and reclaim may have removed the page from the cache
    // meanwhile (__remove_mapping runs outside the PTE lock this fault holds): look it up again, and map it only if
    // it is still there.
    const Pfn* cached = vma.file->pages.find(pgoff);
    if (cached == nullptr) continue;
    mm.pgd.set(Vpn{u}, Pte{*cached, true, false, false});
  }
  const std::uint64_t index = vma.pgoff + (v.get() - (vma.start >> kPageShift));
  if (vma_locked && vma_lock_era(self.k.config().version, self.k.arch().arch()).file_fault_retry &&
      (window == 1 || !vma.file->pages.contains(index))) {
    co_return false;
  }
  bool allocated = false;
  co_await shmem_get_folio(self, *vma.file, index);
  const Pfn p = page_cache_page(self, *vma.file, index, allocated);
  if (allocated) co_await self.cpu.delay(costs(self).page_alloc + costs(self).page_zero);  // a hole reads as zeros
  co_await self.cpu.delay(costs(self).pte_update + costs(self).rmap_update);
  if (!still_cached(*vma.file, index, p)) co_return true;
  mm.pgd.set(v, Pte{p, true, false, false});
  co_return true;
}

// page_add_new_anon_rmap (folio_add_new_anon_rmap): a new anonymous page's reverse map, its index the linear page
// index of `v` in `vma` (linear_page_index: the file offset in a private file VMA, the address in an anonymous one).
void page_add_new_anon_rmap(PerCpu& self, MmStruct& mm, const Vma& vma, Vpn v, Pfn page) {
  self.k.frames().set_anon_rmap(page, AnonRmap{&mm, vma.pgoff + (v.get() - (vma.start >> kPageShift))});
}

// do_cow_fault: a write to an unmapped private file page gets a private copy at once. Under the VMA lock: v6.6 gives
// up at once; later eras give up when the VMA needs an anon_vma (vmf_anon_prepare). Returns false for
// VM_FAULT_RETRY.
sim::Task<bool> do_cow_fault(PerCpu& self, MmStruct& mm, const Vma& vma, Vpn v, bool vma_locked) {
  if (vma_locked && vma_lock_era(self.k.config().version, self.k.arch().arch()).file_fault_retry) co_return false;
  if (!co_await vmf_anon_prepare(self, mm, vma, vma_locked)) co_return false;
  bool allocated = false;
  co_await shmem_get_folio(self, *vma.file, vma.pgoff + (v.get() - (vma.start >> kPageShift)));
  page_cache_page(self, *vma.file, vma.pgoff + (v.get() - (vma.start >> kPageShift)), allocated);
  if (allocated) co_await self.cpu.delay(costs(self).page_alloc + costs(self).page_zero);
  const Pfn anon = self.k.frames().alloc(FrameUse::kAnon);
  co_await self.cpu.delay(anon_page_costs(self) + costs(self).page_copy);
  page_add_new_anon_rmap(self, mm, vma, v, anon);
  mm.pgd.set(v, Pte{anon, true, true, true});
  co_return true;
}

// do_shared_fault: a write to an unmapped page of a MAP_SHARED file mapping maps the page-cache page itself,
// writable (__do_fault, do_page_mkwrite, finish_fault; no fault-around for writes). v6.6 gives up under the VMA lock
// at once (false: VM_FAULT_RETRY).
sim::Task<bool> do_shared_fault(PerCpu& self, MmStruct& mm, const Vma& vma, Vpn v, bool vma_locked) {
  if (vma_locked && vma_lock_era(self.k.config().version, self.k.arch().arch()).file_fault_retry) co_return false;
  bool allocated = false;
  co_await shmem_get_folio(self, *vma.file, vma.pgoff + (v.get() - (vma.start >> kPageShift)));
  const Pfn p = page_cache_page(self, *vma.file, vma.pgoff + (v.get() - (vma.start >> kPageShift)), allocated);
  if (allocated) co_await self.cpu.delay(costs(self).page_alloc + costs(self).page_zero);
  co_await self.cpu.delay(costs(self).pte_update + costs(self).rmap_update);
  if (!still_cached(*vma.file, vma.pgoff + (v.get() - (vma.start >> kPageShift)), p)) co_return true;
  mm.pgd.set(v, Pte{p, true, true, false});
  co_return true;
}

// do_anonymous_page: a zeroed private page (a read maps the shared zero page, with no anon_vma needed). Returns false
// for VM_FAULT_RETRY (vmf_anon_prepare).
sim::Task<bool> do_anonymous_page(PerCpu& self, MmStruct& mm, const Vma& vma, Vpn v, bool write, bool vma_locked) {
  if (!write) {
    co_await self.cpu.delay(costs(self).pte_update);
    mm.pgd.set(v, Pte{Pfn{0}, true, false, false});
    co_return true;
  }
  if (!co_await vmf_anon_prepare(self, mm, vma, vma_locked)) co_return false;
  // alloc_page_vma with the default policy: the faulting CPU's node.
  const Pfn anon = self.k.frames().alloc(FrameUse::kAnon, self.k.cpu_to_node(self.id));
  co_await self.cpu.delay(anon_page_costs(self) + costs(self).page_zero);
  page_add_new_anon_rmap(self, mm, vma, v, anon);
  mm.pgd.set(v, Pte{anon, true, true, true});
  co_return true;
}

// do_wp_page: a write to a present read-only PTE. An exclusive anonymous page is reused; otherwise
// wp_page_copy copies it and replaces the PTE with ptep_clear_flush (flush_tlb_page) before installing the copy.
// Before the copy, a VMA without an anon_vma needs one: under the VMA lock, v6.6's do_wp_page gives up, and later
// eras' wp_page_copy calls vmf_anon_prepare. Returns false for VM_FAULT_RETRY.
sim::Task<bool> do_wp_page(PerCpu& self, MmStruct& mm, const Vma& vma, Vpn v, const Pte& old, bool vma_locked) {
  if (old.anon && old.pfn.get() != 0) {
    co_await self.cpu.delay(costs(self).pte_update);
    mm.pgd.set(v, Pte{old.pfn, true, true, true});  // wp_page_reuse: upgrading permission needs no flush
    co_return true;
  }
  if (!co_await vmf_anon_prepare(self, mm, vma, vma_locked)) co_return false;
  const Pfn copy = self.k.frames().alloc(FrameUse::kAnon);
  co_await self.cpu.delay(anon_page_costs(self) + costs(self).page_copy +
                          costs(self).rmap_update);  // + old page's rmap
  mm.pgd.clear(v);
  self.k.events().on_pte_removed(mm, v, old, self.id, self.cpu.now());
  co_await self.k.arch().flush_tlb_page(self, mm, v.get() << kPageShift);
  page_add_new_anon_rmap(self, mm, vma, v, copy);
  mm.pgd.set(v, Pte{copy, true, true, true});
  co_return true;
}

// do_numa_page: a fault on a PROT_NONE hinting PTE, entered with the PTE lock held; returns with it dropped. The
// PTE is checked again under the lock (pte_same); numa_migrate_prep -> mpol_misplaced picks a node. A page that stays
// gets its PTE back (ptep_modify_prot_start/commit with the VMA's protection and the saved write bit): a permission
// upgrade, no flush. One that moves: the lock drops, migrate_misplaced_page migrates it, and remove_migration_pte
// maps the copy; a migration that fails relocks and restores the PTE as for a page that stays. v4.14 makes the PTE
// present again first ("Make it present again"), so its migration meets an accessible PTE; v5.15 keeps it PROT_NONE
// until the migration is done or failed (the change lies between the two; the model places it at v5.15, the
// earliest tree read with it, docs/model.md).
// do_numa_page's out_map, under the PTE lock: the hinting PTE, if still the one that faulted, made accessible again.
sim::Task<void> numa_restore_pte(PerCpu& self, MmStruct& mm, const Vma& vma, Vpn v, Pte orig) {
  const auto now = mm.pgd.lookup(v);
  if (!now || !now->protnone || now->pfn != orig.pfn) co_return;  // pte_same failed: another fault won
  co_await self.cpu.delay(costs(self).pte_update);
  mm.pgd.set(v, Pte{orig.pfn, true, orig.writable && vma.writable, orig.anon});
}

sim::Task<void> do_numa_page(PerCpu& self, MmStruct& mm, const Vma& vma, Vpn v, Pte orig) {
  hw::Memory& m = self.k.mem();
  Spinlock& ptl = mm.ptl(v);
  if (self.k.config().version < KernelVersion{5, 15}) {
    co_await numa_restore_pte(self, mm, vma, v, orig);
    const std::optional<std::uint16_t> target = mpol_misplaced(self, orig.pfn);
    co_await ptl.unlock(m, self.cpu);
    if (target) co_await migrate_misplaced_page(self, mm, v, orig.pfn, *target);
    co_return;
  }
  const std::optional<std::uint16_t> target = mpol_misplaced(self, orig.pfn);
  if (!target) {
    co_await numa_restore_pte(self, mm, vma, v, orig);
    co_await ptl.unlock(m, self.cpu);
    co_return;
  }
  co_await ptl.unlock(m, self.cpu);
  const bool migrated = co_await migrate_misplaced_page(self, mm, v, orig.pfn, *target);
  if (migrated) co_return;
  co_await ptl.lock(m, self.cpu);
  co_await numa_restore_pte(self, mm, vma, v, orig);
  co_await ptl.unlock(m, self.cpu);
}

// The fault's work under the PTE lock, with the VMA held (by mmap_lock, or by its own lock: `vma_locked`). Returns
// false for VM_FAULT_RETRY, which only a fault under the VMA lock gets: the locks taken here are dropped, and the
// caller drops the VMA lock and runs the fault again under mmap_lock. What was done stays done (pages that
// fault-around mapped, an anon_vma made).
sim::Task<bool> handle_pte_fault(PerCpu& self, MmStruct& mm, const Vma& vma, std::uint64_t addr, bool write,
                                 bool vma_locked) {
  hw::Memory& m = self.k.mem();
  const Vpn v = vpn_of(addr);
  const VmaLockEra era = vma_lock_era(self.k.config().version, self.k.arch().arch());
  // __handle_mm_fault: a fault on a none PMD of a THP range maps a THP, or for a read the huge zero page where the
  // era has it (a read falls back to base pages in v3.3); a write to a read-only PMD is wp_huge_pmd's, which may
  // fall back to the PTEs it split (VM_FAULT_FALLBACK); otherwise the PMD is already there (the access retries).
  if (const HugePmd* h = mm.pgd.huge_pmd(v); h != nullptr) {
    if (h->migration) {  // is_pmd_migration_entry: pmd_migration_entry_wait, and the access faults again
      co_await pmd_migration_entry_wait(self, mm, addr);
      co_return true;
    }
    if (h->protnone) {  // pmd_protnone && vma_is_accessible: a NUMA hinting fault on a THP
      co_await do_huge_pmd_numa_page(self, mm, vma, addr);
      co_return true;
    }
    if (!write) co_return true;
    const bool fallback = co_await do_huge_pmd_wp_page(self, mm, vma, addr);
    if (!fallback) co_return true;
  } else if ((write || huge_zero_era(self.k.config()).huge_zero_page) && mm.pgd.table(v) == nullptr &&
             thp_fault_eligible(vma, addr)) {
    // do_huge_pmd_anonymous_page: the anon_vma first (anon_vma_prepare; vmf_anon_prepare from v6.10), even for the
    // huge zero page.
    if (!co_await vmf_anon_prepare(self, mm, vma, vma_locked)) co_return false;
    co_await do_huge_pmd_anonymous_page(self, mm, vma, addr, write);
    co_return true;
  }
  Spinlock& ptl = mm.ptl(v);
  co_await ptl.lock(m, self.cpu);
  const auto pte = mm.pgd.lookup(v);
  if (!pte && mm.pgd.migration_entry(v)) {
    // do_swap_page on a migration entry: migration_entry_wait, and the access faults again. v6.4-v6.5 give up
    // under the VMA lock before they look at the entry.
    co_await ptl.unlock(m, self.cpu);
    if (vma_locked && era.swap_retry) co_return false;
    co_await migration_entry_wait(self, mm, v);
    co_return true;
  }
  if (pte && pte->protnone) {  // pte_protnone && vma_is_accessible: a NUMA hinting fault
    const Pte orig = *pte;
    co_await do_numa_page(self, mm, vma, v, orig);
    co_return true;
  }
  bool done = true;
  if (!pte) {
    if (vma.file == nullptr)
      done = co_await do_anonymous_page(self, mm, vma, v, write, vma_locked);
    else if (write && vma.shared)
      done = co_await do_shared_fault(self, mm, vma, v, vma_locked);
    else if (write)
      done = co_await do_cow_fault(self, mm, vma, v, vma_locked);
    else
      done = co_await do_read_fault(self, mm, vma, v, vma_locked);
  } else if (write && !pte->writable && vma.file != nullptr && vma.shared) {
    // wp_page_shared: a read-mapped page of a shared file becomes writable in place; an upgrade needs no flush.
    // A file with ->page_mkwrite (every modeled file but shmem's) calls it first, which v6.6 does not do under the
    // VMA lock.
    if (vma_locked && era.file_fault_retry && !vma.file->shmem) {
      done = false;
    } else {
      co_await self.cpu.delay(costs(self).pte_update);
      mm.pgd.set(v, Pte{pte->pfn, true, true, false});
    }
  } else if (write && !pte->writable) {
    done = co_await do_wp_page(self, mm, vma, v, *pte, vma_locked);
  }
  co_await ptl.unlock(m, self.cpu);
  co_return done;
}

// The arch's fault handler with the per-VMA lock (v6.4+): arch/x86/mm/fault.c do_user_addr_fault, arch/arm64/mm/
// fault.c do_page_fault, arch/powerpc/mm/fault.c ___do_page_fault. lock_vma_under_rcu looks the VMA up without
// mmap_lock and read-locks it alone (vma_start_read); then, per era (VmaLockEra), refuses it (VMA_LOCK_ABORT), finds
// it detached meanwhile and looks again (VMA_LOCK_MISS; RCU keeps its memory), or finds that it no longer covers the
// address (split or shrunk: VMA_LOCK_ABORT). Returns true when the fault was handled (VMA_LOCK_SUCCESS); false
// sends it to mmap_lock, also after a VM_FAULT_RETRY (VMA_LOCK_RETRY).
sim::Task<bool> fault_under_vma_lock(PerCpu& self, MmStruct& mm, std::uint64_t addr, bool write,
                                     const VmaLockEra& era) {
  VmaLockStats& stats = self.k.counters().vma_lock;
  for (const Vma* vma = mm.find_vma(addr); vma != nullptr && vma->contains(addr); vma = mm.find_vma(addr)) {
    if (era.anonymous_only && !vma_is_anonymous(*vma)) break;
    if (era.anon_vma_required && !era.anon_vma_test_after_lock && !vma->anon_vma) break;
    const std::shared_ptr<VmaLock> lock = vma->vm_lock;  // rcu_read_lock keeps it
    const bool locked = co_await vma_start_read(self, mm, *lock);
    if (!locked) break;
    if (lock->detached) {
      co_await vma_end_read(self, mm, *lock);
      ++stats.miss;
      continue;
    }
    if (!vma->contains(addr) || (era.anon_vma_required && vma_is_anonymous(*vma) && !vma->anon_vma)) {
      co_await vma_end_read(self, mm, *lock);
      break;
    }
    if (write && !vma->writable) {
      co_await vma_end_read(self, mm, *lock);
      if (era.access_error_falls_back) co_return false;  // arm64: to lock_mmap, whose access check signals
      ++stats.success;                                   // x86: bad_area_access_error under the VMA lock
      throw Sigsegv(fmt::format("SIGSEGV: cpu{} wrote {:#x}, mapped read-only", self.id.get(), addr));
    }
    // Held for read, the VMA cannot change or go (vma_start_write waits for its readers).
    const bool done = co_await handle_pte_fault(self, mm, *vma, addr, write, true);
    co_await vma_end_read(self, mm, *lock);
    if (!done) {
      ++stats.retry;
      co_return false;
    }
    ++stats.success;
    co_return true;
  }
  ++stats.abort;
  co_return false;
}

// The arch's fault handler -> handle_mm_fault, under the PTE lock and either the VMA's own lock (where the era has
// per-VMA locks and the VMA takes it: fault_under_vma_lock) or mmap_lock for read (lock_mm_and_find_vma).
sim::Task<void> handle_mm_fault(PerCpu& self, MmStruct& mm, std::uint64_t addr, bool write) {
  const trace::TraceSpan span(self.k.tracer(), self.cpu, "handle_mm_fault", "fault");
  ++self.k.counters().page_faults;
  co_await self.cpu.delay(costs(self).page_fault);
  const VmaLockEra era = vma_lock_era(self.k.config().version, self.k.arch().arch());
  if (era.per_vma_lock) {  // (no co_await inside a && : GCC 12 mishandles the temporary of a skipped operand)
    const bool done = co_await fault_under_vma_lock(self, mm, addr, write, era);
    if (done) {
      self.k.events().on_syscall_return(self.id);
      co_return;
    }
  }
  co_await mm.mmap_lock.down_read(self);
  const Vma* vma = mm.find_vma(addr);
  if (vma == nullptr) {
    // bad_area: mmap_lock is released before the signal is sent.
    co_await mm.mmap_lock.up_read(self);
    throw Sigsegv(fmt::format("SIGSEGV: cpu{} touched {:#x}, outside every mapping", self.id.get(), addr));
  }
  if (write && !vma->writable) {  // access_error (bad_area_access_error)
    co_await mm.mmap_lock.up_read(self);
    throw Sigsegv(fmt::format("SIGSEGV: cpu{} wrote {:#x}, mapped read-only", self.id.get(), addr));
  }
  co_await handle_pte_fault(self, mm, *vma, addr, write, false);
  co_await mm.mmap_lock.up_read(self);
  self.k.events().on_syscall_return(self.id);
}

}  // namespace

// zap_pte_range over [start, end) of one VMA: clear PTEs under each table's lock, gather the pages, and flush
// (under the lock) when the gather is full.
sim::Task<void> zap_page_range_in(PerCpu& self, MmuGather& tlb, MmStruct& mm, std::uint64_t start, std::uint64_t end) {
  hw::Memory& m = self.k.mem();
  std::uint64_t addr = start;
  while (addr < end) {
    const Vpn first = vpn_of(addr);
    const std::uint64_t table_end = std::min(end, (table_index(first) + 1) * kPtesPerTable * kPageSize);
    if (mm.pgd.huge_pmd(first) != nullptr) {
      // zap_pmd_range: a THP wholly inside the range goes by zap_huge_pmd; one partly inside is split first.
      if (addr % kHpagePmdSize == 0 && table_end - addr == kHpagePmdSize) {
        co_await zap_huge_pmd(self, tlb, mm, addr);
        addr = table_end;
        continue;
      }
      co_await split_huge_pmd(self, mm, addr);
    }
    if (mm.pgd.table(first) == nullptr) {
      addr = table_end;
      continue;
    }
    Spinlock& ptl = mm.ptl(first);
    co_await ptl.lock(m, self.cpu);
    co_await flush_tlb_batched_pending(self, mm);
    bool force_flush = false;
    for (; addr < table_end; addr += kPageSize) {
      const auto old = mm.pgd.clear(vpn_of(addr));
      if (!old) {
        mm.pgd.clear_migration_entry(vpn_of(addr));  // a migration entry is cleared; its page is the migration's
        continue;
      }
      // The oracle learns of the removal when it happens, before the step that charges its cost.
      self.k.events().on_pte_removed(mm, vpn_of(addr), *old, self.id, self.cpu.now());
      co_await self.cpu.delay(self.k.machine().kernel.pte_update);
      tlb.adjust_range(addr);
      if (old->anon && old->pfn.get() != 0) tlb.pages.push_back(old->pfn);  // page-cache pages stay cached
      if (tlb.pages.size() >= MmuGather::kBatchCapacity) {
        force_flush = true;
        addr += kPageSize;
        break;
      }
    }
    if (force_flush) co_await tlb_flush_mmu_tlbonly(self, tlb);
    co_await ptl.unlock(m, self.cpu);
    if (force_flush) co_await tlb_flush_mmu(self, tlb);
  }
}

sim::Task<void> user_access(PerCpu& self, MmStruct& mm, std::uint64_t addr, bool write) {
  const Vpn v = vpn_of(addr);
  const hw::TlbParams& tp = self.k.machine().tlb;
  // Bounded only to catch a livelock of the model: a fault may need retries (migration waits, spurious faults).
  for (int attempt = 0; attempt < 8; ++attempt) {
    const Asid pcid{self.hw_tag};
    if (const auto hit = self.tlb.lookup(pcid, v); hit && (!write || hit->writable)) {
      self.k.events().on_tlb_hit(self.id, mm, v, *hit, self.cpu.now());
      co_await self.cpu.user_delay(self.k.machine().coherence.l1_hit);
      co_return;
    }
    // Page walk; a present PTE with the needed permission fills the TLB and the paging-structure cache.
    co_await self.cpu.user_delay(tp.page_walk);
    if (const auto pte = mm.pgd.walk(self.id, v); pte && !pte->protnone && (!write || pte->writable)) {
      if (pte->huge) {  // a PMD-mapped THP: one 2 MiB entry
        const HugePmd& h = *mm.pgd.huge_pmd(v);
        self.tlb.fill_huge(pcid, v, hw::Translation{h.page, h.writable, mm.id()});
        co_await self.cpu.user_delay(self.k.machine().coherence.l1_hit);
        co_return;
      }
      self.tlb.fill(pcid, v, hw::Translation{pte->pfn, pte->writable, mm.id()});
      // (A walk that read an older entry under a weak memory model may find its table detached since.)
      if (const PteTable* t = mm.pgd.table(v)) {
        self.tlb.pwc_fill(pcid, t->frame.get(), Vpn{table_index(v) * kPtesPerTable},
                          Vpn{(table_index(v) + 1) * kPtesPerTable});
      }
      co_await self.cpu.user_delay(self.k.machine().coherence.l1_hit);
      co_return;
    }
    co_await handle_mm_fault(self, mm, addr, write);
    // The return from the fault (arm64 ERET, powerpc rfid) is context synchronizing: under a weak memory model the
    // retried walk reads nothing older than what has reached this CPU, so a walk that read an entry already replaced
    // (a spurious fault: the handler found the PTE fine) does not fault again on it forever.
    if (PteVisibility* vis = self.k.frames().pte_visibility()) vis->invalidated(self.id);
  }
  throw std::logic_error(fmt::format("cpu{}: access to {:#x} still faults after handling", self.id.get(), addr));
}

sim::Task<void> sys_madvise_dontneed(PerCpu& self, MmStruct& mm, std::uint64_t addr, std::uint64_t len) {
  const trace::TraceSpan span(self.k.tracer(), self.cpu, "sys_madvise", "syscall");
  co_await self.cpu.delay(self.k.machine().kernel.syscall);
  // madvise_lock / madvise_walk_vmas: v6.17+ tries the VMA's read lock first (try_vma_read_lock), else mmap_lock.
  std::shared_ptr<VmaLock> vma_lock;
  if (vma_lock_era(self.k.config().version, self.k.arch().arch()).madvise_dontneed) {
    const Vma* vma = co_await lock_vma_under_rcu(self, mm, addr);
    if (vma != nullptr && addr + len > vma->end) {  // the range must lie in the one VMA
      co_await vma_end_read(self, mm, *vma->vm_lock);
      vma = nullptr;
    }
    if (vma != nullptr) vma_lock = vma->vm_lock;
  }
  if (vma_lock == nullptr) co_await mm.mmap_lock.down_read(self);
  // zap_page_range (zap_page_range_single from v6.3; mm/memory.c): one VMA here, so unmap_page_range's
  // tlb_start_vma / tlb_end_vma bracket it. tlb_end_vma flushes nothing on x86 and powerpc, so the gathered
  // range is flushed once, by tlb_finish_mmu (the whole mm when another gather runs on it, mm_tlb_flush_nested), or
  // earlier when the gather fills (zap_pte_range's force_flush):
  // - x86 up to v5.19: arch/x86/include/asm/tlb.h defines tlb_start_vma and tlb_end_vma as empty statements (read in
  //   New-B/Linux3.6 @b5154d3e, v3.6, and kelis-cpu/linux-myread-5.10.142 @d5a71374, v5.10).
  // - x86 from v6.0: "mmu_gather: Remove per arch tlb_{start,end}_vma()" (Peter Zijlstra, July 2022) adds `select
  //   MMU_GATHER_MERGE_VMAS` to arch/x86/Kconfig, and the generic tlb_end_vma (include/asm-generic/tlb.h) returns at
  //   once when it is set (read in Kingxukai/linux @0291023e, v6.15+).
  // - powerpc: empty in v4.14's arch/powerpc/include/asm/tlb.h (Panchajanya1999/msm-4.14 @109b75b5), and
  //   MMU_GATHER_MERGE_VMAS by the same v6.0 patch.
  // - arm64 does not select MMU_GATHER_MERGE_VMAS: the generic tlb_end_vma flushes the VMA's range there.
  MmuGather tlb(mm);
  co_await tlb_gather_mmu(self, tlb);
  co_await zap_page_range_in(self, tlb, mm, addr, addr + len);
  co_await tlb_end_vma(self, tlb);
  co_await tlb_finish_mmu(self, tlb);
  if (vma_lock != nullptr) {
    co_await vma_end_read(self, mm, *vma_lock);
  } else {
    co_await mm.mmap_lock.up_read(self);
  }
  self.k.events().on_syscall_return(self.id);
}

}  // namespace tlbsim::kernel
