// The powerpc64 radix ArchMmu of Linux v6.2 (seed 004's base): the flushes of arch/powerpc/mm/book3s64/radix_tlb.c,
// read in tdavenvidia/linux-nvidia-6.5 @16339f38, and seed 004 patch 5/5. flush_type_needed picks none, tlbiel or
// tlbie and trims mm_cpumask (exit_flush_lazy_tlbs). What v6.2 shares with v4.14 (PIDs, the context switch, the
// tlbie/tlbiel sequences) is RadixMmu in radix_tlb.h/radix_tlb.cpp; this file holds only v6.2's overrides and
// v6.2-only state. Shared variables (mm_cpumask, mm->context.active_cpus, mm_users) are awaited accesses on
// modeled lines; the trim clock is per-CPU.
#include <vector>

#include "arch/powerpc/mm/book3s64/radix_tlb.h"
#include "arch/powerpc/options.h"
#include "kernel/barrier.h"
#include "kernel/fork.h"
#include "kernel/smp.h"
#include "mm/mmu_gather.h"
#include "trace/tracer.h"
#include "util/registry.h"

namespace tlbsim::powerpc {

namespace {

// PMD_SIZE of the model's 4 KiB-page tables: a range this large also flushes the page-walk cache.
constexpr std::uint64_t kPmdSize = kernel::kPtesPerTable * kernel::kPageSize;
// tlb_mm_cpumask_trim_timer: flushes between attempts to trim mm_cpumask.
constexpr std::uint32_t tlb_mm_cpumask_trim_timer = 1073;

enum class FlushType : std::uint8_t { FLUSH_TYPE_NONE, FLUSH_TYPE_LOCAL, FLUSH_TYPE_GLOBAL };

// The smp_mb() each v6.2 flush puts before flush_type_needed ("Order loads of mm_cpumask (in flush_type_needed) vs
// previous stores to clear ptes before the invalidate. See barrier in switch_mm_irqs_off"); v4.14 has none.
void flush_side_smp_mb(PerCpu& self) {
  if (planted(self.k.config(), Mutation::radix_flush_skips_smp_mb)) return;  // Mutation
  kernel::smp_mb(self.k.mem(), self.cpu);
}

class RadixMmu62 final : public RadixMmu {
 public:
  kernel::KernelVersion since() const override { return {6, 2}; }
  kernel::KernelVersion until() const override { return {6, 2}; }
  // Queued spinlocks, the 64s default since v5.12 ("powerpc: always enable queued spinlocks for 64s, disable for
  // others"); spin_lock_flags() is gone since v5.16.
  kernel::SpinlockKind spinlock_kind() const override { return kernel::SpinlockKind::kQueued; }

  void init_cpu(PerCpu& self, MmStruct& init_mm) override;
  sim::Task<void> radix__flush_tlb_mm(PerCpu& self, MmStruct& mm) override;
  sim::Task<void> radix__flush_tlb_page_psize(PerCpu& self, MmStruct& mm, std::uint64_t va) override;
  sim::Task<void> radix__tlb_flush(PerCpu& self, kernel::MmuGather& tlb) override;
  sim::Task<void> flush_tlb_mm_range(PerCpu& self, MmStruct& mm, std::uint64_t start, std::uint64_t end,
                                     std::uint8_t stride_shift, bool freed_tables) override;

  sim::Task<void> __flush_all_mm(PerCpu& self, MmStruct& mm, bool fullmm);
  // Traced under the name of its v6.2 wrapper (and of v4.14's function), radix__flush_tlb_range_psize.
  // page_shift: the psize's (PAGE_SHIFT for mmu_virtual_psize, PMD_SHIFT for MMU_PAGE_2M).
  sim::Task<void> __radix__flush_tlb_range_psize(PerCpu& self, MmStruct& mm, std::uint64_t start, std::uint64_t end,
                                                 bool also_pwc, std::uint8_t page_shift = kernel::kPageShift);
  bool tick_and_test_trim_clock(PerCpu& self);
  sim::Task<FlushType> flush_type_needed(PerCpu& self, MmStruct& mm, bool fullmm);
  sim::Task<void> exit_lazy_flush_tlb(PerCpu& self, MmStruct& mm, bool always_flush);
  sim::Task<void> exit_flush_lazy_tlbs(PerCpu& self, MmStruct& mm);

