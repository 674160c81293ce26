// The profile options of `run` and `check --replay` (--profile, --profile-folded, --profile-svg): what they ask
// for, the checks made before the run, and what is printed and written after it.
#pragma once

#include <string>

#include "trace/profile.h"

namespace CLI {
class App;
}

namespace tlbsim::cli {

struct ProfileOptions {
  bool table = false;       // --profile: print the table (and `"profile"` in JSON)
  std::string folded_path;  // --profile-folded FILE
  std::string svg_path;     // --profile-svg FILE

  // Rows under this share of the total are left out of the table and the JSON.
  static constexpr double kMinShare = 0.005;

  void define(CLI::App* c);
  bool enabled() const { return table || !folded_path.empty() || !svg_path.empty(); }
  // Throws InputError when an output's directory is missing or unwritable (before the run).
  void validate() const;
  // Writes the folded stacks and the flame graph (titled `title`) where asked, atomically.
  void write_files(const trace::Profiler& p, const std::string& title) const;
};

}  // namespace tlbsim::cli
