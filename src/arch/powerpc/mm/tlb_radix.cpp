// The powerpc64 radix ArchMmu of Linux v4.14 (seed 001's base): the flushes of arch/powerpc/mm/tlb-radix.c, read
// in microsoft/surface-duo-oss-kernel.msm-4..14 @b2cd76cc. mm_is_thread_local (asm/tlb.h) picks tlbiel or tlbie;
// there is no IPI anywhere in v4.14 radix flushing and mm_cpumask bits are never cleared. What v4.14 shares with
// v6.2 (PIDs, the context switch, the tlbie/tlbiel sequences) is RadixMmu (arch/powerpc/mm/book3s64/radix_tlb.h).
#include "arch/powerpc/mm/book3s64/radix_tlb.h"
#include "arch/powerpc/options.h"
#include "kernel/barrier.h"
#include "mm/mmu_gather.h"
#include "trace/tracer.h"
#include "util/registry.h"

namespace tlbsim::powerpc {

namespace {

// The option radix_flush_smp_mb: the later smp_mb() between the PTE clears and mm_is_thread_local's loads (F9).
void flush_side_smp_mb(PerCpu& self) {
  if (self.k.config().on(Option::radix_flush_smp_mb)) kernel::smp_mb(self.k.mem(), self.cpu);
}

class RadixMmu414 final : public RadixMmu {
 public:
  kernel::KernelVersion since() const override { return {4, 14}; }
  kernel::KernelVersion until() const override { return {4, 14}; }
  // powerpc's test-and-set lock (arch/powerpc/include/asm/spinlock.h, v4.14): queued spinlocks became the 64s
  // default only in v5.12. Its arch_spin_lock_flags restores `flags` after a failed trylock and spins on plain loads,
  // disabling interrupts again before the next trylock (until v5.16, "locking: Remove spin_lock_flags() etc").
  kernel::SpinlockKind spinlock_kind() const override { return kernel::SpinlockKind::kTestAndSet; }
  bool spin_lock_flags_enables_irqs() const override { return true; }

  sim::Task<void> radix__flush_tlb_mm(PerCpu& self, MmStruct& mm) override;
  sim::Task<void> radix__flush_tlb_page_psize(PerCpu& self, MmStruct& mm, std::uint64_t va) override;
  sim::Task<void> radix__tlb_flush(PerCpu& self, kernel::MmuGather& tlb) override;
  sim::Task<void> flush_tlb_mm_range(PerCpu& self, MmStruct& mm, std::uint64_t start, std::uint64_t end,
                                     std::uint8_t stride_shift, bool freed_tables) override;

  // RIC_FLUSH_ALL: the PID's TLB and page-walk cache.
  sim::Task<void> radix__flush_all_mm(PerCpu& self, MmStruct& mm);
  sim::Task<void> radix__flush_tlb_range_psize(PerCpu& self, MmStruct& mm, std::uint64_t start, std::uint64_t end);

