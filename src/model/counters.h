// Kernel counters under their kernel names: /proc/vmstat's nr_tlb_* events, the per-CPU "TLB shootdowns" and
// "Function call interrupts" rows of /proc/interrupts, and tlb:tlb_flush trace events by reason.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "model/stats.h"
#include "sim/ids.h"
#include "sim/time.h"

namespace tlbsim::kernel {

// enum tlb_flush_reason, in the kernel's order.
enum class TlbFlushReason : std::uint8_t {
  TLB_FLUSH_ON_TASK_SWITCH,
  TLB_REMOTE_SHOOTDOWN,
  TLB_LOCAL_SHOOTDOWN,
  TLB_LOCAL_MM_SHOOTDOWN,
  TLB_REMOTE_SEND_IPI,
  TLB_REMOTE_WRONG_CPU,  // v6.14 (seed 002 patch 2/3): a flush IPI reached a CPU no longer running the mm
  kCount,
};
std::string_view to_string(TlbFlushReason r);
// The reason as the tlb:tlb_flush event prints it ("remote shootdown").
std::string_view trace_name(TlbFlushReason r);

// enum vm_event_item's TLB entries (count_vm_tlb_event).
enum class VmTlbEvent : std::uint8_t {
  NR_TLB_REMOTE_FLUSH,
  NR_TLB_REMOTE_FLUSH_RECEIVED,
  NR_TLB_LOCAL_FLUSH_ALL,
  NR_TLB_LOCAL_FLUSH_ONE,
  kCount,
};
std::string_view to_string(VmTlbEvent e);

// CONFIG_PER_VMA_LOCK_STATS's /proc/vmstat events (count_vm_vma_lock_event): faults handled under the VMA lock
// alone, refused by lock_vma_under_rcu, given up with VM_FAULT_RETRY (then run under mmap_lock), and VMAs found
// detached and looked up again.
struct VmaLockStats {
  std::uint64_t success = 0;
  std::uint64_t abort = 0;
  std::uint64_t retry = 0;
  std::uint64_t miss = 0;
};

// The generic kernel's counters: vm events, tlb:tlb_flush events, /proc/interrupts rows, cross-call IPIs, page
// faults, freed mms and CPU time. Subsystems own theirs (x86::MmStats, powerpc::RadixStats, SchedStats,
// VmscanStats, ShootLaziesStats); all register in the Kernel's Stats (model/stats.h).
struct KernelCounters {
  explicit KernelCounters(std::uint32_t ncpus)
      : irq_tlb_count(ncpus, 0), irq_call_count(ncpus, 0), irq_time(ncpus, sim::Duration{0}) {}

  std::array<std::uint64_t, static_cast<std::size_t>(VmTlbEvent::kCount)> vm{};
  std::array<std::uint64_t, static_cast<std::size_t>(TlbFlushReason::kCount)> tlb_flush{};  // trace events
  std::vector<std::uint64_t> irq_tlb_count;     // /proc/interrupts "TLB shootdowns" (TLB), per CPU
  std::vector<std::uint64_t> irq_call_count;    // /proc/interrupts "Function call interrupts" (CAL), per CPU
  std::uint64_t irq_resched_count = 0;          // reschedule IPIs handled (/proc/interrupts RES)
  std::uint64_t ipis_sent = 0;                  // IPIs actually sent (llist_add found the queue empty)
  std::uint64_t ipis_call_function = 0;         // ... of them by CALL_FUNCTION_VECTOR (several targets)
  std::uint64_t ipis_call_function_single = 0;  // ... by CALL_FUNCTION_SINGLE_VECTOR (one target)
  std::uint64_t irq_timer_count = 0;            // local timer interrupts (hrtimer expiries)
  std::uint64_t page_faults = 0;
  std::uint64_t mm_freed = 0;  // __mmdrop calls
  VmaLockStats vma_lock;
  // CPU time as `time` reports it for the workload's tasks, after the warm-up: user and system time (with
  // hardirq time folded into system time, as powerpc's VIRT_CPU_ACCOUNTING_NATIVE vtime_flush does). Workloads
  // that account time add to these; irq_time (time in interrupt handlers, per CPU) is kept for every run.
  sim::Duration user_time{0}, sys_time{0};
  std::vector<sim::Duration> irq_time;

  void count(VmTlbEvent e, std::uint64_t n = 1) { vm[static_cast<std::size_t>(e)] += n; }
  void trace(TlbFlushReason r) { ++tlb_flush[static_cast<std::size_t>(r)]; }
  std::uint64_t get(VmTlbEvent e) const { return vm[static_cast<std::size_t>(e)]; }
  std::uint64_t traced(TlbFlushReason r) const { return tlb_flush[static_cast<std::size_t>(r)]; }

  // Registers every field by its name (the key in `run`'s JSON).
  void register_stats(Stats& stats) const;
};

}  // namespace tlbsim::kernel
