#include "hw/ipi.h"

#include <gtest/gtest.h>

#include <vector>

#include "hw/test_machine.h"
#include "sim/timed_scheduler.h"

namespace tlbsim::hw {
namespace {

using sim::kTimeZero;
using sim::nanoseconds;

IpiParams params(bool multicast) {
  IpiParams p;
  p.cluster_size = multicast ? 4 : 1;
  p.send = nanoseconds(40);
  p.deliver_socket = nanoseconds(150);
  p.deliver_remote = nanoseconds(250);
  p.handler_entry = nanoseconds(200);
  p.handler_exit = nanoseconds(100);
  return p;
}

class Recorder final : public sim::IrqHandler {
 public:
  std::vector<std::pair<CpuId, sim::SimTime>> got;
  sim::Task<void> handle_irq(sim::Cpu& cpu, int) override {
    got.emplace_back(cpu.id(), cpu.now());
    co_return;
  }
};

sim::Task<void> send_to(IpiFabric& f, sim::Cpu& cpu, std::vector<CpuId> targets, sim::SimTime& done) {
  co_await f.send(cpu, targets, 5);
  done = cpu.now();
}

std::vector<std::pair<CpuId, sim::SimTime>> run(bool multicast, sim::SimTime& done) {
  const Topology topo(testing::small_topology());
  sim::TimedScheduler s(topo.cpu_count(), 1);
  IpiFabric f(s, topo, params(multicast));
  Recorder rec;
  for (std::uint32_t c = 0; c < topo.cpu_count(); ++c) s.cpu(CpuId{c}).set_irq_handler(&rec);
  s.cpu(CpuId{0}).start(send_to(f, s.cpu(CpuId{0}), {CpuId{1}, CpuId{2}}, done));
  s.run(kTimeZero + sim::milliseconds(1));
  EXPECT_EQ(f.sent_by(CpuId{0}), 2u);
  EXPECT_EQ(f.received_by(CpuId{2}), 1u);
  return rec.got;
}

TEST(IpiFabric, UnicastSendsOneAtATimeAndDeliversByDistance) {
  sim::SimTime done{};
  const auto got = run(false, done);
  EXPECT_EQ(done, kTimeZero + nanoseconds(80));
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0], std::make_pair(CpuId{1}, kTimeZero + nanoseconds(40 + 150)));
  EXPECT_EQ(got[1], std::make_pair(CpuId{2}, kTimeZero + nanoseconds(80 + 250)));
}

TEST(IpiFabric, ClusterModeSendsOncePerPackageCluster) {
  // Targets cpu1 (socket 0) and cpu2 (socket 1) are in different clusters: two sends, as in unicast.
  sim::SimTime done{};
  auto got = run(true, done);
  EXPECT_EQ(done, kTimeZero + nanoseconds(80));
  // Two targets in one package's cluster take one send.
  const Topology topo(testing::small_topology());
  sim::TimedScheduler s(topo.cpu_count(), 1);
  IpiFabric f(s, topo, params(true));
  Recorder rec;
  for (std::uint32_t c = 0; c < topo.cpu_count(); ++c) s.cpu(CpuId{c}).set_irq_handler(&rec);
  s.cpu(CpuId{0}).start(send_to(f, s.cpu(CpuId{0}), {CpuId{1}, CpuId{4}, CpuId{5}}, done));
  s.run(kTimeZero + sim::milliseconds(1));
  EXPECT_EQ(done, kTimeZero + nanoseconds(40));
  ASSERT_EQ(rec.got.size(), 3u);
  for (const auto& g : rec.got) EXPECT_EQ(g.second, kTimeZero + nanoseconds(40 + 150));
}

}  // namespace
}  // namespace tlbsim::hw
