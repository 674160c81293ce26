#include "util/int_list.h"

#include <algorithm>
#include <charconv>
#include <sstream>

#include <fmt/format.h>

#include "util/error.h"

namespace tlbsim {

namespace {
std::uint64_t parse_number(const std::string& s, const std::string& what, const std::string& item) {
  std::uint64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || p != s.data() + s.size()) {
    throw InputError(fmt::format("{}: '{}' is not a number, range A-B or range with step A-B:S", what, item));
  }
  return v;
}
}  // namespace

std::vector<std::uint32_t> parse_int_list(const std::string& text, const std::string& what, std::uint32_t min,
                                          std::uint32_t max) {
  std::vector<std::uint32_t> out;
  std::stringstream ss(text);
  std::string item;
  if (text.empty()) throw InputError(fmt::format("{}: empty list", what));
  while (std::getline(ss, item, ',')) {
    std::string range = item, step_text;
    if (auto colon = item.find(':'); colon != std::string::npos) {
      range = item.substr(0, colon);
      step_text = item.substr(colon + 1);
    }
    std::uint64_t lo, hi, step = 1;
    if (auto dots = range.find(".."); dots != std::string::npos) {
      range = range.substr(0, dots) + "-" + range.substr(dots + 2);  // 1..55 reads as 1-55
    }
    if (auto dash = range.find('-'); dash != std::string::npos) {
      lo = parse_number(range.substr(0, dash), what, item);
      hi = parse_number(range.substr(dash + 1), what, item);
    } else {
      if (!step_text.empty()) throw InputError(fmt::format("{}: '{}': a step needs a range A-B:S", what, item));
      lo = hi = parse_number(range, what, item);
    }
    if (!step_text.empty()) step = parse_number(step_text, what, item);
    if (step == 0) throw InputError(fmt::format("{}: '{}': step must be positive", what, item));
    if (lo > hi) throw InputError(fmt::format("{}: '{}': range is backwards", what, item));
    if (lo < min || hi > max) {
      throw InputError(fmt::format("{}: '{}' is outside {}..{}", what, item, min, max));
    }
    for (std::uint64_t v = lo; v <= hi; v += step) out.push_back(static_cast<std::uint32_t>(v));
  }
  std::sort(out.begin(), out.end());
  if (const auto dup = std::adjacent_find(out.begin(), out.end()); dup != out.end()) {
    throw InputError(fmt::format("{}: {} is listed twice in '{}'", what, *dup, text));
  }
  return out;
}

}  // namespace tlbsim
