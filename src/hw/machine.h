// A machine model: topology, coherence latencies, IPI fabric and TLB shape, read from a TOML machine file
// in which every latency carries its public source.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hw/coherence.h"
#include "hw/ipi.h"
#include "hw/tlb_params.h"
#include "hw/topology.h"
#include "sim/halt_scaling.h"
#include "util/embedded_file.h"

namespace tlbsim::hw {

// One resolved latency parameter, for `tlbsim machine show` and JSON output.
struct ParamRecord {
  std::string key;  // e.g. "coherence.remote_transfer"
  double ns;
  std::string source;
};

// Costs of kernel code paths around the modeled protocol (machine-file section [kernel]).
struct KernelCosts {
  sim::Duration syscall{0};     // null system call round trip (entry + exit)
  sim::Duration page_fault{0};  // minor fault entry, handle_mm_fault skeleton and exit, without the page work
  sim::Duration page_alloc{0};  // one page allocated and later freed through the per-CPU lists
  sim::Duration page_copy{0};   // copy one 4 KiB page
  sim::Duration page_zero{0};   // clear one 4 KiB page
  sim::Duration pte_update{0};  // per-PTE work of mapping or zapping one PTE, without the TLB flush
  sim::Duration memcg_charge{0};       // mem_cgroup_charge of a new page plus its uncharge at free
  sim::Duration lru_update{0};         // LRU insertion (pagevec) plus removal at free
  sim::Duration rmap_update{0};        // adding and later removing one page's reverse mapping
  sim::Duration fault_around_page{0};  // filemap_map_pages' work per page mapped around a fault
  sim::Duration fault_around_skip{0};
  // mmap's work on the VMAs under mmap_lock held for write (get_unmapped_area, mmap_region: the merge or the new
  // VMA's insertion, accounting, perf_event_mmap), and munmap's before it downgrades the lock (the split and
  // detach of do_vmi_munmap's gather).
  sim::Duration mmap_region{0};
  sim::Duration munmap_vmas{0};  // its work per cached page of the window whose PTE is already set
  // One small AF_UNIX stream message's write() and read() beyond the null system call and what the model charges
  // itself (the socket's locks, queue and sk_wmem_alloc, the wake-ups and the wait): skb allocation and free, copies.
  sim::Duration unix_sendmsg{0};
  sim::Duration unix_recvmsg{0};
  // The scheduler's own work, beyond the runqueue lock, the modeled lines (on_cpu, on_rq, need_resched) and
  // switch_mm: __schedule's bookkeeping (update_curr, dequeue of a sleeping task, pick_next_task, put_prev_task),
  // prepare_task_switch, switch_to's register and FPU state, and finish_task_switch; charged once per switch.
  sim::Duration context_switch{0};
  // try_to_wake_up's work on a sleeping task beyond pi_lock, the runqueue lock and the modeled lines:
  // select_task_rq's bookkeeping, enqueue_task (update_curr, place_entity, load averages) and check_preempt.
  sim::Duration try_to_wake_up{0};
  // One small pipe write() / read() beyond the null system call and the modeled pipe mutex, ring and wake-ups:
  // vfs_write / vfs_read, the page (pipe->tmp_page or alloc_page) and its release, the copy, file_update_time.
  sim::Duration pipe_write{0};
  sim::Duration pipe_read{0};
  // Optional (only runs that swap need them; a workload that swaps refuses a machine without them): the swap
  // bookkeeping of one shmem page beyond what the costs above and the modeled TLB flushes charge. swap_out:
  // shrink_folio_list's rmap walks, shmem_writepage (swap slot, swap cache, the shmem xarray), the synchronous bio
  // to zram and its bookkeeping, __remove_mapping; swap_in: shmem_swapin_folio's swap-cache and xarray work, the
  // synchronous bio from zram, swap_free. zram's scan and fill of a same-filled page are charged as page_zero.
  std::optional<sim::Duration> swap_out;
  std::optional<sim::Duration> swap_in;
};

// The barrier instructions the kernel's smp_*() compile to (machine-file section [barrier], optional: without it a
// barrier costs nothing). x86_64: mfence (smp_mb() before v4.15; from v4.15 a LOCK'd add to the stack, which costs
// coherence.local_rmw); powerpc64: sync (smp_mb(), the fully ordered atomics' barriers) and lwsync (smp_rmb(),
// smp_wmb(), release and acquire). ptesync's time is inside the tlb.* invalidation costs.
struct BarrierCosts {
  bool given = false;
  sim::Duration mfence{0};
  sim::Duration sync{0};
  sim::Duration lwsync{0};
  sim::Duration dmb_ish{0};    // aarch64: DMB ISH (smp_mb)
  sim::Duration dmb_ishld{0};  // aarch64: DMB ISHLD (smp_rmb)
  sim::Duration dmb_ishst{0};  // aarch64: DMB ISHST (smp_wmb)
};

// One idle state of the machine's cpuidle driver (machine-file [[idle.states]], shallowest first).
struct IdleState {
  std::string name;
  sim::Duration exit_latency{0};
  sim::Duration target_residency{0};
  bool flushes_tlb = false;  // CPUIDLE_FLAG_TLB_FLUSHED: the kernel calls leave_mm() before entering it
  // TIF_POLLING_NRFLAG while in it: MWAIT states (intel_idle) and POWER's snooze watch the thread flags, so a waker's
  // write of TIF_NEED_RESCHED wakes the CPU; in HLT (x86 default_idle, a KVM guest without a cpuidle driver) the
  // flag is clear and resched_curr sends a reschedule IPI (smp_send_reschedule).
  bool polls = true;
  // Optional, both or neither: the 10th and 90th percentiles of single wake-ups from this state (a KVM guest's HLT:
  // its wake-up is the host's, and varies widely). When set, each halt's exit latency is drawn from the piecewise
  // linear distribution through them and exit_latency as the median (sim::Cpu::draw), instead of exit_latency
  // with the step spread. Zero: none.
  sim::Duration exit_latency_p10{0};
  sim::Duration exit_latency_p90{0};
  // Optional, all three or none: the exit after a halt of short_halt or less (exit_latency_short) where exit_latency
  // is the exit after a halt of long_halt. `tlbsim calibrate` times wake-ups after 30 us and 1 ms asleep, and the
  // halts they ended. Each halt's exit (as drawn above) is then scaled by exit_latency_short / exit_latency for a
  // halt of short_halt or less, and linearly in the halt's length up to 1 at long_halt (sim::HaltLengthScaling).
  // Zero long_halt: none.
  sim::Duration short_halt{0};
  sim::Duration exit_latency_short{0};
  sim::Duration long_halt{0};
  // Optional, both or neither, and only with the three above: the exit after a halt of brief_halt or less
  // (brief_halt < short_halt). `tlbsim calibrate` times wake-ups 5 us after the sleeper blocked; a vCPU halted that
  // briefly wakes faster again (2026-12-08: 23-28 us against 29-46 us after 45-50 us halted). The scale then runs
  // linearly from exit_latency_brief at brief_halt to exit_latency_short at short_halt. Zero brief_halt: none.
  sim::Duration brief_halt{0};
  sim::Duration exit_latency_brief{0};

