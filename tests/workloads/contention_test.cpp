#include "workloads/contention.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "hw/machine.h"
#include "util/error.h"

namespace tlbsim::workloads {
namespace {

using sim::microseconds;

double ops_per_sec(const hw::Machine& m, const char* pattern, std::uint32_t cpus) {
  return run_contention(m, pattern, cpus, microseconds(20), 1).ops_per_sec;
}

// The shapes of the foundation issue, which must come from the coherence model rather than constants.
TEST(Contention, SkylakeSharedRmwStopsScalingWithinASocketAndDropsAcrossSockets) {
  const hw::Machine m = hw::load_machine("skylake-sp-2s28c");
  const double one = ops_per_sec(m, "shared-rmw", 1);
  const double four = ops_per_sec(m, "shared-rmw", 4);
  const double socket = ops_per_sec(m, "shared-rmw", 28);
  const double both = ops_per_sec(m, "shared-rmw", 56);
  EXPECT_LT(four, one);             // contention makes even four CPUs slower than one uncontended
  EXPECT_LT(socket, four * 1.05);   // no growth inside the socket
  EXPECT_LT(both, socket);          // and none across the second socket: cross-socket transfers cost more
  const ContentionPoint p = run_contention(m, "shared-rmw", 56, microseconds(20), 1);
  EXPECT_GT(p.lines.remote_transfers, p.lines.transfers / 4);
}

TEST(Contention, SkylakePrivateRmwScalesLinearly) {
  const hw::Machine m = hw::load_machine("skylake-sp-2s28c");
  const double one = ops_per_sec(m, "private-rmw", 1);
  EXPECT_NEAR(ops_per_sec(m, "private-rmw", 56) / one, 56.0, 0.56);
  EXPECT_NEAR(ops_per_sec(m, "private-rmw", 28) / one, 28.0, 0.28);
}

TEST(Contention, SkylakeSharedReadScalesNearLinearly) {
  const hw::Machine m = hw::load_machine("skylake-sp-2s28c");
  const double one = ops_per_sec(m, "shared-read", 1);
  EXPECT_GT(ops_per_sec(m, "shared-read", 56) / one, 0.9 * 56);
  EXPECT_GT(ops_per_sec(m, "shared-read", 28) / one, 0.9 * 28);
}

TEST(Contention, Power8RunsAllCpusOnOneLine) {
  const hw::Machine m = hw::load_machine("power8-16s192c-smt8");
  const ContentionPoint p = run_contention(m, "shared-rmw", 1536, microseconds(50), 1);
  EXPECT_EQ(p.per_cpu_ops.size(), 1536u);
  EXPECT_GT(p.ops, 0u);
  EXPECT_GT(p.lines.remote_transfers, 0u);
  // Serialized transfers bound throughput by the slowest hops: far below one op per transfer time per CPU.
  EXPECT_LT(p.ops_per_sec, 1e9 / 50.0);
  const ContentionPoint priv = run_contention(m, "private-rmw", 1536, microseconds(1), 1);
  EXPECT_NEAR(priv.ops_per_sec / run_contention(m, "private-rmw", 1, microseconds(1), 1).ops_per_sec, 1536, 16);
}

TEST(Contention, SameSeedIsBitIdenticalAndSeedsChangeTieOrder) {
  const hw::Machine m = hw::load_machine("small-2s2c");
  const auto a = to_json(run_contention(m, "shared-rmw", 8, microseconds(5), 7)).dump();
  const auto b = to_json(run_contention(m, "shared-rmw", 8, microseconds(5), 7)).dump();
  EXPECT_EQ(a, b);
  int differing = 0;
  for (std::uint64_t seed = 1; seed <= 5; ++seed) {
    differing += run_contention(m, "shared-rmw", 8, microseconds(5), seed).per_cpu_ops !=
                 run_contention(m, "shared-rmw", 8, microseconds(5), seed + 10).per_cpu_ops;
  }
  EXPECT_GE(differing, 3);
}

TEST(Contention, BadInputIsAnInputError) {
  const hw::Machine m = hw::load_machine("small-2s2c");
  EXPECT_THROW(run_contention(m, "shared-write", 2, microseconds(1), 1), InputError);
  EXPECT_THROW(run_contention(m, "shared-rmw", 9, microseconds(1), 1), InputError);
  EXPECT_THROW(run_contention(m, "shared-rmw", 0, microseconds(1), 1), InputError);
}

}  // namespace
}  // namespace tlbsim::workloads
