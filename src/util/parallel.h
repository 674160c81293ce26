// Running independent jobs on a pool of threads (reproduce and sweep share it).
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>

namespace tlbsim {

// Calls work(i) for every i in [0, n) on `jobs` threads (the calling thread among them) and then done(i), under
// one lock, in the order the items finish. Contract: work() must be safe to run concurrently for distinct i; once
// *stop is true no further item starts (running ones finish). The first exception thrown by work() or done()
// stops new items from starting and is rethrown after every thread has joined.
void run_parallel(std::size_t n, unsigned jobs, const std::function<void(std::size_t)>& work,
                  const std::function<void(std::size_t)>& done, const std::atomic<bool>* stop = nullptr);

}  // namespace tlbsim
