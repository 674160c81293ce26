#include "hw/topology.h"

#include <stdexcept>

#include <fmt/format.h>

namespace tlbsim::hw {

const char* to_string(Distance d) {
  switch (d) {
    case Distance::kSame: return "same-cpu";
    case Distance::kSmt: return "smt";
    case Distance::kLlc: return "llc";
    case Distance::kSocket: return "socket";
    case Distance::kRemote: return "remote";
    case Distance::kFar: return "far";
  }
  return "?";
}

Topology::Topology(const TopologyParams& p) : p_(p) {
  if (p.sockets == 0 || p.cores_per_socket == 0 || p.threads_per_core == 0 || p.cores_per_llc == 0 ||
      p.sockets_per_group == 0 || p.cores_per_socket % p.cores_per_llc != 0 || p.sockets % p.sockets_per_group != 0) {
    throw std::invalid_argument("inconsistent topology parameters");
  }
  const std::uint32_t n = p.sockets * p.cores_per_socket * p.threads_per_core;
  socket_.resize(n);
  core_.resize(n);
  llc_.resize(n);
  thread_.resize(n);
  for (std::uint32_t s = 0; s < p.sockets; ++s) {
    for (std::uint32_t c = 0; c < p.cores_per_socket; ++c) {
      for (std::uint32_t t = 0; t < p.threads_per_core; ++t) {
        const std::uint32_t cpu = cpu_at(s, c, t).get();
        socket_[cpu] = s;
        core_[cpu] = s * p.cores_per_socket + c;
        llc_[cpu] = (s * p.cores_per_socket + c) / p.cores_per_llc;
        thread_[cpu] = t;
      }
    }
  }
}

CpuId Topology::cpu_at(std::uint32_t socket, std::uint32_t core, std::uint32_t thread) const {
  const std::uint32_t global_core = socket * p_.cores_per_socket + core;
  const std::uint32_t cores = p_.sockets * p_.cores_per_socket;
  if (p_.numbering == CpuNumbering::kSmtLast) return CpuId{thread * cores + global_core};
  return CpuId{global_core * p_.threads_per_core + thread};
}

std::string Topology::summary() const {
  return fmt::format("{} sockets x {} cores x {} threads = {} CPUs ({} cores per LLC, {} sockets per group, {})",
                     p_.sockets, p_.cores_per_socket, p_.threads_per_core, cpu_count(), p_.cores_per_llc,
                     p_.sockets_per_group, p_.numbering == CpuNumbering::kSmtLast ? "smt-last" : "smt-consecutive");
}

}  // namespace tlbsim::hw
