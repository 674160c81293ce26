// NUMA balancing's part in mm/mempolicy.c: change_prot_numa, which the scanner (task_numa_work) calls to turn a
// range's PTEs into PROT_NONE hinting PTEs, and mpol_misplaced, which the hinting fault (do_numa_page) asks where
// the page belongs. Eras: v4.14, v5.17, v6.2 powerpc, v6.13, v6.18 (CONFIG_NUMA_BALANCING came in v3.8).
#pragma once

#include <cstdint>
#include <optional>

#include "kernel/kernel.h"

namespace tlbsim::kernel {

// Whether the release has NUMA balancing (v3.8, "mm: numa: Add fault driven placement and migration").
bool numa_balancing(KernelVersion version);

// change_prot_numa(vma, start, end): change_protection with MM_CP_PROT_NUMA over [start, end) of one VMA. Before
// v5.19 change_protection_range raises tlb_flush_pending around the walk and flushes the range after it; from
// v5.19 ("mm/mprotect: use mmu_gather") the call has its own gather, flushed by tlb_finish_mmu. Returns the PTEs
// changed (NUMA_PTE_UPDATES). Called with mmap_lock held for read.
sim::Task<std::uint64_t> change_prot_numa(PerCpu& self, MmStruct& mm, std::uint64_t start, std::uint64_t end);

// mpol_misplaced(folio, vma, addr) under the default policy (MPOL_F_MOF | MPOL_F_MORON), for a hinting fault by the
// task on `self`: the faulting CPU's node if the page should move there (should_numa_migrate_memory agrees and the
// page is elsewhere), else nothing. Records the fault's node in the page (page_cpupid_xchg_last).
std::optional<std::uint16_t> mpol_misplaced(PerCpu& self, Pfn page);

}  // namespace tlbsim::kernel
