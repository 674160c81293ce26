// The native executor of a workload file (workloads/file/workload_file.h): the file's operations as real system
// calls and loads and stores on this host's kernel, for `tlbsim validate --workload FILE.toml`.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "native/workloads.h"
#include "workloads/file/workload_file.h"

namespace tlbsim::native {

// The files of a workload's `per = "workload"` regions, made once before the tasks start (threads share the
// descriptors; processes inherit them). Closes them when destroyed. Throws std::runtime_error when the host
// refuses.
class WorkloadFds {
 public:
  WorkloadFds(const workloads::WorkloadFile& f, const workloads::ResolvedValues& v);
  ~WorkloadFds();
  WorkloadFds(const WorkloadFds&) = delete;
  WorkloadFds& operator=(const WorkloadFds&) = delete;
  int operator[](std::size_t region) const { return fds_[region]; }

 private:
  std::vector<int> fds_;  // -1 for regions that are not workload-wide files
};

// A barrier among a native run's tasks (the `barrier` operation), in memory shared with forked tasks: the
// arrivals of the current round, and the round. Waiters sleep on `round` as a futex.
struct NativeBarrier {
  std::atomic<std::uint32_t> arrived{0}, round{0};
  std::uint32_t parties = 0;
};

// What every task of one native run of a file shares.
struct NativeFileRun {
  const workloads::WorkloadFile& f;
  const workloads::ResolvedValues& v;
  const WorkloadFds& fds;
  NativeBarrier& barrier;
  std::string name;          // the file as named, for a spawned child to load
  std::string spawn_helper;  // the tlbsim binary a `spawn` executes (`tlbsim __spawn-child NAME N`)
};

// Task i's body: binds to `cpus`, makes its own files, runs the set-up, reports ready, then runs the loop until
// `stop` (checked at each pass and each count), adding one to `ops` per count. Throws std::runtime_error when a
// system call fails.
void run_file_task(const NativeFileRun& run, const TaskSlot& c, const std::vector<std::uint32_t>& cpus);

// mmap(NULL, len, PROT_READ | PROT_WRITE, flags, fd, 0) at a multiple of `align` (a power of two; a page or less
// is every mapping's): the range is reserved PROT_NONE with `align` to spare, the mapping made MAP_FIXED at the
// aligned address in it, and the rest unmapped, as the kernel's mremap selftest gets PMD- and PUD-aligned mappings.
// Returns MAP_FAILED as mmap does.
void* mmap_aligned(std::uint64_t len, std::uint64_t align, int flags, int fd);

// The program a native `spawn` executes: loads the file `name`, runs the body of its spawn numbered `n`, and
// returns the exit status (0; 2 for a bad file or number).
int run_spawned_child(std::string_view name, std::size_t n);

// Runs the workload file `name` (workloads::load_workload_file) natively with its default parameters, as
// run_native_workload runs a built-in one.
// `spawn_helper`: the tlbsim binary a `spawn` executes (default: this program, /proc/self/exe).
NativeRun run_native_file_workload(std::string_view name, std::uint32_t threads, double warmup, double seconds,
                                   const HostTopology& host, const TlbFlushTracepoint* trace,
                                   std::string spawn_helper = "/proc/self/exe");

}  // namespace tlbsim::native
