#include "hw/topology.h"

#include <gtest/gtest.h>

namespace tlbsim::hw {
namespace {

TopologyParams two_socket(CpuNumbering n) {
  TopologyParams p;
  p.sockets = 2;
  p.cores_per_socket = 8;
  p.threads_per_core = 2;
  p.cores_per_llc = 8;
  p.sockets_per_group = 2;
  p.numbering = n;
  return p;
}

TEST(Topology, X86NumbersFirstThreadsThenSiblings) {
  // As Linux enumerates seed 003's 2 x 8 x 2 machine: 0-7 socket 0, 8-15 socket 1, 16-31 their siblings.
  const Topology t(two_socket(CpuNumbering::kSmtLast));
  EXPECT_EQ(t.cpu_count(), 32u);
  EXPECT_EQ(t.socket_of(CpuId{7}), 0u);
  EXPECT_EQ(t.socket_of(CpuId{8}), 1u);
  EXPECT_EQ(t.socket_of(CpuId{16}), 0u);
  EXPECT_EQ(t.distance(CpuId{0}, CpuId{16}), Distance::kSmt);
  EXPECT_EQ(t.distance(CpuId{0}, CpuId{1}), Distance::kLlc);
  EXPECT_EQ(t.distance(CpuId{0}, CpuId{8}), Distance::kRemote);
  EXPECT_EQ(t.cpu_at(1, 0, 1), CpuId{24});
}

TEST(Topology, PowerNumbersThreadsOfACoreConsecutively) {
  const Topology t(two_socket(CpuNumbering::kSmtConsecutive));
  EXPECT_EQ(t.distance(CpuId{0}, CpuId{1}), Distance::kSmt);
  EXPECT_EQ(t.distance(CpuId{0}, CpuId{2}), Distance::kLlc);
  EXPECT_EQ(t.socket_of(CpuId{15}), 0u);
  EXPECT_EQ(t.socket_of(CpuId{16}), 1u);
}

TEST(Topology, LlcDomainsAndGroupsGiveSocketAndFarDistances) {
  TopologyParams p;
  p.sockets = 4;
  p.cores_per_socket = 12;
  p.threads_per_core = 1;
  p.cores_per_llc = 6;
  p.sockets_per_group = 2;
  const Topology t(p);
  EXPECT_EQ(t.distance(CpuId{0}, CpuId{5}), Distance::kLlc);
  EXPECT_EQ(t.distance(CpuId{0}, CpuId{6}), Distance::kSocket);
  EXPECT_EQ(t.distance(CpuId{0}, CpuId{12}), Distance::kRemote);
  EXPECT_EQ(t.distance(CpuId{0}, CpuId{24}), Distance::kFar);
  EXPECT_EQ(t.distance(CpuId{3}, CpuId{3}), Distance::kSame);
}

TEST(Topology, RejectsInconsistentParameters) {
  TopologyParams p;
  p.cores_per_socket = 6;
  p.cores_per_llc = 4;
  EXPECT_THROW(Topology{p}, std::invalid_argument);
}

}  // namespace
}  // namespace tlbsim::hw
