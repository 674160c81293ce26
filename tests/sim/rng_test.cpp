#include "sim/rng.h"

#include <gtest/gtest.h>

#include <set>

namespace tlbsim::sim {
namespace {

TEST(Rng, SameSeedSameStream) {
  Rng a(42), b(42);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(a.next(), b.next());
}

TEST(Rng, SplitStreamsAreIndependentOfConsumption) {
  Rng parent(7);
  const Rng child_before = parent.split(3);
  for (int i = 0; i < 10; ++i) parent.next();
  Rng c1 = child_before, c2 = parent.split(3);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(c1.next(), c2.next());
  EXPECT_NE(parent.split(3).next(), parent.split(4).next());
}

TEST(Rng, BelowStaysInRangeAndCoversIt) {
  Rng r(1);
  std::set<std::uint64_t> seen;
  for (int i = 0; i < 1000; ++i) {
    const auto v = r.below(7);
    ASSERT_LT(v, 7u);
    seen.insert(v);
  }
  EXPECT_EQ(seen.size(), 7u);
}

}  // namespace
}  // namespace tlbsim::sim
