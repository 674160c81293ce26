#include "native/microbench_sched.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include "native/host.h"

#if defined(__linux__)
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#endif

namespace tlbsim::native {

#if defined(__linux__)

namespace {

using Clock = std::chrono::steady_clock;

double ns_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::nano>(b - a).count();
}

// Two pipes, closed when it goes.
struct PipePair {
  int to[2] = {-1, -1}, back[2] = {-1, -1};
  PipePair() {
    if (pipe(to) != 0 || pipe(back) != 0) {
      close_all();
      throw std::runtime_error("calibrate: pipe failed");
    }
  }
  ~PipePair() { close_all(); }
  PipePair(const PipePair&) = delete;
  PipePair& operator=(const PipePair&) = delete;
  void close_all() {
    for (int* fd : {&to[0], &to[1], &back[0], &back[1]}) {
      if (*fd >= 0) close(*fd);
      *fd = -1;
    }
  }
};

// The partner of a ping-pong: reads a byte from `in`, writes it to `out`, until it reads 'q' or the pipe fails.
void echo(int in, int out) {
  char c = 0;
  while (read(in, &c, 1) == 1 && c != 'q') {
    if (write(out, &c, 1) != 1) break;
  }
}

long switches_of_this_thread() {
  rusage u{};
  if (getrusage(RUSAGE_THREAD, &u) != 0) return 0;
  return u.ru_nvcsw + u.ru_nivcsw;
}

}  // namespace

PipeCalls pipe_calls_ns(std::uint32_t cpu, const BenchScale& s) {
  pin_or_throw(cpu);
  PipePair p;
  const std::uint64_t n = bench_iters(s, 20000);
  std::vector<double> writes, reads;
  char c = 'x';
  for (std::uint32_t r = 0; r <= s.repetitions; ++r) {  // r == 0 warms up
    double w = 0, rd = 0, clock = 0;
    for (std::uint64_t i = 0; i < n; ++i) {
      const auto t0 = Clock::now();
      const auto t1 = Clock::now();
      if (write(p.to[1], &c, 1) != 1) throw std::runtime_error("calibrate: pipe write failed");
      const auto t2 = Clock::now();
      if (read(p.to[0], &c, 1) != 1) throw std::runtime_error("calibrate: pipe read failed");
      const auto t3 = Clock::now();
      clock += ns_between(t0, t1);
      w += ns_between(t1, t2);
      rd += ns_between(t2, t3);
    }
    if (r == 0) continue;
    const double nd = static_cast<double>(n);
    writes.push_back(std::max(0.0, (w - clock) / nd));
    reads.push_back(std::max(0.0, (rd - clock) / nd));
  }
  return {spread_of(std::move(writes)), spread_of(std::move(reads))};
}

YieldSwitch yield_switch_ns(std::uint32_t cpu, const BenchScale& s) {
  pin_or_throw(cpu);
  std::atomic<bool> stop{false}, pinned{true}, started{false};
  std::atomic<std::uint64_t> other_yields{0};
  std::thread partner([&] {
    pinned.store(pin_this_thread(cpu));
    started.store(true);
    while (!stop.load(std::memory_order_relaxed)) {
      sched_yield();
      other_yields.fetch_add(1, std::memory_order_relaxed);
    }
  });
  while (!started.load()) sched_yield();
  if (!pinned.load()) {
    stop.store(true);
    partner.join();
    throw std::runtime_error(fmt::format("calibrate: cannot pin a thread to CPU {}", cpu));
  }
  const std::uint64_t n = bench_iters(s, 20000);
  std::vector<double> out;
  double yields = 0, switched = 0;
  for (std::uint32_t r = 0; r <= s.repetitions; ++r) {  // r == 0 warms up
    const std::uint64_t o0 = other_yields.load();
    const long s0 = switches_of_this_thread();
    const auto t0 = Clock::now();
    for (std::uint64_t i = 0; i < n; ++i) sched_yield();
    const double ns = ns_between(t0, Clock::now());
    const double all = static_cast<double>(n + (other_yields.load() - o0));
    if (r == 0) continue;
    out.push_back(ns / all);
    yields += all;
    switched += 2.0 * static_cast<double>(switches_of_this_thread() - s0);
  }
  stop.store(true);
  partner.join();
  return {spread_of(std::move(out)), yields > 0 ? std::min(1.0, switched / yields) : 0.0};
}

