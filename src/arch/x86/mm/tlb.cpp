// Models arch/x86/mm/tlb.c of Linux v5.17 (read against BUPT-OS/RROS arch/x86/mm/tlb.c @9e350f6b, the
// v5.13-v5.17 algorithm; see docs/model.md for what differs). Shared variables are awaited accesses on modeled
// lines; cpu_tlbstate is plain per-CPU data, except loaded_mm where a flush filter reads it remotely
// (should_flush_tlb, seed 002's later fix).
#include "arch/x86/mm/tlb.h"

#include <fmt/format.h>

#include <algorithm>

#include "arch/x86/mm/tlb_broadcast.h"
#include "arch/x86/options.h"
#include "kernel/barrier.h"
#include "kernel/smp.h"
#include "trace/tracer.h"

namespace tlbsim::x86 {

using kernel::barrier;
using kernel::serializing_instruction;
using kernel::smp_mb;
using kernel::TlbFlushReason;
using kernel::VmTlbEvent;

namespace {

hw::Memory& mem(PerCpu& self) { return self.k.mem(); }
const hw::TlbParams& tlbp(PerCpu& self) { return self.k.machine().tlb; }
Asid current_pcid(PerCpu& self) { return Asid{self.hw_tag}; }
// Whether other CPUs read this CPU's cpu_tlbstate.loaded_mm (should_flush_tlb; v6.15's mm_active_cpus_exceeds and
// finish_asid_transition): only then are its stores modeled as shared accesses.
bool remote_loaded_mm(PerCpu& self) {
  return self.k.config().on(Option::should_trim_cpumask) || cpu_feature_invlpgb(self);
}

// The trace's "mm N tlb_gen" counter track, after an increment.
void trace_tlb_gen(PerCpu& self, const MmStruct& mm, std::uint64_t gen) {
  if (self.k.tracer() == nullptr) return;
  self.k.tracer()->counter(self.cpu.now(), fmt::format("mm {} tlb_gen", mm.id()), "tlb_gen", static_cast<double>(gen));
}

}  // namespace

sim::Task<NewAsid> choose_new_asid(PerCpu& self, MmStruct& next, std::uint64_t next_tlb_gen, bool use_global) {
  TlbState& ts = cpu_tlbstate(self);
  if (tlbp(self).tag == hw::TlbTag::kNone) co_return NewAsid{0, true};  // !static_cpu_has(X86_FEATURE_PCID)
  // v6.15: TLB consistency for global ASIDs is kept by broadcast invalidation; they are always up to date.
  if (cpu_feature_invlpgb(self) && use_global) {
    const std::uint16_t global_asid = co_await mm_global_asid(self, next);
    if (global_asid != 0) co_return NewAsid{global_asid, false};
  }
  for (std::uint16_t asid = 0; asid < TLB_NR_DYN_ASIDS; ++asid) {
    if (ts.ctxs[asid].ctx_id != context(next).ctx_id) continue;
    co_return NewAsid{asid, ts.ctxs[asid].tlb_gen < next_tlb_gen &&
                                !planted(self.k.config(), Mutation::asid_slot_reuse_skips_tlb_gen)};
  }
  // No slot: take the next one round-robin (this_cpu_add_return(cpu_tlbstate.next_asid, 1) - 1).
  std::uint16_t new_asid = ts.next_asid++;
  if (new_asid >= TLB_NR_DYN_ASIDS) {
    new_asid = 0;
    ts.next_asid = 1;
  }
  co_return NewAsid{new_asid, !planted(self.k.config(), Mutation::asid_new_slot_skips_flush)};
}

sim::Task<void> load_new_mm_cr3(PerCpu& self, MmStruct& next, std::uint16_t new_asid, bool need_flush) {
  self.cr3_mm = &next;
  self.hw_tag = tlbp(self).tag == hw::TlbTag::kNone ? std::uint16_t{0} : kern_pcid(new_asid);
  ++(next.is_init_mm() ? mm_stats(self).cr3_to_init_mm : mm_stats(self).cr3_switch_mm);
  const Asid pcid{self.hw_tag};
  ++mm_stats(self).cr3_loads[self.id.get()];
  if (need_flush) {
    // build_cr3(): the write switches the page tables and flushes this PCID's non-global entries in one
    // instruction (the checker may run other CPUs between the effect and its cost, never inside the write).
    self.tlb.flush_tag(pcid);
    co_await self.cpu.delay(tlbp(self).cr3_write_flush);
  } else {
    co_await self.cpu.delay(tlbp(self).cr3_write);  // build_cr3_noflush(): CR3_NOFLUSH set
  }
  // MOV to CR3 is serializing: it completes once the CPU's earlier stores have left its store buffer (a step after
  // the loads before it, so another CPU may run between those loads and the drain, as on the hardware).
  serializing_instruction(self.k.mem(), self.cpu);
}

sim::Task<void> switch_mm_irqs_off(PerCpu& self, MmStruct& next) {
  const trace::TraceSpan span(self.k.tracer(), self.cpu, "switch_mm_irqs_off", "mm");
  TlbState& ts = cpu_tlbstate(self);
  hw::Memory& m = mem(self);
  MmStruct* real_prev = ts.loaded_mm;
  const std::uint16_t prev_asid = ts.loaded_mm_asid;
  const bool was_lazy = co_await m.read(self.cpu, cpu_state(self).is_lazy);
  std::uint16_t new_asid = prev_asid;
  bool need_flush = false;
  std::uint64_t next_tlb_gen = 0;

  // Only write the shared is_lazy line when it changes.
  if (was_lazy) co_await m.write(self.cpu, cpu_state(self).is_lazy, false);

  if (real_prev == &next) {
    // Not actually switching mm's: a thread switch, or leaving lazy mode.
    if (!next.is_init_mm()) {
      const bool in_mask = co_await next.cpumask.test_cpu(m, self.cpu, self.id);
      if (!in_mask) co_await next.cpumask.set_cpu(m, self.cpu, self.id);  // WARN_ON_ONCE repair
    }
    bool reload = false;
    if (cpu_feature_invlpgb(self)) {
      // v6.15: the mm is transitioning to a global ASID: reload with it.
      const bool needs_global = co_await mm_needs_global_asid(self, next, prev_asid);
      if (needs_global) {
        next_tlb_gen = co_await m.read(self.cpu, context(next).tlb_gen);
        const NewAsid ns = co_await choose_new_asid(self, next, next_tlb_gen);
        new_asid = ns.asid;
        need_flush = ns.need_flush;
        reload = true;
      } else if (is_global_asid(prev_asid)) {
        co_return;  // broadcast invalidation keeps this ASID up to date all the time
      }
    }
    if (!reload) {  // else: goto reload_tlb
      if (!was_lazy) co_return;
      if (planted(self.k.config(), Mutation::lazy_return_skips_tlb_gen_check)) co_return;  // trust the stale TLB
      // Read the tlb_gen to check whether a flush is needed. The barrier synchronizes with the tlb_gen increment of
      // the flush side: the is_lazy store above is visible before the load (mutation: the smp_mb() is gone).
      if (!planted(self.k.config(), Mutation::lazy_return_skips_smp_mb)) smp_mb(m, self.cpu);
      next_tlb_gen = co_await m.read(self.cpu, context(next).tlb_gen);
      if (ts.ctxs[prev_asid].tlb_gen == next_tlb_gen) co_return;
      // TLB contents went out of date while we were in lazy mode.
      new_asid = prev_asid;
      need_flush = true;
    }
  } else {
    // The fix of seed 002's later fix (fea4e317f9e7): mark the switch before this CPU starts receiving IPIs for next
    // and reads its tlb_gen, so that should_flush_tlb sees LOADED_MM_SWITCHING for the whole window.
    // Mutation: mark it where v6.13 did, after the tlb_gen read, while should_flush_tlb still trusts the mark.
    const bool switching_first = self.k.config().on(Option::should_flush_tlb_switching) &&
                                 !planted(self.k.config(), Mutation::loaded_mm_switching_marked_late);
    if (switching_first) {
      ts.loaded_mm = nullptr;  // LOADED_MM_SWITCHING
      co_await m.write(self.cpu, cpu_state(self).loaded_mm_id, CpuState::kLoadedMmSwitching);
      barrier(m, self.cpu);
    }
    if (self.k.config().on(Option::lazy_mm_cpumask)) {
      // Seed 002: leave this CPU in prev's mm_cpumask (atomic writes to it are expensive under contention); it is
      // removed lazily at TLB flush time. Set next's bit only when it is not already set.
      bool in_mask = true;
      if (!next.is_init_mm()) {
        in_mask = co_await next.cpumask.test_cpu(m, self.cpu, self.id);
        if (!in_mask) co_await next.cpumask.set_cpu(m, self.cpu, self.id);
      }
      // 83b0177a6c48: without cpumask_set_cpu's LOCK'd RMW nothing orders the is_lazy and loaded_mm stores above
      // before the tlb_gen load below, against the flush side's tlb_gen increment and its loads of them.
      if (in_mask && self.k.config().on(Option::switch_mm_smp_mb) &&
          !planted(self.k.config(), Mutation::switch_mm_cpumask_skips_smp_mb)) {
        smp_mb(m, self.cpu);
      }
    } else if (planted(self.k.config(), Mutation::switch_mm_reads_tlb_gen_before_cpumask)) {
      // Mutation: tlb_gen is read before this CPU is visible in next's mask, so a flush in between is missed.
      if (!real_prev->is_init_mm()) co_await real_prev->cpumask.clear_cpu(m, self.cpu, self.id);
      next_tlb_gen = co_await m.read(self.cpu, context(next).tlb_gen);
      if (!next.is_init_mm()) co_await next.cpumask.set_cpu(m, self.cpu, self.id);
    } else {
      // Stop remote flushes for the previous mm (skip init_mm: never flushed by IPI).
      if (!real_prev->is_init_mm()) co_await real_prev->cpumask.clear_cpu(m, self.cpu, self.id);
      // Start remote flushes and then read tlb_gen.
      if (!next.is_init_mm()) co_await next.cpumask.set_cpu(m, self.cpu, self.id);
    }
    if (!planted(self.k.config(), Mutation::switch_mm_reads_tlb_gen_before_cpumask)) {
      next_tlb_gen = co_await m.read(self.cpu, context(next).tlb_gen);
    }
    // Mutation: a CPU coming from another mm takes a dynamic slot that no INVLPGB of the mm reaches.
    const NewAsid ns = co_await choose_new_asid(
        self, next, next_tlb_gen, !planted(self.k.config(), Mutation::switch_from_other_mm_skips_global_asid));
    new_asid = ns.asid;
    need_flush = ns.need_flush;
    ts.loaded_mm = nullptr;  // LOADED_MM_SWITCHING
    if (remote_loaded_mm(self) && !switching_first) {
      co_await m.write(self.cpu, cpu_state(self).loaded_mm_id, CpuState::kLoadedMmSwitching);
    }
  }

  if (need_flush) {
    ts.ctxs[new_asid].ctx_id = context(next).ctx_id;
    ts.ctxs[new_asid].tlb_gen = next_tlb_gen;
    co_await load_new_mm_cr3(self, next, new_asid, true);
  } else {
    co_await load_new_mm_cr3(self, next, new_asid, false);
  }
  self.k.trace_tlb_flush(self, TlbFlushReason::TLB_FLUSH_ON_TASK_SWITCH, need_flush ? -1 : 0);
  ts.loaded_mm = &next;
  if (remote_loaded_mm(self) && cpu_state(self).loaded_mm_id.value != next.id()) {
    co_await m.write(self.cpu, cpu_state(self).loaded_mm_id, next.id());
  }
  ts.loaded_mm_asid = new_asid;
  // v6.15: finish_asid_transition reads loaded_mm_asid remotely.
  if (cpu_feature_invlpgb(self) && cpu_state(self).loaded_mm_asid.value != new_asid) {
    co_await m.write(self.cpu, cpu_state(self).loaded_mm_asid, new_asid);
  }
}

sim::Task<void> switch_mm(PerCpu& self, MmStruct& next) {
  const bool was_off = self.cpu.irqs_disabled();
  self.cpu.local_irq_disable();
  co_await switch_mm_irqs_off(self, next);
  if (!was_off) co_await self.cpu.local_irq_enable();
}

sim::Task<void> enter_lazy_tlb(PerCpu& self) {
  if (cpu_tlbstate(self).loaded_mm == &self.k.init_mm()) co_return;
  co_await mem(self).write(self.cpu, cpu_state(self).is_lazy, true);
}

sim::Task<void> leave_mm(PerCpu& self) {
  if (cpu_tlbstate(self).loaded_mm == &self.k.init_mm()) co_return;
  // WARN_ON(!this_cpu_read(cpu_tlbstate_shared.is_lazy)); then switch to init_mm.
  co_await switch_mm(self, self.k.init_mm());
}

sim::Task<void> flush_tlb_one_user(PerCpu& self, std::uint64_t addr) {
  co_await self.cpu.delay(tlbp(self).invlpg);
  serializing_instruction(self.k.mem(), self.cpu);  // INVLPG completes with the store buffer empty
  self.tlb.invlpg(current_pcid(self), kernel::vpn_of(addr));
}

sim::Task<void> flush_tlb_local(PerCpu& self) {
  ++mm_stats(self).cr3_loads[self.id.get()];
  ++mm_stats(self).cr3_flush;
  co_await self.cpu.delay(tlbp(self).cr3_write_flush);
  serializing_instruction(self.k.mem(), self.cpu);  // MOV to CR3
  self.tlb.flush_tag(current_pcid(self));
}

sim::Task<void> flush_tlb_func(PerCpu& self, const void* info) {
  const FlushTlbInfo& f = *static_cast<const FlushTlbInfo*>(info);
  const trace::TraceSpan span(self.k.tracer(), self.cpu, "flush_tlb_func", "tlb");
  TlbState& ts = cpu_tlbstate(self);
  hw::Memory& m = mem(self);
  kernel::KernelCounters& cnt = self.k.counters();
  MmStruct* loaded_mm = ts.loaded_mm;
  const kernel::KernelConfig& cfg = self.k.config();
  // v5.17 reads the mm's tlb_gen at entry, before any early return (seed 000 defers it, below).
  std::uint64_t mm_tlb_gen = 0;
  if (!cfg.on(Option::avoid_mm_tlb_gen_read)) mm_tlb_gen = co_await m.read(self.cpu, context(*loaded_mm).tlb_gen);
  std::uint16_t loaded_mm_asid = ts.loaded_mm_asid;
  const bool local = self.id.get() == f.initiating_cpu;
  std::uint64_t nr_invalidate = 0;

  if (!local) {
    ++cnt.irq_tlb_count[self.id.get()];
    cnt.count(VmTlbEvent::NR_TLB_REMOTE_FLUSH_RECEIVED);
    // Can only happen on remote CPUs.
    if (f.mm != nullptr && f.mm != loaded_mm) {
      // Seed 002: the CPU was left in the mm_cpumask of the target mm; clear it.
      if (cfg.on(Option::lazy_mm_cpumask)) {
        co_await f.mm->cpumask.clear_cpu(m, self.cpu, self.id);
        self.k.trace_tlb_flush(self, TlbFlushReason::TLB_REMOTE_WRONG_CPU, 0);  // the series' patch 2/3 tracepoint
      }
      co_return;
    }
  }

  if (loaded_mm->is_init_mm()) co_return;

  if (cpu_feature_invlpgb(self)) {
    // v6.15: reload the ASID if transitioning into a global ASID; broadcast ASIDs are always kept up to date.
    const bool needs_global = co_await mm_needs_global_asid(self, *loaded_mm, loaded_mm_asid);
    if (needs_global) {
      co_await switch_mm_irqs_off(self, *loaded_mm);
      loaded_mm_asid = ts.loaded_mm_asid;
    }
    if (is_global_asid(loaded_mm_asid)) co_return;
  }

  const bool lazy = co_await m.read(self.cpu, cpu_state(self).is_lazy);
  if (lazy && planted(self.k.config(), Mutation::lazy_flush_keeps_mm_loaded))
    co_return;  // Mutation: neither flush nor switch
  if (lazy) {
    // We're in lazy mode. We need to at least flush our paging-structure cache to avoid speculatively reading
    // garbage into our TLB. Since switching to init_mm is barely slower than a minimal flush, just switch.
    co_await switch_mm_irqs_off(self, self.k.init_mm());
    co_return;
  }

  const std::uint64_t local_tlb_gen = ts.ctxs[loaded_mm_asid].tlb_gen;
  if (cfg.on(Option::avoid_mm_tlb_gen_read)) {
    // Seed 000: the TLB is already up to date with respect to f->new_tlb_gen; checking mm_tlb_gen would only
    // pull the contended line. (The fix skips this for flushes without a generation: TLB_GENERATION_INVALID.)
    const bool has_gen = !cfg.on(Option::ignore_invalid_tlb_gen) || f.new_tlb_gen != 0;
    if (has_gen && f.new_tlb_gen <= local_tlb_gen) co_return;
    // Defer mm_tlb_gen reading as long as possible to avoid cache contention.
    mm_tlb_gen = co_await m.read(self.cpu, context(*loaded_mm).tlb_gen);
  }

  if (local_tlb_gen == mm_tlb_gen) {
    // There's nothing to do: we're already up to date (a concurrent flush caught us up).
  } else {
    // A partial flush is only safe when it takes us exactly one generation forward, to the mm's current
    // generation; otherwise (e.g. a full flush 1->2 and a partial 2->3 processed in reverse order) flush all.
    const bool one_ahead =
        f.new_tlb_gen == local_tlb_gen + 1 || planted(cfg, Mutation::partial_flush_skips_generations);
    const bool ranged = f.end != TLB_FLUSH_ALL && !cfg.on(Option::flush_tlb_func_always_full);
    if (ranged && one_ahead && f.new_tlb_gen == mm_tlb_gen) {
      nr_invalidate = (f.end - f.start) >> f.stride_shift;
      for (std::uint64_t addr = f.start; addr < f.end; addr += std::uint64_t{1} << f.stride_shift) {
        co_await flush_tlb_one_user(self, addr);
      }
      if (local) cnt.count(VmTlbEvent::NR_TLB_LOCAL_FLUSH_ONE, nr_invalidate);
    } else {
      nr_invalidate = TLB_FLUSH_ALL;
      co_await flush_tlb_local(self);
      if (local) cnt.count(VmTlbEvent::NR_TLB_LOCAL_FLUSH_ALL);
    }
    // Both paths above update our state to mm_tlb_gen.
    ts.ctxs[loaded_mm_asid].tlb_gen = mm_tlb_gen;
  }
  self.k.trace_tlb_flush(self,
                         !local            ? TlbFlushReason::TLB_REMOTE_SHOOTDOWN
                         : f.mm == nullptr ? TlbFlushReason::TLB_LOCAL_SHOOTDOWN
                                           : TlbFlushReason::TLB_LOCAL_MM_SHOOTDOWN,
                         nr_invalidate == TLB_FLUSH_ALL ? -1 : static_cast<std::int64_t>(nr_invalidate));
}

namespace {

// tlb_is_not_lazy(cpu): a read of the remote CPU's cpu_tlbstate_shared line.
sim::Task<bool> tlb_is_not_lazy(PerCpu& self, CpuId cpu, const void*) {
  const bool lazy = co_await mem(self).read(self.cpu, cpu_state(self.k.percpu(cpu)).is_lazy);
  co_return !lazy;
}

// should_flush_tlb(cpu, info) (seed 002's later fix): a lazy CPU is flushed at its next switch; a kernel flush
// (no mm) and a CPU running the mm are flushed; a CPU that left the mm only when this flush trims the mask. With
// the fix of that fix (fea4e317f9e7), loaded_mm is read first (then smp_rmb, then is_lazy) and a CPU in
// LOADED_MM_SWITCHING is flushed too.
sim::Task<bool> should_flush_tlb(PerCpu& self, CpuId cpu, const void* data) {
  const auto& info = *static_cast<const FlushTlbInfo*>(data);
  PerCpu& target = self.k.percpu(cpu);
  const bool fixed = self.k.config().on(Option::should_flush_tlb_switching);
  std::uint32_t loaded = 0;
  if (fixed) loaded = co_await mem(self).read(self.cpu, cpu_state(target).loaded_mm_id);
  const bool lazy = co_await mem(self).read(self.cpu, cpu_state(target).is_lazy);
  if (lazy) co_return false;
  if (info.mm == nullptr) co_return true;
  if (!fixed) loaded = co_await mem(self).read(self.cpu, cpu_state(target).loaded_mm_id);
  if (fixed && loaded == CpuState::kLoadedMmSwitching) co_return true;
  if (loaded == info.mm->id()) co_return true;
  co_return info.trim_cpumask;
}

// should_trim_cpumask(mm): true at most once per HZ jiffies per mm (READ_ONCE/WRITE_ONCE of next_trim_cpumask).
sim::Task<bool> should_trim_cpumask(PerCpu& self, MmStruct& mm) {
  const std::int64_t hz = std::max<std::int64_t>(self.k.config().HZ, 1);
  const std::int64_t jiffies = kernel::jiffies_at(self.cpu.now(), hz);
  const std::int64_t next = co_await mem(self).read(self.cpu, context(mm).next_trim_cpumask);
  if (jiffies - next <= 0) co_return false;  // !time_after(jiffies, next)
  co_await mem(self).write(self.cpu, context(mm).next_trim_cpumask, jiffies + hz);
  co_return true;
}

}  // namespace

sim::Task<void> native_flush_tlb_multi(PerCpu& self, const Cpumask& cpumask, const FlushTlbInfo& info) {
  self.k.counters().count(VmTlbEvent::NR_TLB_REMOTE_FLUSH);
  self.k.trace_tlb_flush(
      self, TlbFlushReason::TLB_REMOTE_SEND_IPI,
      info.end == TLB_FLUSH_ALL ? -1 : static_cast<std::int64_t>((info.end - info.start) >> kernel::kPageShift));
  // v6.15: while the mm transitions to a global ASID, every CPU of the mask is flushed, lazy or not.
  bool in_transition = false;
  if (cpu_feature_invlpgb(self)) in_transition = co_await mm_in_asid_transition(self, info.mm);
  if ((info.freed_tables && !planted(self.k.config(), Mutation::flush_skips_lazy_cpus_freeing_tables)) ||
      in_transition) {
    // Lazy CPUs must be flushed too: they may otherwise walk freed page tables speculatively.
    co_await kernel::on_each_cpu_cond_mask(self, nullptr, flush_tlb_func, &info, true, cpumask);
  } else if (self.k.config().on(Option::open_coded_cond_mask)) {
    // Commit 6035152d8eeb: filter lazy CPUs up front into the per-CPU flush_tlb_mask, then on_each_cpu_mask.
    Cpumask cond_cpumask(cpumask.size());
    for (std::uint32_t c = cpumask.next(0); c < cpumask.size(); c = cpumask.next(c + 1)) {
      const bool not_lazy = co_await tlb_is_not_lazy(self, CpuId{c}, nullptr);
      if (not_lazy) cond_cpumask.set(CpuId{c});
    }
    co_await kernel::on_each_cpu_cond_mask(self, nullptr, flush_tlb_func, &info, true, cond_cpumask);
  } else if (self.k.config().on(Option::should_trim_cpumask)) {
    co_await kernel::on_each_cpu_cond_mask(self, should_flush_tlb, flush_tlb_func, &info, true, cpumask);
  } else {
    // As benchmarked for seed 000 (the revert): the filter runs per CPU inside the queueing loop.
    co_await kernel::on_each_cpu_cond_mask(self, tlb_is_not_lazy, flush_tlb_func, &info, true, cpumask);
  }
}

sim::Task<void> flush_tlb_mm_range(PerCpu& self, MmStruct& mm, std::uint64_t start, std::uint64_t end,
                                   std::uint8_t stride_shift, bool freed_tables) {
  const trace::TraceSpan span(self.k.tracer(), self.cpu, "flush_tlb_mm_range", "tlb");
  hw::Memory& m = mem(self);
  // get_cpu(): preemption off (no preemption is modeled yet).
  if (end == TLB_FLUSH_ALL || ((end - start) >> stride_shift) > tlb_single_page_flush_ceiling) {
    start = 0;
    end = TLB_FLUSH_ALL;
  }
  // inc_mm_tlb_gen: atomic64_inc_return, a LOCK'd RMW, is also a full barrier that synchronizes with switch_mm():
  // the mask (and each CPU's is_lazy and loaded_mm) is read after the generation moves. Mutation: a plain load
  // and store, as if the increment were not atomic (its implied smp_mb() is gone).
  std::uint64_t new_tlb_gen = 0;
  if (planted(self.k.config(), Mutation::inc_mm_tlb_gen_unlocked)) {
    new_tlb_gen = 1 + co_await m.read(self.cpu, context(mm).tlb_gen);
    co_await m.write(self.cpu, context(mm).tlb_gen, new_tlb_gen);
  } else {
    new_tlb_gen = 1 + co_await m.rmw(self.cpu, context(mm).tlb_gen, [](std::uint64_t g) { return g + 1; });
  }
  trace_tlb_gen(self, mm, new_tlb_gen);
  FlushTlbInfo& info = cpu_state(self).flush_tlb_info;  // get_flush_tlb_info
  info = FlushTlbInfo{&mm, start, end, new_tlb_gen, self.id.get(), stride_shift, freed_tables};

  // v6.15: an mm with a global ASID is flushed everywhere by INVLPGB, this CPU included.
  if (cpu_feature_invlpgb(self)) {
    const std::uint16_t global_asid = co_await mm_global_asid(self, mm);
    if (global_asid != 0) {
      co_await broadcast_tlb_flush(self, info);
      co_return;
    }
  }
  const Cpumask mask = co_await mm.cpumask.read(m, self.cpu);
  if (mask.any_but(self.id) < mask.size() && !planted(self.k.config(), Mutation::flush_sends_no_ipis)) {
    if (self.k.config().on(Option::should_trim_cpumask)) info.trim_cpumask = co_await should_trim_cpumask(self, mm);
    co_await native_flush_tlb_multi(self, mask, info);
    if (cpu_feature_invlpgb(self)) co_await consider_global_asid(self, mm);
  } else if (&mm == cpu_tlbstate(self).loaded_mm) {
    self.cpu.local_irq_disable();
    co_await flush_tlb_func(self, &info);
    co_await self.cpu.local_irq_enable();
  }
}

sim::Task<void> flush_tlb_page(PerCpu& self, MmStruct& mm, std::uint64_t addr) {
  co_await flush_tlb_mm_range(self, mm, addr, addr + kernel::kPageSize, kernel::kPageShift, false);
}

sim::Task<void> flush_tlb_mm(PerCpu& self, MmStruct& mm) {
  co_await flush_tlb_mm_range(self, mm, 0, TLB_FLUSH_ALL, 0, true);
}

sim::Task<void> arch_tlbbatch_add_mm(PerCpu& self, ArchTlbflushUnmapBatch& batch, MmStruct& mm) {
  hw::Memory& m = mem(self);
  const std::uint64_t gen = 1 + co_await m.rmw(self.cpu, context(mm).tlb_gen, [](std::uint64_t g) { return g + 1; });
  trace_tlb_gen(self, mm, gen);  // inc_mm_tlb_gen
  const Cpumask mask = co_await mm.cpumask.read(m, self.cpu);
  batch.cpumask |= mask;
  batch.unmapped_pages = true;  // v6.15 (0b7eb55cb706): the INVLPGB flush is needed only when PTEs were cleared
}

sim::Task<void> arch_tlbbatch_flush(PerCpu& self, ArchTlbflushUnmapBatch& batch) {
  const trace::TraceSpan span(self.k.tracer(), self.cpu, "arch_tlbbatch_flush", "tlb");
  FlushTlbInfo& info = cpu_state(self).flush_tlb_info;
  info = FlushTlbInfo{nullptr, 0, TLB_FLUSH_ALL, 0, self.id.get(), 0, false};
  if (cpu_feature_invlpgb(self) && batch.unmapped_pages) {
    // v6.15: one INVLPGB of every non-global entry and a TLBSYNC, instead of IPIs (mutation: no TLBSYNC).
    if (planted(self.k.config(), Mutation::tlbbatch_invlpgb_skips_tlbsync)) {
      co_await invlpgb_flush_all_nonglobals_nosync(self);
    } else {
      co_await invlpgb_flush_all_nonglobals(self);
    }
    batch.unmapped_pages = false;
  } else if (batch.cpumask.any_but(self.id) < batch.cpumask.size()) {
    co_await native_flush_tlb_multi(self, batch.cpumask, info);
  } else if (batch.cpumask.test(self.id)) {
    self.cpu.local_irq_disable();
    co_await flush_tlb_func(self, &info);
    co_await self.cpu.local_irq_enable();
  }
  batch.cpumask.clear_all();
}

}  // namespace tlbsim::x86
