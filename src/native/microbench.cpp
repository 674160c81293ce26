#include "native/microbench.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <numeric>
#include <random>
#include <stdexcept>
#include <thread>

#include "native/host.h"

#if defined(__linux__)
#include <linux/futex.h>
#include <linux/membarrier.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace tlbsim::native {

namespace {

using Clock = std::chrono::steady_clock;

double ns_since(Clock::time_point t0) { return std::chrono::duration<double, std::nano>(Clock::now() - t0).count(); }

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// Keeps the compiler from dropping writes to `p`.
inline void clobber(void* p) { asm volatile("" : : "g"(p) : "memory"); }

struct alignas(64) Line {
  std::atomic<std::uint64_t> v{0};
};

// Samples `body(n)` (which does n operations) `s.repetitions` times; ns per operation.
template <class F>
Spread sample(const BenchScale& s, std::uint64_t n, F&& body) {
  std::vector<double> out;
  body(std::max<std::uint64_t>(1, n / 10));  // warm up
  for (std::uint32_t r = 0; r < s.repetitions; ++r) {
    const auto t0 = Clock::now();
    body(n);
    out.push_back(ns_since(t0) / static_cast<double>(n));
  }
  return spread_of(std::move(out));
}

// A thread pinned on `cpu` that spins in user space, touching its own page, until destroyed.
class Spinner {
 public:
  explicit Spinner(std::optional<std::uint32_t> cpu) {
    if (!cpu) return;
    t_ = std::thread([this, c = *cpu] {
      ok_ = pin_this_thread(c);
      started_.store(true);
      while (!stop_.load(std::memory_order_relaxed)) {
        line_.v.fetch_add(0, std::memory_order_relaxed);
        cpu_relax();
      }
    });
    while (!started_.load()) std::this_thread::yield();
    if (!ok_) throw std::runtime_error(fmt::format("calibrate: cannot pin a thread to CPU {}", *cpu));
  }
  ~Spinner() {
    stop_.store(true);
    if (t_.joinable()) t_.join();
  }

 private:
  Line line_;
  std::atomic<bool> stop_{false}, started_{false};
  bool ok_ = true;
  std::thread t_;
};

}  // namespace

std::uint64_t bench_iters(const BenchScale& s, std::uint64_t base) {
  return std::max<std::uint64_t>(1, static_cast<std::uint64_t>(static_cast<double>(base) * s.work));
}

void pin_or_throw(std::uint32_t cpu) {
  if (!pin_this_thread(cpu)) throw std::runtime_error(fmt::format("calibrate: cannot pin a thread to CPU {}", cpu));
}

Spread line_transfer_ns(std::uint32_t a, std::uint32_t b, const BenchScale& s) {
  Line line;
  const std::uint64_t n = bench_iters(s, 2000);
  const std::uint64_t rounds = (n + n / 10) + n * s.repetitions;  // warm-up round + samples
  std::atomic<bool> pinned{false};
  std::thread partner([&] {
    pinned.store(pin_this_thread(b));
    for (std::uint64_t k = 0; k < rounds; ++k) {
      while (line.v.load(std::memory_order_acquire) != 2 * k + 1) cpu_relax();
      line.v.store(2 * k + 2, std::memory_order_release);
    }
  });
  pin_or_throw(a);
  std::uint64_t k = 0;
  const Spread out = sample(s, n, [&](std::uint64_t m) {
    for (std::uint64_t j = 0; j < m && k < rounds; ++j, ++k) {
      line.v.store(2 * k + 1, std::memory_order_release);
      while (line.v.load(std::memory_order_acquire) != 2 * k + 2) cpu_relax();
    }
  });
  while (k < rounds) {  // let the partner finish its rounds
    line.v.store(2 * k + 1, std::memory_order_release);
    while (line.v.load(std::memory_order_acquire) != 2 * k + 2) cpu_relax();
    ++k;
  }
  partner.join();
  if (!pinned.load()) throw std::runtime_error(fmt::format("calibrate: cannot pin a thread to CPU {}", b));
  Spread half = out;
  half.median /= 2, half.p10 /= 2, half.p90 /= 2;
  return half;
}

Spread atomic_rmw_ns(const std::vector<std::uint32_t>& cpus, const BenchScale& s) {
  Line line;
  const std::uint64_t n = bench_iters(s, 200000);
  std::vector<double> out;
  for (std::uint32_t r = 0; r < s.repetitions; ++r) {
    std::atomic<std::uint32_t> ready{0};
    std::atomic<bool> go{false};
    std::vector<std::thread> ts;
    for (std::uint32_t c : cpus) {
      ts.emplace_back([&, c] {
        pin_this_thread(c);
        ready.fetch_add(1);
        while (!go.load()) cpu_relax();
        for (std::uint64_t i = 0; i < n; ++i) line.v.fetch_add(1, std::memory_order_relaxed);
      });
    }
    while (ready.load() < cpus.size()) std::this_thread::yield();
    const auto t0 = Clock::now();
    go.store(true);
    for (auto& t : ts) t.join();
    out.push_back(ns_since(t0) / static_cast<double>(n));  // each thread did n RMWs in this time
  }
  return spread_of(std::move(out));
}

