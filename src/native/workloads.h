// Native versions of the benchmarks the simulator models, run on this host's real kernel: will-it-scale
// tlb_flush1, tlb_flush2 and context_switch1 (threads and processes), and an mmap/touch/munmap storm. Each task is
// bound where will-it-scale binds it and counts its iterations; the kernel's counters are read around the
// measured interval.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "native/host.h"
#include "native/proc_counters.h"

namespace tlbsim::native {

struct NativeRun {
  std::string workload;
  std::uint32_t threads = 0;
  double seconds = 0;     // the measured interval (after the warm-up)
  std::uint64_t ops = 0;  // iterations in it, summed over tasks
  KernelCounters before, after;
  // mmap_storm: where the tasks' mappings lay at the end, "adjacent" (every task's latest mapping borders another's:
  // the threads share one merged VMA), "apart" (two at least 1 MiB apart: a thread stack between) or "near"
  // (neither); empty for the other workloads.
  std::string layout;
};

// (name, one-line description) of every native workload; names match the simulator's workloads where one exists.
std::vector<std::pair<std::string, std::string>> native_workloads();

// What each task of a native run gets: when to stop, the count of tasks done with their set-up (the warm-up starts
// when all are), its own operation counter, and the runner's control block.
struct TaskSlot {
  std::atomic<bool>& stop;
  std::atomic<std::uint32_t>& ready;
  std::atomic<std::uint64_t>& ops;
  void* control;
};
using NativeTaskBody = std::function<void(const TaskSlot&, std::uint32_t task, const std::vector<std::uint32_t>& cpus)>;

// Runs `threads` tasks of `body` (threads, or forked processes when `processes`), task i bound where will-it-scale
// binds it, for `warmup` then `seconds` of wall time; counts ops and reads the kernel's counters around the
// measured interval. Throws InputError for threads == 0 or too many, std::runtime_error when a task fails.
NativeRun run_native_tasks(std::string_view name, std::uint32_t threads, bool processes, const NativeTaskBody& body,
                           double warmup, double seconds, const HostTopology& host, const TlbFlushTracepoint* trace);

// Runs `name` with `threads` tasks for `warmup` then `seconds` of wall time. Throws InputError for an unknown
// name or threads == 0, and std::runtime_error when the host refuses (not Linux, mmap or fork failing).
NativeRun run_native_workload(std::string_view name, std::uint32_t threads, double warmup, double seconds,
                              const HostTopology& host, const TlbFlushTracepoint* trace);

}  // namespace tlbsim::native
