// The litmus lexer (check/litmus/litmus.h): names, numbers and punctuation with their lines; "(* ... *)" and C
// comments are skipped.
#pragma once

#include <string>
#include <vector>

namespace tlbsim::check::litmus {

// One token; text "" marks the end.
struct Token {
  std::string text;  // "" at the end
  int line = 0;
  bool ident = false, number = false;
};

// The tokens of s from offset `from`, which is on line `line`. Throws InputError "ORIGIN:LINE: what".
std::vector<Token> lex(const std::string& s, std::size_t from, int line, const std::string& origin);

}  // namespace tlbsim::check::litmus
