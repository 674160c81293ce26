// The host machine as Linux describes it: online CPUs from /sys/devices/system/cpu, their packages, cores and
// last-level-cache domains, reduced to a tlbsim topology; and pinning the calling thread to one CPU.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "hw/topology.h"

namespace tlbsim::native {

struct HostCpu {
  std::uint32_t cpu = 0;
  std::uint32_t package = 0;  // topology/physical_package_id
  std::uint32_t core = 0;     // index of (package, core_id) among the host's cores
  std::uint32_t llc = 0;      // lowest CPU of the L3's shared_cpu_list (the package when sysfs has no cache info)
};

struct HostTopology {
  std::vector<HostCpu> cpus;       // online CPUs, ascending
  hw::TopologyParams params;       // the tlbsim topology closest to the host
  std::vector<std::string> notes;  // what had to be assumed (no cache information, uneven packages, ...)
};

// Reads `sysfs_cpu_dir` (normally /sys/devices/system/cpu). With no readable topology (not Linux, or a
// container hiding sysfs) it falls back to std::thread::hardware_concurrency() CPUs, one core each, and says so.
HostTopology read_host_topology(const std::string& sysfs_cpu_dir = "/sys/devices/system/cpu");

// A pair of online CPUs at distance `d` (kSmt, kLlc, kSocket, kRemote), if the host has one.
std::optional<std::pair<std::uint32_t, std::uint32_t>> find_pair(const HostTopology& t, hw::Distance d);

// Pins the calling thread to `cpus` (one CPU or a core's threads); false when the kernel refuses (a CPU is
// outside this process's cpuset).
bool pin_this_thread(const std::vector<std::uint32_t>& cpus);
inline bool pin_this_thread(std::uint32_t cpu) { return pin_this_thread(std::vector<std::uint32_t>{cpu}); }

// Where will-it-scale's main.c binds task i: every hardware thread of core i % cores (cores in CPU order).
std::vector<std::vector<std::uint32_t>> will_it_scale_cpusets(const HostTopology& t, std::uint32_t tasks);

// True on Linux; the native benchmarks need it.
bool native_supported();

}  // namespace tlbsim::native
