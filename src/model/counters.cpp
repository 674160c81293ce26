#include "model/counters.h"

#include <string>

namespace tlbsim::kernel {

std::string_view to_string(TlbFlushReason r) {
  switch (r) {
    case TlbFlushReason::TLB_FLUSH_ON_TASK_SWITCH:
      return "TLB_FLUSH_ON_TASK_SWITCH";
    case TlbFlushReason::TLB_REMOTE_SHOOTDOWN:
      return "TLB_REMOTE_SHOOTDOWN";
    case TlbFlushReason::TLB_LOCAL_SHOOTDOWN:
      return "TLB_LOCAL_SHOOTDOWN";
    case TlbFlushReason::TLB_LOCAL_MM_SHOOTDOWN:
      return "TLB_LOCAL_MM_SHOOTDOWN";
    case TlbFlushReason::TLB_REMOTE_SEND_IPI:
      return "TLB_REMOTE_SEND_IPI";
    case TlbFlushReason::TLB_REMOTE_WRONG_CPU:
      return "TLB_REMOTE_WRONG_CPU";
    case TlbFlushReason::kCount:
      break;
  }
  return "?";
}

std::string_view trace_name(TlbFlushReason r) {
  switch (r) {
    case TlbFlushReason::TLB_FLUSH_ON_TASK_SWITCH:
      return "flush on task switch";
    case TlbFlushReason::TLB_REMOTE_SHOOTDOWN:
      return "remote shootdown";
    case TlbFlushReason::TLB_LOCAL_SHOOTDOWN:
      return "local shootdown";
    case TlbFlushReason::TLB_LOCAL_MM_SHOOTDOWN:
      return "local mm shootdown";
    case TlbFlushReason::TLB_REMOTE_SEND_IPI:
      return "remote ipi send";
    case TlbFlushReason::TLB_REMOTE_WRONG_CPU:
      return "remote wrong CPU";
    case TlbFlushReason::kCount:
      break;
  }
  return "?";
}

std::string_view to_string(VmTlbEvent e) {
  switch (e) {
    case VmTlbEvent::NR_TLB_REMOTE_FLUSH:
      return "nr_tlb_remote_flush";
    case VmTlbEvent::NR_TLB_REMOTE_FLUSH_RECEIVED:
      return "nr_tlb_remote_flush_received";
    case VmTlbEvent::NR_TLB_LOCAL_FLUSH_ALL:
      return "nr_tlb_local_flush_all";
    case VmTlbEvent::NR_TLB_LOCAL_FLUSH_ONE:
      return "nr_tlb_local_flush_one";
    case VmTlbEvent::kCount:
      break;
  }
  return "?";
}

void KernelCounters::register_stats(Stats& stats) const {
  Stats::Registrar r = stats.registrar(this);
  for (std::size_t i = 0; i < vm.size(); ++i) {
    r.count(to_string(static_cast<VmTlbEvent>(i)), "/proc/vmstat TLB event (count_vm_tlb_event)", vm[i], kStatSummary);
  }
  r.per_cpu("TLB shootdowns", "/proc/interrupts TLB row: flush IPIs handled", irq_tlb_count,
            kStatSummary | kStatPerCpuArray)
      .per_cpu("Function call interrupts", "/proc/interrupts CAL row: cross-call IPIs handled", irq_call_count,
               kStatSummary | kStatPerCpuArray)
      .count("ipis_sent", "IPIs sent (llist_add found the target's call_single_queue empty)", ipis_sent, kStatSummary)
      .count("ipis_by_vector/CALL_FUNCTION_VECTOR", "IPIs sent by CALL_FUNCTION_VECTOR (several targets)",
             ipis_call_function)
      .count("ipis_by_vector/CALL_FUNCTION_SINGLE_VECTOR", "IPIs sent by CALL_FUNCTION_SINGLE_VECTOR (one target)",
             ipis_call_function_single)
      .count("page_faults", "page faults handled (handle_mm_fault)", page_faults, kStatSummary)
      .count("mm_freed", "mm_structs freed (__mmdrop)", mm_freed)
      .count("Local timer interrupts", "/proc/interrupts LOC row: hrtimer expiries", irq_timer_count)
      .count("Rescheduling interrupts", "/proc/interrupts RES row: reschedule IPIs handled (by a CPU that halted)",
             irq_resched_count);
  for (std::size_t i = 0; i < tlb_flush.size(); ++i) {
    r.count("tlb:tlb_flush/" + std::string(to_string(static_cast<TlbFlushReason>(i))),
            "tlb:tlb_flush trace events with this reason", tlb_flush[i], kStatSummary);
  }
  // The per-VMA lock's events, shown where the era has the lock.
  stats.registrar(this, "vma_lock")
      .count("vma_lock/vma_lock_success", "faults handled under the VMA lock alone (VMA_LOCK_SUCCESS)",
             vma_lock.success, kStatSummary | kStatGate)
      .count("vma_lock/vma_lock_abort", "faults lock_vma_under_rcu sent to mmap_lock (VMA_LOCK_ABORT)", vma_lock.abort,
             kStatSummary | kStatGate)
      .count("vma_lock/vma_lock_retry",
             "faults that gave up under the VMA lock, then ran under mmap_lock (VMA_LOCK_RETRY)", vma_lock.retry,
             kStatSummary | kStatGate)
      .count("vma_lock/vma_lock_miss", "VMAs found detached once locked, looked up again (VMA_LOCK_MISS)",
             vma_lock.miss, kStatSummary);
  // CPU time, shown for workloads that account it.
  stats.registrar(this, "cputime")
      .duration("user_time_ns", "the workload's user time after the warm-up, as `time` reports it", user_time,
                kStatSummary | kStatGate)
      .duration("sys_time_ns", "the workload's system time (hardirq time included) after the warm-up", sys_time,
                kStatSummary | kStatGate)
      .duration_per_cpu("irq_time_ns", "time in interrupt handlers, all CPUs", irq_time, kStatSummary);
}

}  // namespace tlbsim::kernel
