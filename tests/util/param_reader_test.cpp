#include "util/param_reader.h"

#include <gtest/gtest.h>

#include <toml++/toml.h>

namespace tlbsim {
namespace {

TEST(ParamReader, ReadsTypedValuesAndRejectsUnreadKeys) {
  const TomlDocument doc = TomlDocument::parse("[a]\nn = 3\nx = 1.5\nb = true\ns = \"hi\"\nl = [\"p\", \"q\"]\n", "t.toml");
  ParamReader root(doc.root(), "t.toml", "widget");
  ParamReader a = root.section("a");
  EXPECT_EQ(a.integer("n", 0, 10), 3);
  EXPECT_DOUBLE_EQ(a.number("x", 0, 2), 1.5);
  EXPECT_TRUE(a.boolean("b"));
  EXPECT_EQ(a.string("s"), "hi");
  EXPECT_EQ(a.optional_integer("missing", 0, 1), std::nullopt);
  try {
    a.finish();
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("t.toml:6:5: widget: unknown key 'a.l'"), std::string::npos) << e.what();
  }
  EXPECT_EQ(a.string_list("l"), (std::vector<std::string>{"p", "q"}));
  a.finish();
}

TEST(ParamReader, ErrorsNameTheComponentAndLine) {
  const TomlDocument doc = TomlDocument::parse("[a]\n\nn = 30\n", "t.toml");
  ParamReader a = ParamReader(doc.root(), "t.toml", "widget").section("a");
  try {
    a.integer("n", 0, 10);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "t.toml:3:5: widget: 'a.n': expected an integer from 0 to 10, got 30");
  }
}

// 0.0001 ns would round to a step of zero picoseconds, and a spin loop of such steps never advances the clock
// (issue 32: `run --duration 1us` on such a machine spun forever).
TEST(ParamReader, ALatencyBelowOnePicosecondIsRefused) {
  const TomlDocument doc =
      TomlDocument::parse("[a]\nfast = { ns = 0.0001, source = \"s\" }\nok = { ns = 0.001, source = \"s\" }\n", "t.toml");
  ParamReader a = ParamReader(doc.root(), "t.toml", "widget").section("a");
  try {
    a.latency("fast");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("t.toml:2:8: widget: 'a.fast'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("below one picosecond"), std::string::npos) << e.what();
  }
  EXPECT_EQ(a.latency("ok").value, sim::Duration{1});
}

}  // namespace
}  // namespace tlbsim
