// Ctrl-C as a request to stop soon, so that long batches keep what they finished.
#pragma once

#include <atomic>

namespace tlbsim {

// While a guard lives, the first SIGINT sets stop_flag() and says on stderr that the running points finish; the
// second one kills the process as usual. Contract: at most one guard at a time (the flag is process-wide, as
// signal dispositions are); the destructor restores the previous disposition.
class InterruptGuard {
 public:
  InterruptGuard();
  ~InterruptGuard();
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;
  const std::atomic<bool>& stop_flag() const;
};

}  // namespace tlbsim