  // The scaling of each halt's exit by its length; none when the state does not give the three fields above.
  sim::HaltLengthScaling by_length() const {
    if (long_halt.count() <= 0 || exit_latency.count() <= 0) return {};
    const auto scale = [this](sim::Duration e) {
      return static_cast<double>(e.count()) / static_cast<double>(exit_latency.count());
    };
    return {short_halt, long_halt, scale(exit_latency_short), brief_halt, scale(exit_latency_brief)};
  }
};

// [timing], optional: how much the duration of one step of kernel code varies from one execution to the next on this
// machine. Each compute step (sim::Cpu::delay) and each halted CPU's wake-up latency takes its cost times
// 1 + step_spread * u, u uniform in [-1, 1) from the CPU's seeded stream, so that the 10th to 90th percentiles of a
// step lie at 1 -+ 0.8 * step_spread of its cost. 0 (the built-in machines: public figures give one value per cost)
// keeps every cost exact. `tlbsim calibrate` measures it (docs/calibration.md, "Step spread").
struct TimingParams {
  double step_spread = 0;
  std::string source;
};

struct Machine {
  std::string name;
  std::string description;
  std::string arch;    // "x86_64", "powerpc64" or "aarch64"
  std::string origin;  // the file it came from ("builtin:NAME" for embedded files)
  std::vector<std::string> seeds;
  TopologyParams topology;
  CoherenceLatencies coherence;
  IpiParams ipi;
  TlbParams tlb;
  KernelCosts kernel;
  BarrierCosts barrier;
  std::vector<IdleState> idle_states;  // empty: the idle loop only polls
  TimingParams timing;
  std::vector<ParamRecord> latencies;

  std::uint32_t cpu_count() const {
    return topology.sockets * topology.cores_per_socket * topology.threads_per_core;
  }
};

// Parses a machine file. Throws InputError naming origin:line:column, the key and what was expected. `settings`
// (`--set KEY=VALUE`, hw/machine_set.h) replace parameters of the file before it is checked.
Machine parse_machine(std::string_view text, const std::string& origin, const std::vector<std::string>& settings = {});

// A built-in machine by name, or a machine file by path (anything containing '/' or ending in ".toml"), with
// `settings` applied. Throws InputError listing the built-in names when the name is unknown.
Machine load_machine(std::string_view name_or_path, const std::vector<std::string>& settings = {});

using tlbsim::EmbeddedFile;
// The machine files compiled into the binary (configs/machines/*.toml), sorted by name.
std::span<const EmbeddedFile> builtin_machine_files();
std::vector<std::string> builtin_machine_names();

// The fully resolved machine, so that a run can be repeated from its output.
nlohmann::json to_json(const Machine& m);

}  // namespace tlbsim::hw
