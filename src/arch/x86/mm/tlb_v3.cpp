// Models arch/x86/mm/tlb.c and arch/x86/include/asm/mmu_context.h of Linux v3.3 (read against
// HazouPH/android_kernel_motorola_smi arch/x86/mm/tlb.c @5b7f6415, a v3.0-stable copy of the same design, and
// New-B/Linux3.6 tlb.c and mmu_context.h @b5154d3e; see docs/model.md "The x86 v3.3 lazy-TLB era"). Shared
// variables (mm_cpumask, flush_state[]) are awaited accesses on modeled lines; cpu_tlbstate and tlb_vector_offset
// are plain per-CPU data.
#include "arch/x86/mm/tlb_v3.h"

#include <stdexcept>
#include <string>

#include "arch/x86/options.h"
#include "kernel/barrier.h"
#include "kernel/smp.h"
#include "trace/tracer.h"

namespace tlbsim::x86::v3 {

using kernel::TlbFlushReason;
using kernel::VmTlbEvent;

namespace {

hw::Memory& mem(PerCpu& self) { return self.k.mem(); }
const hw::TlbParams& tlbp(PerCpu& self) { return self.k.machine().tlb; }
// No PCID in this era: every entry is filled and flushed under tag 0.
constexpr Asid kNoPcid{0};

}  // namespace

// arch/x86/mm/tlb.c (v3.0..v3.5) init_smp_flush and calculate_tlb_offset.
void init_smp_flush(FlushGlobals& g, kernel::Kernel& k) {
  const std::uint32_t n = k.ncpus();
  g.nr_cpu_ids = n;
  g.flush_state.clear();
  for (std::uint32_t v = 0; v < NUM_INVALIDATE_TLB_VECTORS; ++v) {
    g.flush_state.push_back(SmpFlushState{k.sys().coherence().add_line("flush_state"), nullptr, 0, 0, Cpumask(n)});
  }
  const hw::Topology& topo = k.sys().topology();
  const std::uint32_t nr_online_nodes = topo.params().sockets;
  const std::uint32_t nr_node_vecs =
      nr_online_nodes > NUM_INVALIDATE_TLB_VECTORS ? 1 : NUM_INVALIDATE_TLB_VECTORS / nr_online_nodes;
  g.tlb_vector_offset.assign(n, 0);
  for (std::uint32_t node = 0; node < nr_online_nodes; ++node) {
    const std::uint32_t node_offset = (node % NUM_INVALIDATE_TLB_VECTORS) * nr_node_vecs;
    std::uint32_t cpu_offset = 0;
    for (std::uint32_t c = 0; c < n; ++c) {  // for_each_cpu(cpu, cpumask_of_node(node))
      if (topo.socket_of(CpuId{c}) != node) continue;
      g.tlb_vector_offset[c] = node_offset + cpu_offset;
      cpu_offset = (cpu_offset + 1) % nr_node_vecs;
    }
  }
}

// arch/x86/include/asm/processor.h (v3.3) load_cr3: write__cr3(__pa(pgdir)).
sim::Task<void> load_cr3(PerCpu& self, MmStruct& mm) {
  MmStats& cnt = mm_stats(self);
  self.cr3_mm = &mm;
  self.hw_tag = 0;
  ++cnt.cr3_loads[self.id.get()];
  ++(mm.is_init_mm() ? cnt.cr3_to_init_mm : cnt.cr3_switch_mm);
  // The write switches the page tables and flushes in one instruction; its cost follows.
  self.tlb.flush_tag(kNoPcid);
  co_await self.cpu.delay(tlbp(self).cr3_write_flush);
  kernel::serializing_instruction(self.k.mem(), self.cpu);  // MOV to CR3 completes with the store buffer empty
}

// arch/x86/include/asm/tlbflush.h (v3.3) __native_flush_tlb: read CR3 and write it back.
sim::Task<void> local_flush_tlb(PerCpu& self) {
  ++mm_stats(self).cr3_loads[self.id.get()];
  ++mm_stats(self).cr3_flush;
  co_await self.cpu.delay(tlbp(self).cr3_write_flush);
  kernel::serializing_instruction(self.k.mem(), self.cpu);  // MOV to CR3
  self.tlb.flush_tag(kNoPcid);
}

// arch/x86/include/asm/tlbflush.h (v3.3) __native_flush_tlb_single: INVLPG.
sim::Task<void> flush_tlb_one(PerCpu& self, std::uint64_t va) {
  co_await self.cpu.delay(tlbp(self).invlpg);
  kernel::serializing_instruction(self.k.mem(), self.cpu);  // INVLPG
  self.tlb.invlpg(kNoPcid, kernel::vpn_of(va));
}

// arch/x86/include/asm/tlbflush.h (v3.3) __native_flush_tlb_global: CR4.PGE off and on again.
sim::Task<void> flush_tlb_all_local(PerCpu& self) {
  co_await self.cpu.delay(tlbp(self).flush_all);
  self.tlb.flush_all();
}

// arch/x86/include/asm/mmu_context.h (v3.3) switch_mm, in the order the v3.0..v3.5 tlb.c comment documents
// (1a1 clear prev's bit first; v3.6 and later clear it after load_cr3). Interrupts are off (context_switch).
sim::Task<void> switch_mm(PerCpu& self, MmStruct& next) {
  const trace::TraceSpan span(self.k.tracer(), self.cpu, "switch_mm", "mm");
  TlbState& ts = cpu_tlbstate(self);
  hw::Memory& m = mem(self);
  MmStruct& prev = *ts.active_mm;
  if (&prev != &next) {
    // Stop flush IPIs for the previous mm (a wrong-mm IPI in flight is acked without a flush).
    co_await prev.cpumask.clear_cpu(m, self.cpu, self.id);
    ts.state = TLBSTATE_OK;
    ts.active_mm = &next;
    // Now the other CPUs send flush IPIs for next; then re-load the page tables.
    co_await next.cpumask.set_cpu(m, self.cpu, self.id);
    co_await load_cr3(self, next);
    self.k.trace_tlb_flush(self, TlbFlushReason::TLB_FLUSH_ON_TASK_SWITCH, -1);
    co_return;
  }
  ts.state = TLBSTATE_OK;
  // BUG_ON(active_mm != next) holds by construction here. The bit is test-and-set every time (a locked RMW): if
  // it was clear, leave_mm ran while lazy, so CR3 holds swapper_pg_dir and the TLB may be stale for next.
  const bool was_set = co_await next.cpumask.test_and_set_cpu(m, self.cpu, self.id);
  if (!was_set) {
    co_await load_cr3(self, next);
    self.k.trace_tlb_flush(self, TlbFlushReason::TLB_FLUSH_ON_TASK_SWITCH, -1);
  }
}

// arch/x86/include/asm/mmu_context.h (v3.3) enter_lazy_tlb: a state 0 CPU (never ran a user mm) stays 0.
sim::Task<void> enter_lazy_tlb(PerCpu& self) {
  if (cpu_tlbstate(self).state == TLBSTATE_OK) cpu_tlbstate(self).state = TLBSTATE_LAZY;
  co_return;
}

// arch/x86/mm/tlb.c (v3.3) leave_mm(cpu), and seed 003 (commit a6fca40f1d7f, v3.4) in its two forms. There is no
// early return for a CPU already on swapper_pg_dir: intel_idle calls this on every TLB-flushing C-state entry.
sim::Task<void> leave_mm(PerCpu& self) {
  TlbState& ts = cpu_tlbstate(self);
  MmStruct& active_mm = *ts.active_mm;
  const kernel::KernelConfig& cfg = self.k.config();
  hw::Memory& m = mem(self);
  if (ts.state == TLBSTATE_OK) {
    throw std::logic_error("BUG: leave_mm on cpu" + std::to_string(self.id.get()) + " with TLBSTATE_OK");
  }
  if (cfg.on(Option::leave_mm_cr3_when_needed_test_first)) {
    // As merged: a plain load first ("if it's clear, it will stay clear": only this CPU sets or clears its bit).
    const bool set = co_await active_mm.cpumask.test_cpu(m, self.cpu, self.id);
    if (set) {
      co_await active_mm.cpumask.clear_cpu(m, self.cpu, self.id);
      co_await load_cr3(self, self.k.init_mm());
    }
  } else if (cfg.on(Option::leave_mm_cr3_when_needed)) {
    // As first posted: always the locked RMW, the CR3 load only when the bit was set.
    const bool was_set = co_await active_mm.cpumask.test_and_clear_cpu(m, self.cpu, self.id);
    if (was_set) co_await load_cr3(self, self.k.init_mm());
  } else {
    co_await active_mm.cpumask.clear_cpu(m, self.cpu, self.id);
    co_await load_cr3(self, self.k.init_mm());
  }
}

// arch/x86/mm/tlb.c (v3.3) smp_invalidate_interrupt. Runs with interrupts off, after the interrupt entry.
sim::Task<void> smp_invalidate_interrupt(PerCpu& self, std::uint32_t sender) {
  const trace::TraceSpan span(self.k.tracer(), self.cpu, "smp_invalidate_interrupt", "tlb");
  SmpFlushState& f = flush_globals(self).flush_state[sender];
  hw::Memory& m = mem(self);
  kernel::KernelCounters& cnt = self.k.counters();
  TlbState& ts = cpu_tlbstate(self);
  // cpumask_test_cpu(cpu, f->flush_cpumask), then f->flush_mm and f->flush_va: loads of the sender's line.
  co_await m.touch(self.cpu, f.line, hw::Access::kLoad);
  if (f.flush_cpumask.test(self.id)) {
    cnt.count(VmTlbEvent::NR_TLB_REMOTE_FLUSH_RECEIVED);
    if (f.flush_mm == ts.active_mm) {
      if (ts.state == TLBSTATE_OK) {
        if (f.flush_va == TLB_FLUSH_ALL) {
          co_await local_flush_tlb(self);
        } else {
          co_await flush_tlb_one(self, f.flush_va);
        }
        self.k.trace_tlb_flush(self, TlbFlushReason::TLB_REMOTE_SHOOTDOWN, f.flush_va == TLB_FLUSH_ALL ? -1 : 1);
      } else {
        co_await leave_mm(self);
      }
    }
  }
  // out: ack_APIC_irq(); cpumask_clear_cpu(cpu, f->flush_cpumask) between full barriers (a locked RMW on the
  // sender's line, which wakes its spin); inc_irq_stat(irq_tlb_count).
  co_await m.touch(self.cpu, f.line, hw::Access::kRmw);
  f.flush_cpumask.clear(self.id);
  ++cnt.irq_tlb_count[self.id.get()];
}

// arch/x86/mm/tlb.c (v3.3) flush_tlb_others_ipi, via native_flush_tlb_others (no UV). Preemption is off;
// interrupts stay on while the sender spins, so two CPUs flushing each other both make progress.
sim::Task<void> native_flush_tlb_others(PerCpu& self, SharedCpumask& cpumask, MmStruct& mm, std::uint64_t va) {
  const trace::TraceSpan span(self.k.tracer(), self.cpu, "native_flush_tlb_others", "ipi");
  FlushGlobals& g = flush_globals(self);
  const std::uint32_t sender = g.tlb_vector_offset[self.id.get()];
  SmpFlushState& f = g.flush_state[sender];
  hw::Memory& m = mem(self);
  kernel::KernelCounters& cnt = self.k.counters();
  const bool locked = g.nr_cpu_ids > NUM_INVALIDATE_TLB_VECTORS;
  if (locked) {
    // raw_spin_lock(&f->tlbstate_lock): the lock shares the flush_state line.
    for (;;) {
      co_await m.touch(self.cpu, f.line, hw::Access::kLoad);
      if (f.tlbstate_lock == 0) {
        co_await m.touch(self.cpu, f.line, hw::Access::kRmw);
        if (f.tlbstate_lock == 0) {
          f.tlbstate_lock = 1;
          break;
        }
      }
      co_await m.wait_for_write(self.cpu, f.line);
    }
  }
  // f->flush_mm = mm; f->flush_va = va; cpumask_and(f->flush_cpumask, cpumask, cpu_online_mask) reads the mm's
  // mask; cpumask_andnot removes this CPU.
  Cpumask targets = co_await cpumask.read(m, self.cpu);
  targets.clear(self.id);
  co_await m.touch(self.cpu, f.line, hw::Access::kStore);
  f.flush_mm = &mm;
  f.flush_va = va;
  f.flush_cpumask = targets;
  if (!targets.empty()) {
    cnt.count(VmTlbEvent::NR_TLB_REMOTE_FLUSH);
    self.k.trace_tlb_flush(self, TlbFlushReason::TLB_REMOTE_SEND_IPI, va == TLB_FLUSH_ALL ? -1 : 1);
    // apic->send_IPI_mask(f->flush_cpumask, INVALIDATE_TLB_VECTOR_START + sender).
    std::vector<CpuId> to;
    targets.for_each([&to](CpuId c) { to.push_back(c); });
    cnt.ipis_sent += to.size();
    self.k.trace_ipi_send(self, to, INVALIDATE_TLB_VECTOR_START + static_cast<int>(sender));
    co_await self.k.sys().ipi().send(self.cpu, to, INVALIDATE_TLB_VECTOR_START + static_cast<int>(sender));
    // while (!cpumask_empty(f->flush_cpumask)) cpu_relax();
    for (;;) {
      co_await m.touch(self.cpu, f.line, hw::Access::kLoad);
      if (f.flush_cpumask.empty()) break;
      co_await m.wait_for_write(self.cpu, f.line);
    }
  }
  co_await m.touch(self.cpu, f.line, hw::Access::kStore);
  f.flush_mm = nullptr;
  f.flush_va = 0;
  if (locked) f.tlbstate_lock = 0;  // raw_spin_unlock: a store to the same line
}

namespace {

// flush_tlb_mm and flush_tlb_page share their shape: flush locally (or leave the mm when a kernel thread borrows
// it), then IPI the other CPUs in mm_cpumask. `current->mm != NULL` is read as cpu_tlbstate.state == TLBSTATE_OK:
// in this era only a user task runs with OK (kernel threads enter_lazy_tlb on the way in).
sim::Task<void> flush_tlb_mm_or_page(PerCpu& self, MmStruct& mm, std::uint64_t va) {
  TlbState& ts = cpu_tlbstate(self);
  kernel::KernelCounters& cnt = self.k.counters();
  if (ts.active_mm == &mm) {  // current->active_mm == mm
    if (ts.state == TLBSTATE_OK) {
      if (va == TLB_FLUSH_ALL) {
        co_await local_flush_tlb(self);
        cnt.count(VmTlbEvent::NR_TLB_LOCAL_FLUSH_ALL);
      } else {
        co_await flush_tlb_one(self, va);
        cnt.count(VmTlbEvent::NR_TLB_LOCAL_FLUSH_ONE);
      }
      self.k.trace_tlb_flush(self, TlbFlushReason::TLB_LOCAL_MM_SHOOTDOWN, va == TLB_FLUSH_ALL ? -1 : 1);
    } else {
      co_await leave_mm(self);
    }
  }
  // cpumask_any_but(mm_cpumask(mm), smp_processor_id()) < nr_cpu_ids: a read of the mask.
  const Cpumask mask = co_await mm.cpumask.read(mem(self), self.cpu);
  if (mask.any_but(self.id) < mask.size() && !planted(self.k.config(), Mutation::flush_sends_no_ipis)) {
    co_await native_flush_tlb_others(self, mm.cpumask, mm, va);
  }
}

// arch/x86/mm/tlb.c (v3.3) do_flush_tlb_all: the global flush, then leave the mm if lazy (not in state 0).
sim::Task<void> do_flush_tlb_all(PerCpu& self, const void*) {
  co_await flush_tlb_all_local(self);
  if (cpu_tlbstate(self).state == TLBSTATE_LAZY) co_await leave_mm(self);
}

}  // namespace

// arch/x86/mm/tlb.c (v3.3) flush_tlb_mm.
sim::Task<void> flush_tlb_mm(PerCpu& self, MmStruct& mm) { co_await flush_tlb_mm_or_page(self, mm, TLB_FLUSH_ALL); }

// arch/x86/mm/tlb.c (v3.3) flush_tlb_page.
sim::Task<void> flush_tlb_page(PerCpu& self, MmStruct& mm, std::uint64_t va) {
  co_await flush_tlb_mm_or_page(self, mm, va);
}

// arch/x86/mm/tlb.c (v3.3) flush_tlb_all: on_each_cpu(do_flush_tlb_all, NULL, 1) through the generic cross-call.
sim::Task<void> flush_tlb_all(PerCpu& self) {
  Cpumask all(self.k.ncpus());
  for (std::uint32_t c = 0; c < self.k.ncpus(); ++c) all.set(CpuId{c});
  co_await kernel::on_each_cpu_cond_mask(self, nullptr, do_flush_tlb_all, nullptr, true, all);
}

}  // namespace tlbsim::x86::v3
