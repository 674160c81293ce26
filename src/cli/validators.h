// Option validators shared by the subcommands.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

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

}  // namespace tlbsim::cli
