// Machine topology: sockets, cores, SMT threads, last-level-cache domains and socket groups, with logical CPU
// numbers assigned the way Linux enumerates them on the modeled architecture.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/ids.h"

namespace tlbsim::hw {

// How Linux numbers logical CPUs.
enum class CpuNumbering : std::uint8_t {
  kSmtLast,         // x86: first threads of every core, socket by socket, then every second thread, ...
  kSmtConsecutive,  // powerpc: the threads of one core have consecutive numbers
};

// The distance class between two CPUs, nearest first. Line transfers and IPI delivery cost by this class.
enum class Distance : std::uint8_t { kSame, kSmt, kLlc, kSocket, kRemote, kFar };
const char* to_string(Distance d);

struct TopologyParams {
  std::uint32_t sockets = 1;            // physical packages
  std::uint32_t cores_per_socket = 1;   // cores in each package
  std::uint32_t threads_per_core = 1;   // SMT threads per core
  std::uint32_t cores_per_llc = 1;      // cores sharing one last-level cache (a CCX on AMD); divides cores_per_socket
  std::uint32_t sockets_per_group = 1;  // sockets one hop apart (a drawer/node); other sockets are two hops away
  CpuNumbering numbering = CpuNumbering::kSmtLast;
};

// Contract: immutable after construction; every query is O(1).
class Topology {
 public:
  explicit Topology(const TopologyParams& p);

  const TopologyParams& params() const { return p_; }
  std::uint32_t cpu_count() const { return static_cast<std::uint32_t>(socket_.size()); }
  std::uint32_t socket_of(CpuId c) const { return socket_[c.get()]; }
  std::uint32_t core_of(CpuId c) const { return core_[c.get()]; }  // global core index
  std::uint32_t llc_of(CpuId c) const { return llc_[c.get()]; }    // global LLC-domain index
  std::uint32_t thread_of(CpuId c) const { return thread_[c.get()]; }
  std::uint32_t group_of(CpuId c) const { return socket_[c.get()] / p_.sockets_per_group; }

  Distance distance(CpuId a, CpuId b) const {
    const std::uint32_t x = a.get(), y = b.get();
    if (x == y) return Distance::kSame;
    if (core_[x] == core_[y]) return Distance::kSmt;
    if (llc_[x] == llc_[y]) return Distance::kLlc;
    if (socket_[x] == socket_[y]) return Distance::kSocket;
    if (socket_[x] / p_.sockets_per_group == socket_[y] / p_.sockets_per_group) return Distance::kRemote;
    return Distance::kFar;
  }

  // The logical CPU number of (socket, core within socket, thread within core).
  CpuId cpu_at(std::uint32_t socket, std::uint32_t core, std::uint32_t thread) const;
  std::string summary() const;

 private:
  TopologyParams p_;
  std::vector<std::uint32_t> socket_, core_, llc_, thread_;
};

}  // namespace tlbsim::hw
