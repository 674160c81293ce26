// The litmus-file reader (check/litmus/litmus.h): the file, its processes and their statements (parser.h; the
// expressions, locations and the final condition are in parse_expr.cpp). Errors name the file and line.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <set>

#include "check/litmus/lex.h"
#include "check/litmus/litmus.h"
#include "check/litmus/parser.h"

namespace tlbsim::check::litmus {

namespace detail {

namespace {

Stmt make_stmt(Stmt::Kind kind, int line, int reg = -1) {
  Stmt s;
  s.kind = kind;
  s.line = line;
  s.reg = reg;
  return s;
}

}  // namespace

void Parser::file() {
  init_block();
  while (peek().ident && peek().text.size() > 1 && peek().text[0] == 'P' &&
         std::all_of(peek().text.begin() + 1, peek().text.end(), [](char ch) { return std::isdigit(ch); })) {
    process();
  }
  if (t_.threads.empty()) fail(peek(), "expected a process P0(...) { ... }");
  if (peek().text == "locations") {
    while (!at_end() && next().text != "]") {
    }
  }
  if (peek().text == "filter") unsupported(peek(), "a 'filter' clause");
  if (peek().text == "~") {
    next();
    expect("exists");
    t_.quantifier = LitmusTest::Quantifier::kNotExists;
  } else if (peek().text == "exists") {
    next();
  } else if (peek().text == "forall") {
    next();
    t_.quantifier = LitmusTest::Quantifier::kForall;
  } else {
    fail(peek(), "expected the final condition: exists, ~exists or forall");
  }
  t_.cond = cond_or();
  if (!at_end()) fail(peek(), fmt::format("unexpected '{}' after the final condition", peek().text));
}

void Parser::fail(const Token& at, const std::string& what) const {
  throw InputError(fmt::format("{}:{}: {}", t_.origin, at.line, what));
}

void Parser::unsupported(const Token& at, const std::string& what) const {
  throw Unsupported(fmt::format("{}:{}: {} is outside tlbsim's litmus subset", t_.origin, at.line, what));
}

void Parser::expect(const std::string& text) {
  if (peek().text != text) {
    fail(peek(), fmt::format("expected '{}', got '{}'", text, at_end() ? "end of file" : peek().text));
  }
  next();
}

std::string Parser::ident() {
  if (!peek().ident) fail(peek(), fmt::format("expected a name, got '{}'", peek().text));
  return next().text;
}

long long Parser::number() {
  const bool neg = peek().text == "-";
  if (neg) next();
  if (!peek().number) fail(peek(), fmt::format("expected a number, got '{}'", peek().text));
  const long long v = std::stoll(next().text);
  return neg ? -v : v;
}

int Parser::var(const std::string& name) {
  const auto it = std::find(t_.vars.begin(), t_.vars.end(), name);
  if (it != t_.vars.end()) return static_cast<int>(it - t_.vars.begin());
  if (t_.vars.size() == kMaxVars) fail(peek(), fmt::format("more than {} shared variables", kMaxVars));
  t_.vars.push_back(name);
  t_.init.push_back(0);
  return static_cast<int>(t_.vars.size() - 1);
}

void Parser::stars() {
  while (peek().text == "*") next();
}

void Parser::init_block() {
  expect("{");
  while (peek().text != "}") {
    if (at_end()) fail(peek(), "the initial state is never closed");
    bool declared = false;
    if (peek().text == "int" || peek().text == "atomic_t" || peek().text == "spinlock_t") {
      next();
      stars();
      declared = true;
    }
    if (peek().number) unsupported(peek(), "an initial register value");
    const int v = var(ident());
    if (peek().text == "[") unsupported(peek(), "an array");
    if (peek().text == "=") {
      next();
      t_.init[static_cast<std::size_t>(v)] = value();
    } else if (!declared) {
      fail(peek(), "expected '=' and a value");
    }
    expect(";");
  }
  next();
}

void Parser::process() {
  const Token& at = peek();
  const std::string name = next().text;
  if (name != fmt::format("P{}", t_.threads.size())) {
    fail(at, fmt::format("process {} out of order (expected P{})", name, t_.threads.size()));
  }
  if (t_.threads.size() == kMaxThreads) fail(at, fmt::format("more than {} processes", kMaxThreads));
  thread_ = &t_.threads.emplace_back();
  expect("(");
  while (peek().text != ")") {
    const Token& ty = peek();
    const std::string type = ident();
    if (type != "int" && type != "atomic_t" && type != "spinlock_t") {
      unsupported(ty, fmt::format("a parameter of type '{}'", type));
    }
    expect("*");
    stars();  // int **y: a location that holds an address
    const std::string param = ident();
    params_.insert(param);
    var(param);
    if (peek().text == ",")
      next();
    else if (peek().text != ")")
      fail(peek(), "expected ',' or ')' in the parameter list");
  }
  next();
  expect("{");
  while (peek().text != "}") {
    if (at_end()) fail(peek(), "a process body that is never closed");
    statement(thread_->body);
  }
  next();
  params_.clear();
}

int Parser::reg_index(const Token& at, const std::string& name) const {
  const auto it = std::find(thread_->regs.begin(), thread_->regs.end(), name);
  if (it == thread_->regs.end()) fail(at, fmt::format("'{}' is not a register of this process", name));
  return static_cast<int>(it - thread_->regs.begin());
}

void Parser::statement(std::vector<Stmt>& out) {
  const Token& at = peek();
  const Nest nest(*this, at);
  if (at.text == "{") {
    next();
    while (peek().text != "}") {
      if (at_end()) fail(peek(), "a block that is never closed");
      statement(out);
    }
    next();
    return;
  }
  if (at.text == ";") {
    next();
    return;
  }
  if (at.text == "int") {
    next();
    for (;;) {
      stars();  // int *r0: a register that holds an address
      const std::string r = ident();
      if (params_.contains(r)) fail(at, fmt::format("register '{}' has a parameter's name", r));
      thread_->regs.push_back(r);
      if (peek().text == "=") {
        next();
        out.push_back(call_or_expr(static_cast<int>(thread_->regs.size() - 1)));
      }
      if (peek().text != ",") break;
      next();
    }
    expect(";");
    return;
  }
  if (at.text == "if") {
    next();
    expect("(");
    Stmt s = make_stmt(Stmt::Kind::kIf, at.line);
    s.e = expr();
    expect(")");
    statement(s.body);
    if (peek().text == "else") {
      next();
      statement(s.orelse);
    }
    out.push_back(std::move(s));
    return;
  }
  if (at.text == "*") unsupported(at, "a plain access");
  if (!at.ident) fail(at, fmt::format("expected a statement, got '{}'", at.text));
  int reg = -1;
  if (peek(1).text == "=") {
    reg = reg_index(at, ident());
    next();
  }
  Stmt s = call_or_expr(reg);
  expect(";");
  out.push_back(std::move(s));
}

// The right-hand side of an assignment (reg >= 0) or a statement call (reg < 0).
Stmt Parser::call_or_expr(int reg) {
  const Token& at = peek();
  Stmt s = make_stmt(Stmt::Kind::kAssign, at.line, reg);
  const std::string f = at.ident && peek(1).text == "(" ? at.text : "";
  // rcu_read_lock() and rcu_read_unlock() order nothing by themselves (preempt_disable() is barrier()); what they
  // mean to a grace period needs synchronize_rcu(), which is outside the subset.
  static const std::set<std::string> kFences = {"smp_mb",
                                                "smp_rmb",
                                                "smp_wmb",
                                                "smp_mb__before_atomic",
                                                "smp_mb__after_atomic",
                                                "barrier",
                                                "smp_mb__after_spinlock",
                                                "rcu_read_lock",
                                                "rcu_read_unlock"};
  auto args_end = [&] { expect(")"); };
  if (f.empty()) {
    if (reg < 0) fail(at, "an expression statement that assigns nothing");
    s.kind = Stmt::Kind::kAssign;
    s.e = expr();
    return s;
  }
  next();
  next();
  s.fn = f;
  if (kFences.contains(f)) {
    s.kind = Stmt::Kind::kFence;
    args_end();
  } else if (f == "READ_ONCE" || f == "atomic_read" || f == "smp_load_acquire" || f == "atomic_read_acquire" ||
             f == "spin_is_locked" || f == "rcu_dereference") {
    // rcu_dereference(): a READ_ONCE() whose value carries an address dependency, as every load's does here.
    s.kind = f == "smp_load_acquire" || f == "atomic_read_acquire" ? Stmt::Kind::kAcquire : Stmt::Kind::kRead;
    location(s);
    args_end();
  } else if (f == "WRITE_ONCE" || f == "atomic_set" || f == "smp_store_release" || f == "atomic_set_release" ||
             f == "rcu_assign_pointer") {
    // rcu_assign_pointer(): smp_store_release() (include/linux/rcupdate.h).
    s.kind = f == "WRITE_ONCE" || f == "atomic_set" ? Stmt::Kind::kWrite : Stmt::Kind::kRelease;
    location(s);
    expect(",");
    s.e = expr();
    args_end();
  } else if (f == "spin_lock" || f == "spin_unlock") {
    s.kind = f == "spin_lock" ? Stmt::Kind::kLock : Stmt::Kind::kUnlock;
    location(s);
    args_end();
  } else if (rmw(f)) {
    s.kind = Stmt::Kind::kRmw;
    const std::string base = base_of(f);
    if (base == "xchg" || base == "atomic_xchg") {
      location(s);
      expect(",");
      s.e = expr();
    } else if (base == "cmpxchg" || base == "atomic_cmpxchg") {
      location(s);
      expect(",");
      s.e = expr();
      expect(",");
      s.e2 = expr();
    } else if (base.find("inc") != std::string::npos || base.find("dec") != std::string::npos) {
      location(s);
    } else {
      s.e = expr();
      expect(",");
      location(s);
    }
    args_end();
  } else {
    unsupported(at, fmt::format("'{}'", f));
  }
  if (reg >= 0 && (s.kind == Stmt::Kind::kFence || s.kind == Stmt::Kind::kWrite || s.kind == Stmt::Kind::kRelease ||
                   s.kind == Stmt::Kind::kLock || s.kind == Stmt::Kind::kUnlock)) {
    fail(at, fmt::format("'{}' returns no value", f));
  }
  return s;
}

std::string Parser::base_of(std::string f) {
  for (const char* suffix : {"_relaxed", "_acquire", "_release"}) {
    const std::string sfx(suffix);
    if (f.size() > sfx.size() && f.compare(f.size() - sfx.size(), sfx.size(), sfx) == 0) {
      f.resize(f.size() - sfx.size());
    }
  }
  return f;
}

bool Parser::rmw(const std::string& f) {
  static const std::set<std::string> kBases = {"xchg",
                                               "cmpxchg",
                                               "atomic_xchg",
                                               "atomic_cmpxchg",
                                               "atomic_inc",
                                               "atomic_dec",
                                               "atomic_add",
                                               "atomic_sub",
                                               "atomic_inc_return",
                                               "atomic_dec_return",
                                               "atomic_add_return",
                                               "atomic_sub_return",
                                               "atomic_fetch_inc",
                                               "atomic_fetch_dec",
                                               "atomic_fetch_add",
                                               "atomic_fetch_sub"};
  return kBases.contains(base_of(f));
}

Parser::Nest::Nest(Parser& parser, const Token& at) : p(parser) {
  if (++p.depth_ > kMaxNesting) p.fail(at, fmt::format("nesting deeper than {}", kMaxNesting));
}

}  // namespace detail

LitmusTest parse_litmus(const std::string& text, const std::string& origin) {
  LitmusTest t;
  t.origin = origin;
  // The header: "C NAME" on the first non-blank line.
  std::size_t i = text.find_first_not_of(" \t\r\n");
  const int first_line =
      1 + static_cast<int>(std::count(
              text.begin(), text.begin() + static_cast<std::ptrdiff_t>(i == std::string::npos ? 0 : i), '\n'));
  if (i == std::string::npos || text.compare(i, 2, "C ") != 0) {
    throw InputError(fmt::format("{}:{}: expected the header 'C NAME' (a C litmus test)", origin, first_line));
  }
  const std::size_t eol = text.find('\n', i);
  t.name = text.substr(i + 2, eol == std::string::npos ? std::string::npos : eol - i - 2);
  t.name.erase(t.name.find_last_not_of(" \t\r") + 1);
  const std::size_t result = text.find("Result:");
  if (result != std::string::npos) {
    std::size_t a = result + 7;
    while (a < text.size() && text[a] == ' ') ++a;
    std::size_t b = a;
    while (b < text.size() && std::isalpha(static_cast<unsigned char>(text[b]))) ++b;
    t.expected = text.substr(a, b - a);
  }
  if (eol == std::string::npos)
    throw InputError(fmt::format("{}:{}: the test ends after its header", origin, first_line));
  detail::Parser p(lex(text, eol + 1, first_line + 1, origin), t);
  p.file();
  return t;
}

}  // namespace tlbsim::check::litmus
