#include "util/memory_budget.h"

#include <fmt/format.h>
#include <sys/resource.h>
#include <unistd.h>

#include <fstream>
#include <limits>
#include <string>

#include "util/error.h"

namespace tlbsim {

namespace {

constexpr std::uint64_t kUnknown = std::numeric_limits<std::uint64_t>::max();

// Bytes of address space and of data this process maps now (/proc/self/statm: size and data, in pages).
void mapped_now(std::uint64_t& vm, std::uint64_t& data) {
  vm = data = 0;
  std::ifstream in("/proc/self/statm");
  std::uint64_t size = 0, resident = 0, shared = 0, text = 0, lib = 0, d = 0;
  if (in >> size >> resident >> shared >> text >> lib >> d) {
    const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
    vm = size * page;
    data = d * page;
  }
}

std::uint64_t rlimit_left(int resource, std::uint64_t used) {
  struct rlimit rl {};
  if (::getrlimit(resource, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return kUnknown;
  const auto limit = static_cast<std::uint64_t>(rl.rlim_cur);
  return limit > used ? limit - used : 0;
}

std::uint64_t read_number(const char* path) {
  std::ifstream in(path);
  std::string word;
  if (!(in >> word) || word == "max") return kUnknown;
  try {
    return std::stoull(word);
  } catch (const std::exception&) {
    return kUnknown;
  }
}

std::uint64_t cgroup_left() {
  const std::uint64_t max = read_number("/sys/fs/cgroup/memory.max");
  if (max == kUnknown) return kUnknown;
  const std::uint64_t current = read_number("/sys/fs/cgroup/memory.current");
  if (current == kUnknown) return max;
  return max > current ? max - current : 0;
}

std::uint64_t mem_available() {
  std::ifstream in("/proc/meminfo");
  std::string key, unit;
  std::uint64_t value = 0;
  while (in >> key >> value) {
    std::getline(in, unit);
    if (key == "MemAvailable:") return value * 1024;
  }
  return kUnknown;
}

}  // namespace

std::uint64_t memory_available_bytes() {
  std::uint64_t vm = 0, data = 0;
  mapped_now(vm, data);
  std::uint64_t left = kUnknown;
  for (std::uint64_t v : {rlimit_left(RLIMIT_AS, vm), rlimit_left(RLIMIT_DATA, data), cgroup_left(), mem_available()}) {
    left = std::min(left, v);
  }
  return left;
}

void check_memory_need(std::uint64_t bytes, std::string_view what) {
  const std::uint64_t left = memory_available_bytes();
  if (left == kUnknown || bytes <= left) return;
  throw InputError(fmt::format(
      "{} needs about {} MiB of memory; this process may use about {} MiB more (ulimit -v/-d, its cgroup's "
      "memory.max, or the machine's available memory)",
      what, bytes >> 20, left >> 20));
}

}  // namespace tlbsim
