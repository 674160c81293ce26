// The litmus-file reader's expressions, locations and final condition (check/litmus/parser.h).
#include <fmt/format.h>

#include <algorithm>

#include "check/litmus/parser.h"

namespace tlbsim::check::litmus::detail {

namespace {

Cond make_cond(Cond::Kind kind) {
  Cond c;
  c.kind = kind;
  return c;
}

}  // namespace

void Parser::location(Stmt& s) {
  const bool star = peek().text == "*";
  const bool amp = peek().text == "&";
  if (star || amp) next();
  const Token& at = peek();
  const std::string n = ident();
  if (params_.contains(n)) {
    s.var = var(n);
    return;
  }
  // A register that holds an address: READ_ONCE(*r0), smp_load_acquire(r0). The load's address depends on r0.
  if (!amp && std::find(thread_->regs.begin(), thread_->regs.end(), n) != thread_->regs.end()) {
    s.addr_reg = reg_index(at, n);
    t_.dependencies = true;
    return;
  }
  fail(at, fmt::format("'{}' is not a parameter of this process", n));
}

long long Parser::value() {
  if (peek().text == "&") next();
  if (peek().ident) return address_of(var(ident()));
  return number();
}

std::unique_ptr<Expr> Parser::binary(std::unique_ptr<Expr> a, const std::string& op, std::unique_ptr<Expr> b) {
  auto e = std::make_unique<Expr>();
  e->kind = Expr::Kind::kBinary;
  e->op = op;
  e->a = std::move(a);
  e->b = std::move(b);
  return e;
}

// Expressions, C precedence from || down to unary.
std::unique_ptr<Expr> Parser::expr(int level) {
  static const std::vector<std::vector<std::string>> kLevels = {
      {"||"}, {"&&"}, {"|"}, {"^"}, {"&"}, {"==", "!="}, {"<", ">", "<=", ">="}, {"+", "-"}};
  if (level == static_cast<int>(kLevels.size())) return unary();
  auto e = expr(level + 1);
  const auto& ops = kLevels[static_cast<std::size_t>(level)];
  while (std::find(ops.begin(), ops.end(), peek().text) != ops.end()) {
    const std::string op = next().text;
    e = binary(std::move(e), op, expr(level + 1));
  }
  return e;
}

std::unique_ptr<Expr> Parser::unary() {
  const Token& at = peek();
  const Nest nest(*this, at);
  auto e = std::make_unique<Expr>();
  if (at.text == "!" || at.text == "-") {
    next();
    e->kind = Expr::Kind::kUnary;
    e->op = at.text;
    e->a = unary();
  } else if (at.text == "(") {
    next();
    e = expr();
    expect(")");
  } else if (at.number) {
    e->value = std::stoll(next().text);
  } else if (at.text == "*" && peek(1).ident) {
    unsupported(at, fmt::format("a plain access to '{}'", peek(1).text));
  } else if (at.ident) {
    if (peek(1).text == "(") unsupported(at, fmt::format("a call to '{}' inside an expression", at.text));
    if (params_.contains(at.text)) {
      e->value = address_of(var(next().text));  // a parameter's name is its address (int *x)
    } else {
      e->kind = Expr::Kind::kReg;
      e->reg = reg_index(at, next().text);
    }
  } else {
    fail(at, fmt::format("expected an expression, got '{}'", at.text));
  }
  return e;
}

// A chain of `next` terms joined by `op` (left-associative), as a tree of `kind` nodes.
Cond Parser::cond_chain(const char* op, Cond::Kind kind, Cond (Parser::*next)()) {
  Cond c = (this->*next)();
  while (peek().text == op) {
    this->next();
    Cond o = make_cond(kind);
    o.a = std::make_unique<Cond>(std::move(c));
    o.b = std::make_unique<Cond>((this->*next)());
    c = std::move(o);
  }
  return c;
}

Cond Parser::cond_or() { return cond_chain("\\/", Cond::Kind::kOr, &Parser::cond_and); }

Cond Parser::cond_and() { return cond_chain("/\\", Cond::Kind::kAnd, &Parser::cond_atom); }

Cond Parser::cond_atom() {
  const Token& at = peek();
  const Nest nest(*this, at);
  if (at.text == "~" || at.text == "not") {
    next();
    Cond o = make_cond(Cond::Kind::kNot);
    o.a = std::make_unique<Cond>(cond_atom());
    return o;
  }
  if (at.text == "(") {
    next();
    Cond c = cond_or();
    expect(")");
    return c;
  }
  if (at.text == "true") {
    next();
    return Cond{};
  }
  Cond c;
  if (at.number) {
    c.kind = Cond::Kind::kRegEq;
    c.thread = static_cast<int>(number());
    if (c.thread < 0 || c.thread >= static_cast<int>(t_.threads.size())) {
      fail(at, fmt::format("there is no process P{}", c.thread));
    }
    expect(":");
    const Token& r = peek();
    const auto& regs = t_.threads[static_cast<std::size_t>(c.thread)].regs;
    const std::string name = ident();
    const auto it = std::find(regs.begin(), regs.end(), name);
    if (it == regs.end()) fail(r, fmt::format("'{}' is not a register of P{}", name, c.thread));
    c.reg = static_cast<int>(it - regs.begin());
  } else {
    c.kind = Cond::Kind::kVarEq;
    const Token& v = peek();
    const std::string name = ident();
    const auto it = std::find(t_.vars.begin(), t_.vars.end(), name);
    if (it == t_.vars.end()) fail(v, fmt::format("'{}' is not a shared variable of the test", name));
    c.var = static_cast<int>(it - t_.vars.begin());
  }
  expect("=");
  // A value, or a variable's address (1:r0=x); a name the test never mentioned is no address.
  if (peek().ident && std::find(t_.vars.begin(), t_.vars.end(), peek().text) == t_.vars.end()) {
    fail(peek(), fmt::format("'{}' is not a shared variable of the test", peek().text));
  }
  c.value = value();
  return c;
}

}  // namespace tlbsim::check::litmus::detail
