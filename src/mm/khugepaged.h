// khugepaged's collapse of anonymous memory (mm/khugepaged.c, collapse_huge_page): 512 small pages of a
// MADV_HUGEPAGE range copied into one THP, the old PTE table unlinked and flushed (pmdp_collapse_flush) and
// deposited, the THP mapped by the PMD. Eras: v4.14 powerpc, v5.17 and v6.13 x86, v6.2 powerpc.
#pragma once

#include <cstdint>

#include "kernel/kernel.h"
#include "mm/huge_memory.h"

namespace tlbsim::kernel {

// khugepaged_max_ptes_none: how many of the 512 PTEs may be none (or map the zero page) for a collapse.
inline constexpr std::uint64_t kKhugepagedMaxPtesNone = kPtesPerTable - 1;

// Whether the era's collapse calls tlb_remove_table_sync_one after pmdp_collapse_flush (v6.1, Jann Horn,
// 2ba99c5e0881 "mm/khugepaged: fix GUP-fast interaction by sending IPI"): an IPI to every online CPU, a real one
// where the architecture frees page tables by RCU (MMU_GATHER_RCU_TABLE_FREE: always on powerpc and arm64; on x86
// only with PARAVIRT before v6.15, whose a37259732a7d "x86/mm: Make MMU_GATHER_RCU_TABLE_FREE unconditional" came
// with INVLPGB; the model's x86 is bare metal).
bool collapse_sync_ipi(KernelVersion version, Arch arch);

// collapse_huge_page of the 2 MiB at `haddr` of `mm` by khugepaged, running on `self` (a kernel thread: `mm` need
// not be loaded). Returns whether the range now maps a THP. Fails (leaving the PTEs as they were) when the range is
// no longer a MADV_HUGEPAGE anonymous VMA's, maps no PTE table, holds a PTE that is not a present anonymous page,
// none or the zero page, or more than kKhugepagedMaxPtesNone none PTEs.
sim::Task<bool> collapse_huge_page(PerCpu& self, MmStruct& mm, std::uint64_t haddr);

}  // namespace tlbsim::kernel
