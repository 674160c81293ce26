// The mm lifecycle (kernel/fork.c, kernel/exit.c and fs/exec.c of Linux v6.1): mm_users and mm_count
// references, exit_mmap with the final TLB flush, exit_mm, exec_mmap, and __mmdrop.
#pragma once

#include "kernel/kernel.h"
#include "kernel/sched/sched.h"

namespace tlbsim::kernel {

// mmgrab / mmdrop: mm_count references (the mm_struct itself). The last mmdrop frees the mm (__mmdrop).
sim::Task<void> mmgrab(PerCpu& self, MmStruct& mm);
sim::Task<void> mmdrop(PerCpu& self, MmStruct& mm);
// __mmdrop: the last mm_count reference is gone. cleanup_lazy_tlbs first, then the mm is freed.
sim::Task<void> __mmdrop(PerCpu& self, MmStruct& mm);
// The lazy-TLB reference helpers of seed 004 (include/linux/sched/mm.h, merged for v6.4): with
// MMU_LAZY_TLB_REFCOUNT (MMU_LAZY_TLB_SHOOTDOWN off) they are mmgrab/mmdrop; with MMU_LAZY_TLB_SHOOTDOWN the grab
// does nothing and the drops are only a full barrier (smp_mb), which membarrier relies on.
sim::Task<void> mmgrab_lazy_tlb(PerCpu& self, MmStruct& mm);
sim::Task<void> mmdrop_lazy_tlb(PerCpu& self, MmStruct& mm);
sim::Task<void> mmdrop_lazy_tlb_sched(PerCpu& self, MmStruct& mm);
// cleanup_lazy_tlbs (kernel/fork.c): under MMU_LAZY_TLB_SHOOTDOWN, a synchronous cross-call to every CPU in
// mm_cpumask(mm) (the local one inline) switching any CPU still lazily using mm to init_mm; with
// DEBUG_VM_SHOOT_LAZIES, then a cross-call to every CPU checking that none still uses it.
sim::Task<void> cleanup_lazy_tlbs(PerCpu& self, MmStruct& mm);
// mmget / mmput: mm_users references (the address space). The last mmput tears the address space down
// (exit_mmap) and drops the mm_count reference the users held together.
sim::Task<void> mmget(PerCpu& self, MmStruct& mm);
sim::Task<void> mmput(PerCpu& self, MmStruct& mm);
// exit_mmap: unmap every VMA with a full-mm gather, free the page tables, flush (freed_tables), free the pages.
sim::Task<void> exit_mmap(PerCpu& self, MmStruct& mm);
// exit_mm: the exiting task lets go of its mm, keeping it as active_mm (lazily) until its last switch.
sim::Task<void> exit_mm(Sched& s, TaskStruct& t);
// exec_mmap: the task switches to a fresh mm; the old one loses its user (or the borrowed one its reference).
sim::Task<void> exec_mmap(Sched& s, TaskStruct& t, MmStruct& mm);

}  // namespace tlbsim::kernel
