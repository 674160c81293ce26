// The inter-processor-interrupt fabric: the sender's cost per IPI, delivery latency by distance, and the
// handler entry/exit costs on the target.
#pragma once

#include <coroutine>
#include <cstdint>
#include <span>
#include <vector>

#include "hw/topology.h"
#include "sim/cpu.h"
#include "sim/scheduler.h"
#include "sim/source_site.h"

namespace tlbsim::hw {

// Machine-file section [ipi].
struct IpiParams {
  // CPUs one send operation can reach: 1 sends one IPI per target; 16 is x2APIC cluster mode, where one ICR
  // write carries a logical-destination bitmap for a cluster of 16 consecutive CPUs of one package.
  std::uint32_t cluster_size = 1;
  sim::Duration send{0};            // sender-side cost of one send operation
  sim::Duration deliver_socket{0};  // send to interrupt taken, target in the sender's socket
  sim::Duration deliver_remote{0};  // target in another socket
  sim::Duration handler_entry{0};   // interrupt entry on the target before the handler body
  sim::Duration handler_exit{0};    // EOI and return after the handler body
};

// Contract: send() is one step on the sender costing one `send` per cluster of targets (targets in CPU order);
// each target's interrupt arrives when the send for its cluster completed plus the delivery latency; counters
// count IPIs per sender and target.
class IpiFabric {
 public:
  IpiFabric(sim::Scheduler& sched, const Topology& topo, const IpiParams& p);

  struct SendAwaiter {
    IpiFabric& fabric;
    sim::Cpu& from;
    std::span<const CpuId> targets;
    int vector;
    sim::SourceSite site;
    bool await_ready() const noexcept { return targets.empty(); }
    void await_suspend(std::coroutine_handle<> h);
    void await_resume() const noexcept {}
  };
  // Sends `vector` to every CPU in `targets` (the span must stay valid until the step completes).
  SendAwaiter send(sim::Cpu& from, std::span<const CpuId> targets, int vector,
                   sim::SourceSite site = sim::SourceSite::current()) {
    return {*this, from, targets, vector, site};
  }

  const IpiParams& params() const { return p_; }
  // When each target's interrupt arrives for a send from `from` starting at `start` (what send() schedules).
  void arrivals(CpuId from, std::span<const CpuId> targets, sim::SimTime start, std::vector<sim::SimTime>& out) const;
  // Which send cluster a CPU belongs to: consecutive CPUs of one package, cluster_size at a time.
  std::uint64_t cluster_of(CpuId c) const {
    const auto& p = topo_.params();
    const std::uint64_t in_socket =
        std::uint64_t{topo_.core_of(c) % p.cores_per_socket} * p.threads_per_core + topo_.thread_of(c);
    return std::uint64_t{topo_.socket_of(c)} << 32 | in_socket / p_.cluster_size;
  }
  sim::Duration delivery(CpuId from, CpuId to) const {
    return topo_.socket_of(from) == topo_.socket_of(to) ? p_.deliver_socket : p_.deliver_remote;
  }
  std::uint64_t sent_by(CpuId c) const { return sent_[c.get()]; }
  std::uint64_t received_by(CpuId c) const { return received_[c.get()]; }
  std::uint64_t total_sent() const;

 private:
  sim::Scheduler& sched_;
  const Topology& topo_;
  IpiParams p_;
  std::vector<std::uint64_t> sent_, received_;
};

}  // namespace tlbsim::hw
