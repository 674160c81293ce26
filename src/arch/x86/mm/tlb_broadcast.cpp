// Models the broadcast-invalidation code of Linux v6.15 (arch/x86/mm/tlb.c: global ASID allocation,
// consider_global_asid, finish_asid_transition, broadcast_tlb_flush; asm/tlbflush.h: mm_global_asid and friends;
// asm/tlb.h: the INVLPGB and TLBSYNC helpers). mm->context.global_asid and asid_transition, and the remote reads of
// cpu_tlbstate.loaded_mm, loaded_mm_asid and is_lazy, are awaited accesses on modeled lines; the allocator's bitmaps
// are plain data under global_asid_lock.
#include "arch/x86/mm/tlb_broadcast.h"

#include <algorithm>

#include "arch/x86/mm/mm_stats.h"
#include "arch/x86/mm/tlb.h"
#include "arch/x86/options.h"
#include "kernel/barrier.h"
#include "kernel/sched/sched.h"
#include "trace/tracer.h"

namespace tlbsim::x86 {

namespace {

hw::Memory& mem(PerCpu& self) { return self.k.mem(); }
const hw::TlbParams& tlbp(PerCpu& self) { return self.k.machine().tlb; }
constexpr std::uint8_t PMD_SHIFT = 21;

// PTI_CONSUMED_PCID_BITS: CONFIG_MITIGATION_PAGE_TABLE_ISOLATION is built into distribution kernels, so one PCID bit
// is reserved whether or not the CPU needs PTI (Zen 3 does not).
constexpr std::uint32_t PTI_CONSUMED_PCID_BITS = 1;

GlobalAsidSpace& global_asid_space(PerCpu& self) {
  auto& mmu = static_cast<X86Mmu&>(self.k.arch());
  if (mmu.global_asids == nullptr) {
    const std::uint32_t bits = self.k.machine().tlb.tag_bits - PTI_CONSUMED_PCID_BITS;
    const auto max_asid = static_cast<std::uint16_t>((1U << bits) - 2);  // MAX_ASID_AVAILABLE
    mmu.global_asids = std::make_unique<GlobalAsidSpace>(self.k.sys().coherence(), mmu.spinlock_kind(), max_asid);
  }
  return *mmu.global_asids;
}

// current->pid: the task this CPU runs; the checker's scenarios run without tasks, as the idle task (pid 0).
std::uint32_t current_pid(PerCpu& self) {
  kernel::Sched* s = self.k.sched();
  if (s == nullptr || s->rq(self.id).curr == nullptr) return 0;
  return s->rq(self.id).curr->pid;
}

// reset_global_asid_space: at the wrap of the search, a flush of every non-global entry makes the ASIDs freed since
// the last wrap safe to hand out again. Contract: global_asid_lock held.
sim::Task<void> reset_global_asid_space(PerCpu& self, GlobalAsidSpace& g) {
  ++mm_stats(self).global_asid_space_reset;
  co_await invlpgb_flush_all_nonglobals(self);
  for (std::size_t i = 0; i < g.global_asid_used.size(); ++i) {
    if (g.global_asid_freed[i]) g.global_asid_used[i] = false;  // bitmap_andnot
  }
  std::fill(g.global_asid_freed.begin(), g.global_asid_freed.end(), false);
  g.last_global_asid = TLB_NR_DYN_ASIDS;  // restart the search at the start of the global space
}

// allocate_global_asid: the next clear bit from last_global_asid. Contract: global_asid_lock held.
sim::Task<std::uint16_t> allocate_global_asid(PerCpu& self, GlobalAsidSpace& g) {
  if (g.last_global_asid >= g.MAX_ASID_AVAILABLE - 1) co_await reset_global_asid_space(self, g);
  std::uint16_t asid = g.last_global_asid;  // find_next_zero_bit(global_asid_used, MAX_ASID_AVAILABLE, last)
  while (asid < g.MAX_ASID_AVAILABLE && g.global_asid_used[asid]) ++asid;
  if (asid >= g.MAX_ASID_AVAILABLE && g.global_asid_available == 0) {
    self.k.events().report_kernel_warning(self.id, 0, "Unable to allocate global ASID", self.cpu.now());
    co_return 0;
  }
  g.global_asid_used[asid] = true;
  g.last_global_asid = asid;
  --g.global_asid_available;
  co_return asid;
}

// mm_assign_global_asid: asid_transition is set before global_asid is published with smp_store_release, so that
// whoever sees the global ASID (broadcast_tlb_flush -> finish_asid_transition) sees the transition.
sim::Task<void> mm_assign_global_asid(PerCpu& self, MmStruct& mm, std::uint16_t asid) {
  ++mm_stats(self).global_asid_assigned;
  co_await mem(self).write(self.cpu, context(mm).asid_transition, true);
  kernel::smp_store_release_fence(mem(self), self.cpu);
  co_await mem(self).write(self.cpu, context(mm).global_asid, asid);
}

// mm_active_cpus_exceeds(mm, threshold): more than `threshold` CPUs of mm_cpumask have the mm loaded and are not
// lazy (plain per_cpu reads of other CPUs' cpu_tlbstate and cpu_tlbstate_shared).
sim::Task<bool> mm_active_cpus_exceeds(PerCpu& self, MmStruct& mm, std::uint32_t threshold) {
  const Cpumask mask = co_await mm.cpumask.read(mem(self), self.cpu);
  if (mask.weight() <= threshold) co_return false;  // the quick check
  std::uint32_t count = 0;
  for (std::uint32_t c = mask.next(0); c < mask.size(); c = mask.next(c + 1)) {
    CpuState& st = cpu_state(self.k.percpu(CpuId{c}));
    const std::uint32_t loaded = co_await mem(self).read(self.cpu, st.loaded_mm_id);
    if (loaded != mm.id()) continue;
    const bool lazy = co_await mem(self).read(self.cpu, st.is_lazy);
    if (lazy) continue;
    if (++count > threshold) co_return true;
  }
  co_return false;
}

// finish_asid_transition(info): while a CPU running the mm is still on a dynamic ASID, send the flush by IPI (its
// flush_tlb_func moves it to the global ASID); once none is, the transition is over.
sim::Task<void> finish_asid_transition(PerCpu& self, const FlushTlbInfo& info) {
  MmStruct& mm = *info.mm;
  const std::uint16_t bc_asid = co_await mm_global_asid(self, mm);
  const bool in_transition = co_await mm_in_asid_transition(self, &mm);
  if (!in_transition) co_return;
  const Cpumask mask = co_await mm.cpumask.read(mem(self), self.cpu);
  for (std::uint32_t c = mask.next(0); c < mask.size(); c = mask.next(c + 1)) {
    CpuState& st = cpu_state(self.k.percpu(CpuId{c}));
    // The remote CPU is context switching: wait for it to finish (it may be switching to the mm on an old ASID).
    std::uint32_t loaded = co_await mem(self).read(self.cpu, st.loaded_mm_id);
    while (loaded == CpuState::kLoadedMmSwitching) {
      co_await mem(self).wait_for_write(self.cpu, st.loaded_mm_id.line);  // cpu_relax()
      loaded = co_await mem(self).read(self.cpu, st.loaded_mm_id);
    }
    if (loaded != mm.id()) continue;
    const std::uint16_t asid = co_await mem(self).read(self.cpu, st.loaded_mm_asid);
    if (asid != bc_asid && !planted(self.k.config(), Mutation::asid_transition_skips_stragglers)) {
      // At least one CPU is not on the global ASID yet: the IPI makes it transition (a race with it switching away
      // costs a harmless extra IPI).
      ++mm_stats(self).asid_transition_ipis;
      const Cpumask targets = co_await mm.cpumask.read(mem(self), self.cpu);
      co_await native_flush_tlb_multi(self, targets, info);
      co_return;
    }
  }
  co_await mm_clear_asid_transition(self, mm);  // every CPU running the mm is on the global ASID
}

}  // namespace

GlobalAsidSpace::GlobalAsidSpace(hw::CoherenceModel& model, kernel::SpinlockKind kind, std::uint16_t max_asid_available)
    : global_asid_lock(model, "global_asid_lock", kind),
      MAX_ASID_AVAILABLE(max_asid_available),
      last_global_asid(max_asid_available),
      global_asid_used((max_asid_available + 63U) / 64U * 64U, false),
      global_asid_freed((max_asid_available + 63U) / 64U * 64U, false),
      global_asid_available(max_asid_available - TLB_NR_DYN_ASIDS - 1) {}

bool cpu_feature_invlpgb(PerCpu& self) {
  return self.k.config().on(Option::BROADCAST_TLB_FLUSH) && tlbp(self).invlpgb.has_value();
}

sim::Task<std::uint16_t> mm_global_asid(PerCpu& self, MmStruct& mm) {
  if (!cpu_feature_invlpgb(self)) co_return 0;
  const std::uint16_t asid = co_await mem(self).read(self.cpu, context(mm).global_asid);
  kernel::smp_load_acquire_fence(mem(self), self.cpu);
  co_return asid;
}

sim::Task<bool> mm_in_asid_transition(PerCpu& self, MmStruct* mm) {
  if (!cpu_feature_invlpgb(self) || mm == nullptr) co_return false;
  const bool t = co_await mem(self).read(self.cpu, context(*mm).asid_transition);
  co_return t;
}

sim::Task<void> mm_clear_asid_transition(PerCpu& self, MmStruct& mm) {
  ++mm_stats(self).asid_transition_done;
  co_await mem(self).write(self.cpu, context(mm).asid_transition, false);
}

sim::Task<bool> mm_needs_global_asid(PerCpu& self, MmStruct& mm, std::uint16_t asid) {
  const std::uint16_t global_asid = co_await mm_global_asid(self, mm);
  if (!cpu_feature_invlpgb(self)) co_return false;
  co_return global_asid != 0 && asid != global_asid;  // the process is transitioning to a global ASID
}

sim::Task<void> consider_global_asid(PerCpu& self, MmStruct& mm) {
  if (!cpu_feature_invlpgb(self)) co_return;
  // Check every once in a while: when the task's pid and jiffies agree in their low 5 bits.
  const std::int64_t hz = std::max<std::int64_t>(self.k.config().HZ, 1);
  const std::int64_t jiffies = kernel::jiffies_at(self.cpu.now(), hz);
  if ((current_pid(self) & 0x1fU) != (static_cast<std::uint64_t>(jiffies) & 0x1fU)) co_return;
  // Assign a global ASID if the process is active on 4 or more CPUs simultaneously.
  const bool active = co_await mm_active_cpus_exceeds(self, mm, 3);
  if (active) co_await use_global_asid(self, mm);
}

sim::Task<void> use_global_asid(PerCpu& self, MmStruct& mm) {
  GlobalAsidSpace& g = global_asid_space(self);
  const bool irqs_on = !self.cpu.irqs_disabled();
  co_await g.global_asid_lock.lock_irqsave(mem(self), self.cpu, self.k.arch().spin_lock_flags_enables_irqs());
  const std::uint16_t have = co_await mm_global_asid(self, mm);
  // Already using broadcast invalidation; or the last global ASID was taken while we waited for the lock.
  if (have == 0 && g.global_asid_available != 0) {
    const std::uint16_t asid = co_await allocate_global_asid(self, g);
    if (asid != 0) co_await mm_assign_global_asid(self, mm, asid);
  }
  co_await g.global_asid_lock.unlock(mem(self), self.cpu);
  if (irqs_on) co_await self.cpu.local_irq_enable();
}

sim::Task<void> mm_free_global_asid(PerCpu& self, MmStruct& mm) {
  if (!cpu_feature_invlpgb(self)) co_return;
  const std::uint16_t asid = co_await mm_global_asid(self, mm);
  if (asid == 0) co_return;
  GlobalAsidSpace& g = global_asid_space(self);
  const bool irqs_on = !self.cpu.irqs_disabled();
  co_await g.global_asid_lock.lock_irqsave(mem(self), self.cpu, self.k.arch().spin_lock_flags_enables_irqs());
  // The global ASID can be reused only after the flush at the wrap-around.
  g.global_asid_freed[asid] = true;
  co_await mem(self).write(self.cpu, context(mm).global_asid, std::uint16_t{0});
  ++g.global_asid_available;
  co_await g.global_asid_lock.unlock(mem(self), self.cpu);
  if (irqs_on) co_await self.cpu.local_irq_enable();
}

sim::Task<void> broadcast_tlb_flush(PerCpu& self, const FlushTlbInfo& info) {
  const trace::TraceSpan span(self.k.tracer(), self.cpu, "broadcast_tlb_flush", "tlb");
  const bool pmd = info.stride_shift == PMD_SHIFT;
  const std::uint16_t asid = co_await mm_global_asid(self, *info.mm);
  // INVLPGBs are kicked off asynchronously; inc_mm_tlb_gen ordered the page-table updates before them. No PTI on
  // the modeled machines (no CPU with INVLPGB needs it): no user-PCID INVLPGBs.
  if (info.end == TLB_FLUSH_ALL) {
    co_await invlpgb_flush_single_pcid_nosync(self, kern_pcid(asid));
  } else {
    std::uint64_t addr = info.start;
    do {
      std::uint64_t nr = 1;
      if (info.stride_shift <= PMD_SHIFT) {
        nr = (info.end - addr) >> info.stride_shift;
        nr = std::clamp<std::uint64_t>(nr, 1, tlbp(self).invlpgb_count_max);
      }
      co_await invlpgb_flush_user_nr_nosync(self, kern_pcid(asid), addr, static_cast<std::uint32_t>(nr), pmd);
      addr += nr << info.stride_shift;
    } while (addr < info.end);
  }
  co_await finish_asid_transition(self, info);
  // Wait for the INVLPGBs kicked off above to finish. Mutation: return without waiting.
  if (!planted(self.k.config(), Mutation::broadcast_flush_skips_tlbsync)) co_await __tlbsync(self);
}

namespace {

// INVLPGB: the issuing CPU pays the issue cost; the invalidation waits in its queue for a TLBSYNC.
sim::Task<void> invlpgb(PerCpu& self, const hw::Invlpgb& op) {
  ++mm_stats(self).invlpgb;
  co_await self.cpu.delay(*tlbp(self).invlpgb);
  cpu_state(self).invlpgb.issue(op);
}

}  // namespace

sim::Task<void> invlpgb_flush_user_nr_nosync(PerCpu& self, std::uint16_t pcid, std::uint64_t addr, std::uint32_t nr,
                                             bool pmd_stride) {
  co_await invlpgb(self, hw::Invlpgb{hw::Invlpgb::Kind::kVa, Asid{pcid}, kernel::vpn_of(addr), nr,
                                     pmd_stride ? PMD_SHIFT : std::uint8_t{12}});
}

sim::Task<void> invlpgb_flush_single_pcid_nosync(PerCpu& self, std::uint16_t pcid) {
  co_await invlpgb(self, hw::Invlpgb{hw::Invlpgb::Kind::kPcid, Asid{pcid}, Vpn{0}, 1, 12});
}

sim::Task<void> invlpgb_flush_all_nonglobals_nosync(PerCpu& self) { co_await invlpgb(self, hw::Invlpgb{}); }

sim::Task<void> invlpgb_flush_all_nonglobals(PerCpu& self) {
  co_await invlpgb_flush_all_nonglobals_nosync(self);
  co_await __tlbsync(self);
}

sim::Task<void> __tlbsync(PerCpu& self) {
  ++mm_stats(self).tlbsync;
  co_await self.cpu.delay(*tlbp(self).tlbsync);
  // Every INVLPGB this CPU issued has now completed in every CPU's TLB.
  cpu_state(self).invlpgb.complete([&](auto&& apply) {
    for (std::uint32_t c = 0; c < self.k.ncpus(); ++c) apply(self.k.percpu(CpuId{c}).tlb);
  });
}

}  // namespace tlbsim::x86
