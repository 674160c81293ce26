#include "util/int_list.h"

#include <gtest/gtest.h>

#include "util/error.h"

namespace tlbsim {
namespace {

TEST(IntList, ParsesItemsRangesAndSteps) {
  EXPECT_EQ(parse_int_list("1,2,4-6,10-30:10,2", "--cpus", 1, 56),
            (std::vector<std::uint32_t>{1, 2, 4, 5, 6, 10, 20, 30}));
}

TEST(IntList, RejectsBadItemsNamingThem) {
  for (const char* bad : {"", "a", "1,,2", "5-3", "1-9:0", "0", "57", "3:2", "1-2-3", "-1"}) {
    try {
      parse_int_list(bad, "--cpus", 1, 56);
      ADD_FAILURE() << bad;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("--cpus"), std::string::npos);
    }
  }
}

}  // namespace
}  // namespace tlbsim
