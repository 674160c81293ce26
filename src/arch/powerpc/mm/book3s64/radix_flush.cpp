// Models the public radix flushes: radix__flush_tlb_mm, radix__flush_all_mm, radix__flush_tlb_page_psize,
// radix__flush_tlb_range(_psize) and radix__tlb_flush, of v4.14 (tlb-radix.c @b2cd76cc: mm_is_thread_local picks
// tlbiel or tlbie) and v6.2 (radix_tlb.c: flush_type_needed picks none, tlbiel or tlbie), and seed 004 patch 5/5.
#include "arch/powerpc/mm/book3s64/radix_tlb.h"
#include "mm/mmu_gather.h"
#include "arch/powerpc/options.h"
#include "trace/tracer.h"

namespace tlbsim::powerpc {

namespace {
// PMD_SIZE of the model's 4 KiB-page tables: a range this large also flushes the page-walk cache (v6.2).
constexpr std::uint64_t kPmdSize = kernel::kPtesPerTable * kernel::kPageSize;
}  // namespace

// radix__local_flush_tlb_mm: a tlbiel of the whole PID, TLB only (seed 001's IPI handler calls it).
sim::Task<void> RadixMmu::radix__local_flush_tlb_mm(PerCpu& self, MmStruct& mm) {
  const std::uint32_t pid = context(mm).id;
  if (pid != MMU_NO_CONTEXT) co_await _tlbiel_pid(self, pid, Ric::RIC_FLUSH_TLB);
}

sim::Task<void> RadixMmu::radix__flush_tlb_mm(PerCpu& self, MmStruct& mm) {
  const trace::TraceSpan span(self.k.tracer(), self.cpu, "radix__flush_tlb_mm", "tlb");
  const std::uint32_t pid = context(mm).id;
  if (pid == MMU_NO_CONTEXT) co_return;
  // preempt_disable(); v6.2: smp_mb() orders the PTE clears before the mm_cpumask loads.
  if (!v62(self)) {
    const bool local = co_await mm_is_thread_local(self, mm);
    if (local)
      co_await _tlbiel_pid(self, pid, Ric::RIC_FLUSH_TLB);
    else
      co_await _tlbie_pid(self, pid, Ric::RIC_FLUSH_TLB);
    co_return;
  }
  const FlushType type = co_await flush_type_needed(self, mm, false);
  if (type == FlushType::FLUSH_TYPE_LOCAL)
    co_await _tlbiel_pid(self, pid, Ric::RIC_FLUSH_TLB);
  else if (type == FlushType::FLUSH_TYPE_GLOBAL)
    co_await _tlbie_pid(self, pid, Ric::RIC_FLUSH_TLB);
}

// v4.14 radix__flush_all_mm (RIC_FLUSH_ALL: TLB and page-walk cache); v6.2 __flush_all_mm(mm, fullmm).
sim::Task<void> RadixMmu::__flush_all_mm(PerCpu& self, MmStruct& mm, bool fullmm) {
  const std::uint32_t pid = context(mm).id;
  if (pid == MMU_NO_CONTEXT) co_return;
  if (!v62(self)) {
    const bool local = co_await mm_is_thread_local(self, mm);
    if (local)
      co_await _tlbiel_pid(self, pid, Ric::RIC_FLUSH_ALL);
    else
      co_await _tlbie_pid(self, pid, Ric::RIC_FLUSH_ALL);
    co_return;
  }
  const FlushType type = co_await flush_type_needed(self, mm, fullmm);
  if (type == FlushType::FLUSH_TYPE_LOCAL)
    co_await _tlbiel_pid(self, pid, Ric::RIC_FLUSH_ALL);
  else if (type == FlushType::FLUSH_TYPE_GLOBAL)
    co_await _tlbie_pid(self, pid, Ric::RIC_FLUSH_ALL);
}

sim::Task<void> RadixMmu::radix__flush_tlb_page_psize(PerCpu& self, MmStruct& mm, std::uint64_t va) {
  const trace::TraceSpan span(self.k.tracer(), self.cpu, "radix__flush_tlb_page_psize", "tlb");
  const std::uint32_t pid = context(mm).id;
  if (pid == MMU_NO_CONTEXT) co_return;
  if (!v62(self)) {
    // Not thread-local: tlbie (native_tlbie_lock only without MMU_FTR_LOCKLESS_TLBIE, never on POWER9).
    const bool local = co_await mm_is_thread_local(self, mm);
    if (local)
      co_await _tlbiel_va(self, va, pid);
    else
      co_await _tlbie_va(self, va, pid);
    co_return;
  }
  const FlushType type = co_await flush_type_needed(self, mm, false);
  if (type == FlushType::FLUSH_TYPE_LOCAL)
    co_await _tlbiel_va(self, va, pid);
  else if (type == FlushType::FLUSH_TYPE_GLOBAL)
    co_await _tlbie_va(self, va, pid);
}

sim::Task<void> RadixMmu::radix__flush_tlb_range_psize(PerCpu& self, MmStruct& mm, std::uint64_t start,
                                                       std::uint64_t end, bool also_pwc) {
  const trace::TraceSpan span(self.k.tracer(), self.cpu, "radix__flush_tlb_range_psize", "tlb");
  const std::uint32_t pid = context(mm).id;
  if (pid == MMU_NO_CONTEXT) co_return;
  if (!v62(self)) {
    // v4.14: beyond 33 pages (or TLB_FLUSH_ALL) a whole-PID flush, else the full tlbie/tlbiel sequence per page.
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
    co_return;
  }
  const FlushType type = co_await flush_type_needed(self, mm, false);
  if (type == FlushType::FLUSH_TYPE_NONE) co_return;
  const std::uint64_t nr_pages = (end - start) >> kernel::kPageShift;
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
    co_await _tlbie_va_range(self, start, end, pid);
  } else {
    co_await _tlbiel_va_range(self, start, end, pid);
  }
}

