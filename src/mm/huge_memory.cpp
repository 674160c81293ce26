// Models do_huge_pmd_anonymous_page, __split_huge_pmd_locked, move_huge_pmd and zap_huge_pmd (mm/huge_memory.c),
// pmdp_invalidate and pmdp_huge_get_and_clear_full (mm/pgtable-generic.c; arch/powerpc/mm/book3s64/pgtable.c). Read
// (helper report /work/tmp/thp_eras.md): 4.14.177, 5.15.0, 6.1.20 and 6.13.7 trees.
#include "mm/huge_memory.h"

#include <fmt/format.h>

#include <optional>
#include <stdexcept>

#include "kernel/options.h"
#include "mm/memory.h"
#include "mm/mempolicy.h"
#include "mm/migrate.h"
#include "mm/mmu_gather.h"
#include "mm/mremap.h"

namespace tlbsim::kernel {

namespace {

const hw::KernelCosts& costs(PerCpu& self) { return self.k.machine().kernel; }

// move_huge_pmd's flush of the old 2 MiB: flush_tlb_range at PAGE_SIZE stride, or flush_pmd_tlb_range from v6.0.
sim::Task<void> flush_moved_huge_pmd(PerCpu& self, MmStruct& mm, std::uint64_t old_addr, const MremapEra& era) {
  if (era.move_huge_pmd_flush_pmd_range) {
    co_await flush_pmd_tlb_range(self, mm, old_addr);
  } else {
    co_await self.k.arch().flush_tlb_mm_range(self, mm, old_addr, old_addr + kHpagePmdSize, kPageShift, false);
  }
}

}  // namespace

sim::Task<void> flush_pmd_tlb_range(PerCpu& self, MmStruct& mm, std::uint64_t haddr) {
  const bool pmd_stride = self.k.arch().arch() != Arch::kX86;  // powerpc radix and arm64 override it
  co_await self.k.arch().flush_tlb_mm_range(self, mm, haddr, haddr + kHpagePmdSize,
                                            static_cast<std::uint8_t>(pmd_stride ? kPmdShift : kPageShift), false);
}

sim::Task<MovedHugePmd> move_huge_pmd(PerCpu& self, MmStruct& mm, std::uint64_t old_addr, std::uint64_t new_addr,
                                      const MremapEra& era, bool skip_flush) {
  const Vpn old_v = vpn_of(old_addr);
  const Vpn new_v = vpn_of(new_addr);
  // WARN_ON(!pmd_none(*new_pmd)): free_pgtables should have released it; the caller splits.
  if (mm.pgd.table(new_v) != nullptr || mm.pgd.huge_pmd(new_v) != nullptr) co_return MovedHugePmd{};
  hw::Memory& m = self.k.mem();
  // __pmd_trans_huge_lock, then pmd_lockptr of the new PMD (the lock order does not matter: mmap_lock is held for
  // write). v3.3 takes mm->page_table_lock once; the model's per-table locks stand for it (docs/model.md).
  Spinlock& old_ptl = mm.ptl(old_v);
  Spinlock& new_ptl = mm.ptl(new_v);
  co_await old_ptl.lock(m, self.cpu);
  if (mm.pgd.huge_pmd(old_v) == nullptr) {
    co_await old_ptl.unlock(m, self.cpu);
    co_return MovedHugePmd{};
  }
  if (&new_ptl != &old_ptl) co_await new_ptl.lock(m, self.cpu);
  const HugePmd pmd = *mm.pgd.clear_huge_pmd(old_v);  // pmdp_huge_get_and_clear
  for (std::uint64_t i = 0; i < kHpagePmdNr; ++i) {
    const Pte pte{Pfn{pmd.page.get() + i}, true, pmd.writable, !pmd.zero};
    self.k.events().on_pte_removed(mm, Vpn{old_v.get() + i}, pte, self.id, self.cpu.now());
  }
  // A writable THP is dirty in the model (docs/model.md), as a writable PTE is for move_ptes.
  const bool force_flush = era.flush_present_under_ptl || (era.flush_dirty_under_ptl && pmd.writable);
  // pmd_move_must_withdraw: the deposited table follows the PMD (HugePmd carries it); set_pmd_at.
  mm.pgd.set_huge_pmd(new_v, pmd);
  co_await self.cpu.delay(costs(self).pte_update);
  const bool flush = force_flush && !skip_flush;
  if (flush && era.flush_present_under_ptl) co_await flush_moved_huge_pmd(self, mm, old_addr, era);
  if (&new_ptl != &old_ptl) co_await new_ptl.unlock(m, self.cpu);
  if (flush && !era.flush_present_under_ptl) co_await flush_moved_huge_pmd(self, mm, old_addr, era);
  co_await old_ptl.unlock(m, self.cpu);
  co_return MovedHugePmd{true, !force_flush};
}

HugeZeroEra huge_zero_era(const KernelConfig& config) {
  HugeZeroEra e;
  e.huge_zero_page = config.version >= KernelVersion{3, 8};
  e.wp_splits = config.version >= KernelVersion{5, 8};
  return e;
}

namespace {

// do_huge_pmd_wp_page's alloc path for the huge zero page before v5.8: a zeroed THP (clear_huge_page), then under the
// PMD lock, if the PMD is still the zero one (pmd_same), pmdp_huge_clear_flush_notify and set_pmd_at of the new THP
// (the deposited table stays). Otherwise the THP is freed.
sim::Task<void> wp_huge_zero_alloc(PerCpu& self, MmStruct& mm, const Vma& vma, std::uint64_t addr) {
  const Vpn v = vpn_of(addr);
  const std::uint64_t haddr = addr & ~(kHpagePmdSize - 1);
  FrameAllocator& frames = self.k.frames();
  const Pfn page = frames.alloc_huge(FrameUse::kAnon, self.k.cpu_to_node(self.id));
  co_await self.cpu.delay(costs(self).page_alloc + costs(self).memcg_charge +
                          costs(self).page_zero * static_cast<std::int64_t>(kHpagePmdNr));
  Spinlock& ptl = mm.ptl(v);
  co_await ptl.lock(self.k.mem(), self.cpu);
  const HugePmd* h = mm.pgd.huge_pmd(v);
  if (h == nullptr || !h->zero) {  // !pmd_same: another fault or a zap won
    co_await ptl.unlock(self.k.mem(), self.cpu);
    for (std::uint64_t i = 0; i < kHpagePmdNr; ++i) frames.free(Pfn{page.get() + i});
    co_return;
  }
  const HugePmd zero = *mm.pgd.clear_huge_pmd(v);  // pmdp_huge_clear_flush_notify: cleared, then flushed
  for (std::uint64_t i = 0; i < kHpagePmdNr; ++i) {
    const Pte old{Pfn{zero.page.get() + i}, true, false, false};
    self.k.events().on_pte_removed(mm, Vpn{vpn_of(haddr).get() + i}, old, self.id, self.cpu.now());
  }
  if (!planted(self.k.config(), Mutation::huge_zero_wp_flush_skipped)) co_await flush_pmd_tlb_range(self, mm, haddr);
  co_await self.cpu.delay(costs(self).pte_update + costs(self).rmap_update);
  mm.pgd.set_huge_pmd(v, HugePmd{page, vma.writable, zero.deposit});  // set_pmd_at, maybe_pmd_mkwrite
  co_await ptl.unlock(self.k.mem(), self.cpu);
}

}  // namespace

sim::Task<bool> do_huge_pmd_wp_page(PerCpu& self, MmStruct& mm, const Vma& vma, std::uint64_t addr) {
  const Vpn v = vpn_of(addr);
  if (const HugePmd* h = mm.pgd.huge_pmd(v); h != nullptr && h->zero && vma.writable) {
    if (huge_zero_era(self.k.config()).wp_splits) {
      co_await split_huge_pmd(self, mm, addr);  // fallback: __split_huge_pmd, VM_FAULT_FALLBACK
      co_return true;
    }
    co_await wp_huge_zero_alloc(self, mm, vma, addr);
    co_return false;
  }
  Spinlock& ptl = mm.ptl(v);
  co_await ptl.lock(self.k.mem(), self.cpu);
  if (const HugePmd* h = mm.pgd.huge_pmd(v);
      h != nullptr && !h->zero && !h->protnone && !h->migration && !h->writable && vma.writable) {
    HugePmd next = *h;
    next.writable = true;
    mm.pgd.clear_huge_pmd(v);
    mm.pgd.set_huge_pmd(v, next);
    co_await self.cpu.delay(costs(self).pte_update);
  }
  co_await ptl.unlock(self.k.mem(), self.cpu);
  co_return false;
}

bool thp_fault_eligible(const Vma& vma, std::uint64_t addr) {
  const std::uint64_t haddr = addr & ~(kHpagePmdSize - 1);
  return vma.hugepage && vma.file == nullptr && haddr >= vma.start && haddr + kHpagePmdSize <= vma.end;
}

bool thp_collapse_suitable(const Vma& vma, std::uint64_t haddr) {
  return haddr % kHpagePmdSize == 0 && thp_fault_eligible(vma, haddr);
}

sim::Task<void> do_huge_pmd_anonymous_page(PerCpu& self, MmStruct& mm, const Vma& vma, std::uint64_t addr, bool write) {
  const Vpn v = vpn_of(addr);
  FrameAllocator& frames = self.k.frames();
  const Pfn deposit = frames.alloc(FrameUse::kPageTable);  // pte_alloc_one, before the lock
  if (!write) {
    const Pfn zero = frames.huge_zero_page();  // mm_get_huge_zero_page
    Spinlock& ptl = mm.ptl(v);                 // pmd_lock
    co_await ptl.lock(self.k.mem(), self.cpu);
    if (mm.pgd.table(v) != nullptr || mm.pgd.huge_pmd(v) != nullptr) {
      co_await ptl.unlock(self.k.mem(), self.cpu);
      frames.free(deposit);  // !pmd_none: pte_free
      co_return;
    }
    co_await self.cpu.delay(costs(self).pte_update);
    mm.pgd.set_huge_pmd(v, HugePmd{zero, false, deposit, true});  // set_huge_zero_page
    co_await ptl.unlock(self.k.mem(), self.cpu);
    co_return;
  }
  const Pfn page = frames.alloc_huge(FrameUse::kAnon, self.k.cpu_to_node(self.id));
  // vma_alloc_folio + clear_huge_page (512 pages zeroed) + the memcg charge.
  co_await self.cpu.delay(costs(self).page_alloc + costs(self).memcg_charge +
                          costs(self).page_zero * static_cast<std::int64_t>(kHpagePmdNr));
  Spinlock& ptl = mm.ptl(v);  // pmd_lock (the model's page-table lock of the 2 MiB)
  co_await ptl.lock(self.k.mem(), self.cpu);
  if (mm.pgd.table(v) != nullptr || mm.pgd.huge_pmd(v) != nullptr) {
    // !pmd_none: another fault won; the preallocated table and the THP are freed.
    co_await ptl.unlock(self.k.mem(), self.cpu);
    frames.free(deposit);
    for (std::uint64_t i = 0; i < kHpagePmdNr; ++i) frames.free(Pfn{page.get() + i});
    co_return;
  }
  // pgtable_trans_huge_deposit, set_pmd_at, update_mmu_cache_pmd.
  co_await self.cpu.delay(costs(self).pte_update);
  mm.pgd.set_huge_pmd(v, HugePmd{page, vma.writable, deposit});
  co_await ptl.unlock(self.k.mem(), self.cpu);
}

sim::Task<void> split_huge_pmd(PerCpu& self, MmStruct& mm, std::uint64_t addr) {
  const Vpn v = vpn_of(addr);
  if (mm.pgd.huge_pmd(v) == nullptr) co_return;
  Spinlock& ptl = mm.ptl(v);
  co_await ptl.lock(self.k.mem(), self.cpu);
  if (const HugePmd* h = mm.pgd.huge_pmd(v); h != nullptr && h->zero) {
    // __split_huge_zero_page_pmd: pmdp_huge_clear_flush (the PMD none while the flush runs), the deposit withdrawn,
    // 512 PTEs of the small zero page, smp_wmb, pmd_populate.
    const HugePmd zero = *mm.pgd.clear_huge_pmd(v);
    const Vpn first = vpn_of(addr & ~(kHpagePmdSize - 1));
    for (std::uint64_t i = 0; i < kHpagePmdNr; ++i) {
      const Pte old{Pfn{zero.page.get() + i}, true, false, false};
      self.k.events().on_pte_removed(mm, Vpn{first.get() + i}, old, self.id, self.cpu.now());
    }
    if (!planted(self.k.config(), Mutation::huge_zero_wp_flush_skipped)) {
      co_await flush_pmd_tlb_range(self, mm, addr & ~(kHpagePmdSize - 1));
    }
    co_await self.cpu.delay(costs(self).pte_update * static_cast<std::int64_t>(kPtesPerTable));
    PteTable t;
    t.frame = zero.deposit;
    for (Pte& p : t.ptes) p = Pte{Pfn{0}, true, false, false};
    t.present = kPtesPerTable;
    mm.pgd.relink_table(v, std::move(t));
  } else if (const HugePmd* g = mm.pgd.huge_pmd(v); g != nullptr) {  // still huge under the lock
    // pmdp_invalidate: pmd_mkinvalid, then the flush; the PTE table is linked only after it (every era; v4.14
    // fills it first, unlinked). The hardware walks an invalid PMD to nothing: the model links the table after
    // the flush, and a walk meanwhile finds the THP (still the same pages and permissions). A PMD migration entry
    // maps nothing and is not flushed (the model's simplification, docs/model.md); its PTEs are migration entries.
    if (!g->migration) co_await flush_pmd_tlb_range(self, mm, addr & ~(kHpagePmdSize - 1));
    co_await self.cpu.delay(costs(self).pte_update * static_cast<std::int64_t>(kPtesPerTable));
    mm.pgd.split_huge_pmd(v);  // withdraw the deposit, 512 set_pte_at, smp_wmb, pmd_populate
  }
  co_await ptl.unlock(self.k.mem(), self.cpu);
}

sim::Task<void> zap_huge_pmd(PerCpu& self, MmuGather& tlb, MmStruct& mm, std::uint64_t haddr) {
  const Vpn v = vpn_of(haddr);
  Spinlock& ptl = mm.ptl(v);
  co_await ptl.lock(self.k.mem(), self.cpu);
  const std::optional<HugePmd> old = mm.pgd.clear_huge_pmd(v);  // pmdp_huge_get_and_clear_full
  if (old) {
    for (std::uint64_t i = 0; i < kHpagePmdNr && !old->migration; ++i) {
      const Pte pte{Pfn{old->page.get() + i}, true, old->writable, !old->zero};
      self.k.events().on_pte_removed(mm, Vpn{v.get() + i}, pte, self.id, self.cpu.now());
    }
    co_await self.cpu.delay(costs(self).pte_update + costs(self).rmap_update);
    // powerpc book3s64: pmdp_huge_get_and_clear_full flushes the 2 MiB itself unless the whole mm goes (!full).
    if (self.k.arch().arch() == Arch::kPowerpc && !tlb.fullmm) co_await flush_pmd_tlb_range(self, mm, haddr);
    tlb.adjust_pmd_range(haddr);         // tlb_remove_pmd_tlb_entry
    self.k.frames().free(old->deposit);  // zap_deposited_table: pte_free at once (the table was never linked)
    // The huge zero page is not freed (tlb_remove_page_size drops a reference the huge zero page's own keeps), nor a
    // THP under migration (a PMD migration entry: its page is the migration's, flush_needed = 0).
    if (!old->zero && !old->migration) {
      for (std::uint64_t i = 0; i < kHpagePmdNr; ++i) tlb.pages.push_back(Pfn{old->page.get() + i});
    }
  }
  co_await ptl.unlock(self.k.mem(), self.cpu);
}

HugeNumaEra huge_numa_era(const KernelConfig& config) {
  HugeNumaEra e;
  e.generic_migration = config.version >= KernelVersion{5, 14};
  e.flush_if_pending = config.version < KernelVersion{5, 15};
  return e;
}

namespace {

// The hinting PMD `orig` at `v`, still the one that faulted (pmd_same, under the PMD lock)?
bool numa_pmd_same(const MmStruct& mm, Vpn v, const HugePmd& orig) {
  const HugePmd* h = mm.pgd.huge_pmd(v);
  return h != nullptr && h->protnone && h->page == orig.page;
}

// do_huge_pmd_numa_page's restore (clear_pmdnuma before v5.14, out_map from it), under the PMD lock: pmd_modify with
// the VMA's protection, pmd_mkyoung, pmd_mkwrite if the hinting PMD kept the write bit; set_pmd_at, no flush (an
// upgrade).
sim::Task<void> numa_restore_pmd(PerCpu& self, MmStruct& mm, const Vma& vma, Vpn v, const HugePmd& orig) {
  co_await self.cpu.delay(costs(self).pte_update);
  HugePmd next = orig;
  next.protnone = false;
  next.writable = orig.writable && vma.writable;
  mm.pgd.clear_huge_pmd(v);
  mm.pgd.set_huge_pmd(v, next);
}

}  // namespace

sim::Task<void> do_huge_pmd_numa_page(PerCpu& self, MmStruct& mm, const Vma& vma, std::uint64_t addr) {
  const Vpn v = vpn_of(addr);
  const std::uint64_t haddr = addr & ~(kHpagePmdSize - 1);
  hw::Memory& m = self.k.mem();
  FrameAllocator& frames = self.k.frames();
  const HugeNumaEra era = huge_numa_era(self.k.config());
  Spinlock& ptl = mm.ptl(v);
  co_await ptl.lock(m, self.cpu);  // pmd_lock
  const HugePmd* h = mm.pgd.huge_pmd(v);
  if (h == nullptr || !h->protnone) {  // !pmd_same: another fault, or a zap, changed it
    co_await ptl.unlock(m, self.cpu);
    co_return;
  }
  const HugePmd orig = *h;
  if (era.generic_migration) {
    // v5.14+: numa_migrate_prep (v6.13 numa_migrate_check) -> mpol_misplaced.
    const std::optional<std::uint16_t> target = mpol_misplaced(self, orig.page);
    if (!target) {
      co_await numa_restore_pmd(self, mm, vma, v, orig);  // out_map
      co_await ptl.unlock(m, self.cpu);
      co_return;
    }
    co_await ptl.unlock(m, self.cpu);
    if (co_await migrate_misplaced_thp(self, mm, haddr, orig.page, *target)) co_return;
    // TNF_MIGRATE_FAIL: relock; the PMD restored if it is still the one that faulted.
    co_await ptl.lock(m, self.cpu);
    if (numa_pmd_same(mm, v, orig)) co_await numa_restore_pmd(self, mm, vma, v, orig);
    co_await ptl.unlock(m, self.cpu);
    co_return;
  }
  // Before v5.14. pmd_trans_migrating (the page is locked: another fault migrates it), or trylock_page failing after
  // mpol_misplaced: wait for the page lock, and the access faults again.
  const bool page_locked = frames.trylock_page(orig.page);
  if (!page_locked) {
    co_await ptl.unlock(m, self.cpu);
    co_await wait_on_page_locked(self, mm, orig.page);
    co_return;
  }
  const std::optional<std::uint16_t> target = mpol_misplaced(self, orig.page);
  if (!target) {  // clear_pmdnuma, then unlock_page
    co_await numa_restore_pmd(self, mm, vma, v, orig);
    co_await folio_unlock(self, mm, orig.page);
    co_await ptl.unlock(m, self.cpu);
    co_return;
  }
  // get_page, the PMD lock dropped for page_lock_anon_vma_read, retaken, pmd_same again.
  co_await ptl.unlock(m, self.cpu);
  co_await self.cpu.delay(costs(self).rmap_update);
  co_await ptl.lock(m, self.cpu);
  if (!numa_pmd_same(mm, v, orig)) {
    co_await folio_unlock(self, mm, orig.page);
    co_await ptl.unlock(m, self.cpu);
    co_return;
  }
  // "Since we took the NUMA fault, we must have observed the !accessible bit. Make sure all other CPUs agree with
  // that": flush_tlb_range of the 2 MiB while a scan's flush may be pending (20841405940e's check).
  if (era.flush_if_pending && co_await m.read(self.cpu, mm.tlb_flush_pending) > 0) {
    co_await self.k.arch().flush_tlb_mm_range(self, mm, haddr, haddr + kHpagePmdSize, kPageShift, false);
  }
  co_await ptl.unlock(m, self.cpu);
  co_await migrate_misplaced_transhuge_page(self, mm, vma, haddr, orig, *target);
}

sim::Task<bool> set_pmd_migration_entry(PerCpu& self, MmStruct& mm, std::uint64_t haddr, Pfn page) {
  const Vpn v = vpn_of(haddr);
  hw::Memory& m = self.k.mem();
  Spinlock& ptl = mm.ptl(v);
  co_await ptl.lock(m, self.cpu);
  const HugePmd* h = mm.pgd.huge_pmd(v);
  if (h == nullptr || h->migration || h->page != page) {
    co_await ptl.unlock(m, self.cpu);
    co_return false;
  }
  // pmdp_invalidate: the PMD made invalid (the model writes the migration entry at once: nothing walks either to a
  // translation), then flush_pmd_tlb_range; set_pmd_at(make_{writable,readable}_migration_entry); page_remove_rmap.
  HugePmd entry = *mm.pgd.clear_huge_pmd(v);
  if (!entry.protnone) {
    for (std::uint64_t i = 0; i < kHpagePmdNr; ++i) {
      const Pte old{Pfn{entry.page.get() + i}, true, entry.writable, true};
      self.k.events().on_pte_removed(mm, Vpn{v.get() + i}, old, self.id, self.cpu.now());
    }
  }
  entry.protnone = false;
  entry.migration = true;
  mm.pgd.set_huge_pmd(v, entry);
  if (!planted(self.k.config(), Mutation::thp_migration_flush_skipped)) co_await flush_pmd_tlb_range(self, mm, haddr);
  co_await self.cpu.delay(costs(self).pte_update + costs(self).rmap_update);
  co_await ptl.unlock(m, self.cpu);
  co_return true;
}

sim::Task<bool> remove_migration_pmd(PerCpu& self, MmStruct& mm, std::uint64_t haddr, Pfn old, Pfn copy) {
  const Vpn v = vpn_of(haddr);
  hw::Memory& m = self.k.mem();
  Spinlock& ptl = mm.ptl(v);
  co_await ptl.lock(m, self.cpu);
  bool mapped = false;
  if (const HugePmd* h = mm.pgd.huge_pmd(v); h != nullptr && h->migration && h->page == old) {
    const HugePmd entry = *mm.pgd.clear_huge_pmd(v);
    mm.pgd.set_huge_pmd(v, HugePmd{copy, entry.writable, entry.deposit});
    mapped = true;
  } else if (mm.pgd.table(v) != nullptr) {
    // The PMD migration entry was split into PTE migration entries (__split_huge_pmd_locked): remove_migration_pte
    // maps each one still there to the copy's page.
    for (std::uint64_t i = 0; i < kHpagePmdNr; ++i) {
      const Vpn p{v.get() + i};
      const auto e = mm.pgd.migration_entry(p);
      if (!e || e->pfn.get() != old.get() + i) continue;
      mm.pgd.set(p, Pte{Pfn{copy.get() + i}, true, e->writable, true});
      mapped = true;
    }
  }
  co_await self.cpu.delay(costs(self).pte_update + costs(self).rmap_update);
  co_await ptl.unlock(m, self.cpu);
  co_return mapped;
}

sim::Task<void> pmd_migration_entry_wait(PerCpu& self, MmStruct& mm, std::uint64_t addr) {
  const Vpn v = vpn_of(addr);
  hw::Memory& m = self.k.mem();
  Spinlock& ptl = mm.ptl(v);
  co_await ptl.lock(m, self.cpu);
  const HugePmd* h = mm.pgd.huge_pmd(v);
  const std::optional<Pfn> page = h != nullptr && h->migration ? std::optional<Pfn>(h->page) : std::nullopt;
  co_await ptl.unlock(m, self.cpu);
  if (page) co_await wait_on_page_locked(self, mm, *page);
}

sim::Task<void> sys_madvise_hugepage(PerCpu& self, MmStruct& mm, std::uint64_t addr, std::uint64_t len) {
  const Vma* in = mm.find_vma(addr);
  if (addr % kPageSize != 0 || len == 0 || len % kPageSize != 0 || in == nullptr || in->end < addr + len) {
    throw std::invalid_argument(
        fmt::format("madvise({:#x}, {:#x}, MADV_HUGEPAGE): not whole pages of one mapping", addr, len));
  }
  co_await self.cpu.delay(costs(self).syscall);
  co_await mm.mmap_lock.down_write(self);
  Vma* vma = mm.find_vma(addr);
  if (vma != nullptr && vma->end >= addr + len && !vma->hugepage) {
    // madvise_update_vma: the parts outside the range are split off (each split write-locks the VMA, v6.4+).
    if (vma->start < addr) {
      co_await vma_start_write(self, mm, *vma);
      vma = &mm.split_vma(*vma, addr);
    }
    if (vma->end > addr + len) {
      co_await vma_start_write(self, mm, *vma);
      mm.split_vma(*vma, addr + len);
    }
    co_await vma_start_write(self, mm, *vma);
    vma->hugepage = true;  // hugepage_madvise: VM_HUGEPAGE (khugepaged_enter_vma registers the mm)
  }
  co_await mmap_write_unlock(self, mm);
  self.k.events().on_syscall_return(self.id);
}

}  // namespace tlbsim::kernel
