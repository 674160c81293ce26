// Models what the powerpc64 radix eras share: the context switch and TLB invalidation sequences of Linux v4.14
// (arch/powerpc/mm/tlb-radix.c, arch/powerpc/mm/mmu_context.c, arch/powerpc/mm/mmu_context_book3s64.c) and v6.2
// (arch/powerpc/mm/book3s64/radix_tlb.c); see radix_tlb.h for the trees read and the eras' files. Shared variables
// (mm_cpumask, mm->context.active_cpus) are awaited accesses on modeled lines; PIDR is per-CPU.
#include "arch/powerpc/mm/book3s64/radix_tlb.h"

#include <stdexcept>
#include <vector>

#include "arch/powerpc/options.h"
#include "kernel/barrier.h"
#include "kernel/sched/sched.h"
#include "mm/mmu_gather.h"
#include "trace/tracer.h"

namespace tlbsim::powerpc {

namespace {

hw::Memory& mem(PerCpu& self) { return self.k.mem(); }

// ptesync: a sync that also orders page-table stores before later invalidations and walks (Power ISA v3.0B, Book III
// 5.9.2); the first ptesync of a sequence, which the radix_tlbi_skips_ptesync mutation removes.
void ptesync(PerCpu& self, bool first = false) {
  if (first && planted(self.k.config(), Mutation::radix_tlbi_skips_ptesync)) return;  // Mutation
  kernel::ptesync(self.k.mem(), self.cpu);
}

// The invalidation has completed on `cpu`: no page walk it began before survives (the checker's POWER model).
void invalidated(PerCpu& self, CpuId cpu) {
  if (kernel::PteVisibility* v = self.k.frames().pte_visibility()) v->invalidated(cpu);
}
const hw::TlbParams& tlbp(PerCpu& self) { return self.k.machine().tlb; }
// Where a broadcast may visit only the TLBs that hold its PID: the kernel keeps the holders, and no observer wants
// every CPU told of the invalidation (the checker's PTE visibility). Null: visit every CPU.
hw::TagHolders* broadcast_holders(PerCpu& self) {
  return self.k.frames().pte_visibility() == nullptr ? self.k.tag_holders() : nullptr;
}
Asid tag_of(std::uint32_t pid) { return Asid{static_cast<std::uint16_t>(pid)}; }

}  // namespace

kernel::TaskStruct* current_task(PerCpu& self) {
  return self.k.sched() != nullptr ? self.k.sched()->rq(self.id).curr : nullptr;
}

MmStruct* current_mm(PerCpu& self) {
  if (kernel::TaskStruct* t = current_task(self)) return t->mm;
  return self.cr3_mm != nullptr && !self.cr3_mm->is_init_mm() ? self.cr3_mm : nullptr;
}

// ---- PIDs and the context switch (mmu_context_book3s64.c, mmu_context.c) ----

std::uint32_t RadixMmu::alloc_pid(MmStruct& mm) {
  // ida_alloc_range(&mmu_context_ida, mmu_base_pid = 1, ...): the lowest PID whose mm was destroyed (or never used).
  std::uint32_t pid = 1;
  while (pid < pids_.size() && pids_[pid] != nullptr && !pids_[pid]->freed) ++pid;
  if (pid >= (std::uint32_t{1} << 16)) throw std::runtime_error("radix PID space of the model (16 bits) exhausted");
  if (pid >= pids_.size()) pids_.resize(pid + 1, nullptr);
  pids_[pid] = &mm;
  context(mm).id = pid;
  return pid;
}

void RadixMmu::init_cpu(PerCpu& self, MmStruct& init_mm) {
  // The kernel runs in PID 0; init_mm's mm_cpumask is not populated at boot (before v6.6's c3c2e9375348).
  context(init_mm).id = 0;
  if (pids_.empty()) pids_.push_back(&init_mm);
  self.hw_tag = 0;
}

sim::Task<void> RadixMmu::radix__switch_mmu_context(PerCpu& self, MmStruct& next) {
  // mtspr(SPRN_PID, next->context.id); isync().
  self.cr3_mm = &next;
  self.hw_tag = static_cast<std::uint16_t>(context(next).id);
  ++(next.is_init_mm() ? stats.cr3_to_init_mm : stats.cr3_switch_mm);
  ++stats.cr3_loads[self.id.get()];
  co_await self.cpu.delay(tlbp(self).cr3_write);
}

sim::Task<void> RadixMmu::switch_mm_irqs_off(PerCpu& self, MmStruct& next) {
  const trace::TraceSpan span(self.k.tracer(), self.cpu, "switch_mm_irqs_off", "mm");
  if (context(next).id == MMU_NO_CONTEXT) alloc_pid(next);
  hw::Memory& m = mem(self);
  // Mark this context as having been used on the new CPU; prev's bit is never cleared here.
  const bool in_mask = co_await next.cpumask.test_cpu(m, self.cpu, self.id);
  if (!in_mask) {
    co_await next.cpumask.set_cpu(m, self.cpu, self.id);
    // inc_mm_active_cpus: atomic_inc, which returns nothing and so orders nothing on powerpc.
    co_await m.rmw_relaxed(self.cpu, context(next).active_cpus, [](int v) { return v + 1; });
    // smp_mb(): orders the mask store before the PID load that lets this CPU's MMU walk next's page tables, pairing
    // with the flush side's PTE clear -> mask load (present in v4.14 already; the flush side's barrier came later).
    if (!planted(self.k.config(), Mutation::radix_switch_mm_skips_smp_mb)) kernel::smp_mb(m, self.cpu);  // Mutation
  }
  if (self.cr3_mm == &next) co_return;  // prev == next
  // radix_kvm_prefetch_workaround (new on this CPU, HV mode, a sibling in a KVM guest): no guests are modeled.
  co_await radix__switch_mmu_context(self, next);
}

// enter_lazy_tlb is empty on Book3S-64: the CPU keeps the mm's PID loaded and stays in its mm_cpumask.
sim::Task<void> RadixMmu::enter_lazy_tlb(PerCpu&, MmStruct&) { co_return; }

// powerpc has no leave_mm: neither the cpuidle drivers nor the idle loop switch away from the lazy mm.
sim::Task<void> RadixMmu::leave_mm(PerCpu&) { co_return; }

sim::Task<bool> RadixMmu::mm_is_thread_local(PerCpu& self, MmStruct& mm) {
  const int active = co_await mem(self).read(self.cpu, context(mm).active_cpus);
  if (active > 1 && !planted(self.k.config(), Mutation::radix_tlbiel_with_remote_cpus)) co_return false;
  co_return co_await mm.cpumask.test_cpu(mem(self), self.cpu, self.id);
}

// ---- The invalidation sequences ----

sim::Task<void> RadixMmu::_tlbiel_pid(PerCpu& self, std::uint32_t pid, Ric ric) {
  // ptesync; tlbiel set 0 with ric; sets 1..127 with RIC_FLUSH_TLB; ptesync; ERAT invalidate; isync.
  ++stats.tlbiel_pid;
  ptesync(self, true);
  co_await self.cpu.delay(tlbp(self).flush_tag);
  (void)ric;  // the modeled TLB drops a tag's TLB and paging-structure entries together
  self.tlb.flush_tag(tag_of(pid));
  invalidated(self, self.id);
  ptesync(self);
}

sim::Task<void> RadixMmu::_tlbiel_va(PerCpu& self, std::uint64_t va, std::uint32_t pid) {
  // ptesync; tlbiel (one VA); ptesync.
  ++stats.tlbiel_va;
  ptesync(self, true);
  co_await self.cpu.delay(tlbp(self).invlpg);
  self.tlb.invlpg(tag_of(pid), kernel::vpn_of(va));
  invalidated(self, self.id);
  ptesync(self);
}

sim::Task<void> RadixMmu::_tlbie_pid(PerCpu& self, std::uint32_t pid, Ric ric) {
  const trace::TraceSpan span(self.k.tracer(), self.cpu, "_tlbie_pid", "tlb");
  // ptesync; tlbie (IS=1, this PID); eieio; tlbsync; ptesync. Every CPU drops the PID's entries; tlbsync waits
  // for all of them. POWER9 has MMU_FTR_LOCKLESS_TLBIE: no native_tlbie_lock, concurrent tlbies overlap.
  (void)ric;
  ++stats.tlbie_pid;
  ptesync(self, true);
  co_await self.cpu.delay(*tlbp(self).tlbie);
  if (hw::TagHolders* holders = broadcast_holders(self)) {
    holders->count_broadcast_flush_tag();
    const std::vector<std::uint32_t> cpus = holders->of(tag_of(pid));  // a copy: each flush removes its CPU
    for (const std::uint32_t c : cpus) self.k.percpu(CpuId{c}).tlb.flush_tag_broadcast(tag_of(pid));
  } else {
    for (std::uint32_t c = 0; c < self.k.ncpus(); ++c) {
      self.k.percpu(CpuId{c}).tlb.flush_tag(tag_of(pid));
      invalidated(self, CpuId{c});
    }
  }
  ptesync(self);
}

sim::Task<void> RadixMmu::_tlbie_va(PerCpu& self, std::uint64_t va, std::uint32_t pid) {
  const trace::TraceSpan span(self.k.tracer(), self.cpu, "_tlbie_va", "tlb");
  // ptesync; tlbie (one VA); eieio; tlbsync; ptesync: the whole sequence per page.
  ++stats.tlbie_va;
  ptesync(self, true);
  co_await self.cpu.delay(*tlbp(self).tlbie);
  if (hw::TagHolders* holders = broadcast_holders(self)) {
    holders->count_broadcast_invlpg();
    for (const std::uint32_t c : holders->of(tag_of(pid))) {
      self.k.percpu(CpuId{c}).tlb.invlpg_broadcast(tag_of(pid), kernel::vpn_of(va));
    }
  } else {
    for (std::uint32_t c = 0; c < self.k.ncpus(); ++c) {
      self.k.percpu(CpuId{c}).tlb.invlpg(tag_of(pid), kernel::vpn_of(va));
      invalidated(self, CpuId{c});
    }
  }
  ptesync(self);
}

sim::Task<void> RadixMmu::_tlbie_va_range(PerCpu& self, std::uint64_t start, std::uint64_t end, std::uint32_t pid,
                                          std::uint8_t page_shift) {
  const trace::TraceSpan span(self.k.tracer(), self.cpu, "_tlbie_va_range", "tlb");
  // ptesync; one tlbie per page; eieio; tlbsync; ptesync: one round trip, each further tlbie charged as a local
  // single-VA invalidation (no public figure for the issue cost of a tlbie; docs/calibration.md).
  const std::uint64_t page = std::uint64_t{1} << page_shift;
  const std::uint64_t pages = (end - start) >> page_shift;
  stats.tlbie_va += pages;
  ptesync(self, true);
  co_await self.cpu.delay(*tlbp(self).tlbie + tlbp(self).invlpg * static_cast<std::int64_t>(pages > 0 ? pages - 1 : 0));
  if (hw::TagHolders* holders = broadcast_holders(self)) {
    holders->count_broadcast_invlpg(pages);
    for (const std::uint32_t c : holders->of(tag_of(pid))) {
      for (std::uint64_t a = start; a < end; a += page)
        self.k.percpu(CpuId{c}).tlb.invlpg_broadcast(tag_of(pid), kernel::vpn_of(a));
    }
  } else {
    for (std::uint32_t c = 0; c < self.k.ncpus(); ++c) {
      for (std::uint64_t a = start; a < end; a += page)
        self.k.percpu(CpuId{c}).tlb.invlpg(tag_of(pid), kernel::vpn_of(a));
      invalidated(self, CpuId{c});
    }
  }
  ptesync(self);
}

sim::Task<void> RadixMmu::_tlbiel_va_range(PerCpu& self, std::uint64_t start, std::uint64_t end, std::uint32_t pid,
                                           std::uint8_t page_shift) {
  for (std::uint64_t a = start; a < end; a += std::uint64_t{1} << page_shift) co_await _tlbiel_va(self, a, pid);
}

sim::Task<void> RadixMmu::flush_tlb_power9_lpid(PerCpu& self) {
  // ptesync; 128 tlbiel (IS=2, RIC=2, partition scope); 128 more (process scope); ptesync. Every PID, PID 0 too.
  if (!tlbp(self).tlbiel_lpid) throw std::runtime_error("machine has no [tlb] tlbiel_lpid latency");
  ++stats.tlbiel_lpid;
  ptesync(self, true);
  co_await self.cpu.delay(*tlbp(self).tlbiel_lpid);
  self.tlb.flush_all();
  invalidated(self, self.id);
  ptesync(self);
}

// ---- The era-independent entry points; the era's class picks the flush ----

sim::Task<void> RadixMmu::radix__local_flush_tlb_mm(PerCpu& self, MmStruct& mm) {
  const std::uint32_t pid = context(mm).id;
  if (pid != MMU_NO_CONTEXT) co_await _tlbiel_pid(self, pid, Ric::RIC_FLUSH_TLB);
}

sim::Task<void> RadixMmu::tlb_flush(PerCpu& self, kernel::MmuGather& tlb) { co_await radix__tlb_flush(self, tlb); }

sim::Task<void> RadixMmu::flush_tlb_page(PerCpu& self, MmStruct& mm, std::uint64_t addr) {
  co_await radix__flush_tlb_page_psize(self, mm, addr);
}

sim::Task<void> RadixMmu::flush_tlb_mm(PerCpu& self, MmStruct& mm) { co_await radix__flush_tlb_mm(self, mm); }

}  // namespace tlbsim::powerpc
