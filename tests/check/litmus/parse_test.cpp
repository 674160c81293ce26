// The litmus reader: the kernel's format is read as written, and a malformed file or one outside the subset is
// refused with its file and line.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "check/litmus/litmus.h"

namespace tlbsim::check::litmus {
namespace {

const char* kSb = R"(C SB+fencembonceonces

(*
 * Result: Never
 *
 * A comment (with parentheses) and a "*" or two.
 *)

{}

P0(int *x, int *y)
{
	int r0;

	WRITE_ONCE(*x, 1);
	smp_mb();
	r0 = READ_ONCE(*y);
}

P1(int *x, int *y)
{
	int r0;

	WRITE_ONCE(*y, 1);
	smp_mb();
	r0 = READ_ONCE(*x);
}

exists (0:r0=0 /\ 1:r0=0)
)";

TEST(LitmusParse, ReadsTheKernelsFormat) {
  const LitmusTest t = parse_litmus(kSb, "sb.litmus");
  EXPECT_EQ(t.name, "SB+fencembonceonces");
  EXPECT_EQ(t.expected, "Never");
  EXPECT_EQ(t.vars, (std::vector<std::string>{"x", "y"}));
  ASSERT_EQ(t.threads.size(), 2u);
  EXPECT_EQ(t.threads[0].regs, (std::vector<std::string>{"r0"}));
  ASSERT_EQ(t.threads[1].body.size(), 3u);
  EXPECT_EQ(t.threads[1].body[1].kind, Stmt::Kind::kFence);
  EXPECT_EQ(t.threads[1].body[1].fn, "smp_mb");
  EXPECT_EQ(t.cond.kind, Cond::Kind::kAnd);
  const LitmusTest init = parse_litmus(
      "C i\n{\n\tint x;\n\tint y = 3;\n\tz=-1;\n}\nP0(int *x) { WRITE_ONCE(*x, 1); }\n"
      "~exists (x=0 \\/ ~(y=3))\n",
      "i.litmus");
  EXPECT_EQ(init.init, (std::vector<long long>{0, 3, -1}));
  EXPECT_EQ(init.quantifier, LitmusTest::Quantifier::kNotExists);
}

// Pointers as the kernel's tests write them (MP+onceassign+derefonce): a variable's name is its address.
TEST(LitmusParse, ReadsPointersAndAddressDependencies) {
  const LitmusTest t = parse_litmus(
      "C p\n{\ny=z;\nint *w = &x;\n}\n"
      "P0(int *x, int **y)\n{\n\tWRITE_ONCE(*x, 1);\n\trcu_assign_pointer(*y, x);\n}\n"
      "P1(int *x, int **y)\n{\n\tint *r0;\n\tint r1;\n\trcu_read_lock();\n\tr0 = rcu_dereference(*y);\n"
      "\tr1 = READ_ONCE(*r0);\n\trcu_read_unlock();\n}\nexists (1:r0=x /\\ 1:r1=0)\n",
      "p.litmus");
  EXPECT_EQ(t.vars, (std::vector<std::string>{"y", "z", "w", "x"}));
  EXPECT_EQ(t.init, (std::vector<long long>{address_of(1), 0, address_of(3), 0}));
  EXPECT_TRUE(t.dependencies);
  EXPECT_EQ(t.threads[0].body[1].kind, Stmt::Kind::kRelease);
  EXPECT_EQ(t.threads[0].body[1].e->value, address_of(3));
  const auto& p1 = t.threads[1].body;
  ASSERT_EQ(p1.size(), 4u);
  EXPECT_EQ(p1[0].kind, Stmt::Kind::kFence);
  EXPECT_EQ(p1[1].kind, Stmt::Kind::kRead);
  EXPECT_EQ(p1[1].var, 0);
  EXPECT_EQ(p1[2].addr_reg, 0);  // through r0
  EXPECT_EQ(p1[2].var, -1);
  EXPECT_EQ(t.cond.a->value, address_of(3));
  EXPECT_FALSE(parse_litmus(kSb, "sb.litmus").dependencies);
}

TEST(LitmusParse, RefusesWithTheFileAndLine) {
  struct Case {
    std::string text;
    std::string message;
    bool unsupported;
  };
  const std::string head = "C t\n{}\nP0(int *x)\n{\n\tint r0;\n";
  const std::vector<Case> cases = {
      {"", "t.litmus:1: expected the header 'C NAME'", false},
      {"C t\n{}\n", "t.litmus:3: expected a process P0(...) { ... }", false},
      {head + "\tsynchronize_rcu();\n}\nexists (0:r0=0)\n",
       "t.litmus:6: 'synchronize_rcu' is outside tlbsim's litmus subset", true},
      {head + "\tr0 = READ_ONCE(*q);\n}\nexists (0:r0=0)\n", "t.litmus:6: 'q' is not a parameter of this process",
       false},
      {head + "\tr9 = READ_ONCE(*x);\n}\nexists (0:r0=0)\n", "t.litmus:6: 'r9' is not a register of this process",
       false},
      {head + "\tr0 = READ_ONCE(*x)\n}\nexists (0:r0=0)\n", "t.litmus:7: expected ';', got '}'", false},
      {head + "}\nexists (1:r0=0)\n", "t.litmus:7: there is no process P1", false},
      {head + "}\nexists (0:r0=0) junk\n", "t.litmus:7: unexpected 'junk' after the final condition", false},
      {head + "}\nfilter (0:r0=0)\nexists (0:r0=0)\n", "t.litmus:7: a 'filter' clause is outside", true},
      {"C t\n{ int x[2]; }\nP0(int *x) { }\nexists (x=0)\n", "t.litmus:2: an array", true},
      {head + "}\nexists (0:r0=q)\n", "t.litmus:7: 'q' is not a shared variable of the test", false},
      {head + "\t*x = 1;\n}\nexists (0:r0=0)\n", "t.litmus:6: a plain access", true},
      {head + "\tint x;\n}\nexists (0:r0=0)\n", "t.litmus:6: register 'x' has a parameter's name", false},
      {"C t\n{}\nP0(struct foo *x) { }\nexists (x=0)\n", "t.litmus:3: a parameter of type 'struct'", true},
      {head + "\tr0 = *x;\n}\nexists (0:r0=0)\n", "t.litmus:6: a plain access to 'x'", true},
      {head + "\tr0 = smp_mb();\n}\nexists (0:r0=0)\n", "t.litmus:6: 'smp_mb' returns no value", false},
      {head + "\tr0 = 99999999999999999;\n}\nexists (0:r0=0)\n", "t.litmus:6: a number too large", false},
      {"C t\n{}\nP1(int *x) { }\nexists (x=0)\n", "t.litmus:3: process P1 out of order (expected P0)", false},
      {"C t\n{}\nP066666666666666666666666(int *x) { }\nexists (x=0)\n",
       "t.litmus:3: process P066666666666666666666666 out of order (expected P0)", false},
      {"C t\n(* never closed\n{}\n", "t.litmus:2: a comment that is never closed", false},
      {head + "\tr0 = READ_ONCE(*x); @\n}\n", "t.litmus:6: unexpected character '@'", false},
  };
  for (const Case& c : cases) {
    try {
      parse_litmus(c.text, "t.litmus");
      ADD_FAILURE() << "accepted: " << c.text;
    } catch (const Unsupported& e) {
      EXPECT_TRUE(c.unsupported) << e.what();
      EXPECT_NE(std::string(e.what()).find(c.message), std::string::npos) << e.what() << "\nexpected: " << c.message;
    } catch (const InputError& e) {
      EXPECT_FALSE(c.unsupported) << e.what();
      EXPECT_NE(std::string(e.what()).find(c.message), std::string::npos) << e.what() << "\nexpected: " << c.message;
    }
  }
}

}  // namespace
}  // namespace tlbsim::check::litmus
