#include "model/stats.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace tlbsim::kernel {
namespace {

struct Owned {
  std::uint64_t a = 0, gate = 0;
  std::vector<std::uint64_t> per_cpu = {0, 0};
  sim::Duration t{0};
};

TEST(Stats, RendersRegisteredFieldsByNameOverTheWindow) {
  Stats s;
  Owned o;
  s.registrar(&o)
      .count("a", "a count", o.a, kStatSummary)
      .per_cpu("rows", "by CPU", o.per_cpu, kStatPerCpuArray)
      .duration("group/t_ns", "a time", o.t);
  o.a = 5;
  o.per_cpu = {1, 2};
  o.t = sim::nanoseconds(3);
  EXPECT_EQ(s.to_json(),
            nlohmann::json::parse(R"({"a": 5, "rows": 3, "rows per cpu": [1, 2], "group": {"t_ns": 3.0}})"));
  s.snapshot();
  ++o.a;
  o.per_cpu[1] += 4;
  o.t += sim::nanoseconds(1);
  EXPECT_EQ(s.to_json(),
            nlohmann::json::parse(R"({"a": 1, "rows": 4, "rows per cpu": [0, 4], "group": {"t_ns": 1.0}})"));
  const std::vector<Stats::Row> rows = s.rows();
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].label, "a");
  EXPECT_TRUE(rows[0].summary);
  EXPECT_EQ(rows[2].label, "group t_ns");
  EXPECT_EQ(rows[2].value, "1");
}

TEST(Stats, ASectionShowsWhenAGateIsNonzeroAndDroppedFieldsGo) {
  Stats s;
  Owned o;
  s.registrar(&o, "sec").count("sec/gate", "gate", o.gate, kStatGate).count("sec/a", "not a gate", o.a);
  o.a = 1;
  EXPECT_TRUE(s.to_json().empty());
  o.gate = 1;
  s.snapshot();
  EXPECT_EQ(s.to_json(), nlohmann::json::parse(R"({"sec": {"gate": 0, "a": 0}})")) << "shown by the whole run";
  int n = 0;
  s.registrar(&n).source("src", "a source", [&n] { return nlohmann::json{{"x", {{"y", n}}}}; });
  s.drop(&o);
  n = 2;
  EXPECT_EQ(s.to_json(), nlohmann::json::parse(R"({"src": {"x": {"y": 2}}})"));
  ASSERT_EQ(s.rows().size(), 1u);
  EXPECT_EQ(s.rows()[0].label, "src x");
  EXPECT_EQ(s.rows()[0].value, "y 2");
}

}  // namespace
}  // namespace tlbsim::kernel
