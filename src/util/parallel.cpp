// A pool of threads pulling item indices from a shared counter.
#include "util/parallel.h"

#include <algorithm>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace tlbsim {

void run_parallel(std::size_t n, unsigned jobs, const std::function<void(std::size_t)>& work,
                  const std::function<void(std::size_t)>& done, const std::atomic<bool>* stop) {
  std::atomic<std::size_t> next{0};
  std::atomic<bool> failed{false};
  std::mutex mu;
  std::exception_ptr error;
  auto worker = [&] {
    for (;;) {
      if (failed || (stop != nullptr && stop->load())) return;
      const std::size_t i = next.fetch_add(1);
      if (i >= n) return;
      try {
        work(i);
        std::lock_guard lock(mu);
        done(i);
      } catch (...) {
        std::lock_guard lock(mu);
        if (!error) error = std::current_exception();
        failed = true;
      }
    }
  };
  std::vector<std::thread> threads;
  const std::size_t extra = std::min<std::size_t>(std::max(1u, jobs), std::max<std::size_t>(n, 1)) - 1;
  for (std::size_t t = 0; t < extra; ++t) threads.emplace_back(worker);
  worker();
  for (auto& t : threads) t.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace tlbsim
