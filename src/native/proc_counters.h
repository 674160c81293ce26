// The kernel's own TLB-flush counters on this host: the "TLB shootdowns" (TLB) and "Function call interrupts"
// (CAL) rows of /proc/interrupts, the nr_tlb_* lines of /proc/vmstat (CONFIG_DEBUG_TLBFLUSH kernels only), and
// the tlb:tlb_flush tracepoint counted by reason through perf_event_open when tracefs and perf allow it.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tlbsim::native {

// The sum over CPUs of the /proc/interrupts row labelled `label` ("TLB", "CAL"); nullopt when absent.
std::optional<std::uint64_t> interrupt_row_total(std::string_view proc_interrupts, std::string_view label);

// The nr_tlb_* lines of /proc/vmstat text.
std::map<std::string, std::uint64_t> vmstat_tlb(std::string_view proc_vmstat);

// enum tlb_flush_reason (include/linux/mm_types.h), as counted by the tlb:tlb_flush tracepoint.
inline constexpr std::array<const char*, 5> kTlbFlushReasons = {"TLB_FLUSH_ON_TASK_SWITCH", "TLB_REMOTE_SHOOTDOWN",
                                                                "TLB_LOCAL_SHOOTDOWN", "TLB_LOCAL_MM_SHOOTDOWN",
                                                                "TLB_REMOTE_SEND_IPI"};

// Counts tlb:tlb_flush events per reason on every CPU while it exists (Linux with tracefs mounted and perf events
// allowed; otherwise available() is false and why() says what is missing).
class TlbFlushTracepoint {
 public:
  explicit TlbFlushTracepoint(std::uint32_t ncpus);
  ~TlbFlushTracepoint();
  TlbFlushTracepoint(const TlbFlushTracepoint&) = delete;
  TlbFlushTracepoint& operator=(const TlbFlushTracepoint&) = delete;

  bool available() const { return why_.empty(); }
  const std::string& why() const { return why_; }
  // Events so far per reason (indices as kTlbFlushReasons).
  std::array<std::uint64_t, kTlbFlushReasons.size()> read() const;

 private:
  std::vector<int> fds_;  // one per (reason, cpu), closed by the destructor
  std::uint32_t ncpus_;
  std::string why_;
};

// One reading of every counter the host offers.
struct KernelCounters {
  std::optional<std::uint64_t> tlb_shootdowns;  // /proc/interrupts TLB row
  std::optional<std::uint64_t> call_function;   // /proc/interrupts CAL row
  std::map<std::string, std::uint64_t> vmstat;  // nr_tlb_* (empty without CONFIG_DEBUG_TLBFLUSH)
  std::optional<std::array<std::uint64_t, kTlbFlushReasons.size()>> tlb_flush;  // tracepoint, when open
};

// The counters as JSON (null for what is absent), and back; for a native run inside a QEMU guest.
nlohmann::json to_json(const KernelCounters& c);
KernelCounters counters_from_json(const nlohmann::json& j);

// Reads /proc/interrupts and /proc/vmstat (missing files give empty fields) and the tracepoint when given.
KernelCounters read_kernel_counters(const TlbFlushTracepoint* trace);

// The time of all CPUs, from /proc/stat's first line ("cpu  user nice system idle iowait irq softirq steal ..."),
// in clock ticks: `busy` is all but idle and iowait.
struct CpuTimes {
  std::uint64_t busy = 0;
  std::uint64_t total = 0;
};
// nullopt when the text has no "cpu " line with at least four numbers.
std::optional<CpuTimes> cpu_times(std::string_view proc_stat);
// How many CPUs' worth of time was busy between two readings of a host with `ncpus` CPUs (0 when no tick passed).
double busy_cpus(const CpuTimes& before, const CpuTimes& after, std::uint32_t ncpus);
// Watches /proc/stat for `seconds` of wall time: how many CPUs' worth of time other work took; nullopt without a
// readable /proc/stat.
std::optional<double> measure_busy_cpus(double seconds, std::uint32_t ncpus);

}  // namespace tlbsim::native