Spread pipe_pingpong_ns(std::uint32_t cpu, bool processes, const BenchScale& s) {
  pin_or_throw(cpu);  // before the fork or the thread: the partner inherits the one-CPU mask, as in will-it-scale
  PipePair p;
  pid_t child = -1;
  std::thread partner;
  if (processes) {
    child = fork();
    if (child < 0) throw std::runtime_error("calibrate: fork failed");
    if (child == 0) {
      echo(p.to[0], p.back[1]);
      _exit(0);
    }
  } else {
    partner = std::thread([&p] { echo(p.to[0], p.back[1]); });
  }
  const std::uint64_t n = bench_iters(s, 10000);
  std::vector<double> out;
  bool failed = false;
  for (std::uint32_t r = 0; r <= s.repetitions && !failed; ++r) {  // r == 0 warms up
    const auto t0 = Clock::now();
    char c = 'x';
    for (std::uint64_t i = 0; i < n && !failed; ++i) {
      failed = write(p.to[1], &c, 1) != 1 || read(p.back[0], &c, 1) != 1;
    }
    if (r > 0) out.push_back(ns_between(t0, Clock::now()) / (2.0 * static_cast<double>(n)));
  }
  const char q = 'q';
  if (write(p.to[1], &q, 1) != 1) p.close_all();  // the partner then sees the pipe fail
  if (processes) {
    int status = 0;
    waitpid(child, &status, 0);
  } else {
    partner.join();
  }
  if (failed) throw std::runtime_error("calibrate: pipe ping-pong failed");
  return spread_of(std::move(out));
}

namespace {

// What the kick's handler reaches: a signal handler sees no other state.
std::atomic<std::uint64_t> kicks_handled{0};
void on_kick(int) { kicks_handled.fetch_add(1, std::memory_order_release); }

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

}  // namespace

std::optional<Spread> kick_ns(std::uint32_t sender, std::uint32_t target, bool blocked, const BenchScale& s) {
  const int sig = SIGRTMIN + 1;  // queued, never merged with a pending one
  struct sigaction act {};
  struct sigaction old {};
  act.sa_handler = on_kick;
  sigemptyset(&act.sa_mask);
  if (sigaction(sig, &act, &old) != 0) return std::nullopt;
  std::atomic<pid_t> tid{0};
  std::atomic<bool> quit{false}, pinned{true};
  std::atomic<std::uint64_t> sent{0}, dequeued{0};
  std::thread t([&] {
    pinned.store(pin_this_thread(target));
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    pthread_sigmask(blocked ? SIG_BLOCK : SIG_UNBLOCK, &set, nullptr);
    tid.store(static_cast<pid_t>(syscall(SYS_gettid)), std::memory_order_release);
    const timespec zero{0, 0};
    while (!quit.load(std::memory_order_relaxed)) {  // user space, running: kick_process's IPI finds it here
      if (blocked && sent.load(std::memory_order_acquire) != dequeued.load(std::memory_order_relaxed) &&
          sigtimedwait(&set, nullptr, &zero) == sig) {
        dequeued.fetch_add(1, std::memory_order_release);
      }
      cpu_relax();
    }
  });
  const auto finish = [&] {
    quit.store(true);
    t.join();
    sigaction(sig, &old, nullptr);
  };
  while (tid.load(std::memory_order_acquire) == 0) std::this_thread::yield();
  if (!pinned.load() || !pin_this_thread(sender)) {
    finish();
    throw std::runtime_error(fmt::format("calibrate: cannot pin threads to CPUs {} and {}", sender, target));
  }
  const auto received = [&] { return blocked ? dequeued.load(std::memory_order_acquire) : kicks_handled.load(); };
  std::vector<double> out;
  const std::uint64_t n = bench_iters(s, 200);
  bool lost = false;
  for (std::uint32_t r = 0; r <= s.repetitions && !lost; ++r) {  // r == 0 warms up
    double total = 0;
    for (std::uint64_t i = 0; i < n && !lost; ++i) {
      const std::uint64_t before = received();
      const auto t0 = Clock::now();
      syscall(SYS_tgkill, getpid(), tid.load(), sig);
      total += ns_between(t0, Clock::now());
      sent.fetch_add(1, std::memory_order_release);
      const auto give_up = Clock::now() + std::chrono::milliseconds(100);
      while (received() == before && !(lost = Clock::now() > give_up)) cpu_relax();
      // Let the target return to user space and spin again before the next signal.
      for (const auto until = Clock::now() + std::chrono::microseconds(20); Clock::now() < until;) cpu_relax();
    }
    if (r > 0) out.push_back(total / static_cast<double>(n));
  }
  finish();
  if (lost || out.empty()) return std::nullopt;
  return spread_of(std::move(out));
}

#else

PipeCalls pipe_calls_ns(std::uint32_t, const BenchScale&) { throw std::runtime_error("calibrate runs on Linux only"); }
YieldSwitch yield_switch_ns(std::uint32_t, const BenchScale&) {
  throw std::runtime_error("calibrate runs on Linux only");
}
Spread pipe_pingpong_ns(std::uint32_t, bool, const BenchScale&) {
  throw std::runtime_error("calibrate runs on Linux only");
}
std::optional<Spread> kick_ns(std::uint32_t, std::uint32_t, bool, const BenchScale&) { return std::nullopt; }

#endif

}  // namespace tlbsim::native
