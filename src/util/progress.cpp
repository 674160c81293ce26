// The progress bar and plain progress lines.
#include "util/progress.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <ostream>

namespace tlbsim {

std::string format_span(double seconds) {
  const long s = std::lround(std::max(0.0, seconds));
  if (s < 60) return fmt::format("{}s", s);
  if (s < 3600) return fmt::format("{}m{:02}s", s / 60, s % 60);
  return fmt::format("{}h{:02}m", s / 3600, (s % 3600) / 60);
}

Progress::Progress(std::ostream& out, std::string label, std::size_t total, std::size_t already, bool bar)
    : out_(out),
      label_(std::move(label)),
      total_(total),
      done_(already),
      bar_(bar),
      work_left_(static_cast<double>(total - already)),
      start_(std::chrono::steady_clock::now()) {}

void Progress::set_work_left(double work) { work_left_ = work; }

void Progress::point_done(const std::string& what, double work) {
  ++done_;
  work_done_ += work;
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double left = work_done_ > 0 ? elapsed / work_done_ * std::max(0.0, work_left_ - work_done_) : 0;
  if (bar_) {
    constexpr std::size_t kWidth = 30;
    const std::size_t filled = total_ > 0 ? done_ * kWidth / total_ : kWidth;
    out_ << fmt::format("\r{}: [{}{}] {}/{} points, {} left\x1b[K", label_, std::string(filled, '#'),
                        std::string(kWidth - filled, '.'), done_, total_, format_span(left))
         << std::flush;
  } else {
    out_ << fmt::format("{}: {}/{} points ({}) {} elapsed, about {} left\n", label_, done_, total_, what,
                        format_span(elapsed), format_span(left))
         << std::flush;
  }
}

void Progress::finish() {
  if (bar_) out_ << "\n" << std::flush;
}

}  // namespace tlbsim
