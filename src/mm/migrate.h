// Page migration of anonymous pages as migrate_pages(2) runs it (mm/mempolicy.c do_migrate_pages -> migrate_pages,
// mm/migrate.c; try_to_migrate_one, mm/rmap.c): each page's PTE becomes a migration entry and is flushed, the page
// is copied to a new frame, and the PTE is made again for the copy. Where the flush sits is what "migrate_pages:
// batch flushing TLB" (v6.4) changed: one flush per page before it, one for a batch of pages after it.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "kernel/kernel.h"

namespace tlbsim::kernel {

// What an era's migrate_pages does (each field names the kernel change that brought it).
struct MigrateEra {
  // v6.4, 7e12beb8ca2a ("migrate_pages: batch flushing TLB", Huang Ying): migrate_pages_batch unmaps a batch of
  // pages with try_to_migrate(TTU_BATCH_FLUSH), whose try_to_migrate_one defers each flush into current->tlb_ubc
  // (should_defer_flush), and one try_to_unmap_flush covers the batch before any page is copied. Before it, each
  // page is unmapped, flushed (ptep_clear_flush: flush_tlb_page), copied and remapped in turn (unmap_and_move).
  // Modeled in older eras as the option migrate_pages_batch_flush (kernel/options.h).
  bool batch_flush = false;
  // v6.7, 72e315f7a750 ("mempolicy: mmap_lock is not needed while migrating folios", Hugh Dickins): migrate_to_node
  // holds mmap_lock for read around queue_pages_range only, and migrate_pages runs without it (the pages are found
  // again through the rmap). Before, do_migrate_pages held it for the whole call.
  bool mmap_lock_queue_only = false;
};
MigrateEra migrate_era(const KernelConfig& config);

// NR_MAX_BATCHED_MIGRATION (mm/migrate.c, v6.4+): the pages migrate_pages_batch unmaps before one flush.
inline constexpr std::uint64_t NR_MAX_BATCHED_MIGRATION = 512;

// migrate_pages(pid, maxnode, old_nodes, new_nodes) of `mm` by the task on `self`, which need not run `mm`: every
// present anonymous page of `mm` (not the zero page), queued under mmap_lock held for read, is migrated to a new
// frame (under the same hold before v6.7, MigrateEra::mmap_lock_queue_only). The
// model's frames have no node (docs/model.md), so this is migratepages moving a process's whole memory from the
// node it is on to the other one. Returns the pages migrated; `on_migrated`, if given, is called as each page's
// migration completes (/proc/vmstat's pgmigrate_success, counted where the kernel counts it).
sim::Task<std::uint64_t> sys_migrate_pages(PerCpu& self, MmStruct& mm, std::function<void()> on_migrated = {});

// migrate_pages(from, compaction_alloc, compaction_free, cc, cc->mode, MR_COMPACTION) of base pages that compaction
// isolated by physical address: no mmap_lock is held; each page's mappings are found through its anon rmap
// (rmap_walk_anon under the anon_vma's lock, for the unmap and again for remove_migration_ptes), and its copy is
// allocated on the page's node. A page with no anon rmap left by then (freed and reused meanwhile) is put back.
// Returns the pages migrated.
sim::Task<std::uint64_t> migrate_pages_compaction(PerCpu& self, const std::vector<Pfn>& pages,
                                                  const std::function<void()>& on_migrated);

// pte_accessible(mm, pte) (arch/x86/include/asm/pgtable.h; include/linux/pgtable.h's generic one on powerpc): whether
// a CPU may cache a translation of `pte`, so that clearing it needs a flush. A PROT_NONE hinting PTE is, on x86,
// only while mm_tlb_flush_pending (the flush that made it may not have run yet).
sim::Task<bool> pte_accessible(PerCpu& self, MmStruct& mm, const Pte& pte);

// migrate_misplaced_page (mm/migrate.c) from do_numa_page: the page mapped at `v` of `mm`, isolated and migrated to
// `node` (MIGRATE_ASYNC, MR_NUMA_MISPLACED). Called with no PTE lock held. Returns whether the page moved.
sim::Task<bool> migrate_misplaced_page(PerCpu& self, MmStruct& mm, Vpn v, Pfn page, std::uint16_t node);

// migrate_misplaced_page (v6.13: migrate_misplaced_folio) of the THP mapped at `haddr` of `mm` from
// do_huge_pmd_numa_page (v5.14+), to `node`: isolated and locked (fails if another migration has it: the model's
// page lock stands for both), then migrate_pages' unmap_and_move for one THP: set_pmd_migration_entry, the copy,
// remove_migration_pmd, the THP unlocked (its waiters woken) and freed. Called with no lock held. Returns whether the
// THP moved.
sim::Task<bool> migrate_misplaced_thp(PerCpu& self, MmStruct& mm, std::uint64_t haddr, Pfn page, std::uint16_t node);

// migrate_misplaced_transhuge_page (mm/migrate.c, v3.8-v5.13) from do_huge_pmd_numa_page, with `page` locked by the
// caller and `orig` the hinting PMD it faulted on: a THP allocated on `node` and the old one copied into it, no lock
// held and the old PMD left PROT_NONE; then under the PMD lock, if the PMD is still `orig` (pmd_same; the reference
// freeze is not modeled), pmdp_huge_clear_flush_notify (cleared, then flush_pmd_tlb_range) and set_pmd_at of the
// copy, dirty and writable if the VMA is. The old THP is unlocked and freed. A PMD that changed meanwhile fails the
// migration and is left as it is. Returns whether the THP moved.
sim::Task<bool> migrate_misplaced_transhuge_page(PerCpu& self, MmStruct& mm, const Vma& vma, std::uint64_t haddr,
                                                 const HugePmd& orig, std::uint16_t node);

// folio_unlock (unlock_page): `page`'s lock dropped and its waiters woken through the mm's page wait queue.
sim::Task<void> folio_unlock(PerCpu& self, MmStruct& mm, Pfn page);
// wait_on_page_locked (folio_wait_locked; migration_entry_wait_on_locked): until `page` is unlocked. The model parks
// the CPU on the page's wait-queue line, as migration_entry_wait does. Called with no lock held.
sim::Task<void> wait_on_page_locked(PerCpu& self, MmStruct& mm, Pfn page);

// migration_entry_wait: a fault that found a migration entry at `v` waits until the page is unlocked, then returns
// for the access to fault again. Called with no lock held.
sim::Task<void> migration_entry_wait(PerCpu& self, MmStruct& mm, Vpn v);

}  // namespace tlbsim::kernel
