// get_user_pages_fast for one base page (mm/gup.c's lockless_pages_from_mm -> gup_pgd_range -> gup_pmd_range ->
// gup_pte_range; arch/x86/mm/gup.c in v3.3): the lockless walk that pins a page without mmap_lock or the page-table
// lock, with interrupts off, so that a flush IPI, or a sync IPI after a page table was unlinked, waits until it is
// done. What it needs from the eras is which rechecks follow the pin.
#pragma once

#include <cstdint>
#include <optional>

#include "kernel/kernel.h"

namespace tlbsim::kernel {

// What an era's gup_pte_range checks after taking its reference (each field names the change that brought it).
struct GupFastEra {
  // pte_val(pte) != pte_val(*ptep): the PTE read again after the reference is taken, and the reference dropped if
  // it changed. In the generic fast GUP from its start (2667f50e8b81, v3.19), which replaced x86's own in 2017
  // (Kirill Shutemov's switch, v4.13 or v4.14: the boundary falls between the modeled v3.3 and v5.17); v3.3's
  // arch/x86/mm/gup.c takes the reference and returns.
  bool pte_recheck = false;
  // pmd_val(pmd) != pmd_val(*pmdp): the PMD read again too, so that a PTE table khugepaged unlinked in between is
  // noticed (70cbc3cc78a9, Yang Shi, "mm: gup: fix the fast GUP race against THP collapse", 2022, Cc: stable;
  // on here from v6.1, which no modeled era straddles).
  bool pmd_recheck = false;
};
GupFastEra gup_fast_era(const KernelConfig& config);

// pin_user_pages_fast(addr, 1, write ? FOLL_WRITE : 0) by the task running on `self` in `mm`, the fast path only:
// with interrupts off, reads the PMD and the PTE, pins the page (try_grab_folio; a frame already freed cannot be
// grabbed) and rechecks as the era does. Returns the pinned page, or nothing where the fast path gives up (no table,
// a THP's PMD, a PTE that is not present, writable when asked, or a NUMA hinting one; a recheck that fails): the
// slow path would then take mmap_lock and the page-table lock, and is not modeled (docs/model.md).
sim::Task<std::optional<Pfn>> pin_user_pages_fast(PerCpu& self, MmStruct& mm, std::uint64_t addr, bool write);

// unpin_user_page: the pin taken above is dropped.
void unpin_user_page(PerCpu& self, Pfn page);

}  // namespace tlbsim::kernel