// v6.2 radix__tlb_flush (with the v6 base's `fullmm || need_flush_all`); seed 004 patch 5/5 behind
// exit_flush_lazy_tlbs. v4.14: need_flush_all (set by radix__flush_tlb_pwc when page tables were freed) flushes
// the whole PID with RIC_FLUSH_ALL, a known page size flushes the range, and a plain fullmm the PID's TLB.
sim::Task<void> RadixMmu::radix__tlb_flush(PerCpu& self, kernel::MmuGather& tlb) {
  const trace::TraceSpan span(self.k.tracer(), self.cpu, "radix__tlb_flush", "tlb");
  MmStruct& mm = tlb.mm;
  if (!v62(self)) {
    const bool need_flush_all = tlb.need_flush_all || tlb.freed_tables;
    if (!tlb.fullmm && !need_flush_all) {
      co_await radix__flush_tlb_range_psize(self, mm, tlb.start, tlb.end, false);
    } else if (need_flush_all) {
      tlb.need_flush_all = false;
      co_await __flush_all_mm(self, mm, false);
    } else {
      co_await radix__flush_tlb_mm(self, mm);
    }
    co_return;
  }
  if (tlb.fullmm || tlb.need_flush_all) {
    if (self.k.config().on(Option::exit_flush_lazy_tlbs) && context(mm).id != MMU_NO_CONTEXT) {
      // The lazy users must be IPIed when the mm is freed anyway: do it as the final flush. smp_mb() first.
      co_await exit_flush_lazy_tlbs(self, mm);
      co_await _tlbiel_pid(self, context(mm).id, Ric::RIC_FLUSH_ALL);
      // WARN_ON_ONCE(copros > 0) -> __flush_all_mm: no coprocessors are modeled.
    } else {
      co_await __flush_all_mm(self, mm, true);
    }
  } else {
    co_await radix__flush_tlb_range_psize(self, mm, tlb.start, tlb.end, tlb.freed_tables);
  }
}

sim::Task<void> RadixMmu::tlb_flush(PerCpu& self, kernel::MmuGather& tlb) { co_await radix__tlb_flush(self, tlb); }

// flush_tlb_range(vma, start, end): v4.14 radix__flush_tlb_range always flushes the whole PID with RIC_FLUSH_ALL
// (for THP collapse); v6.2 __radix__flush_tlb_range flushes the range, with the PWC from PMD_SIZE up.
sim::Task<void> RadixMmu::flush_tlb_mm_range(PerCpu& self, MmStruct& mm, std::uint64_t start, std::uint64_t end,
                                             std::uint8_t, bool) {
  if (!v62(self)) {
    co_await __flush_all_mm(self, mm, false);
  } else if (end == TLB_FLUSH_ALL) {
    co_await radix__flush_tlb_mm(self, mm);
  } else {
    co_await radix__flush_tlb_range_psize(self, mm, start, end, end - start >= kPmdSize);
  }
}

sim::Task<void> RadixMmu::flush_tlb_page(PerCpu& self, MmStruct& mm, std::uint64_t addr) {
  co_await radix__flush_tlb_page_psize(self, mm, addr);
}

sim::Task<void> RadixMmu::flush_tlb_mm(PerCpu& self, MmStruct& mm) { co_await radix__flush_tlb_mm(self, mm); }


}  // namespace tlbsim::powerpc
