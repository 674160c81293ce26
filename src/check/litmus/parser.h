// The litmus-file parser's internals (check/litmus/litmus.h): a recursive-descent parser over the lexer's tokens,
// statements in parse.cpp, expressions, locations and the final condition in parse_expr.cpp. Errors name the file
// and line: InputError for a malformed file, Unsupported for a construct outside the subset.
#pragma once

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "check/litmus/lex.h"
#include "check/litmus/litmus.h"

namespace tlbsim::check::litmus::detail {

class Parser {
 public:
  Parser(std::vector<Token> toks, LitmusTest& t) : toks_(std::move(toks)), t_(t) {}

  // The initial state, the processes and the final condition.
  void file();

 private:
  const Token& peek(std::size_t k = 0) const { return toks_[std::min(pos_ + k, toks_.size() - 1)]; }
  bool at_end() const { return peek().text.empty(); }
  const Token& next() {
    const Token& t = peek();
    if (!at_end()) ++pos_;
    return t;
  }
  [[noreturn]] void fail(const Token& at, const std::string& what) const;
  [[noreturn]] void unsupported(const Token& at, const std::string& what) const;
  void expect(const std::string& text);
  std::string ident();
  long long number();
  // A variable's index, registering it (initial value 0) at its first mention.
  int var(const std::string& name);
  // `*`s after a type: pointer types are all the same location to the subset.
  void stars();

  void init_block();
  void process();
  void statement(std::vector<Stmt>& out);
  Stmt call_or_expr(int reg);
  static std::string base_of(std::string f);
  static bool rmw(const std::string& f);

  int reg_index(const Token& at, const std::string& name) const;
  // A location argument: x, *x or &x naming a parameter, or r, *r naming a register that holds an address.
  void location(Stmt& s);
  // A value: a number, or a shared variable's address (its name, or &name).
  long long value();

  std::unique_ptr<Expr> binary(std::unique_ptr<Expr> a, const std::string& op, std::unique_ptr<Expr> b);
  std::unique_ptr<Expr> expr(int level = 0);
  std::unique_ptr<Expr> unary();

  Cond cond_chain(const char* op, Cond::Kind kind, Cond (Parser::*next)());
  Cond cond_or();
  Cond cond_and();
  Cond cond_atom();

  // Bounds the recursion of nested parentheses, blocks and ifs.
  struct Nest {
    Parser& p;
    explicit Nest(Parser& parser, const Token& at);
    ~Nest() { --p.depth_; }
  };
  static constexpr int kMaxNesting = 64;
  static constexpr std::size_t kMaxThreads = 8;
  static constexpr std::size_t kMaxVars = 1024;
  int depth_ = 0;

  std::vector<Token> toks_;
  LitmusTest& t_;
  std::size_t pos_ = 0;
  Thread* thread_ = nullptr;
  std::set<std::string> params_;
};

}  // namespace tlbsim::check::litmus::detail