#if defined(__linux__)

Spread syscall_ns(const BenchScale& s) {
  return sample(s, bench_iters(s, 20000), [](std::uint64_t m) {
    for (std::uint64_t i = 0; i < m; ++i) syscall(SYS_getppid);
  });
}

Spread page_fault_ns(bool write, const BenchScale& s) {
  const std::size_t pg = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  const std::uint64_t pages = bench_iters(s, 1024);
  std::vector<double> out;
  for (std::uint32_t r = 0; r <= s.repetitions; ++r) {
    void* m = mmap(nullptr, pages * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) throw std::runtime_error("calibrate: mmap failed");
    auto* p = static_cast<volatile char*>(m);
    const auto t0 = Clock::now();
    for (std::uint64_t i = 0; i < pages; ++i) {
      if (write)
        p[i * pg] = 1;
      else
        (void)p[i * pg];
    }
    if (r > 0) out.push_back(ns_since(t0) / static_cast<double>(pages));  // r == 0 warms up
    munmap(m, pages * pg);
  }
  return spread_of(std::move(out));
}

Spread fault_step_spread(const BenchScale& s) {
  const std::size_t pg = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  const std::uint64_t pages = std::max<std::uint64_t>(bench_iters(s, 1024), 10);
  std::vector<double> out;
  for (std::uint32_t r = 0; r <= s.repetitions; ++r) {
    void* m = mmap(nullptr, pages * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) throw std::runtime_error("calibrate: mmap failed");
    auto* p = static_cast<volatile char*>(m);
    std::vector<double> single;
    single.reserve(pages);
    for (std::uint64_t i = 0; i < pages; ++i) {
      const auto t0 = Clock::now();
      p[i * pg] = 1;
      single.push_back(ns_since(t0));
    }
    munmap(m, pages * pg);
    const Spread one = spread_of(std::move(single));
    if (r > 0 && one.median > 0) out.push_back((one.p90 - one.p10) / (1.6 * one.median));  // r == 0 warms up
  }
  return spread_of(std::move(out));
}

Spread madvise_dontneed_ns(std::uint32_t cpu, std::optional<std::uint32_t> remote, const BenchScale& s, bool populate) {
  pin_or_throw(cpu);
  const std::size_t pg = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  void* m = mmap(nullptr, pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) throw std::runtime_error("calibrate: mmap failed");
  const Spinner spinner(remote);
  auto* p = static_cast<volatile char*>(m);
  std::vector<double> out;
  const std::uint64_t n = bench_iters(s, 300);
  for (std::uint32_t r = 0; r <= s.repetitions; ++r) {
    double total = 0;
    for (std::uint64_t i = 0; i < n; ++i) {
      if (populate) p[0] = 1;  // fault a fresh page in; only the madvise is timed
      const auto t0 = Clock::now();
      madvise(m, pg, MADV_DONTNEED);
      total += ns_since(t0);
    }
    if (r > 0) out.push_back(total / static_cast<double>(n));
  }
  munmap(m, pg);
  return spread_of(std::move(out));
}

std::optional<Spread> membarrier_ns(std::uint32_t cpu, std::optional<std::uint32_t> remote, const BenchScale& s) {
  if (syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) != 0) return std::nullopt;
  pin_or_throw(cpu);
  const Spinner spinner(remote);
  return sample(s, bench_iters(s, 300), [](std::uint64_t m) {
    for (std::uint64_t i = 0; i < m; ++i) syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0);
  });
}

