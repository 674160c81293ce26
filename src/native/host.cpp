#include "native/host.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "util/error.h"
#include "util/int_list.h"

#if defined(__linux__)
#include <pthread.h>
#include <sched.h>
#endif

namespace tlbsim::native {

namespace {

std::optional<std::string> read_line(const std::string& path) {
  std::ifstream in(path);
  std::string s;
  if (!in || !std::getline(in, s)) return std::nullopt;
  return s;
}

std::optional<std::uint32_t> read_uint(const std::string& path) {
  const auto s = read_line(path);
  if (!s) return std::nullopt;
  try {
    const long v = std::stol(*s);
    return v < 0 ? 0u : static_cast<std::uint32_t>(v);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::vector<std::uint32_t> cpu_list(const std::string& text) {
  try {
    return parse_int_list(text, "cpu list", 0, 1u << 20);
  } catch (const InputError&) {
    return {};
  }
}

// The lowest CPU sharing the level-3 (else the highest-level) cache with `dir`'s CPU, if sysfs says.
std::optional<std::uint32_t> llc_leader(const std::string& dir) {
  std::optional<std::uint32_t> best_level, leader;
  for (int i = 0; i < 16; ++i) {
    const std::string idx = fmt::format("{}/cache/index{}", dir, i);
    const auto level = read_uint(idx + "/level");
    if (!level) continue;
    const auto shared = read_line(idx + "/shared_cpu_list");
    if (!shared) continue;
    const auto cpus = cpu_list(*shared);
    if (cpus.empty() || (best_level && *level < *best_level)) continue;
    best_level = level;
    leader = cpus.front();
  }
  return leader;
}

// The CPUs listed in `dir`/online; on the real host, only those this process may run on (a container's cpuset can
// hold fewer than are online), with a note on `t` when some were left out.
std::vector<std::uint32_t> online_cpus(const std::string& dir, HostTopology& t) {
  std::vector<std::uint32_t> online;
  if (const auto s = read_line(dir + "/online")) online = cpu_list(*s);
#if defined(__linux__)
  // The real host: only the CPUs this process may run on (a container's cpuset can hold fewer than are online).
  if (dir == "/sys/devices/system/cpu" && !online.empty()) {
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    if (sched_getaffinity(0, sizeof(allowed), &allowed) == 0) {
      const std::size_t before = online.size();
      std::erase_if(online, [&](std::uint32_t c) { return c >= CPU_SETSIZE || !CPU_ISSET(c, &allowed); });
      if (online.size() != before) {
        t.notes.push_back(fmt::format("{} online CPUs are outside this process's affinity mask and left out",
                                      before - online.size()));
      }
    }
  }
#endif
  return online;
}

// Fills t.cpus with each online CPU's package, core and last-level cache from sysfs; without a topology, assumes
// one package of single-threaded cores, and without cache information one LLC per package.
void read_cpus(const std::string& dir, std::vector<std::uint32_t> online, HostTopology& t) {
  bool have_cache = true;
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::uint32_t> core_index;
  for (std::uint32_t c : online) {
    const std::string cd = fmt::format("{}/cpu{}", dir, c);
    const auto pkg = read_uint(cd + "/topology/physical_package_id");
    const auto core = read_uint(cd + "/topology/core_id");
    if (!pkg || !core) {
      online.clear();
      break;
    }
    const auto key = std::make_pair(*pkg, *core);
    const auto [it, fresh] = core_index.emplace(key, static_cast<std::uint32_t>(core_index.size()));
    (void)fresh;
    const auto llc = llc_leader(cd);
    if (!llc) have_cache = false;
    t.cpus.push_back({c, *pkg, it->second, llc.value_or(0)});
  }
  if (online.empty()) {
    t.cpus.clear();
    const std::uint32_t n = std::max(1u, std::thread::hardware_concurrency());
    for (std::uint32_t c = 0; c < n; ++c) t.cpus.push_back({c, 0, c, 0});
    t.notes.push_back(fmt::format("no CPU topology under {}: assumed {} CPUs, one core each, one package", dir, n));
    have_cache = true;  // llc already set to the package
  }
  if (!have_cache) {
    for (HostCpu& c : t.cpus) c.llc = c.package;
    t.notes.push_back("sysfs gives no cache information: assumed one last-level cache per package");
  }
}

// The fewest members of any group in `m` (a map of sets).
template <class M>
std::uint32_t min_size(const M& m) {
  std::size_t n = SIZE_MAX;
  for (const auto& [k, v] : m) n = std::min(n, v.size());
  return static_cast<std::uint32_t>(n);
}

// The most members of any group in `m` (a map of sets).
template <class M>
std::uint32_t max_size(const M& m) {
  std::size_t n = 0;
  for (const auto& [k, v] : m) n = std::max(n, v.size());
  return static_cast<std::uint32_t>(n);
}

// Sets t.params to the uniform shape tlbsim models: the smallest package, core and LLC counts seen, and how SMT
// siblings are numbered: consecutively (powerpc style) or a core's first threads first (x86 style).
void reduce_to_uniform_shape(HostTopology& t) {
  std::map<std::uint32_t, std::set<std::uint32_t>> cores_of_pkg, cpus_of_core, cores_of_llc;
  for (const HostCpu& c : t.cpus) {
    cores_of_pkg[c.package].insert(c.core);
    cpus_of_core[c.core].insert(c.cpu);
    cores_of_llc[c.llc].insert(c.core);
  }
  hw::TopologyParams& p = t.params;
  p.sockets = static_cast<std::uint32_t>(cores_of_pkg.size());
  p.cores_per_socket = min_size(cores_of_pkg);
  p.threads_per_core = min_size(cpus_of_core);
  p.cores_per_llc = std::min(min_size(cores_of_llc), p.cores_per_socket);
  while (p.cores_per_socket % p.cores_per_llc != 0) --p.cores_per_llc;
  p.sockets_per_group = p.sockets;
  if (max_size(cores_of_pkg) != p.cores_per_socket || max_size(cpus_of_core) != p.threads_per_core ||
      max_size(cores_of_llc) != min_size(cores_of_llc)) {
    t.notes.push_back("the host's packages, cores or caches are uneven: the model takes the smallest of each");
  }
  // SMT siblings numbered consecutively (powerpc style) or a core's first threads first (x86 style).
  bool consecutive = p.threads_per_core > 1;
  for (const auto& [core, cpus] : cpus_of_core) {
    if (cpus.size() > 1 && *cpus.rbegin() - *cpus.begin() + 1 != cpus.size()) consecutive = false;
  }
  p.numbering = consecutive ? hw::CpuNumbering::kSmtConsecutive : hw::CpuNumbering::kSmtLast;
}

}  // namespace

bool native_supported() {
#if defined(__linux__)
  return true;
#else
  return false;
#endif
}

HostTopology read_host_topology(const std::string& dir) {
  HostTopology t;
  read_cpus(dir, online_cpus(dir, t), t);
  reduce_to_uniform_shape(t);
  if (t.cpus.size() > 1 && t.params.sockets > 1) {
    t.notes.push_back("every package is taken as one hop from every other (no NUMA distance is read)");
  }
  return t;
}

std::optional<std::pair<std::uint32_t, std::uint32_t>> find_pair(const HostTopology& t, hw::Distance d) {
  for (std::size_t i = 0; i < t.cpus.size(); ++i) {
    for (std::size_t j = i + 1; j < t.cpus.size(); ++j) {
      const HostCpu &a = t.cpus[i], &b = t.cpus[j];
      hw::Distance got = hw::Distance::kRemote;
      if (a.core == b.core)
        got = hw::Distance::kSmt;
      else if (a.llc == b.llc && a.package == b.package)
        got = hw::Distance::kLlc;
      else if (a.package == b.package)
        got = hw::Distance::kSocket;
      if (got == d) return std::make_pair(a.cpu, b.cpu);
    }
  }
  return std::nullopt;
}

bool pin_this_thread(const std::vector<std::uint32_t>& cpus) {
#if defined(__linux__)
  cpu_set_t set;
  CPU_ZERO(&set);
  for (std::uint32_t cpu : cpus) {
    if (cpu >= CPU_SETSIZE) return false;
    CPU_SET(cpu, &set);
  }
  return pthread_setaffinity_np(pthread_self(), sizeof(set), &set) == 0;
#else
  (void)cpus;
  return false;
#endif
}

std::vector<std::vector<std::uint32_t>> will_it_scale_cpusets(const HostTopology& t, std::uint32_t tasks) {
  std::map<std::uint32_t, std::vector<std::uint32_t>> by_core;
  std::vector<std::uint32_t> order;
  for (const HostCpu& c : t.cpus) {
    if (by_core[c.core].empty()) order.push_back(c.core);
    by_core[c.core].push_back(c.cpu);
  }
  std::vector<std::vector<std::uint32_t>> out;
  for (std::uint32_t i = 0; i < tasks; ++i) out.push_back(by_core[order[i % order.size()]]);
  return out;
}

}  // namespace tlbsim::native
