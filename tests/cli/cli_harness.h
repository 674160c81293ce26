// Runs the tlbsim command line in-process for the CLI tests: exit status, stdout and stderr.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "cli/command.h"
#include "util/atomic_file.h"

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

// Compares `actual` with the golden file `name`; TLBSIM_UPDATE_GOLDEN=1 rewrites it instead.
inline void expect_golden(const std::string& name, const std::string& actual) {
  const std::string path = std::string(TLBSIM_GOLDEN_DIR) + "/" + name;
  if (std::getenv("TLBSIM_UPDATE_GOLDEN") != nullptr) {
    write_file_atomic(path, actual);
    return;
  }
  ASSERT_TRUE(std::filesystem::exists(path)) << path << " missing; run with TLBSIM_UPDATE_GOLDEN=1";
  EXPECT_EQ(read_file(path), actual) << "golden file " << path << " differs";
}

}  // namespace tlbsim::cli::testing