Spread wakeup_ns(std::uint32_t waker, std::uint32_t sleeper, const BenchScale& s, std::chrono::microseconds asleep,
                 Spread* single, Spread* halted) {
  pin_or_throw(waker);  // before the pipes and the sleeper's thread, so that a refusal leaves nothing behind
  int to[2], back[2];
  if (pipe(to) != 0) throw std::runtime_error("calibrate: pipe failed");
  if (pipe(back) != 0) {
    close(to[0]);
    close(to[1]);
    throw std::runtime_error("calibrate: pipe failed");
  }
  std::atomic<std::int64_t> woke{0}, blocked{0};  // the sleeper's return from read(), and its call of the next
  const auto now_ns = [] {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
  };
  std::thread b([&] {
    (void)pin_this_thread(sleeper);  // unpinned, the figure is still a cross-CPU wake-up most of the time
    char c = 0;
    for (;;) {
      blocked.store(now_ns(), std::memory_order_release);
      if (read(to[0], &c, 1) != 1 || c == 'q') break;
      woke.store(now_ns(), std::memory_order_release);
      if (write(back[1], &c, 1) != 1) break;
    }
  });
  std::vector<double> out, singles, halts;
  const std::uint64_t n = std::max<std::uint64_t>(2, bench_iters(s, 20));
  for (std::uint32_t r = 0; r <= s.repetitions; ++r) {
    double total = 0;
    for (std::uint64_t i = 0; i < n; ++i) {
      if (asleep >= std::chrono::milliseconds(1)) {
        std::this_thread::sleep_for(asleep);
      } else {
        for (const auto until = Clock::now() + asleep; Clock::now() < until;) {
        }
      }
      char c = 'x';
      const std::int64_t t0 = now_ns();
      // The sleeper stores `blocked` within a microsecond of its reply; one that has not yet is left out.
      const std::int64_t since = blocked.load(std::memory_order_acquire);
      if (write(to[1], &c, 1) != 1 || read(back[0], &c, 1) != 1) break;
      const auto one = static_cast<double>(woke.load(std::memory_order_acquire) - t0);
      total += one;
      if (r > 0) singles.push_back(one);
      if (r > 0 && since > 0 && since <= t0) halts.push_back(static_cast<double>(t0 - since));
    }
    if (r > 0) out.push_back(total / static_cast<double>(n));
  }
  const char q = 'q';
  if (write(to[1], &q, 1) != 1) close(to[1]);
  b.join();
  for (int fd : {to[0], to[1], back[0], back[1]}) close(fd);
  if (single != nullptr) *single = spread_of(std::move(singles));
  if (halted != nullptr && !halts.empty()) *halted = spread_of(std::move(halts));
  return spread_of(std::move(out));
}

Spread brief_wakeup_ns(std::uint32_t waker, std::uint32_t sleeper, const BenchScale& s,
                       std::chrono::microseconds after_block, Spread* halted) {
  pin_or_throw(waker);
  int to[2];
  if (pipe(to) != 0) throw std::runtime_error("calibrate: pipe failed");
  // The sleeper's call of read() and its return from it, and how many times it has returned: the waker reads them
  // and never blocks. It waits on the count, not on the clock, so that two CPUs' clocks need not agree.
  std::atomic<std::int64_t> woke{0}, blocked{0};
  std::atomic<std::uint64_t> wakes{0};
  const auto now_ns = [] {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
  };
  std::thread b([&] {
    (void)pin_this_thread(sleeper);
    char c = 0;
    for (;;) {
      blocked.store(now_ns(), std::memory_order_release);
      if (read(to[0], &c, 1) != 1 || c == 'q') break;
      woke.store(now_ns(), std::memory_order_release);
      wakes.fetch_add(1, std::memory_order_release);
    }
  });
  std::vector<double> out, halts;
  const std::uint64_t n = std::max<std::uint64_t>(2, bench_iters(s, 20));
  const std::int64_t wait = std::chrono::duration_cast<std::chrono::nanoseconds>(after_block).count();
  std::int64_t last = 0;  // the sleeper's last return from read(), by its clock
  std::uint64_t seen = 0;
  for (std::uint32_t r = 0; r <= s.repetitions; ++r) {
    double total = 0;
    for (std::uint64_t i = 0; i < n; ++i) {
      std::int64_t since = 0;
      while ((since = blocked.load(std::memory_order_acquire)) <= last) {
      }
      while (now_ns() < since + wait) {
      }
      const char c = 'x';
      const std::int64_t t0 = now_ns();
      if (write(to[1], &c, 1) != 1) break;
      while (wakes.load(std::memory_order_acquire) == seen) {
      }
      ++seen;
      last = woke.load(std::memory_order_acquire);
      total += static_cast<double>(last - t0);
      if (r > 0) halts.push_back(static_cast<double>(t0 - since));
    }
    if (r > 0) out.push_back(total / static_cast<double>(n));
  }
  const char q = 'q';
  if (write(to[1], &q, 1) != 1) close(to[1]);
  b.join();
  for (int fd : {to[0], to[1]}) close(fd);
  if (halted != nullptr && !halts.empty()) *halted = spread_of(std::move(halts));
  return spread_of(std::move(out));
}

