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
// The estimate of time left uses the points finished by this process only (a resumed batch starts afresh), each
// weighted by its expected work (e.g. threads x simulated time), so large points late in a batch do not surprise.
class Progress {
 public:
  // `already` points of `total` were finished before (a resumed sweep); `bar` redraws one line with '\r'.
  Progress(std::ostream& out, std::string label, std::size_t total, std::size_t already, bool bar);
  // The work of the points still to run (default: one per point); call before the first point_done().
  void set_work_left(double work);
  // One more point finished; `what` names it in the plain line, `work` is its share of set_work_left().
  void point_done(const std::string& what, double work = 1);
  // Ends the bar's line (nothing in plain mode).
  void finish();

 private:
  std::ostream& out_;
  std::string label_;
  std::size_t total_, done_;
  bool bar_;
  double work_left_, work_done_ = 0;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace tlbsim
