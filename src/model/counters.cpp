#include "model/counters.h"

#include <numeric>

#include <nlohmann/json.hpp>

namespace tlbsim::kernel {

std::string_view to_string(TlbFlushReason r) {
  switch (r) {
    case TlbFlushReason::TLB_FLUSH_ON_TASK_SWITCH: return "TLB_FLUSH_ON_TASK_SWITCH";
    case TlbFlushReason::TLB_REMOTE_SHOOTDOWN: return "TLB_REMOTE_SHOOTDOWN";
    case TlbFlushReason::TLB_LOCAL_SHOOTDOWN: return "TLB_LOCAL_SHOOTDOWN";
    case TlbFlushReason::TLB_LOCAL_MM_SHOOTDOWN: return "TLB_LOCAL_MM_SHOOTDOWN";
    case TlbFlushReason::TLB_REMOTE_SEND_IPI: return "TLB_REMOTE_SEND_IPI";
    case TlbFlushReason::TLB_REMOTE_WRONG_CPU: return "TLB_REMOTE_WRONG_CPU";
    case TlbFlushReason::kCount: break;
  }
  return "?";
}

std::string_view trace_name(TlbFlushReason r) {
  switch (r) {
    case TlbFlushReason::TLB_FLUSH_ON_TASK_SWITCH: return "flush on task switch";
    case TlbFlushReason::TLB_REMOTE_SHOOTDOWN: return "remote shootdown";
    case TlbFlushReason::TLB_LOCAL_SHOOTDOWN: return "local shootdown";
    case TlbFlushReason::TLB_LOCAL_MM_SHOOTDOWN: return "local mm shootdown";
    case TlbFlushReason::TLB_REMOTE_SEND_IPI: return "remote ipi send";
    case TlbFlushReason::TLB_REMOTE_WRONG_CPU: return "remote wrong CPU";
    case TlbFlushReason::kCount: break;
  }
  return "?";
}

std::string_view to_string(VmTlbEvent e) {
  switch (e) {
    case VmTlbEvent::NR_TLB_REMOTE_FLUSH: return "nr_tlb_remote_flush";
    case VmTlbEvent::NR_TLB_REMOTE_FLUSH_RECEIVED: return "nr_tlb_remote_flush_received";
    case VmTlbEvent::NR_TLB_LOCAL_FLUSH_ALL: return "nr_tlb_local_flush_all";
    case VmTlbEvent::NR_TLB_LOCAL_FLUSH_ONE: return "nr_tlb_local_flush_one";
    case VmTlbEvent::kCount: break;
  }
  return "?";
}

nlohmann::json KernelCounters::to_json() const {
  nlohmann::json j;
  for (std::size_t i = 0; i < vm.size(); ++i) j[std::string(to_string(static_cast<VmTlbEvent>(i)))] = vm[i];
  nlohmann::json tr;
  for (std::size_t i = 0; i < tlb_flush.size(); ++i) tr[std::string(to_string(static_cast<TlbFlushReason>(i)))] = tlb_flush[i];
  j["tlb:tlb_flush"] = tr;
  j["TLB shootdowns"] = std::accumulate(irq_tlb_count.begin(), irq_tlb_count.end(), std::uint64_t{0});
  j["Function call interrupts"] = std::accumulate(irq_call_count.begin(), irq_call_count.end(), std::uint64_t{0});
  j["TLB shootdowns per cpu"] = irq_tlb_count;
  j["Function call interrupts per cpu"] = irq_call_count;
  j["cr3_loads"] = std::accumulate(cr3_loads.begin(), cr3_loads.end(), std::uint64_t{0});
  j["ipis_sent"] = ipis_sent;
  j["ipis_by_vector"] = {{"CALL_FUNCTION_VECTOR", ipis_call_function},
                         {"CALL_FUNCTION_SINGLE_VECTOR", ipis_call_function_single}};
  j["cr3_loads_by_cause"] = {{"switch_mm", cr3_switch_mm}, {"to_init_mm", cr3_to_init_mm}, {"flush", cr3_flush}};
  j["context_switches"] = context_switches;
  j["nonvoluntary_ctxt_switches"] = nivcsw;
  j["Local timer interrupts"] = irq_timer_count;
  j["idle_state_usage"] = idle_state_usage;
  j["page_faults"] = page_faults;
  j["mm_freed"] = mm_freed;
  j["sched_migrations"] = sched_migrations;
  j["shoot_lazies"] = {{"calls", shoot_lazies_calls}, {"ipis", shoot_lazies_ipis}, {"switched", shoot_lazies_switched}};
  if (tlbie_pid + tlbie_va + tlbiel_pid + tlbiel_va + tlbiel_lpid + mm_cpumask_trims + tlbbatch_missed_mm != 0) {
    j["radix"] = {{"tlbie_pid", tlbie_pid},   {"tlbie_va", tlbie_va},
                  {"tlbiel_pid", tlbiel_pid}, {"tlbiel_va", tlbiel_va},
                  {"tlbiel_lpid", tlbiel_lpid}, {"mm_cpumask_trims", mm_cpumask_trims},
                  {"tlbbatch_missed_mm", tlbbatch_missed_mm}};
  }
  if (pgscan_direct + pgscan_kswapd != 0) {
    j["vmscan"] = {{"allocstall", allocstall},         {"pgscan_direct", pgscan_direct},
                   {"pgsteal_direct", pgsteal_direct}, {"pgactivate", pgactivate},
                   {"pgscan_kswapd", pgscan_kswapd},   {"pgsteal_kswapd", pgsteal_kswapd},
                   {"pageoutrun", pageoutrun},         {"kswapd_time_ns", sim::to_nanoseconds(kswapd_time)}};
  }
  if ((user_time + sys_time).count() != 0) {
    j["user_time_ns"] = sim::to_nanoseconds(user_time);
    j["sys_time_ns"] = sim::to_nanoseconds(sys_time);
    j["irq_time_ns"] = sim::to_nanoseconds(std::accumulate(irq_time.begin(), irq_time.end(), sim::Duration{0}));
  }
  return j;
}

}  // namespace tlbsim::kernel