 private:
  sim::Task<void> flush_pid(PerCpu& self, MmStruct& mm, Ric ric, bool fullmm);

  std::vector<std::uint32_t> trim_clock_;  // DEFINE_PER_CPU mm_cpumask_trim_clock, indexed by CPU
};

void RadixMmu62::init_cpu(PerCpu& self, MmStruct& init_mm) {
  RadixMmu::init_cpu(self, init_mm);
  if (trim_clock_.size() <= self.id.get()) trim_clock_.resize(self.id.get() + 1, 0);
}

// ---- v6.2 radix_tlb.c: the flushes ----

// The body radix__flush_tlb_mm (RIC_FLUSH_TLB) and __flush_all_mm (RIC_FLUSH_ALL) share in v6.2 radix_tlb.c: the
// whole PID by tlbiel, tlbie or not at all, as flush_type_needed says.
sim::Task<void> RadixMmu62::flush_pid(PerCpu& self, MmStruct& mm, Ric ric, bool fullmm) {
  const std::uint32_t pid = context(mm).id;
  if (pid == MMU_NO_CONTEXT) co_return;
  // preempt_disable(); smp_mb() orders the PTE clears before the mm_cpumask loads.
  flush_side_smp_mb(self);
  const FlushType type = co_await flush_type_needed(self, mm, fullmm);
  if (type == FlushType::FLUSH_TYPE_LOCAL)
    co_await _tlbiel_pid(self, pid, ric);
  else if (type == FlushType::FLUSH_TYPE_GLOBAL)
    co_await _tlbie_pid(self, pid, ric);
}

sim::Task<void> RadixMmu62::radix__flush_tlb_mm(PerCpu& self, MmStruct& mm) {
  const trace::TraceSpan span(self.k.tracer(), self.cpu, "radix__flush_tlb_mm", "tlb");
  co_await flush_pid(self, mm, Ric::RIC_FLUSH_TLB, false);
}

// RIC_FLUSH_ALL: the PID's TLB and page-walk cache (v4.14's radix__flush_all_mm with fullmm).
sim::Task<void> RadixMmu62::__flush_all_mm(PerCpu& self, MmStruct& mm, bool fullmm) {
  co_await flush_pid(self, mm, Ric::RIC_FLUSH_ALL, fullmm);
}

sim::Task<void> RadixMmu62::radix__flush_tlb_page_psize(PerCpu& self, MmStruct& mm, std::uint64_t va) {
  const trace::TraceSpan span(self.k.tracer(), self.cpu, "radix__flush_tlb_page_psize", "tlb");
  const std::uint32_t pid = context(mm).id;
  if (pid == MMU_NO_CONTEXT) co_return;
  flush_side_smp_mb(self);
  const FlushType type = co_await flush_type_needed(self, mm, false);
  if (type == FlushType::FLUSH_TYPE_LOCAL)
    co_await _tlbiel_va(self, va, pid);
  else if (type == FlushType::FLUSH_TYPE_GLOBAL)
    co_await _tlbie_va(self, va, pid);
}

// Ceilings of 33 pages (global) and 256 (local); below them one tlbsync (or ptesync) per range.
sim::Task<void> RadixMmu62::__radix__flush_tlb_range_psize(PerCpu& self, MmStruct& mm, std::uint64_t start,
                                                           std::uint64_t end, bool also_pwc, std::uint8_t page_shift) {
  const trace::TraceSpan span(self.k.tracer(), self.cpu, "radix__flush_tlb_range_psize", "tlb");
  const std::uint32_t pid = context(mm).id;
  if (pid == MMU_NO_CONTEXT) co_return;
  flush_side_smp_mb(self);
  const FlushType type = co_await flush_type_needed(self, mm, false);
  if (type == FlushType::FLUSH_TYPE_NONE) co_return;
  const std::uint64_t nr_pages = (end - start) >> page_shift;
  const bool global = type == FlushType::FLUSH_TYPE_GLOBAL;
  const bool flush_pid = nr_pages > (global ? tlb_single_page_flush_ceiling : tlb_local_single_page_flush_ceiling);
  const Ric ric = also_pwc ? Ric::RIC_FLUSH_ALL : Ric::RIC_FLUSH_TLB;
  if (flush_pid) {
    if (global)
      co_await _tlbie_pid(self, pid, ric);
    else
      co_await _tlbiel_pid(self, pid, ric);
  } else if (global) {
    // also_pwc: one __tlbie_pid(RIC_FLUSH_PWC) first; the modeled per-VA invalidation drops the PWC entries too.
    co_await _tlbie_va_range(self, start, end, pid, page_shift);
  } else {
    co_await _tlbiel_va_range(self, start, end, pid, page_shift);
  }
}

// radix__tlb_flush (with the v6 base's `fullmm || need_flush_all`); seed 004 patch 5/5 behind exit_flush_lazy_tlbs.
sim::Task<void> RadixMmu62::radix__tlb_flush(PerCpu& self, kernel::MmuGather& tlb) {
  const trace::TraceSpan span(self.k.tracer(), self.cpu, "radix__tlb_flush", "tlb");
  MmStruct& mm = tlb.mm;
  if (tlb.fullmm || tlb.need_flush_all) {
    if (self.k.config().on(Option::exit_flush_lazy_tlbs) && context(mm).id != MMU_NO_CONTEXT) {
      // The lazy users must be IPIed when the mm is freed anyway: do it as the final flush. smp_mb() first.
      flush_side_smp_mb(self);
      co_await exit_flush_lazy_tlbs(self, mm);
      co_await _tlbiel_pid(self, context(mm).id, Ric::RIC_FLUSH_ALL);
      // WARN_ON_ONCE(copros > 0) -> __flush_all_mm: no coprocessors are modeled.
    } else {
      co_await __flush_all_mm(self, mm, true);
    }
  } else {
    co_await __radix__flush_tlb_range_psize(self, mm, tlb.start, tlb.end, tlb.freed_tables);
  }
}

// flush_tlb_range(vma, start, end): radix__flush_tlb_range -> __radix__flush_tlb_range flushes the range, with the
// PWC from PMD_SIZE up. At PMD stride it is flush_pmd_tlb_range: radix__flush_pmd_tlb_range ->
// radix__flush_tlb_range_psize(mm, start, end, MMU_PAGE_2M), one invalidation per 2 MiB page and no PWC flush.
sim::Task<void> RadixMmu62::flush_tlb_mm_range(PerCpu& self, MmStruct& mm, std::uint64_t start, std::uint64_t end,
                                               std::uint8_t stride_shift, bool) {
  if (end == TLB_FLUSH_ALL) {
    co_await radix__flush_tlb_mm(self, mm);
  } else if (stride_shift == kernel::kPmdShift) {
    co_await __radix__flush_tlb_range_psize(self, mm, start, end, false, kernel::kPmdShift);
  } else {
    co_await __radix__flush_tlb_range_psize(self, mm, start, end, end - start >= kPmdSize);
  }
}

// ---- v6.2 radix_tlb.c: flush_type_needed and mm_cpumask trimming ----

bool RadixMmu62::tick_and_test_trim_clock(PerCpu& self) {
  std::uint32_t& clock = trim_clock_[self.id.get()];
  if (++clock == tlb_mm_cpumask_trim_timer) {
    clock = 0;
    return true;
  }
  return false;
}

sim::Task<void> RadixMmu62::exit_lazy_flush_tlb(PerCpu& self, MmStruct& mm, bool always_flush) {
  const trace::TraceSpan span(self.k.tracer(), self.cpu, "exit_lazy_flush_tlb", "tlb");
  hw::Memory& m = self.k.mem();
  const std::uint32_t pid = context(mm).id;
  // A kthread in kthread_use_mm, or the sender itself: never clear its bit, just flush.
  if (current_mm(self) != &mm) {
    kernel::TaskStruct* curr = current_task(self);
    if (curr != nullptr && curr->active_mm == &mm) {
      // Lazily using the mm (current->mm is NULL): switch to init_mm.
      kernel::MmStruct& init_mm = self.k.init_mm();
      co_await kernel::mmgrab_lazy_tlb(self, init_mm);
      curr->active_mm = &init_mm;
      co_await switch_mm_irqs_off(self, init_mm);
      co_await kernel::mmdrop_lazy_tlb(self, mm);
    }
    // A racing IPI may already have cleared the bit: test first so active_cpus does not underflow.
    const bool in_mask = co_await mm.cpumask.test_cpu(m, self.cpu, self.id);
    if (in_mask) {
      // atomic_dec: no barrier on powerpc.
      co_await m.rmw_relaxed(self.cpu, context(mm).active_cpus, [](int v) { return v - 1; });
      co_await mm.cpumask.clear_cpu(m, self.cpu, self.id);
      ++stats.mm_cpumask_trims;
      always_flush = true;
    }
  }
  if (always_flush) co_await _tlbiel_pid(self, pid, Ric::RIC_FLUSH_ALL);
}

sim::Task<void> do_exit_flush_lazy_tlb(PerCpu& self, const void* info) {
  MmStruct& mm = *static_cast<MmStruct*>(const_cast<void*>(info));
  co_await static_cast<RadixMmu62&>(self.k.arch()).exit_lazy_flush_tlb(self, mm, true);
}

sim::Task<void> RadixMmu62::exit_flush_lazy_tlbs(PerCpu& self, MmStruct& mm) {
  // smp_call_function_many(mm_cpumask(mm), do_exit_flush_lazy_tlb, mm, 1): every other CPU in the mask, waiting.
  const Cpumask mask = co_await mm.cpumask.read(self.k.mem(), self.cpu);
  co_await kernel::smp_call_function_many_cond(self, mask, do_exit_flush_lazy_tlb, &mm, kernel::SCF_WAIT, nullptr);
}

sim::Task<FlushType> RadixMmu62::flush_type_needed(PerCpu& self, MmStruct& mm, bool fullmm) {
  hw::Memory& m = self.k.mem();
  const int active_cpus = co_await m.read(self.cpu, context(mm).active_cpus);
  if (active_cpus == 0) co_return FlushType::FLUSH_TYPE_NONE;
  if (active_cpus == 1) {
    const bool here = co_await mm.cpumask.test_cpu(m, self.cpu, self.id);
    if (here) {
      // Asynchronous flush sources may trim down to nothing if the process is not running.
      if (current_mm(self) != &mm && tick_and_test_trim_clock(self)) {
        co_await exit_lazy_flush_tlb(self, mm, true);
        co_return FlushType::FLUSH_TYPE_NONE;
      }
      co_return FlushType::FLUSH_TYPE_LOCAL;
    }
  }
  // Coprocessors (copros > 0) require tlbie: none are modeled. fullmm: a tlbie beats IPIs + tlbiel.
  if (fullmm) co_return FlushType::FLUSH_TYPE_GLOBAL;
  if (planted(self.k.config(), Mutation::radix_tlbiel_with_remote_cpus))
    co_return FlushType::FLUSH_TYPE_LOCAL;  // Mutation
  // The only thread of a single-threaded process: trim the rest of the mask.
  const std::int64_t users = co_await m.read(self.cpu, mm.mm_users);
  if (users <= 1 && current_mm(self) == &mm) {
    co_await exit_flush_lazy_tlbs(self, mm);
    co_return FlushType::FLUSH_TYPE_LOCAL;
  }
  // Occasionally try to trim the mask (it may drop to nothing, then no flush is needed).
  if (tick_and_test_trim_clock(self)) {
    co_await exit_flush_lazy_tlbs(self, mm);
    if (current_mm(self) == &mm) co_return FlushType::FLUSH_TYPE_LOCAL;
    const bool here = co_await mm.cpumask.test_cpu(m, self.cpu, self.id);
    if (here) co_await exit_lazy_flush_tlb(self, mm, true);
    co_return FlushType::FLUSH_TYPE_NONE;
  }
  co_return FlushType::FLUSH_TYPE_GLOBAL;
}

TLBSIM_REGISTER(kernel::ArchMmu, RadixMmu62, "powerpc-radix-6.2",
                "powerpc64 radix, v6.2: radix_tlb.c, flush_type_needed, mm_cpumask trimming by exit_flush_lazy_tlbs");

}  // namespace

}  // namespace tlbsim::powerpc
