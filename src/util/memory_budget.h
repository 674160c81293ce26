// The memory a run may use: the process's limits (ulimit -v, ulimit -d), its cgroup's limit, and the machine's
// free memory, so that a run too big for them is refused up front with its figure rather than dying midway.
#pragma once

#include <cstdint>
#include <string_view>

namespace tlbsim {

// Bytes this process may still allocate: the least of RLIMIT_AS and RLIMIT_DATA less what it maps now, the cgroup
// v2 memory.max less memory.current, and MemAvailable. UINT64_MAX when none of them is known.
std::uint64_t memory_available_bytes();

// Throws InputError "WHAT needs about X MiB; this process may use about Y MiB more (LIMIT)" when `bytes` exceeds
// memory_available_bytes().
void check_memory_need(std::uint64_t bytes, std::string_view what);

}  // namespace tlbsim
