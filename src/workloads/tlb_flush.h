// The loop will-it-scale's tlb_flush1 and tlb_flush2 share (tests/tlb_flush1.c, tests/tlb_flush2.c), and the
// start of a user thread of a shared mm on its CPU.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "kernel/kernel.h"
#include "kernel/sched/sched.h"
#include "sim/task.h"
#include "sim/time.h"
#include "workloads/workload.h"

namespace tlbsim::workloads {

// Maps `size` bytes MAP_PRIVATE, or MAP_SHARED when `shared` (of `file`, or anonymous when null) and, page by page,
// writes 1, madvise(MADV_DONTNEED)s the page and reads it back, one iteration per page counted from
// `measure_from`; then munmaps and maps again, until `end`.
sim::Task<void> tlb_flush_loop(kernel::PerCpu& self, kernel::MmStruct& mm, std::uint64_t size, kernel::File* file,
                               sim::SimTime measure_from, sim::SimTime end, std::uint64_t& iterations,
                               bool shared = false);

// Task i's code: (its CPU, its mm, i, counted from, end, its iteration counter).
using PinnedThreadBody = std::function<sim::Task<void>(kernel::PerCpu&, kernel::MmStruct&, std::uint32_t, sim::SimTime,
                                                       sim::SimTime, std::uint64_t&)>;
// will-it-scale's tasks, task i bound to core i % cores (main.c's affinity: the core's cpuset; the model pins it to
// the core's hardware thread i / cores, so up to one task per hardware thread), as tasks of a scheduler that the caller
// keeps for the run: each first runs when its CPU's idle task schedules it (context_switch loads its mm), may sleep
// (mmap_lock), and takes the scheduler tick. Threads mode: one mm whose threads each hold an mm_users reference
// (powerpc's flush_type_needed reads it); processes mode: each task forked with its own mm. Throws InputError naming
// `workload` for more tasks than CPUs. With a `cpus` list, task i is bound to cpus[i % cpus.size()] instead (a CPU the
// machine lacks is an InputError).
std::unique_ptr<kernel::Sched> start_pinned_threads(kernel::Kernel& k, const WorkloadParams& p,
                                                    std::vector<std::uint64_t>& ops, std::string_view workload,
                                                    const PinnedThreadBody& body, WisMode mode = WisMode::kThreads,
                                                    std::span<const std::uint32_t> cpus = {});

}  // namespace tlbsim::workloads
