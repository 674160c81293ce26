#include "mm/page_cache.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace tlbsim::kernel {
namespace {

TEST(PageCacheIndex, KeepsTheFirstFrameOfAnOffsetAndForgetsErasedOnes) {
  PageCacheIndex pc;
  EXPECT_TRUE(pc.empty());
  EXPECT_EQ(pc.find(0), nullptr);
  EXPECT_TRUE(pc.emplace(3, Pfn{30}));
  EXPECT_FALSE(pc.emplace(3, Pfn{31})) << "add_to_page_cache finds the slot taken";
  EXPECT_EQ(pc.at(3), Pfn{30});
  EXPECT_TRUE(pc.emplace(5000, Pfn{7})) << "a second chunk";
  EXPECT_EQ(pc.size(), 2u);
  EXPECT_FALSE(pc.contains(4));
  EXPECT_FALSE(pc.contains(1u << 20)) << "beyond the chunks allocated";
  pc.erase(3);
  pc.erase(3);
  pc.erase(1u << 20);
  EXPECT_EQ(pc.size(), 1u);
  EXPECT_FALSE(pc.contains(3));
  EXPECT_THROW((void)pc.at(3), std::out_of_range);
  EXPECT_THROW(pc.emplace(std::uint64_t{1} << 40, Pfn{1}), std::out_of_range);
}

}  // namespace
}  // namespace tlbsim::kernel
