// Option validators shared by the subcommands.
#pragma once

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <stdexcept>
#include <string>

#include "sim/time.h"
#include "util/error.h"

namespace tlbsim::cli {

// CLI11 2.1 converts "-1" into a 64-bit unsigned option by wrapping it to 2^64 - 1; this rejects a minus sign first.
inline CLI::Validator non_negative_integer() {
  return CLI::Validator(
      [](std::string& s) {
        const auto first = s.find_first_not_of(" \t");
        return first != std::string::npos && s[first] == '-'
                   ? std::string("'" + s + "' is negative; expected an integer >= 0")
                   : std::string();
      },
      "");
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
