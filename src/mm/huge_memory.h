// Anonymous transparent huge pages (mm/huge_memory.c): the PMD-mapped THP a fault in a MADV_HUGEPAGE range makes,
// its zap and its split into 512 PTEs, with each era's flush. Eras: v4.14 powerpc, v5.17 and v6.13 x86, v6.2
// powerpc (docs/model.md "Transparent huge pages"; x86 v3.3 has THP too, modeled with the same code).
#pragma once

#include <cstdint>

#include "kernel/kernel.h"

namespace tlbsim::kernel {

struct MmuGather;
struct MremapEra;

// Whether a fault at `addr` may map a THP: the VMA asked for them (VM_HUGEPAGE), is anonymous, and holds the whole
// PMD-aligned 2 MiB around addr (transhuge_vma_suitable / thp_vma_suitable_order).
bool thp_fault_eligible(const Vma& vma, std::uint64_t addr);
// The same test for khugepaged's collapse of the 2 MiB at `haddr` (hugepage_vma_check / thp_vma_allowable_order).
bool thp_collapse_suitable(const Vma& vma, std::uint64_t haddr);

// What an era does with the huge zero page (each field names the kernel change that brought it).
struct HugeZeroEra {
  // v3.8, Kirill A. Shutemov's "thp: setup huge zero page on non-write page fault" (transparent_hugepage_use_zero_page
  // is on by default): a read fault in a THP range maps the huge zero page read-only by its PMD. v3.3 maps base pages.
  bool huge_zero_page = false;
  // v5.8, 3917c80280c9 ("thp: change CoW semantics for anon-THP"): a write to the huge zero page splits the PMD into
  // 512 PTEs of the small zero page (__split_huge_zero_page_pmd: pmdp_huge_clear_flush, the PMD cleared before its
  // flush) and the fault falls back to the PTE (do_wp_page copies one page). Before it, do_huge_pmd_wp_page allocates
  // and zeroes a THP and replaces the PMD with pmdp_huge_clear_flush_notify (the 2 MiB flushed under the PMD lock).
  bool wp_splits = false;
};
HugeZeroEra huge_zero_era(const KernelConfig& config);

// do_huge_pmd_anonymous_page for a fault at `addr` whose PMD is none. A write: a PTE table preallocated for the
// deposit (pte_alloc_one), a zeroed THP on the faulting CPU's node, then under the PMD lock the deposit and
// set_pmd_at. A read, where the era has the huge zero page: the table preallocated, mm_get_huge_zero_page, and under
// the PMD lock set_huge_zero_page (deposit, a read-only PMD of the huge zero page). No flush (nothing was mapped).
// Called with the VMA held (mmap_lock or its own lock).
sim::Task<void> do_huge_pmd_anonymous_page(PerCpu& self, MmStruct& mm, const Vma& vma, std::uint64_t addr, bool write);

// __split_huge_pmd of the THP covering `addr`, if one: under the PMD lock, pmdp_invalidate (the PMD made invalid
// and flush_pmd_tlb_range: on x86 flush_tlb_range of the 2 MiB at PAGE_SIZE stride, on powerpc radix a 2 MiB-page
// flush), then the deposited table gets 512 PTEs for the THP's pages and is linked (pmd_populate). The huge zero
// page (__split_huge_zero_page_pmd): pmdp_huge_clear_flush (the PMD cleared, then flushed), then the deposited table
// gets 512 PTEs of the small zero page.
sim::Task<void> split_huge_pmd(PerCpu& self, MmStruct& mm, std::uint64_t addr);

// do_huge_pmd_wp_page for a write fault on a read-only PMD of a writable VMA. A THP: the model's anonymous THPs are
// exclusive, so it is reused (made writable under the PMD lock, pmdp_set_access_flags; an upgrade, no flush). The
// huge zero page: as HugeZeroEra says. Returns true for VM_FAULT_FALLBACK: the caller handles the fault at the PTE.
sim::Task<bool> do_huge_pmd_wp_page(PerCpu& self, MmStruct& mm, const Vma& vma, std::uint64_t addr);

// flush_pmd_tlb_range(vma, haddr, haddr + HPAGE_PMD_SIZE): x86 has no override, so the generic flush_tlb_range at
// PAGE_SIZE stride (512 pages, above tlb_single_page_flush_ceiling: the whole mm); powerpc radix:
// radix__flush_pmd_tlb_range, a flush of 2 MiB pages over the range; arm64 (from v5.9, "arm64: tlb: Set the TTL
// field in flush_*_tlb_range"): __flush_tlb_range at PMD_SIZE stride, one TLBI.
sim::Task<void> flush_pmd_tlb_range(PerCpu& self, MmStruct& mm, std::uint64_t haddr);

// move_huge_pmd(vma, old_addr, new_addr, old_pmd, new_pmd) for mremap's move_page_tables, the 2 MiB at the
// PMD-aligned `old_addr` to the PMD-aligned `new_addr`: refused (moved false, the caller splits) when the new PMD is
// not none or the old one is no longer huge under its lock (__pmd_trans_huge_lock). Otherwise, under the old PMD lock
// and the new one (spin_lock_nested), pmdp_huge_get_and_clear, the deposit moved with it (pmd_move_must_withdraw),
// set_pmd_at at the new address; then each era's flush of the old 2 MiB, as move_ptes flushes (MremapEra): v3.3
// none (need_flush: the caller's flush at the end), v4.9 a dirty (writable) THP's after the new lock drops, v4.19 a
// present one's with both locks held. need_flush says the caller must still flush.
struct MovedHugePmd {
  bool moved = false;
  bool need_flush = false;
};
sim::Task<MovedHugePmd> move_huge_pmd(PerCpu& self, MmStruct& mm, std::uint64_t old_addr, std::uint64_t new_addr,
                                      const MremapEra& era, bool skip_flush);

// zap_huge_pmd of the THP covering the 2 MiB at `haddr`, under the PMD lock: pmdp_huge_get_and_clear_full (powerpc
// also flushes the 2 MiB at once unless the gather is fullmm), tlb_remove_pmd_tlb_entry (the gather's range, PMD
// stride), zap_deposited_table (the deposit freed at once), and the THP's pages gathered for freeing after the flush.
sim::Task<void> zap_huge_pmd(PerCpu& self, MmuGather& tlb, MmStruct& mm, std::uint64_t haddr);

// What an era does for a NUMA hinting fault on a THP (each field names the kernel change that brought it). The
// hinting PMD itself is change_huge_pmd's (mm/mprotect.cpp), in every era with NUMA balancing (v3.8).
struct HugeNumaEra {
  // v5.14, c5b5a3dd2c1f ("mm: thp: refactor NUMA fault handling", Yang Shi): do_huge_pmd_numa_page hands a misplaced
  // THP to the generic migrate_misplaced_page -> migrate_pages, whose try_to_migrate_one replaces the PMD with a PMD
  // migration entry (set_pmd_migration_entry: pmdp_invalidate, an immediate flush), and remove_migration_pmd maps the
  // copy; faults meanwhile wait on the entry (pmd_migration_entry_wait). Before it, migrate_misplaced_transhuge_page
  // (mm/migrate.c) copies the THP while the old PMD stays PROT_NONE and the page locked (other faults wait for the
  // page lock), then under the PMD lock pmdp_huge_clear_flush_notify and set_pmd_at of the copy.
  bool generic_migration = false;
  // Before v5.15 ("mm,do_huge_pmd_numa_page: remove unnecessary TLB flushing code", Huang Ying, July 2021):
  // do_huge_pmd_numa_page flushes the 2 MiB (flush_tlb_range) under the PMD lock before migrating when
  // mm_tlb_flush_pending says a scan's flush may still be running.
  bool flush_if_pending = false;
};
HugeNumaEra huge_numa_era(const KernelConfig& config);

// do_huge_pmd_numa_page: a fault at `addr` on a PROT_NONE hinting PMD (pmd_protnone && vma_is_accessible), entered
// with no lock held and the VMA held. Under the PMD lock, if it is still the PMD that faulted (pmd_same):
// mpol_misplaced picks a node. A THP that stays gets its PMD back (pmd_modify with the VMA's protection, the saved
// write bit; no flush). One that moves is migrated as HugeNumaEra says; a migration that fails restores the PMD
// (v5.14+) or leaves it for the next fault (before).
sim::Task<void> do_huge_pmd_numa_page(PerCpu& self, MmStruct& mm, const Vma& vma, std::uint64_t addr);

// set_pmd_migration_entry, try_to_migrate_one's PMD branch (v4.14+, CONFIG_ARCH_ENABLE_THP_MIGRATION): under the PMD
// lock, if the PMD at `haddr` still maps `page` (present or a hinting PMD), pmdp_invalidate (the PMD invalid, then
// flush_pmd_tlb_range at once, never deferred to a batch) and set_pmd_at of a migration entry, writable if the PMD
// was. Returns whether the THP was unmapped.
sim::Task<bool> set_pmd_migration_entry(PerCpu& self, MmStruct& mm, std::uint64_t haddr, Pfn page);
// remove_migration_pmd (and, for a PMD split since, remove_migration_pte of each PTE migration entry): under the PMD
// lock, the migration entry of `old` at `haddr` becomes a PMD of `copy` (mk_huge_pmd with the VMA's protection,
// writable if the entry was; no flush: it was not present). Returns whether anything was mapped.
sim::Task<bool> remove_migration_pmd(PerCpu& self, MmStruct& mm, std::uint64_t haddr, Pfn old, Pfn copy);
// pmd_migration_entry_wait: a fault that found a PMD migration entry at `addr` waits until the THP is unlocked, then
// returns for the access to fault again. Called with no lock held.
sim::Task<void> pmd_migration_entry_wait(PerCpu& self, MmStruct& mm, std::uint64_t addr);

// madvise(addr, len, MADV_HUGEPAGE) of whole pages inside one VMA (a caller's error otherwise:
// std::invalid_argument): the VMA's parts outside the range split off, VM_HUGEPAGE set, under mmap_lock held for
// write.
sim::Task<void> sys_madvise_hugepage(PerCpu& self, MmStruct& mm, std::uint64_t addr, std::uint64_t len);

}  // namespace tlbsim::kernel
