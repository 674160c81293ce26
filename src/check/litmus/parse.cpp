// The litmus-file reader (check/litmus/litmus.h): a hand-written lexer and recursive-descent parser for the C
// litmus subset. Errors name the file and line.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <set>

#include "check/litmus/lex.h"
#include "check/litmus/litmus.h"

namespace tlbsim::check::litmus {

namespace {

Stmt make_stmt(Stmt::Kind kind, int line, int reg = -1) {
  Stmt s;
  s.kind = kind;
  s.line = line;
  s.reg = reg;
  return s;
}

Cond make_cond(Cond::Kind kind) {
  Cond c;
  c.kind = kind;
  return c;
}

class Parser {
 public:
  Parser(std::vector<Token> toks, LitmusTest& t) : toks_(std::move(toks)), t_(t) {}

  void file() {
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

 private:
  const Token& peek(std::size_t k = 0) const { return toks_[std::min(pos_ + k, toks_.size() - 1)]; }
  bool at_end() const { return peek().text.empty(); }
  const Token& next() {
    const Token& t = peek();
    if (!at_end()) ++pos_;
    return t;
  }
  [[noreturn]] void fail(const Token& at, const std::string& what) const {
    throw InputError(fmt::format("{}:{}: {}", t_.origin, at.line, what));
  }
  [[noreturn]] void unsupported(const Token& at, const std::string& what) const {
    throw Unsupported(fmt::format("{}:{}: {} is outside tlbsim's litmus subset", t_.origin, at.line, what));
  }
  void expect(const std::string& text) {
    if (peek().text != text) {
      fail(peek(), fmt::format("expected '{}', got '{}'", text, at_end() ? "end of file" : peek().text));
    }
    next();
  }
  std::string ident() {
    if (!peek().ident) fail(peek(), fmt::format("expected a name, got '{}'", peek().text));
    return next().text;
  }
  long long number() {
    const bool neg = peek().text == "-";
    if (neg) next();
    if (!peek().number) fail(peek(), fmt::format("expected a number, got '{}'", peek().text));
    const long long v = std::stoll(next().text);
    return neg ? -v : v;
  }
  int var(const std::string& name) {
    const auto it = std::find(t_.vars.begin(), t_.vars.end(), name);
    if (it != t_.vars.end()) return static_cast<int>(it - t_.vars.begin());
    t_.vars.push_back(name);
    t_.init.push_back(0);
    return static_cast<int>(t_.vars.size() - 1);
  }

  void init_block() {
    expect("{");
    while (peek().text != "}") {
      if (at_end()) fail(peek(), "the initial state is never closed");
      bool declared = false;
      if (peek().text == "int" || peek().text == "atomic_t" || peek().text == "spinlock_t") {
        next();
        declared = true;
      }
      if (peek().text == "*") unsupported(peek(), "a pointer in the initial state");
      if (peek().number) unsupported(peek(), "an initial register value");
      const int v = var(ident());
      if (peek().text == "=") {
        next();
        if (peek().text == "&") unsupported(peek(), "a pointer in the initial state");
        t_.init[static_cast<std::size_t>(v)] = number();
      } else if (!declared) {
        fail(peek(), "expected '=' and a value");
      }
      expect(";");
    }
    next();
  }

  void process() {
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

  int reg_index(const Token& at, const std::string& name) const {
    const auto it = std::find(thread_->regs.begin(), thread_->regs.end(), name);
    if (it == thread_->regs.end()) fail(at, fmt::format("'{}' is not a register of this process", name));
    return static_cast<int>(it - thread_->regs.begin());
  }
  // A location argument: x, *x or &x, naming a parameter.
  int location() {
    if (peek().text == "*" || peek().text == "&") next();
    const Token& at = peek();
    const std::string n = ident();
    if (!params_.contains(n)) fail(at, fmt::format("'{}' is not a parameter of this process", n));
    return var(n);
  }

  void statement(std::vector<Stmt>& out) {
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
        const std::string r = ident();
        thread_->regs.push_back(r);
        if (peek().text == "=") {
          next();
          Stmt s = make_stmt(Stmt::Kind::kAssign, at.line, static_cast<int>(thread_->regs.size() - 1));
          s.e = expr();
          out.push_back(std::move(s));
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
  Stmt call_or_expr(int reg) {
    const Token& at = peek();
    Stmt s = make_stmt(Stmt::Kind::kAssign, at.line, reg);
    const std::string f = at.ident && peek(1).text == "(" ? at.text : "";
    static const std::set<std::string> kFences = {"smp_mb",
                                                  "smp_rmb",
                                                  "smp_wmb",
                                                  "smp_mb__before_atomic",
                                                  "smp_mb__after_atomic",
                                                  "barrier",
                                                  "smp_mb__after_spinlock"};
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
               f == "spin_is_locked") {
      s.kind = f == "smp_load_acquire" || f == "atomic_read_acquire" ? Stmt::Kind::kAcquire : Stmt::Kind::kRead;
      s.var = location();
      args_end();
    } else if (f == "WRITE_ONCE" || f == "atomic_set" || f == "smp_store_release" || f == "atomic_set_release") {
      s.kind = f == "smp_store_release" || f == "atomic_set_release" ? Stmt::Kind::kRelease : Stmt::Kind::kWrite;
      s.var = location();
      expect(",");
      s.e = expr();
      args_end();
    } else if (f == "spin_lock" || f == "spin_unlock") {
      s.kind = f == "spin_lock" ? Stmt::Kind::kLock : Stmt::Kind::kUnlock;
      s.var = location();
      args_end();
    } else if (rmw(f)) {
      s.kind = Stmt::Kind::kRmw;
      const std::string base = base_of(f);
      if (base == "xchg" || base == "atomic_xchg") {
        s.var = location();
        expect(",");
        s.e = expr();
      } else if (base == "cmpxchg" || base == "atomic_cmpxchg") {
        s.var = location();
        expect(",");
        s.e = expr();
        expect(",");
        s.e2 = expr();
      } else if (base.find("inc") != std::string::npos || base.find("dec") != std::string::npos) {
        s.var = location();
      } else {
        s.e = expr();
        expect(",");
        s.var = location();
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
  static std::string base_of(std::string f) {
    for (const char* suffix : {"_relaxed", "_acquire", "_release"}) {
      const std::string sfx(suffix);
      if (f.size() > sfx.size() && f.compare(f.size() - sfx.size(), sfx.size(), sfx) == 0) {
        f.resize(f.size() - sfx.size());
      }
    }
    return f;
  }
  static bool rmw(const std::string& f) {
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

  // Expressions, C precedence from || down to unary.
  std::unique_ptr<Expr> binary(std::unique_ptr<Expr> a, const std::string& op, std::unique_ptr<Expr> b) {
    auto e = std::make_unique<Expr>();
    e->kind = Expr::Kind::kBinary;
    e->op = op;
    e->a = std::move(a);
    e->b = std::move(b);
    return e;
  }
  std::unique_ptr<Expr> expr(int level = 0) {
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
  std::unique_ptr<Expr> unary() {
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
    } else if (at.ident) {
      if (peek(1).text == "(") unsupported(at, fmt::format("a call to '{}' inside an expression", at.text));
      if (params_.contains(at.text)) unsupported(at, fmt::format("a plain access to '{}'", at.text));
      e->kind = Expr::Kind::kReg;
      e->reg = reg_index(at, next().text);
    } else {
      fail(at, fmt::format("expected an expression, got '{}'", at.text));
    }
    return e;
  }

  // The final condition.
  Cond cond_or() {
    Cond c = cond_and();
    while (peek().text == "\\/") {
      next();
      Cond o = make_cond(Cond::Kind::kOr);
      o.a = std::make_unique<Cond>(std::move(c));
      o.b = std::make_unique<Cond>(cond_and());
      c = std::move(o);
    }
    return c;
  }
  Cond cond_and() {
    Cond c = cond_atom();
    while (peek().text == "/\\") {
      next();
      Cond o = make_cond(Cond::Kind::kAnd);
      o.a = std::make_unique<Cond>(std::move(c));
      o.b = std::make_unique<Cond>(cond_atom());
      c = std::move(o);
    }
    return c;
  }
  Cond cond_atom() {
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
    c.value = number();
    return c;
  }

  // Bounds the recursion of nested parentheses, blocks and ifs.
  struct Nest {
    Parser& p;
    explicit Nest(Parser& parser, const Token& at) : p(parser) {
      if (++p.depth_ > kMaxNesting) p.fail(at, fmt::format("nesting deeper than {}", kMaxNesting));
    }
    ~Nest() { --p.depth_; }
  };
  static constexpr int kMaxNesting = 64;
  static constexpr std::size_t kMaxThreads = 8;
  int depth_ = 0;

  std::vector<Token> toks_;
  LitmusTest& t_;
  std::size_t pos_ = 0;
  Thread* thread_ = nullptr;
  std::set<std::string> params_;
};

}  // namespace

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
  Parser p(lex(text, eol + 1, first_line + 1, origin), t);
  p.file();
  return t;
}

}  // namespace tlbsim::check::litmus
