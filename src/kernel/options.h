// The generic kernel's options and planted mutations (kernel/, mm/), declared once (model/declare.h).
#pragma once

#include "model/declare.h"

namespace tlbsim::kernel {

enum class Option : std::uint8_t {
  MMU_LAZY_TLB_SHOOTDOWN,
  DEBUG_VM_SHOOT_LAZIES,
  move_ptes_flush_present,
  migrate_pages_batch_flush,
};

inline constexpr OptionDecl<Option> kOptions[] = {
    // Seed 004 (v6.2), CONFIG_MMU_LAZY_TLB_SHOOTDOWN: lazy-TLB mm references (mmgrab_lazy_tlb/mmdrop_lazy_tlb) do
    // not touch mm_count; __mmdrop calls cleanup_lazy_tlbs, which IPIs every CPU in mm_cpumask to switch lazy users
    // to init_mm. Only powerpc selects it in the series.
    {TLBSIM_ID(Option, MMU_LAZY_TLB_SHOOTDOWN), .arch = Arch::kPowerpc, .since = {6, 2}, .until = {6, 2}, .seed = "004",
     .doc = "lazy mm references skip mm_count; __mmdrop IPIs mm_cpumask to switch lazy users to init_mm"},
    // CONFIG_DEBUG_VM_SHOOT_LAZIES: after the shootdown, check on every CPU that none still uses the mm lazily.
    {TLBSIM_ID(Option, DEBUG_VM_SHOOT_LAZIES), .arch = Arch::kPowerpc, .since = {6, 2}, .until = {6, 2}, .seed = "004",
     .depends_on = "MMU_LAZY_TLB_SHOOTDOWN",
     .doc = "after the shootdown, cross-call every CPU to check none still has the mm as active_mm"},
    // Not a seed: the later fix of mremap's late flush, eb66ae030829 "mremap: properly flush TLB before releasing
    // the page" (Linus Torvalds, v4.19, CVE-2018-18281), for the eras before it: move_ptes flushes the moved range
    // with both PTE locks held whenever it moved a present PTE, not only a dirty one (docs/findings.md, F6).
    {TLBSIM_ID(Option, move_ptes_flush_present), .since = {3, 3}, .until = {4, 18},
     .doc = "later fix (eb66ae030829, v4.19): move_ptes flushes under the PTE locks whenever a PTE moved"},
    // Not a seed: "migrate_pages: batch flushing TLB" (Huang Ying, 7e12beb8ca2a, v6.4) for the eras before it:
    // migrate_pages unmaps up to NR_MAX_BATCHED_MIGRATION pages with TTU_BATCH_FLUSH, flushes them once
    // (try_to_unmap_flush), then copies them (mm/migrate.cpp). On in v6.4+ by release.
    {TLBSIM_ID(Option, migrate_pages_batch_flush), .since = {3, 3}, .until = {6, 3},
     .doc = "7e12beb8ca2a (v6.4): migrate_pages unmaps a batch of pages, flushes once, then copies them"},
};

enum class Mutation : std::uint8_t {
  lazy_tlb_grab_skipped,
  cleanup_lazy_tlbs_skipped,
  tlbbatch_add_mm_skipped,
  reclaim_frees_before_batched_flush,
  smp_call_skips_wait,
  mprotect_flush_skipped,
  mprotect_skips_batched_pending,
  mremap_flush_skipped,
  migrate_flush_skipped,
  numa_flush_pending_late,
  collapse_flush_skipped,
  collapse_skips_gup_fast_sync,
  huge_zero_wp_flush_skipped,
  thp_migration_flush_skipped,
  rmap_walk_newest_first,
};

inline constexpr MutationDecl<Mutation> kMutations[] = {
    {TLBSIM_ID(Mutation, lazy_tlb_grab_skipped), .area = "lazy_mm", .scenarios = "exit_vs_lazy,fork_exec_exit",
     .kernel = "linux-5.17",
     .doc = "mmgrab_lazy_tlb takes no mm_count reference although MMU_LAZY_TLB_SHOOTDOWN is off"},
    {TLBSIM_ID(Mutation, cleanup_lazy_tlbs_skipped), .area = "lazy_mm", .scenarios = "exit_vs_lazy,fork_exec_exit",
     .kernel = "linux-6.2-ppc-seed004",
     .doc = "__mmdrop frees the mm without cleanup_lazy_tlbs shooting down the lazy users"},
    {TLBSIM_ID(Mutation, tlbbatch_add_mm_skipped), .area = "batching", .scenarios = "reclaim_vs_access",
     .kernel = "linux-5.17",
     .doc = "set_tlb_ubc_flush_pending defers the flush without adding the mm (its CPUs) to the batch"},
    {TLBSIM_ID(Mutation, reclaim_frees_before_batched_flush), .area = "batching", .scenarios = "reclaim_vs_access",
     .kernel = "linux-5.17",
     .doc = "shrink_page_list frees the unmapped pages before try_to_unmap_flush flushes the batch"},
    {TLBSIM_ID(Mutation, smp_call_skips_wait), .area = "ipi", .scenarios = "madvise_vs_access", .kernel = "linux-5.17",
     .doc = "smp_call_function_many_cond returns without waiting for the targets to run the function (no ack)"},
    {TLBSIM_ID(Mutation, mprotect_flush_skipped), .area = "mprotect", .scenarios = "mprotect_vs_write",
     .kernel = "linux-5.17",
     .doc = "change_protection write-protects the PTEs (or a THP's PMD) but never flushes them (flush_tlb_range, the "
            "gather's flush, or change_huge_pmd's pmdp_invalidate)"},
    {TLBSIM_ID(Mutation, mprotect_skips_batched_pending), .area = "mprotect", .scenarios = "mprotect_vs_reclaim",
     .kernel = "linux-5.17",
     .doc = "change_pte_range does not call flush_tlb_batched_pending (mprotect before 3ea277194daa, v4.13): a PTE "
            "that reclaim cleared with its flush deferred is not there to change, and nothing flushes it"},
    {TLBSIM_ID(Mutation, mremap_flush_skipped), .area = "mremap", .scenarios = "mremap_vs_access",
     .kernel = "linux-5.17", .doc = "move_page_tables moves the PTEs but never flushes the old range"},
    {TLBSIM_ID(Mutation, migrate_flush_skipped), .area = "migration", .scenarios = "migrate_vs_access",
     .kernel = "linux-6.13",
     .doc = "try_to_migrate_one makes migration entries but neither flushes them nor batches a flush"},
    {TLBSIM_ID(Mutation, numa_flush_pending_late), .area = "numa", .scenarios = "numa_hinting_vs_migrate",
     .kernel = "linux-6.13",
     .doc = "change_prot_numa raises tlb_flush_pending only after its PTE walk (as v3.8-v3.12 did not at all), so "
            "a migration that meets a hinting PTE before the flush skips its own (pte_accessible)"},
    {TLBSIM_ID(Mutation, collapse_flush_skipped), .area = "thp", .scenarios = "thp_collapse_vs_access",
     .kernel = "linux-6.13",
     .doc = "pmdp_collapse_flush unlinks the PTE table but never flushes it: the old pages are copied and freed "
            "while CPUs still cache them"},
    {TLBSIM_ID(Mutation, collapse_skips_gup_fast_sync), .area = "thp", .scenarios = "thp_collapse_vs_gup_fast",
     .kernel = "linux-6.6-arm64",
     .doc = "collapse_huge_page without tlb_remove_table_sync_one and GUP-fast without its PMD recheck (the pair "
            "before 2ba99c5e0881 and 70cbc3cc78a9): where the flush sends no IPI, a pin can follow the reference "
            "count check"},
    {TLBSIM_ID(Mutation, huge_zero_wp_flush_skipped), .area = "thp", .scenarios = "thp_zero_wp_vs_read",
     .kernel = "linux-4.14-ppc",
     .doc = "the huge zero page's PMD is replaced without its flush (pmdp_huge_clear_flush_notify of the write fault "
            "before v5.8, __split_huge_zero_page_pmd's pmdp_huge_clear_flush from it): CPUs keep reading zeros"},
    {TLBSIM_ID(Mutation, thp_migration_flush_skipped), .area = "migration",
     .scenarios = "thp_migrate_vs_write,thp_numa_migrate_vs_local_fault", .kernel = "linux-6.13",
     .doc = "migration of a THP replaces its PMD without flushing it (set_pmd_migration_entry's pmdp_invalidate, and "
            "for NUMA hinting before v5.14 migrate_misplaced_transhuge_page's pmdp_huge_clear_flush_notify): CPUs "
            "keep writing the old THP while it is copied"},
    {TLBSIM_ID(Mutation, rmap_walk_newest_first), .area = "migration", .scenarios = "compact_vs_mremap",
     .kernel = "linux-6.13",
     .doc = "rmap_walk_anon visits the anon_vma's VMAs newest first, against the order mremap relies on without rmap "
            "locks (copy_vma's need_rmap_locks): remove_migration_ptes misses a migration entry moved to the new "
            "VMA, which then names a freed page"},
};

}  // namespace tlbsim::kernel

TLBSIM_DECLARE_SPACE(tlbsim::kernel::Option, 0, OptionDecl, tlbsim::kernel::kOptions);
TLBSIM_DECLARE_SPACE(tlbsim::kernel::Mutation, 0, MutationDecl, tlbsim::kernel::kMutations);
