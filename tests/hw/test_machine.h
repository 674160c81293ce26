// A small machine with round-number latencies for unit tests (not a calibrated model).
#pragma once

#include "hw/machine.h"

namespace tlbsim::hw::testing {

inline CoherenceLatencies round_latencies() {
  CoherenceLatencies l;
  l.l1_hit = sim::nanoseconds(1);
  l.local_rmw = sim::nanoseconds(5);
  l.smt_transfer = sim::nanoseconds(10);
  l.llc_transfer = sim::nanoseconds(40);
  l.socket_transfer = sim::nanoseconds(80);
  l.remote_transfer = sim::nanoseconds(120);
  l.far_transfer = sim::nanoseconds(300);
  l.memory = sim::nanoseconds(90);
  return l;
}

// 2 sockets x 2 cores x 2 threads, x86 numbering: cpu0/cpu4 SMT siblings, cpu0/cpu1 same LLC, cpu0/cpu2 remote.
inline TopologyParams small_topology() {
  TopologyParams p;
  p.sockets = 2;
  p.cores_per_socket = 2;
  p.threads_per_core = 2;
  p.cores_per_llc = 2;
  p.sockets_per_group = 2;
  return p;
}

// Two CPUs on one socket: for tests that enumerate every schedule (under POWER each write propagates to every other
// CPU as an action of its own, so idle CPUs multiply the schedules).
inline TopologyParams two_cpu_topology() {
  TopologyParams p;
  p.sockets = 1;
  p.cores_per_socket = 2;
  p.threads_per_core = 1;
  p.cores_per_llc = 2;
  p.sockets_per_group = 1;
  return p;
}

}  // namespace tlbsim::hw::testing
