// Progress of a batch of simulation points on stderr: a redrawn bar on a terminal, a plain line per point otherwise.
#pragma once

#include <chrono>
#include <cstddef>
#include <iosfwd>
#include <string>

namespace tlbsim {

// "1m20s", "45s", "2h03m": a wall-clock span for humans.
std::string format_span(double seconds);

// Contract: point_done() and finish() are not thread-safe; call them under one lock (run_parallel's done()).
// The estimate of time left uses the points finished by this process only (a resumed batch starts afresh).
class Progress {
 public:
  // `already` points of `total` were finished before (a resumed sweep); `bar` redraws one line with '\r'.
  Progress(std::ostream& out, std::string label, std::size_t total, std::size_t already, bool bar);
  // One more point finished; `what` names it in the plain line.
  void point_done(const std::string& what);
  // Ends the bar's line (nothing in plain mode).
  void finish();

 private:
  std::ostream& out_;
  std::string label_;
  std::size_t total_, done_, already_;
  bool bar_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace tlbsim
