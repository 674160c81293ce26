// The tracer's filter parsing, time formatting, JSON quoting, and the trace-event checker the run tests rely on.
#include "trace/tracer.h"

#include <gtest/gtest.h>

#include "trace/chrome_validate.h"
#include "trace/chrome_writer.h"
#include "util/error.h"

namespace tlbsim::trace {
namespace {

TEST(TraceFilter, ParsesWindowsAndCpuLists) {
  const TraceFilter f = parse_trace_filter("1ms:2ms", "0-3,6", 10, 8);
  EXPECT_EQ(f.start, sim::kTimeZero + sim::milliseconds(1));
  EXPECT_EQ(f.end, sim::kTimeZero + sim::milliseconds(2));
  EXPECT_EQ(f.max_events, 10u);
  EXPECT_TRUE(f.includes(0));
  EXPECT_TRUE(f.includes(6));
  EXPECT_FALSE(f.includes(4));
  EXPECT_FALSE(f.includes(7));
  const TraceFilter open = parse_trace_filter("500us:", "", 0, 8);
  EXPECT_EQ(open.start, sim::kTimeZero + sim::microseconds(500));
  EXPECT_EQ(open.end, sim::SimTime::max());
  EXPECT_TRUE(open.includes(7));
  EXPECT_EQ(parse_trace_filter(":3us", "", 0, 8).start, sim::kTimeZero);
}

TEST(TraceFilter, RefusesMalformedOptionsSayingWhich) {
  const auto message = [](const std::string& window, const std::string& cpus) {
    try {
      parse_trace_filter(window, cpus, 0, 8);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("1ms", "").find("--trace-window: '1ms' is not START:END"), std::string::npos);
  EXPECT_NE(message("2ms:1ms", "").find("ends before it starts"), std::string::npos);
  EXPECT_NE(message("soon:1ms", "").find("--trace-window"), std::string::npos);
  EXPECT_NE(message("", "0-8").find("--trace-cpus"), std::string::npos);
}

TEST(TraceFormat, MicrosecondsFromPicosecondsAreExact) {
  EXPECT_EQ(format_us(sim::kTimeZero), "0.000000");
  EXPECT_EQ(format_us(sim::kTimeZero + sim::Duration{1}), "0.000001");
  EXPECT_EQ(format_us(sim::kTimeZero + sim::microseconds(1234) + sim::Duration{567}), "1234.000567");
  EXPECT_EQ(json_quote("a\"b\\c\n"), "\"a\\\"b\\\\c\\u000a\"");
}

TEST(TraceFormat, CheckerCatchesBrokenTraces) {
  const auto check = [](const char* text) {
    return testing::validate_chrome_trace(nlohmann::json::parse(text)).errors.size();
  };
  EXPECT_EQ(check(R"({"traceEvents":[{"ph":"B","ts":1,"pid":1,"tid":0,"name":"a"},
                                     {"ph":"E","ts":2,"pid":1,"tid":0,"name":"a"}]})"),
            0u);
  EXPECT_GT(check(R"({"traceEvents":[{"ph":"B","ts":1,"pid":1,"tid":0,"name":"a"}]})"), 0u);
  EXPECT_GT(check(R"({"traceEvents":[{"ph":"B","ts":1,"pid":1,"tid":0,"name":"a"},
                                     {"ph":"B","ts":1,"pid":1,"tid":0,"name":"b"},
                                     {"ph":"E","ts":2,"pid":1,"tid":0,"name":"a"},
                                     {"ph":"E","ts":2,"pid":1,"tid":0,"name":"b"}]})"),
            0u);
  EXPECT_GT(check(R"({"traceEvents":[{"ph":"s","ts":1,"pid":1,"tid":0,"name":"x","cat":"c","id":4}]})"), 0u);
  EXPECT_GT(check(R"({"traceEvents":[{"ph":"C","ts":1,"pid":1,"tid":0,"name":"x","args":{"v":"1"}}]})"), 0u);
  EXPECT_GT(check(R"({"traceEvents":[{"ph":"X","ts":1,"pid":1,"tid":0,"name":"x","dur":-1}]})"), 0u);
  EXPECT_GT(check(R"({"traceEvents":[{"ph":"i","ts":1,"pid":1,"name":"x"}]})"), 0u);
}

}  // namespace
}  // namespace tlbsim::trace
