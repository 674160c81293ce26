#include "sim/time.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace tlbsim::sim {
namespace {

TEST(Time, ParsesUnits) {
  EXPECT_EQ(parse_duration("250ps"), picoseconds(250));
  EXPECT_EQ(parse_duration("10ns"), nanoseconds(10));
  EXPECT_EQ(parse_duration("1.5us"), nanoseconds(1500));
  EXPECT_EQ(parse_duration("2ms"), milliseconds(2));
  EXPECT_EQ(parse_duration("1s"), milliseconds(1000));
  // Zero needs no unit (`--warmup 0`); any other bare number still does.
  EXPECT_EQ(parse_duration("0"), Duration{0});
  EXPECT_EQ(parse_duration("0.0"), Duration{0});
}

TEST(Time, RejectsMalformedDurations) {
  for (const char* bad : {"", "ms", "10", "10 ms", "10xs", "-5us", "1.2.3us", "1e3ns", "99999999999s"}) {
    EXPECT_THROW(parse_duration(bad), std::invalid_argument) << bad;
  }
}

TEST(Time, NanosecondsRoundToPicoseconds) {
  EXPECT_EQ(from_nanoseconds(1.6), picoseconds(1600));
  EXPECT_EQ(from_nanoseconds(0.0004), picoseconds(0));
  EXPECT_EQ(from_nanoseconds(0.0006), picoseconds(1));
  EXPECT_THROW(from_nanoseconds(-1), std::invalid_argument);
}

TEST(Time, FormatsWithFittingUnit) {
  EXPECT_EQ(format_duration(picoseconds(12)), "12 ps");
  EXPECT_EQ(format_duration(nanoseconds(47)), "47 ns");
  EXPECT_EQ(format_duration(microseconds(20)), "20 us");
  EXPECT_EQ(format_duration(milliseconds(5)), "5 ms");
}

}  // namespace
}  // namespace tlbsim::sim
