// Runs the tlbsim command line in-process for the CLI tests: exit status, stdout and stderr.
#pragma once

#include <sstream>
#include <string>
#include <vector>

#include "cli/command.h"

namespace tlbsim::cli::testing {

struct Result {
  int status;
  std::string out;
  std::string err;
};

inline Result run(std::vector<std::string> args) {
  args.insert(args.begin(), "tlbsim");
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  std::ostringstream out, err;
  const int status = run_cli(static_cast<int>(argv.size()), argv.data(), out, err);
  return {status, out.str(), err.str()};
}

}  // namespace tlbsim::cli::testing
