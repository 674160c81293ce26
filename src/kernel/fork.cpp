// Models the mm reference counting and teardown of Linux v6.1: mmgrab/mmdrop/__mmdrop (kernel/fork.c,
// include/linux/sched/mm.h), mmget/mmput/__mmput and exit_mmap (kernel/fork.c, mm/mmap.c), exit_mm
// (kernel/exit.c) and exec_mmap (fs/exec.c).
#include "kernel/fork.h"

#include <fmt/format.h>

#include <stdexcept>

#include "kernel/barrier.h"
#include "kernel/options.h"
#include "kernel/smp.h"
#include "mm/mmu_gather.h"
#include "trace/tracer.h"

namespace tlbsim::kernel {

namespace {

// The trace's "mm N mm_count" counter track, after a change.
void trace_mm_count(PerCpu& self, const MmStruct& mm, std::int64_t count) {
  if (self.k.tracer() == nullptr) return;
  self.k.tracer()->counter(self.cpu.now(), fmt::format("mm {} mm_count", mm.id()), "mm_count",
                           static_cast<double>(count));
}

}  // namespace

sim::Task<void> mmgrab(PerCpu& self, MmStruct& mm) {
  const std::int64_t old = co_await self.k.mem().rmw(self.cpu, mm.mm_count, [](std::int64_t v) { return v + 1; });
  trace_mm_count(self, mm, old + 1);
}

sim::Task<void> mmdrop(PerCpu& self, MmStruct& mm) {
  const std::int64_t old = co_await self.k.mem().rmw(self.cpu, mm.mm_count, [](std::int64_t v) { return v - 1; });
  trace_mm_count(self, mm, old - 1);
  if (old <= 0) {
    self.k.events().report_refcount(self.id, mm.id(), "mm_count", old - 1, self.cpu.now());
    co_return;
  }
  if (old == 1 && !mm.is_init_mm()) co_await __mmdrop(self, mm);
}

sim::Task<void> __mmdrop(PerCpu& self, MmStruct& mm) {
  co_await cleanup_lazy_tlbs(self, mm);
  co_await self.k.arch().destroy_context(self, mm);  // mm_free_pgd, then destroy_context
  self.k.free_mm(mm);
}

sim::Task<void> mmgrab_lazy_tlb(PerCpu& self, MmStruct& mm) {
  if (planted(self.k.config(), Mutation::lazy_tlb_grab_skipped)) co_return;  // Mutation: no reference, no shootdown
  if (!self.k.config().on(Option::MMU_LAZY_TLB_SHOOTDOWN)) co_await mmgrab(self, mm);
}

sim::Task<void> mmdrop_lazy_tlb(PerCpu& self, MmStruct& mm) {
  if (self.k.config().on(Option::MMU_LAZY_TLB_SHOOTDOWN)) {
    // "mmdrop_lazy_tlb must provide a full memory barrier" (the membarrier comment in finish_task_switch).
    smp_mb(self.k.mem(), self.cpu);
    co_return;
  }
  co_await mmdrop(self, mm);
}

sim::Task<void> mmdrop_lazy_tlb_sched(PerCpu& self, MmStruct& mm) {
  // mmdrop_sched differs from mmdrop only under PREEMPT_RT (the free is deferred to RCU); not modeled.
  co_await mmdrop_lazy_tlb(self, mm);
}

namespace {

// do_shoot_lazy_tlb (kernel/fork.c): runs on each CPU of mm_cpumask; a CPU whose current task uses mm lazily
// switches it to init_mm. It flushes nothing.
sim::Task<void> do_shoot_lazy_tlb(PerCpu& self, const void* info) {
  auto& mm = *static_cast<MmStruct*>(const_cast<void*>(info));
  if (self.k.sched() == nullptr) co_return;
  TaskStruct& current = *self.k.sched()->rq(self.id).curr;
  if (current.active_mm != &mm) co_return;
  // WARN_ON_ONCE(current->mm): only a kernel thread or idle can be lazy on an mm being freed.
  if (current.mm != nullptr) {
    self.k.events().report_kernel_warning(self.id, mm.id(), "do_shoot_lazy_tlb: current->mm set", self.cpu.now());
  }
  ++self.k.shoot_lazies_stats().switched;
  current.active_mm = &self.k.init_mm();
  co_await self.k.arch().switch_mm_irqs_off(self, self.k.init_mm());  // switch_mm(mm, &init_mm, current)
}

// do_check_lazy_tlb (kernel/fork.c, DEBUG_VM_SHOOT_LAZIES): WARN_ON_ONCE(current->active_mm == mm).
sim::Task<void> do_check_lazy_tlb(PerCpu& self, const void* info) {
  const auto* mm = static_cast<const MmStruct*>(info);
  if (self.k.sched() != nullptr && self.k.sched()->rq(self.id).curr->active_mm == mm) {
    self.k.events().report_kernel_warning(
        self.id, mm->id(), "do_check_lazy_tlb: current->active_mm == mm after shootdown", self.cpu.now());
  }
  co_return;
}

}  // namespace

sim::Task<void> cleanup_lazy_tlbs(PerCpu& self, MmStruct& mm) {
  const KernelConfig& cfg = self.k.config();
  // Without MMU_LAZY_TLB_SHOOTDOWN the lazy users hold mm_count references, so there are none left now.
  if (!cfg.on(Option::MMU_LAZY_TLB_SHOOTDOWN)) co_return;
  if (planted(cfg, Mutation::cleanup_lazy_tlbs_skipped)) co_return;  // Mutation: lazy users keep the freed mm
  ShootLaziesStats& cnt = self.k.shoot_lazies_stats();
  ++cnt.calls;
  const Cpumask mask = co_await mm.cpumask.read(self.k.mem(), self.cpu);
  for (std::uint32_t c = mask.next(0); c < mask.size(); c = mask.next(c + 1)) {
    if (c != self.id.get()) ++cnt.ipis;
  }
  // on_each_cpu_mask(mm_cpumask(mm), do_shoot_lazy_tlb, mm, 1); the local CPU runs it with interrupts off.
  co_await on_each_cpu_cond_mask(self, nullptr, do_shoot_lazy_tlb, &mm, true, mask);
  if (cfg.on(Option::DEBUG_VM_SHOOT_LAZIES)) {
    Cpumask all(self.k.ncpus());
    for (std::uint32_t c = 0; c < self.k.ncpus(); ++c) all.set(CpuId{c});
    co_await on_each_cpu_cond_mask(self, nullptr, do_check_lazy_tlb, &mm, true, all);  // on_each_cpu(..., 1)
  }
}

sim::Task<void> mmget(PerCpu& self, MmStruct& mm) {
  co_await self.k.mem().rmw(self.cpu, mm.mm_users, [](std::int64_t v) { return v + 1; });
}

sim::Task<void> mmput(PerCpu& self, MmStruct& mm) {
  const std::int64_t old = co_await self.k.mem().rmw(self.cpu, mm.mm_users, [](std::int64_t v) { return v - 1; });
  if (old <= 0) {
    self.k.events().report_refcount(self.id, mm.id(), "mm_users", old - 1, self.cpu.now());
    co_return;
  }
  if (old != 1) co_return;
  // __mmput: the address space has no users left.
  co_await exit_mmap(self, mm);
  co_await mmdrop(self, mm);
}

sim::Task<void> exit_mmap(PerCpu& self, MmStruct& mm) {
  MmuGather tlb(mm);
  tlb.fullmm = true;  // tlb_gather_mmu_fullmm
  co_await tlb_gather_mmu(self, tlb);
  for (const auto& [start, v] : mm.vmas) {
    for (std::uint64_t a = v.start; a < v.end; a += kPageSize) {
      const auto old = mm.pgd.clear(vpn_of(a));
      if (!old) continue;
      self.k.events().on_pte_removed(mm, vpn_of(a), *old, self.id, self.cpu.now());
      co_await self.cpu.delay(self.k.machine().kernel.pte_update);
      tlb.cleared_ptes = true;
      if (old->anon && old->pfn.get() != 0) tlb.pages.push_back(old->pfn);
    }
  }
  co_await mm.mmap_lock.down_write(self);
  for (const auto& [start, v] : mm.vmas) {  // free_pgtables
    for (std::uint64_t a = v.start; a < v.end; a += kPtesPerTable * kPageSize) {
      if (const auto frame = mm.pgd.detach_empty_table(vpn_of(a))) {
        tlb.pages.push_back(*frame);
        tlb.freed_tables = true;
      }
    }
  }
  co_await tlb_finish_mmu(self, tlb);  // the final flush: full, and lazy CPUs too since tables were freed
  mm.remove_all_vmas();
  co_await mm.mmap_lock.up_write(self);
  self.k.events().on_syscall_return(self.id);
}

sim::Task<void> exit_mm(Sched& s, TaskStruct& t) {
  MmStruct* mm = t.mm;
  if (mm == nullptr) co_return;
  PerCpu& pc = s.cpu_of(t);
  co_await mm->mmap_lock.down_read(pc);
  co_await mmgrab_lazy_tlb(pc, *mm);  // the task keeps mm as active_mm until its final context switch
  pc.cpu.local_irq_disable();
  t.mm = nullptr;
  s.k.events().set_user_context(pc.id, 0);
  co_await s.k.arch().enter_lazy_tlb(pc, *mm);
  co_await pc.cpu.local_irq_enable();
  co_await mm->mmap_lock.up_read(pc);
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
  s.k.events().set_user_context(pc.id, mm.id());
  if (old_mm != nullptr) {
    co_await mmput(pc, *old_mm);
    co_return;
  }
  co_await mmdrop_lazy_tlb(pc, *active_mm);  // a kernel thread's borrowed mm
}

}  // namespace tlbsim::kernel

namespace tlbsim::kernel {

void ShootLaziesStats::register_stats(Stats& stats) const {
  stats.registrar(this)
      .count("shoot_lazies/calls", "seed 004: cleanup_lazy_tlbs runs", calls)
      .count("shoot_lazies/ipis", "seed 004: IPIs cleanup_lazy_tlbs sent (remote CPUs of mm_cpumask)", ipis)
      .count("shoot_lazies/switched", "seed 004: CPUs do_shoot_lazy_tlb switched to init_mm", switched);
}

}  // namespace tlbsim::kernel
