// Where in the modeled kernel code a step was awaited: file, function and line, for dumps and replays.
#pragma once

namespace tlbsim::sim {

// Like sim::SourceSite, but built from compiler builtins that GCC and Clang 14 both provide (libstdc++'s
// sim::SourceSite needs a builtin Clang 14 lacks, and the fuzz preset builds with Clang).
struct SourceSite {
  const char* file = "";
  const char* function = "";
  unsigned line = 0;

  static constexpr SourceSite current(const char* file = __builtin_FILE(), const char* function = __builtin_FUNCTION(),
                                      unsigned line = __builtin_LINE()) {
    return SourceSite{file, function, line};
  }
  constexpr const char* file_name() const { return file; }
  constexpr const char* function_name() const { return function; }
  constexpr unsigned line_number() const { return line; }
};

}  // namespace tlbsim::sim