 private:
  sim::Task<void> flush_pid(PerCpu& self, MmStruct& mm, Ric ric);
};

// The body radix__flush_tlb_mm (RIC_FLUSH_TLB) and radix__flush_all_mm (RIC_FLUSH_ALL) share in v4.14 tlb-radix.c:
// tlbiel if mm_is_thread_local, else tlbie, of the whole PID.
sim::Task<void> RadixMmu414::flush_pid(PerCpu& self, MmStruct& mm, Ric ric) {
  const std::uint32_t pid = context(mm).id;
  if (pid == MMU_NO_CONTEXT) co_return;
  flush_side_smp_mb(self);
  const bool local = co_await mm_is_thread_local(self, mm);
  if (local)
    co_await _tlbiel_pid(self, pid, ric);
  else
    co_await _tlbie_pid(self, pid, ric);
}

// v4.14 tlb-radix.c radix__flush_tlb_mm (preempt_disable() around it).
sim::Task<void> RadixMmu414::radix__flush_tlb_mm(PerCpu& self, MmStruct& mm) {
  const trace::TraceSpan span(self.k.tracer(), self.cpu, "radix__flush_tlb_mm", "tlb");
  co_await flush_pid(self, mm, Ric::RIC_FLUSH_TLB);
}

// v4.14 tlb-radix.c radix__flush_all_mm.
sim::Task<void> RadixMmu414::radix__flush_all_mm(PerCpu& self, MmStruct& mm) {
  co_await flush_pid(self, mm, Ric::RIC_FLUSH_ALL);
}

// v4.14 tlb-radix.c radix__flush_tlb_page_psize.
sim::Task<void> RadixMmu414::radix__flush_tlb_page_psize(PerCpu& self, MmStruct& mm, std::uint64_t va) {
  const trace::TraceSpan span(self.k.tracer(), self.cpu, "radix__flush_tlb_page_psize", "tlb");
  const std::uint32_t pid = context(mm).id;
  if (pid == MMU_NO_CONTEXT) co_return;
  // Not thread-local: tlbie (native_tlbie_lock only without MMU_FTR_LOCKLESS_TLBIE, never on POWER9).
  flush_side_smp_mb(self);
  const bool local = co_await mm_is_thread_local(self, mm);
  if (local)
    co_await _tlbiel_va(self, va, pid);
  else
    co_await _tlbie_va(self, va, pid);
}

// v4.14 tlb-radix.c radix__flush_tlb_range_psize: beyond 33 pages (or TLB_FLUSH_ALL) a whole-PID flush, else the
// full tlbie/tlbiel sequence per page.
sim::Task<void> RadixMmu414::radix__flush_tlb_range_psize(PerCpu& self, MmStruct& mm, std::uint64_t start,
                                                          std::uint64_t end) {
  const trace::TraceSpan span(self.k.tracer(), self.cpu, "radix__flush_tlb_range_psize", "tlb");
  const std::uint32_t pid = context(mm).id;
  if (pid == MMU_NO_CONTEXT) co_return;
  flush_side_smp_mb(self);
  const bool local = co_await mm_is_thread_local(self, mm);
  if (end == TLB_FLUSH_ALL || (end - start) > tlb_single_page_flush_ceiling * kernel::kPageSize) {
    if (local)
      co_await _tlbiel_pid(self, pid, Ric::RIC_FLUSH_TLB);
    else
      co_await _tlbie_pid(self, pid, Ric::RIC_FLUSH_TLB);
    co_return;
  }
  for (std::uint64_t a = start; a < end; a += kernel::kPageSize) {
    if (local)
      co_await _tlbiel_va(self, a, pid);
    else
      co_await _tlbie_va(self, a, pid);
  }
}

// v4.14 tlb-radix.c radix__tlb_flush: need_flush_all (set by radix__flush_tlb_pwc when page tables were freed)
// flushes the whole PID with RIC_FLUSH_ALL, a known page size flushes the range, and a plain fullmm the PID's TLB.
sim::Task<void> RadixMmu414::radix__tlb_flush(PerCpu& self, kernel::MmuGather& tlb) {
  const trace::TraceSpan span(self.k.tracer(), self.cpu, "radix__tlb_flush", "tlb");
  MmStruct& mm = tlb.mm;
  const bool need_flush_all = tlb.need_flush_all || tlb.freed_tables;
  if (!tlb.fullmm && !need_flush_all) {
    co_await radix__flush_tlb_range_psize(self, mm, tlb.start, tlb.end);
  } else if (need_flush_all) {
    tlb.need_flush_all = false;
    co_await radix__flush_all_mm(self, mm);
  } else {
    co_await radix__flush_tlb_mm(self, mm);
  }
}

// flush_tlb_range(vma, start, end): v4.14 tlb-radix.c radix__flush_tlb_range always flushes the whole PID with
// RIC_FLUSH_ALL (for THP collapse).
sim::Task<void> RadixMmu414::flush_tlb_mm_range(PerCpu& self, MmStruct& mm, std::uint64_t, std::uint64_t, std::uint8_t,
                                                bool) {
  co_await radix__flush_all_mm(self, mm);
}

TLBSIM_REGISTER(kernel::ArchMmu, RadixMmu414, "powerpc-radix-4.14",
                "powerpc64 radix, v4.14: tlb-radix.c, mm_is_thread_local picks tlbiel or tlbie, masks never trimmed");

}  // namespace

}  // namespace tlbsim::powerpc
