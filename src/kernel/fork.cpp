// Models the mm reference counting and teardown of Linux v6.1: mmgrab/mmdrop/__mmdrop (kernel/fork.c,
// include/linux/sched/mm.h), mmget/mmput/__mmput and exit_mmap (kernel/fork.c, mm/mmap.c), exit_mm
// (kernel/exit.c) and exec_mmap (fs/exec.c).
#include "kernel/fork.h"

#include <stdexcept>

#include "kernel/mmu_gather.h"

namespace tlbsim::kernel {

sim::Task<void> mmgrab(PerCpu& self, MmStruct& mm) {
  co_await self.k.mem().rmw(self.cpu, mm.mm_count, [](std::int64_t v) { return v + 1; });
}

sim::Task<void> mmdrop(PerCpu& self, MmStruct& mm) {
  const std::int64_t old = co_await self.k.mem().rmw(self.cpu, mm.mm_count, [](std::int64_t v) { return v - 1; });
  if (old <= 0) {
    self.k.oracle().report_refcount(self.id, mm.id(), "mm_count", old - 1, self.cpu.now());
    co_return;
  }
  if (old == 1 && !mm.is_init_mm()) self.k.free_mm(mm);  // __mmdrop
}

sim::Task<void> mmget(PerCpu& self, MmStruct& mm) {
  co_await self.k.mem().rmw(self.cpu, mm.mm_users, [](std::int64_t v) { return v + 1; });
}

sim::Task<void> mmput(PerCpu& self, MmStruct& mm) {
  const std::int64_t old = co_await self.k.mem().rmw(self.cpu, mm.mm_users, [](std::int64_t v) { return v - 1; });
  if (old <= 0) {
    self.k.oracle().report_refcount(self.id, mm.id(), "mm_users", old - 1, self.cpu.now());
    co_return;
  }
  if (old != 1) co_return;
  // __mmput: the address space has no users left.
  co_await exit_mmap(self, mm);
  co_await mmdrop(self, mm);
}

sim::Task<void> exit_mmap(PerCpu& self, MmStruct& mm) {
  hw::Memory& m = self.k.mem();
  MmuGather tlb(mm);
  tlb.fullmm = true;  // tlb_gather_mmu_fullmm
  co_await tlb_gather_mmu(self, tlb);
  for (const Vma& v : mm.vmas) {
    for (std::uint64_t a = v.start; a < v.end; a += kPageSize) {
      const auto old = mm.pgd.clear(vpn_of(a));
      if (!old) continue;
      co_await self.cpu.delay(self.k.machine().kernel.pte_update);
      self.k.oracle().on_pte_removed(mm, vpn_of(a), *old, self.id, self.cpu.now());
      tlb.cleared_ptes = true;
      if (old->anon && old->pfn.get() != 0) tlb.pages.push_back(old->pfn);
    }
  }
  co_await mm.mmap_lock.down_write(m, self.cpu);
  for (const Vma& v : mm.vmas) {  // free_pgtables
    for (std::uint64_t a = v.start; a < v.end; a += kPtesPerTable * kPageSize) {
      if (const auto frame = mm.pgd.detach_empty_table(vpn_of(a))) {
        tlb.pages.push_back(*frame);
        tlb.freed_tables = true;
      }
    }
  }
  co_await tlb_finish_mmu(self, tlb);  // the final flush: full, and lazy CPUs too since tables were freed
  mm.vmas.clear();
  co_await mm.mmap_lock.up_write(m, self.cpu);
  self.k.oracle().on_syscall_return(self.id);
}

sim::Task<void> exit_mm(Sched& s, TaskStruct& t) {
  MmStruct* mm = t.mm;
  if (mm == nullptr) co_return;
  PerCpu& pc = s.cpu_of(t);
  hw::Memory& m = s.k.mem();
  co_await mm->mmap_lock.down_read(m, pc.cpu);
  co_await mmgrab(pc, *mm);  // the task keeps mm as active_mm until its final context switch
  pc.cpu.local_irq_disable();
  t.mm = nullptr;
  s.k.oracle().set_user_context(pc.id, 0);
  co_await s.k.arch().enter_lazy_tlb(pc, *mm);
  co_await pc.cpu.local_irq_enable();
  co_await mm->mmap_lock.up_read(m, pc.cpu);
  co_await mmput(pc, *mm);
}

sim::Task<void> exec_mmap(Sched& s, TaskStruct& t, MmStruct& mm) {
  PerCpu& pc = s.cpu_of(t);
  MmStruct* old_mm = t.mm;
  MmStruct* active_mm = t.active_mm;
  pc.cpu.local_irq_disable();
  t.active_mm = &mm;
  t.mm = &mm;
  co_await s.k.arch().switch_mm_irqs_off(pc, mm);  // activate_mm
  co_await pc.cpu.local_irq_enable();
  s.k.oracle().set_user_context(pc.id, mm.id());
  if (old_mm != nullptr) {
    co_await mmput(pc, *old_mm);
    co_return;
  }
  co_await mmdrop(pc, *active_mm);
}

}  // namespace tlbsim::kernel
