// Deferred (batched) TLB flushing for reclaim, modeled on mm/rmap.c (v5.10-v5.17, ARCH_WANT_BATCHED_UNMAP_TLB_FLUSH):
// try_to_unmap with TTU_BATCH_FLUSH clears PTEs without flushing and collects the mms' CPUs; one flush covers the
// batch before the pages are freed.
#pragma once

#include <vector>

#include "kernel/kernel.h"

namespace tlbsim::kernel {

// struct tlbflush_unmap_batch (current->tlb_ubc).
struct TlbflushUnmapBatch {
  explicit TlbflushUnmapBatch(std::uint32_t ncpus) : arch(ncpus) {}
  ArchTlbflushUnmapBatch arch;
  bool flush_required = false;
  bool writable = false;
};

// should_defer_flush(mm, flags): defer only under TTU_BATCH_FLUSH and when another CPU is in mm_cpumask.
sim::Task<bool> should_defer_flush(PerCpu& self, MmStruct& mm, bool ttu_batch_flush);
// set_tlb_ubc_flush_pending(mm, writable[, uaddr v6.5+]): arch_tlbbatch_add_mm (v6.5+: arch_tlbbatch_add_pending of
// the page at uaddr), then mark the mm as having a batched flush.
sim::Task<void> set_tlb_ubc_flush_pending(PerCpu& self, TlbflushUnmapBatch& ubc, MmStruct& mm, bool writable,
                                          std::uint64_t uaddr);
// try_to_unmap_flush / try_to_unmap_flush_dirty.
sim::Task<void> try_to_unmap_flush(PerCpu& self, TlbflushUnmapBatch& ubc);
sim::Task<void> try_to_unmap_flush_dirty(PerCpu& self, TlbflushUnmapBatch& ubc);
// flush_tlb_batched_pending(mm): called under the page-table lock before PTEs of mm change.
sim::Task<void> flush_tlb_batched_pending(PerCpu& self, MmStruct& mm);
// try_to_unmap_one for the PTE of `mm` at `v` if it still maps `page` (page_vma_mapped_walk, under the PTE lock): clear
// it and flush now, or defer the flush into `ubc`. The caller frees the page only after try_to_unmap_flush
// (shrink_page_list's order).
sim::Task<void> try_to_unmap_one(PerCpu& self, TlbflushUnmapBatch& ubc, MmStruct& mm, Vpn v, Pfn page,
                                 bool ttu_batch_flush);

// rmap_walk_anon's VMAs for an anonymous page with reverse map `r` (anon_vma_interval_tree_foreach over the page's
// index), as the addresses the page is found at (vma_address): every VMA of r.mm that has an anon_vma (a private
// file VMA's copied pages are anonymous too) and whose
// vm_pgoff range covers r.index, in the interval tree's order (vm_pgoff, then the order the VMAs joined the tree).
// The kernel's tree holds only the VMAs of the page's anon_vma; the model's holds every VMA of the mm with one, and
// the caller's check of each PTE (page_vma_mapped_walk) discards the others. Contract: the caller holds
// r.mm->anon_vma_lock() for read, so that no VMA joins while it walks (anon_vma_clone).
std::vector<Vpn> rmap_walk_anon(PerCpu& self, const AnonRmap& r);

}  // namespace tlbsim::kernel
