#include "hw/ipi.h"

#include <numeric>

namespace tlbsim::hw {

IpiFabric::IpiFabric(sim::Scheduler& sched, const Topology& topo, const IpiParams& p)
    : sched_(sched), topo_(topo), p_(p), sent_(topo.cpu_count(), 0), received_(topo.cpu_count(), 0) {}

void IpiFabric::SendAwaiter::await_suspend(std::coroutine_handle<> h) {
  const sim::SimTime start = from.now();
  sim::SimTime t = start;
  std::uint64_t cluster = ~std::uint64_t{0};
  for (std::size_t i = 0; i < targets.size(); ++i) {
    const CpuId to = targets[i];
    const std::uint64_t c = fabric.p_.cluster_size > 1 ? fabric.cluster_of(to) : i;
    if (c != cluster || i == 0) t += fabric.p_.send;
    cluster = c;
    fabric.sched_.send_irq(to, vector, t + fabric.delivery(from.id(), to));
    ++fabric.received_[to.get()];
  }
  fabric.sent_[from.id().get()] += targets.size();
  from.suspend_step(h, t, site);
}

void IpiFabric::arrivals(CpuId from, std::span<const CpuId> targets, sim::SimTime start,
                         std::vector<sim::SimTime>& out) const {
  // The same walk as SendAwaiter::await_suspend: one `send` per cluster of targets, then the delivery latency.
  out.clear();
  sim::SimTime t = start;
  std::uint64_t cluster = ~std::uint64_t{0};
  for (std::size_t i = 0; i < targets.size(); ++i) {
    const std::uint64_t c = p_.cluster_size > 1 ? cluster_of(targets[i]) : i;
    if (c != cluster || i == 0) t += p_.send;
    cluster = c;
    out.push_back(t + delivery(from, targets[i]));
  }
}

std::uint64_t IpiFabric::total_sent() const { return std::accumulate(sent_.begin(), sent_.end(), std::uint64_t{0}); }

}  // namespace tlbsim::hw
