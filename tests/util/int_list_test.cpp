#include "util/int_list.h"

#include <gtest/gtest.h>

#include "util/error.h"

namespace tlbsim {
namespace {

TEST(IntList, ParsesItemsRangesAndSteps) {
  EXPECT_EQ(parse_int_list("1,2,4-6,10-30:10,3", "--cpus", 1, 56),
            (std::vector<std::uint32_t>{1, 2, 3, 4, 5, 6, 10, 20, 30}));
}

// One rule for every repeated value on the command line (issue 32): refused, naming it, not deduplicated.
TEST(IntList, AValueListedTwiceIsRefused) {
  for (const char* twice : {"1,1", "1,2,4-6,10-30:10,2", "4-8,8-56:8"}) {
    try {
      parse_int_list(twice, "--cpus", 1, 56);
      ADD_FAILURE() << twice;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("is listed twice"), std::string::npos) << e.what();
    }
  }
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
