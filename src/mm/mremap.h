// mremap(2) moving a mapping, as mm/mremap.c has it in each modeled era: move_vma links the new VMA (copy_vma),
// move_page_tables moves the PTEs under the page-table locks (move_ptes) and flushes the old range, and do_munmap
// removes the old VMA, all under mmap_lock held for write. Where the flush sits relative to the page-table lock is
// what changed between the eras.
#pragma once

#include <cstdint>

#include "kernel/kernel.h"

namespace tlbsim::kernel {

// What an era's move_ptes does, by release (each field names the kernel change that brought it).
struct MremapEra {
  // flush_tlb_batched_pending(mm) under the PTE locks before the PTEs move (v4.13, 3ea277194daa, "mm, mprotect:
  // flush TLB if potentially racing with a parallel reclaim leaving stale TLB entries", which adds it to move_ptes
  // too).
  bool batched_pending = false;
  // v4.9, 5d1904204c99 ("mremap: fix race between mremap() and page cleanning"): a dirty PTE moved makes move_ptes
  // flush the moved range after it drops the new PTE lock and before the old one (force_flush); a clean one leaves
  // the flush to the end of move_page_tables, after every lock has dropped (v3.2, 7b6efc2bc4f1, "mremap: avoid
  // sending one IPI per page").
  bool flush_dirty_under_ptl = false;
  // v4.19, eb66ae030829 ("mremap: properly flush TLB before releasing the page", CVE-2018-18281): any present PTE
  // moved forces the flush, now with both PTE locks held, and move_page_tables has no flush of its own. Modeled in
  // older eras as the option move_ptes_flush_present (kernel/options.h).
  bool flush_present_under_ptl = false;
  // LATENCY_LIMIT: move_page_tables moves at most 64 pages per move_ptes call, to bound the PTE lock hold time;
  // removed in v4.18 (Mel Gorman, "mremap: Remove LATENCY_LIMIT from mremap to reduce the number of TLB
  // shootdowns"), after which an extent runs to the next PMD boundary.
  bool latency_limit = false;
  // move_normal_pmd: an extent that is a whole PMD at both addresses, whose new PMD is none, moves by its PMD: the
  // PTE table itself is relinked at the new address under both PMD locks, and the old 2 MiB flushed with them held
  // (x86 from v5.1: 2c91bd4a4e2e "mm: speed up mremap by 20x on large regions", enabled by 9f132f7e1455 "mm: select
  // HAVE_MOVE_PMD on x86 for faster mremap"; powerpc book3s64 from v5.14, when its Kconfig selects HAVE_MOVE_PMD).
  bool move_normal_pmd = false;
  // move_normal_pud: an extent that is a whole PUD (1 GiB) at both addresses, whose new PUD is none, moves by its PUD:
  // the PMD table, with every PTE table and THP below it, is relinked at the new address under pud_lock
  // (mm->page_table_lock), and the old 1 GiB flushed with it held (c49dd3401802, "mm: speedup mremap on 1GB or larger
  // regions", Kalesh Singh, v5.11, with "x86: mremap speedup - Enable HAVE_MOVE_PUD" and "arm64: mremap speedup -
  // enable HAVE_MOVE_PUD"; powerpc book3s64 from v5.14, whose Kconfig selects HAVE_MOVE_PUD with HAVE_MOVE_PMD).
  bool move_normal_pud = false;
  // move_huge_pmd's flush of the old 2 MiB is flush_pmd_tlb_range (the architecture's PMD-stride flush: one 2 MiB
  // invalidation on powerpc radix and arm64) instead of flush_tlb_range at PAGE_SIZE stride: v6.0, Miaohe Lin
  // ("mm/huge_memory: use flush_pmd_tlb_range in move_huge_pmd", v3 posted 2022-07-04). x86 has no override of
  // flush_pmd_tlb_range, so its flush is the same either way.
  bool move_huge_pmd_flush_pmd_range = false;
  // v5.14, 97113eb39fa7 ("mm/mremap: hold the rmap lock in write mode when moving page table entries", Aneesh Kumar):
  // move_pgt_entry takes the rmap locks (take_rmap_locks: the anon_vma's lock for write, and i_mmap_rwsem) around
  // every NORMAL_PMD and NORMAL_PUD move, need_rmap_locks or not, since such a move takes no PTE lock that an rmap
  // walker holding the old table's lock would wait for. Before, only when need_rmap_locks (never, in the model).
  bool rmap_locks_for_table_moves = false;
};
MremapEra mremap_era(const KernelConfig& config);

// mremap(old_addr, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, new_addr) of page-aligned ranges: moves the pages of
// [old_addr, old_addr + len), which one VMA must cover, to [new_addr, new_addr + len), which must lie apart from the
// old range (otherwise throws std::invalid_argument, a caller's error in the model: the kernel's EFAULT and EINVAL).
// Whatever is mapped at the destination is unmapped first (mremap_to's do_munmap), as MREMAP_FIXED does.
sim::Task<void> sys_mremap(PerCpu& self, MmStruct& mm, std::uint64_t old_addr, std::uint64_t len,
                           std::uint64_t new_addr);

}  // namespace tlbsim::kernel
