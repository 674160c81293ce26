// Option validators shared by the subcommands.
#pragma once

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <charconv>
#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <stdexcept>
#include <utility>
#include <vector>
#include <string>

#include "sim/time.h"
#include "util/error.h"

namespace tlbsim::cli {

// An unsigned integer written as decimal digits that fits in 64 bits. CLI11 2.1 wraps "-1" to 2^64 - 1, clamps
// 18446744073709551616 to 2^64 - 1 and reads "" as 0; each of those is refused here instead.
inline CLI::Validator non_negative_integer() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        if (s.empty()) return "an empty value; expected an integer >= 0";
        if (s.find_first_not_of("0123456789") != std::string::npos) {
          return "'" + s + "' is not a non-negative integer; expected decimal digits";
        }
        std::uint64_t v = 0;
        const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
        if (ec == std::errc::result_out_of_range) return "'" + s + "' does not fit in 64 bits (at most 18446744073709551615)";
        if (ec != std::errc() || end != s.data() + s.size()) return "'" + s + "' is not an integer";
        return {};
      },
      "");
}

// A file or directory name that is not empty (an empty --trace "" would otherwise mean "no trace" silently).
inline CLI::Validator non_empty() {
  return CLI::Validator([](std::string& s) { return s.empty() ? std::string("an empty path") : std::string(); }, "");
}

// Throws InputError when two output options name the same file (the last write would silently win).
// `outputs`: (option, path) pairs; empty paths are not outputs.
inline void check_distinct_outputs(std::initializer_list<std::pair<const char*, const std::string*>> outputs) {
  std::vector<std::pair<const char*, std::filesystem::path>> seen;
  for (const auto& [option, path] : outputs) {
    if (path->empty()) continue;
    std::error_code ec;
    std::filesystem::path p = std::filesystem::weakly_canonical(*path, ec);
    if (ec) p = std::filesystem::absolute(*path, ec).lexically_normal();
    for (const auto& [other, q] : seen) {
      if (p == q) throw InputError(fmt::format("{} and {} both write '{}'; give each its own file", other, option, *path));
    }
    seen.emplace_back(option, std::move(p));
  }
}

// A duration option's text, parsed and checked against [lo, hi]; `range` says that interval for the message. Bad text
// or a value outside it is an InputError naming the option.
inline sim::Duration duration_option(const char* name, const std::string& text, sim::Duration lo, sim::Duration hi,
                                     const char* range) {
  sim::Duration d{};
  try {
    d = sim::parse_duration(text);
  } catch (const std::invalid_argument& e) {
    throw InputError(fmt::format("{}: {}", name, e.what()));
  }
  if (d < lo || d > hi) throw InputError(fmt::format("{}: {} is outside {}", name, text, range));
  return d;
}

}  // namespace tlbsim::cli
