// Models kernel/smp.c of Linux v5.17: smp_call_function_many_cond, csd_lock/csd_lock_wait/csd_unlock,
// flush_smp_call_function_queue. Also arch/x86/kernel/smp.c's sysvec_call_function{,_single} entry.
#include "kernel/smp.h"

#include <vector>

#include "kernel/barrier.h"
#include "kernel/options.h"
#include "trace/tracer.h"

namespace tlbsim::kernel {

namespace {

// csd_lock_wait: smp_cond_load_acquire(&csd->node.u_flags, !(VAL & CSD_FLAG_LOCK)).
sim::Task<void> csd_lock_wait(PerCpu& self, Csd& csd) {
  hw::Memory& mem = self.k.mem();
  for (;;) {
    const std::uint32_t flags = co_await mem.read(self.cpu, csd.flags);
    if (!(flags & Csd::CSD_FLAG_LOCK)) {
      smp_load_acquire_fence(mem, self.cpu);  // smp_cond_load_acquire
      co_return;
    }
    co_await mem.wait_for_write(self.cpu, csd.flags.line);
  }
}

// csd_lock: wait for the previous use, then mark the csd locked (and synchronous when the caller waits).
sim::Task<void> csd_lock(PerCpu& self, Csd& csd, bool sync) {
  co_await csd_lock_wait(self, csd);
  co_await self.k.mem().write(self.cpu, csd.flags, Csd::CSD_FLAG_LOCK | (sync ? Csd::CSD_TYPE_SYNC : 0u));
  smp_wmb(self.k.mem(), self.cpu);  // the flags store before the func and info stores
}

// csd_unlock: smp_store_release(&csd->node.u_flags, 0).
sim::Task<void> csd_unlock(PerCpu& self, Csd& csd) {
  smp_store_release_fence(self.k.mem(), self.cpu);
  co_await self.k.mem().write(self.cpu, csd.flags, 0u);
}

}  // namespace

sim::Task<void> smp_call_function_many_cond(PerCpu& self, const Cpumask& mask, SmpCallFunc func, const void* info,
                                            unsigned scf_flags, SmpCondFunc cond) {
  Kernel& k = self.k;
  const trace::TraceSpan span(k.tracer(), self.cpu, "smp_call_function_many_cond", "ipi");
  hw::Memory& mem = k.mem();
  const CpuId this_cpu = self.id;
  const bool wait = scf_flags & SCF_WAIT;
  const bool run_local = (scf_flags & SCF_RUN_LOCAL) && mask.test(this_cpu);
  const bool run_remote = mask.any_but(this_cpu) < mask.size();

  Cpumask cfd_mask(mask.size());  // cfd->cpumask: the mask without this CPU
  std::vector<CpuId> ipi_targets;  // cfd->cpumask_ipi, in CPU order
  if (run_remote) {
    cfd_mask = mask;
    cfd_mask.clear(this_cpu);
    for (std::uint32_t c = cfd_mask.next(0); c < cfd_mask.size(); c = cfd_mask.next(c + 1)) {
      const CpuId cpu{c};
      if (cond != nullptr) {
        const bool pass = co_await cond(self, cpu, info);
        if (!pass) continue;
      }
      Csd& csd = self.csd_for(cpu);
      co_await csd_lock(self, csd, wait);
      csd.func = func;
      csd.info = info;
      // llist_add(&csd->node.llist, &per_cpu(call_single_queue, cpu)): true if the queue was empty.
      PerCpu& target = k.percpu(cpu);
      co_await mem.touch(self.cpu, target.call_single_queue_line, hw::Access::kRmw);
      const bool was_empty = target.call_single_queue.empty();
      target.call_single_queue.push_back(&csd);
      if (was_empty) ipi_targets.push_back(cpu);
    }
    // send_call_function_single_ipi for one target, arch_send_call_function_ipi_mask for several.
    if (!ipi_targets.empty()) {
      const int vector = ipi_targets.size() == 1 ? CALL_FUNCTION_SINGLE_VECTOR : CALL_FUNCTION_VECTOR;
      k.counters().ipis_sent += ipi_targets.size();
      (vector == CALL_FUNCTION_VECTOR ? k.counters().ipis_call_function : k.counters().ipis_call_function_single) +=
          ipi_targets.size();
      k.trace_ipi_send(self, ipi_targets, vector);
      co_await k.sys().ipi().send(self.cpu, ipi_targets, vector);
    }
  }

  if (run_local) {
    bool pass = true;
    if (cond != nullptr) pass = co_await cond(self, this_cpu, info);
    if (pass) {
      const bool irqs_were_off = self.cpu.irqs_disabled();
      self.cpu.local_irq_disable();
      co_await func(self, info);
      if (!irqs_were_off) co_await self.cpu.local_irq_enable();
    }
  }

  if (run_remote && wait && !planted(k.config(), Mutation::smp_call_skips_wait)) {
    for (std::uint32_t c = cfd_mask.next(0); c < cfd_mask.size(); c = cfd_mask.next(c + 1)) {
      co_await csd_lock_wait(self, self.csd_for(CpuId{c}));
    }
  }
}

sim::Task<void> on_each_cpu_cond_mask(PerCpu& self, SmpCondFunc cond, SmpCallFunc func, const void* info, bool wait,
                                      const Cpumask& mask) {
  co_await smp_call_function_many_cond(self, mask, func, info, SCF_RUN_LOCAL | (wait ? SCF_WAIT : 0u), cond);
}

sim::Task<void> flush_smp_call_function_queue(PerCpu& self) {
  hw::Memory& mem = self.k.mem();
  // llist_del_all + llist_reverse_order: take every pending entry, oldest first.
  co_await mem.touch(self.cpu, self.call_single_queue_line, hw::Access::kRmw);
  std::vector<Csd*> entries;
  entries.swap(self.call_single_queue);
  // CSD_TYPE(csd), read before any entry is released (csd_unlock clears the type bits too).
  std::vector<bool> sync;
  for (Csd* csd : entries) sync.push_back((csd->flags.value & Csd::CSD_TYPE_SYNC) != 0);
  // Synchronous entries: run the function, then release the waiting sender.
  for (std::size_t i = 0; i < entries.size(); ++i) {
    if (sync[i]) {
      co_await entries[i]->func(self, entries[i]->info);
      co_await csd_unlock(self, *entries[i]);
    }
  }
  // Asynchronous entries: release first, then run.
  for (std::size_t i = 0; i < entries.size(); ++i) {
    Csd* csd = entries[i];
    if (!sync[i]) {
      const SmpCallFunc func = csd->func;
      const void* info = csd->info;
      co_await csd_unlock(self, *csd);
      co_await func(self, info);
    }
  }
}

}  // namespace tlbsim::kernel
