// arch/arm64/mm/context.c and asm/mmu_context.h of Linux v6.5/v6.6 (read in the trees docs/model.md names, "arm64"):
// the ASID allocator with generations and rollover, and the context switch. asid_generation, mm->context.id and
// each CPU's active_asids are awaited accesses on modeled lines (read and exchanged without cpu_asid_lock); the rest is
// plain data under the lock.
#include "arch/arm64/mm/context.h"

#include <stdexcept>

#include "arch/arm64/options.h"
#include "kernel/barrier.h"
#include "trace/tracer.h"
#include "util/registry.h"

namespace tlbsim::arm64 {

namespace {

hw::Memory& mem(PerCpu& self) { return self.k.mem(); }
const hw::TlbParams& tlbp(PerCpu& self) { return self.k.machine().tlb; }

}  // namespace

AsidAllocator::AsidAllocator(hw::CoherenceModel& model, kernel::SpinlockKind kind, std::uint32_t bits,
                             std::uint32_t ncpus)
    : asid_bits(bits),
      cpu_asid_lock(model, "cpu_asid_lock", kind),
      // asids_init: the first generation is ASID_FIRST_VERSION; ASID 0 is never handed out (the reserved one).
      asid_generation{std::uint64_t{1} << bits, model.add_line("asid_generation")},
      asid_map(std::size_t{1} << bits, false),
      reserved_asids(ncpus, 0),
      tlb_flush_pending(ncpus, false) {
  for (std::uint32_t c = 0; c < ncpus; ++c) active_asids.push_back({0, model.add_line("active_asids")});
}

void Arm64Mmu::init_cpu(PerCpu& self, MmStruct& init_mm) {
  if (!asids_) {
    // get_cpu_asid_bits: ID_AA64MMFR0_EL1.ASIDBits (the machine's [tlb] tag_bits; the checker may narrow it).
    const std::uint32_t bits = self.k.machine().tlb.tag_bits;
    if (bits < 2 || bits > 16) throw std::runtime_error("arm64 ASID width must be 2..16 bits");
    asids_ = std::make_unique<AsidAllocator>(self.k.sys().coherence(), spinlock_kind(), bits, self.k.ncpus());
  }
  // The CPU boots with the reserved TTBR0 and ASID 0 (init_mm's context.id is 0).
  (void)init_mm;
  self.hw_tag = 0;
}

// flush_context: a new generation. Every CPU's active ASID (or, where a CPU has not switched since the last rollover,
// its reserved one) stays allocated and becomes reserved; every CPU flushes its TLB at its next slow-path switch.
sim::Task<void> Arm64Mmu::flush_context(PerCpu& self) {
  AsidAllocator& a = asids();
  // set_reserved_asid_bits: no pinned ASIDs, KPTI off: the whole map is cleared.
  std::fill(a.asid_map.begin(), a.asid_map.end(), false);
  const bool reserve = !planted(self.k.config(), Mutation::flush_context_skips_reserved_asids);  // Mutation
  for (std::uint32_t i = 0; i < self.k.ncpus(); ++i) {
    // atomic64_xchg_relaxed(&per_cpu(active_asids, i), 0): totally ordered against the fast path's cmpxchg on the
    // same variable (see check_and_switch_context).
    std::uint64_t asid =
        co_await mem(self).rmw_relaxed(self.cpu, a.active_asids[i], [](std::uint64_t) { return std::uint64_t{0}; });
    // A CPU that has been through a rollover without running another task keeps its reserved ASID: the only trace of
    // the process it still runs.
    if (asid == 0) asid = a.reserved_asids[i];
    if (reserve) {
      a.asid_map[a.ctxid2asid(asid)] = true;
      a.reserved_asids[i] = asid;
    } else {
      a.reserved_asids[i] = 0;
    }
  }
  // Queue a TLB invalidation for each CPU to perform on its next context switch.
  if (!planted(self.k.config(), Mutation::flush_context_skips_tlb_flush_pending)) {  // Mutation
    std::fill(a.tlb_flush_pending.begin(), a.tlb_flush_pending.end(), true);
  }
  ++stats.asid_rollovers;
}

bool Arm64Mmu::check_update_reserved_asid(std::uint64_t asid, std::uint64_t newasid) {
  // Every CPU holding asid as reserved gets it in the new generation (all of them: a CPU may have been through
  // several rollovers without switching).
  bool hit = false;
  for (std::uint64_t& r : asids().reserved_asids) {
    if (r == asid) {
      hit = true;
      r = newasid;
    }
  }
  return hit;
}

sim::Task<std::uint64_t> Arm64Mmu::new_context(PerCpu& self, MmStruct& mm) {
  AsidAllocator& a = asids();
  std::uint64_t asid = co_await mem(self).read(self.cpu, context(mm).id);
  std::uint64_t generation = co_await mem(self).read(self.cpu, a.asid_generation);
  ++stats.new_context;
  if (asid != 0) {
    const std::uint64_t newasid = a.ctxid2asid(asid) | generation;
    // A running task's ASID survived the rollover as reserved: keep it.
    if (check_update_reserved_asid(asid, newasid)) co_return newasid;
    // (context.pinned: not modeled.) Otherwise the old ASID is reused if nobody took it in this generation.
    if (!a.asid_map[a.ctxid2asid(asid)]) {
      a.asid_map[a.ctxid2asid(asid)] = true;
      co_return newasid;
    }
  }
  // Allocate a free ASID: from cur_idx up; none left: a new generation, and search again from 1.
  std::uint64_t found = a.cur_idx;
  while (found < a.NUM_USER_ASIDS() && a.asid_map[found]) ++found;
  if (found == a.NUM_USER_ASIDS()) {
    // atomic64_add_return_relaxed(ASID_FIRST_VERSION, &asid_generation).
    generation = (co_await mem(self).rmw_relaxed(self.cpu, a.asid_generation,
                                                 [&a](std::uint64_t g) { return g + a.ASID_FIRST_VERSION(); })) +
                 a.ASID_FIRST_VERSION();
    co_await flush_context(self);
    // There are more ASIDs than CPUs, so this always succeeds.
    found = 1;
    while (found < a.NUM_USER_ASIDS() && a.asid_map[found]) ++found;
    if (found == a.NUM_USER_ASIDS()) throw std::logic_error("arm64 new_context: no free ASID after a rollover");
  }
  a.asid_map[found] = true;
  a.cur_idx = found;
  co_return found | generation;
}

sim::Task<void> Arm64Mmu::check_and_switch_context(PerCpu& self, MmStruct& mm) {
  const trace::TraceSpan span(self.k.tracer(), self.cpu, "check_and_switch_context", "mm");
  AsidAllocator& a = asids();
  hw::Memory& m = mem(self);
  hw::Shared<std::uint64_t>& active = a.active_asids[self.id.get()];
  // (system_supports_cnp: no modeled part has CnP.)
  std::uint64_t asid = co_await m.read(self.cpu, context(mm).id);
  // The fast path. If active_asids is non-zero and the ASID is of the current generation, a relaxed cmpxchg sets it:
  // racing with a rollover either returns zero (and the lock orders this CPU after the rollover) or a valid ASID,
  // which the rollover's xchg then reserves: RMWs of one location are totally ordered.
  const std::uint64_t old_active_asid = co_await m.read(self.cpu, active);
  const std::uint64_t generation = co_await m.read(self.cpu, a.asid_generation);
  const bool gen_match = ((asid ^ generation) >> a.asid_bits) == 0;
  if (old_active_asid != 0 && gen_match) {
    bool swapped = false;
    if (planted(self.k.config(), Mutation::switch_context_fastpath_plain_store)) {  // Mutation
      co_await m.write(self.cpu, active, asid);
      swapped = true;
    } else {
      const std::uint64_t was =
          co_await m.rmw_relaxed(self.cpu, active, [&](std::uint64_t v) { return v == old_active_asid ? asid : v; });
      swapped = was == old_active_asid;
    }
    if (swapped) {
      ++stats.switch_fastpath;
      co_await cpu_switch_mm(self, mm, asid);
      co_return;
    }
  }
  // The slow path, under cpu_asid_lock (raw_spin_lock_irqsave: switch_mm runs with interrupts off).
  ++stats.switch_slowpath;
  co_await a.cpu_asid_lock.lock(m, self.cpu);
  // Check that our ASID belongs to the current generation.
  asid = co_await m.read(self.cpu, context(mm).id);
  const std::uint64_t gen_now = co_await m.read(self.cpu, a.asid_generation);
  if (((asid ^ gen_now) >> a.asid_bits) != 0) {
    asid = co_await new_context(self, mm);
    co_await m.write(self.cpu, context(mm).id, asid);
  }
  if (a.tlb_flush_pending[self.id.get()]) {
    a.tlb_flush_pending[self.id.get()] = false;
    co_await local_flush_tlb_all(self);
  }
  co_await m.write(self.cpu, active, asid);
  co_await a.cpu_asid_lock.unlock(m, self.cpu);
  co_await cpu_switch_mm(self, mm, asid);
}

sim::Task<void> Arm64Mmu::cpu_switch_mm(PerCpu& self, MmStruct& mm, std::uint64_t asid) {
  // (arm64_apply_bp_hardening: not modeled.) cpu_set_reserved_ttbr0; cpu_do_switch_mm: TTBR1_EL1 gets the ASID,
  // TTBR0_EL1 the mm's pgd, each followed by an isb().
  self.cr3_mm = &mm;
  self.hw_tag = static_cast<std::uint16_t>(asids().ctxid2asid(asid));
  ++stats.cr3_switch_mm;
  ++stats.cr3_loads[self.id.get()];
  kernel::serializing_instruction(mem(self), self.cpu);  // isb
  co_await self.cpu.delay(tlbp(self).cr3_write);
}

// switch_mm(prev, next, tsk) -> __switch_mm(next) when prev != next: init_mm only sets the reserved TTBR0 (no user
// translations; the ASID in TTBR1 is kept), any other mm goes through check_and_switch_context.
sim::Task<void> Arm64Mmu::switch_mm_irqs_off(PerCpu& self, MmStruct& next) {
  const trace::TraceSpan span(self.k.tracer(), self.cpu, "switch_mm", "mm");
  if (self.cr3_mm == &next) co_return;
  if (next.is_init_mm()) {
    // cpu_set_reserved_ttbr0.
    self.cr3_mm = &next;
    ++stats.cr3_to_init_mm;
    ++stats.cr3_loads[self.id.get()];
    co_await self.cpu.delay(tlbp(self).cr3_write);
    co_return;
  }
  co_await check_and_switch_context(self, next);
}

// enter_lazy_tlb is empty on arm64 (asm-generic): the CPU keeps the mm's TTBR0 and ASID.
sim::Task<void> Arm64Mmu::enter_lazy_tlb(PerCpu&, MmStruct&) { co_return; }

sim::Task<void> Arm64Mmu::switch_to(PerCpu& self) { co_await dsb_ish(self); }

// No arm64 idle driver switches away from the lazy mm.
sim::Task<void> Arm64Mmu::leave_mm(PerCpu&) { co_return; }

TLBSIM_REGISTER(kernel::ArchMmu, Arm64Mmu, "arm64-6.5",
                "arm64 v6.5-v6.6: ASID generations and rollover (context.c), broadcast TLBI + DSB ISH, no IPIs");

}  // namespace tlbsim::arm64
