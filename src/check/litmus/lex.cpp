#include "check/litmus/lex.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "util/error.h"

namespace tlbsim::check::litmus {

std::vector<Token> lex(const std::string& s, std::size_t from, int line, const std::string& origin) {
  std::vector<Token> out;
  std::size_t i = from;
  auto fail = [&](const std::string& what) { throw InputError(fmt::format("{}:{}: {}", origin, line, what)); };
  while (i < s.size()) {
    const char c = s[i];
    if (c == '\n') {
      ++line;
      ++i;
    } else if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
    } else if ((s.compare(i, 2, "(*") == 0 &&
                (i + 2 == s.size() || std::isspace(static_cast<unsigned char>(s[i + 2])))) ||
               s.compare(i, 2, "/*") == 0) {
      // "(* " opens a comment; "(*x" is a dereference in an argument list.
      const std::string close = s[i] == '(' ? "*)" : "*/";
      const std::size_t end = s.find(close, i + 2);
      if (end == std::string::npos) fail("a comment that is never closed");
      line += static_cast<int>(
          std::count(s.begin() + static_cast<std::ptrdiff_t>(i), s.begin() + static_cast<std::ptrdiff_t>(end), '\n'));
      i = end + 2;
    } else if (s.compare(i, 2, "//") == 0) {
      while (i < s.size() && s[i] != '\n') ++i;
    } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      std::size_t j = i;
      while (j < s.size() && (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '_')) ++j;
      out.push_back({s.substr(i, j - i), line, true, false});
      i = j;
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      std::size_t j = i;
      while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
      if (j - i > 15) fail("a number too large: " + s.substr(i, j - i));
      out.push_back({s.substr(i, j - i), line, false, true});
      i = j;
    } else {
      static const char* const kTwo[] = {"/\\", "\\/", "==", "!=", "<=", ">=", "&&", "||", "->"};
      std::string t(1, c);
      for (const char* two : kTwo) {
        if (s.compare(i, 2, two) == 0) t = two;
      }
      if (std::string("(){}[],;*=+-&|^!<>~:/\\.").find(c) == std::string::npos) {
        fail(fmt::format("unexpected character '{}'", c));
      }
      out.push_back({t, line, false, false});
      i += t.size();
    }
  }
  out.push_back({"", line, false, false});
  return out;
}

}  // namespace tlbsim::check::litmus