std::optional<Spread> wake_call_ns(std::uint32_t waker, std::uint32_t sleeper, const BenchScale& s) {
  // `word` is the futex: 0 while the sleeper should sleep. `ready` is set by the sleeper just before it waits.
  alignas(64) std::atomic<std::uint32_t> word{0};
  std::atomic<bool> ready{false}, quit{false}, pinned{true};
  const auto futex = [&word](int op, std::uint32_t val) {
    return syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), op, val, nullptr, nullptr, 0);
  };
  std::thread b([&] {
    pinned.store(pin_this_thread(sleeper));
    while (!quit.load()) {
      ready.store(true, std::memory_order_release);
      while (word.load(std::memory_order_acquire) == 0) futex(FUTEX_WAIT_PRIVATE, 0);
      word.store(0, std::memory_order_relaxed);
    }
  });
  const auto stop = [&] {
    quit.store(true);
    word.store(1);
    futex(FUTEX_WAKE_PRIVATE, 1);
    b.join();
  };
  if (!pin_this_thread(waker)) {
    stop();
    throw std::runtime_error(fmt::format("calibrate: cannot pin a thread to CPU {}", waker));
  }
  std::vector<double> out;
  const std::uint64_t n = bench_iters(s, 200);
  for (std::uint32_t r = 0; r <= s.repetitions && pinned.load(); ++r) {
    double total = 0;
    std::uint64_t woken = 0;
    for (std::uint64_t i = 0; i < n; ++i) {
      while (!ready.exchange(false, std::memory_order_acquire)) std::this_thread::yield();
      // Let the sleeper reach FUTEX_WAIT: on its own CPU it runs when this thread yields; on another, 50 us.
      if (sleeper == waker) {
        std::this_thread::yield();
      } else {
        const auto until = Clock::now() + std::chrono::microseconds(50);
        while (Clock::now() < until) cpu_relax();
      }
      word.store(1, std::memory_order_release);
      const auto t0 = Clock::now();
      const long got = futex(FUTEX_WAKE_PRIVATE, 1);
      const double ns = ns_since(t0);
      if (got == 1) {  // only the wakes that found the sleeper asleep
        total += ns;
        ++woken;
      }
      if (sleeper == waker) std::this_thread::yield();
    }
    if (r > 0 && woken > 0) out.push_back(total / static_cast<double>(woken));
  }
  stop();
  if (!pinned.load()) throw std::runtime_error(fmt::format("calibrate: cannot pin a thread to CPU {}", sleeper));
  if (out.empty()) return std::nullopt;
  return spread_of(std::move(out));
}

#else

Spread wakeup_ns(std::uint32_t, std::uint32_t, const BenchScale&, std::chrono::microseconds, Spread*, Spread*) {
  throw std::runtime_error("calibrate runs on Linux only");
}
Spread brief_wakeup_ns(std::uint32_t, std::uint32_t, const BenchScale&, std::chrono::microseconds, Spread*) {
  throw std::runtime_error("calibrate runs on Linux only");
}
std::optional<Spread> wake_call_ns(std::uint32_t, std::uint32_t, const BenchScale&) {
  throw std::runtime_error("calibrate runs on Linux only");
}
Spread syscall_ns(const BenchScale&) { throw std::runtime_error("calibrate runs on Linux only"); }
Spread page_fault_ns(bool, const BenchScale&) { throw std::runtime_error("calibrate runs on Linux only"); }
Spread fault_step_spread(const BenchScale&) { throw std::runtime_error("calibrate runs on Linux only"); }
Spread madvise_dontneed_ns(std::uint32_t, std::optional<std::uint32_t>, const BenchScale&, bool) {
  throw std::runtime_error("calibrate runs on Linux only");
}
std::optional<Spread> membarrier_ns(std::uint32_t, std::optional<std::uint32_t>, const BenchScale&) {
  return std::nullopt;
}

#endif

Spread page_op_ns(bool copy, const BenchScale& s) {
  std::vector<char> src(4096, 1), dst(4096, 0);
  return sample(s, bench_iters(s, 20000), [&](std::uint64_t m) {
    for (std::uint64_t i = 0; i < m; ++i) {
      if (copy)
        std::memcpy(dst.data(), src.data(), dst.size());
      else
        std::memset(dst.data(), static_cast<int>(i), dst.size());
      clobber(dst.data());
    }
  });
}

Spread memory_load_ns(const BenchScale& s) {
  const std::size_t lines =
      std::max<std::size_t>(1024, static_cast<std::size_t>((64u << 20) / 64 * std::min(1.0, s.work)));
  std::vector<std::size_t> order(lines);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::shuffle(order.begin() + 1, order.end(), std::mt19937_64(1));
  std::vector<Line> chain(lines);  // one index per 64-byte line, linked in random order
  for (std::size_t i = 0; i < lines; ++i) chain[order[i]].v.store(order[(i + 1) % lines], std::memory_order_relaxed);
  std::size_t at = 0;
  const Spread out = sample(s, bench_iters(s, 100000), [&](std::uint64_t m) {
    for (std::uint64_t i = 0; i < m; ++i) at = chain[at].v.load(std::memory_order_relaxed);
  });
  clobber(&at);
  return out;
}

}  // namespace tlbsim::native
