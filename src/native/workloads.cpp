#include "native/workloads.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <new>
#include <stdexcept>
#include <thread>

#include "util/error.h"

#if defined(__linux__)
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#endif

namespace tlbsim::native {

namespace {

constexpr std::uint32_t kMaxTasks = 1024;
constexpr std::size_t kStormPages = 16;  // mmap_storm's mapping

struct alignas(64) TaskCounter {
  std::atomic<std::uint64_t> ops{0};
  std::atomic<std::uintptr_t> last_map{0};  // the latest mapping of a workload whose layout matters (mmap_storm)
};

// Lives in a MAP_SHARED mapping so that processes-mode tasks count into it too.
struct Control {
  std::atomic<bool> stop{false};
  std::atomic<std::uint32_t> ready{0};  // tasks done with their set-up; the warm-up starts when all are
  TaskCounter tasks[kMaxTasks];
};

using TaskBody = void (*)(Control& c, std::uint32_t i, const std::vector<std::uint32_t>& cpus);

struct NativeWorkload {
  const char* name;
  const char* description;
  TaskBody body;
  bool processes;  // each task is a forked process rather than a thread
};

#if defined(__linux__)

[[noreturn]] void fail(const char* what) { throw std::runtime_error(fmt::format("native benchmark: {} failed", what)); }

// will-it-scale tests/tlb_flush1.c: a private mapping of the task's own 128 MiB file; per page: write, MADV_DONTNEED,
// read back (now zero again).
void tlb_flush_loop(Control& c, std::uint32_t i, int fd, std::size_t size) {
  const std::size_t pg = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  const int flags = fd >= 0 ? MAP_PRIVATE : MAP_PRIVATE | MAP_ANONYMOUS;
  c.ready.fetch_add(1);
  while (!c.stop.load(std::memory_order_relaxed)) {
    auto* addr = static_cast<volatile char*>(mmap(nullptr, size, PROT_READ | PROT_WRITE, flags, fd, 0));
    if (addr == MAP_FAILED) fail("mmap");
    for (std::size_t off = 0; off < size && !c.stop.load(std::memory_order_relaxed); off += pg) {
      addr[off] = 1;
      madvise(const_cast<char*>(addr + off), pg, MADV_DONTNEED);
      if (addr[off] != 0) fail("MADV_DONTNEED (page not zero afterwards)");
      c.tasks[i].ops.fetch_add(1, std::memory_order_relaxed);
    }
    munmap(const_cast<char*>(addr), size);
  }
}

void tlb_flush1(Control& c, std::uint32_t i, const std::vector<std::uint32_t>& cpus) {
  pin_this_thread(cpus);
  const char* dir = std::getenv("TMPDIR");
  std::string path = fmt::format("{}/tlbsim-tlb_flush1.XXXXXX", dir != nullptr ? dir : "/tmp");
  const int fd = mkstemp(path.data());
  if (fd < 0) fail("mkstemp");
  unlink(path.c_str());
  constexpr std::size_t kFileSize = 128u << 20;
  if (ftruncate(fd, kFileSize) != 0) fail("ftruncate");
  // will-it-scale's steady state, which the simulated tlb_flush1 starts from: after the first pass over the file
  // its pages are in the page cache, so each read fault maps its neighbours too (fault-around) and the next
  // write breaks copy-on-write. Populating the page cache here (not timed) skips that first pass.
  if (void* m = mmap(nullptr, kFileSize, PROT_READ, MAP_SHARED | MAP_POPULATE, fd, 0); m != MAP_FAILED) {
    munmap(m, kFileSize);
  }
  tlb_flush_loop(c, i, fd, kFileSize);
  close(fd);
}

// will-it-scale tests/tlb_flush2.c: the same loop on 1 MiB of anonymous memory.
void tlb_flush2(Control& c, std::uint32_t i, const std::vector<std::uint32_t>& cpus) {
  pin_this_thread(cpus);
  tlb_flush_loop(c, i, -1, 1u << 20);
}

// An mmap/touch/munmap storm: map 16 anonymous pages, write each, unmap; one iteration per cycle.
void mmap_storm(Control& c, std::uint32_t i, const std::vector<std::uint32_t>& cpus) {
  pin_this_thread(cpus);
  const std::size_t pg = static_cast<std::size_t>(sysconf(_SC_PAGESIZE)), size = kStormPages * pg;
  c.ready.fetch_add(1);
  while (!c.stop.load(std::memory_order_relaxed)) {
    auto* addr =
        static_cast<volatile char*>(mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    if (addr == MAP_FAILED) fail("mmap");
    for (std::size_t off = 0; off < size; off += pg) addr[off] = 1;
    c.tasks[i].last_map.store(reinterpret_cast<std::uintptr_t>(addr), std::memory_order_relaxed);
    munmap(const_cast<char*>(addr), size);
    c.tasks[i].ops.fetch_add(1, std::memory_order_relaxed);
  }
}

// will-it-scale tests/context_switch1.c: one byte ping-ponged with a partner over two pipes, 2 iterations per
// round trip. The partner (thread or process) inherits the task's binding, as will-it-scale's new_task does.
void context_switch1(Control& c, std::uint32_t i, const std::vector<std::uint32_t>& cpus, bool process) {
  pin_this_thread(cpus);
  int to_child[2], to_parent[2];
  if (pipe(to_child) != 0 || pipe(to_parent) != 0) fail("pipe");
  auto child = [&] {
    char b = 0;
    while (read(to_child[0], &b, 1) == 1) {
      if (write(to_parent[1], &b, 1) != 1) break;
    }
  };
  pid_t pid = -1;
  std::thread partner;
  if (process) {
    pid = fork();
    if (pid < 0) fail("fork");
    if (pid == 0) {
      close(to_child[1]);
      child();
      _exit(0);
    }
  } else {
    partner = std::thread(child);
  }
  char b = 0;
  c.ready.fetch_add(1);
  while (!c.stop.load(std::memory_order_relaxed)) {
    if (write(to_child[1], &b, 1) != 1 || read(to_parent[0], &b, 1) != 1) fail("pipe read/write");
    c.tasks[i].ops.fetch_add(2, std::memory_order_relaxed);
  }
  close(to_child[1]);  // the partner reads end-of-file and stops
  if (process)
    waitpid(pid, nullptr, 0);
  else
    partner.join();
  close(to_child[0]);
  close(to_parent[0]);
  close(to_parent[1]);
}

void context_switch1_threads(Control& c, std::uint32_t i, const std::vector<std::uint32_t>& cpus) {
  context_switch1(c, i, cpus, false);
}
void context_switch1_processes(Control& c, std::uint32_t i, const std::vector<std::uint32_t>& cpus) {
  context_switch1(c, i, cpus, true);
}

constexpr NativeWorkload kWorkloads[] = {
    {"context_switch1", "will-it-scale context_switch1, threads mode: a byte ping-ponged over two pipes",
     context_switch1_threads, false},
    {"context_switch1_processes", "will-it-scale context_switch1, processes mode", context_switch1_processes, true},
    {"mmap_storm", "threads mmap 16 anonymous pages, write each, munmap, in a loop (shared mm)", mmap_storm, false},
    {"tlb_flush1", "will-it-scale tlb_flush1, threads mode: write, madvise(MADV_DONTNEED), read, page by page",
     tlb_flush1, false},
    {"tlb_flush2", "will-it-scale tlb_flush2, threads mode: tlb_flush1's loop on 1 MiB of anonymous memory", tlb_flush2,
     false},
};

// mmap_storm's mappings (kStormPages pages each) at the end of a run: "adjacent" when each task's latest one borders
// another task's (top-down placement put them side by side: one merged VMA), "apart" when two lie at least 1 MiB
// apart (a thread's stack between them), "near" otherwise; empty when no task recorded one.
std::string mapping_layout(const Control& c, std::uint32_t n) {
  std::vector<std::uintptr_t> at;
  for (std::uint32_t i = 0; i < n; ++i) {
    if (const std::uintptr_t a = c.tasks[i].last_map.load(std::memory_order_relaxed); a != 0) at.push_back(a);
  }
  if (at.size() < 2) return at.empty() ? "" : "one task";
  std::sort(at.begin(), at.end());
  const std::uintptr_t size = kStormPages * static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
  // "apart": some two neighbours at least 1 MiB apart, room for a thread stack between them (glibc's default is
  // 8 MiB); "near": neither that nor every one adjacent (a hole between mappings, or one caught mid-cycle).
  bool adjacent = true;
  for (std::size_t k = 1; k < at.size(); ++k) {
    if (at[k] - at[k - 1] >= (std::uintptr_t{1} << 20)) return "apart";
    adjacent = adjacent && at[k] - at[k - 1] == size;
  }
  return adjacent ? "adjacent" : "near";
}

std::uint64_t total_ops(const Control& c, std::uint32_t n) {
  std::uint64_t s = 0;
  for (std::uint32_t i = 0; i < n; ++i) s += c.tasks[i].ops.load(std::memory_order_relaxed);
  return s;
}

#else
constexpr NativeWorkload kWorkloads[] = {{"tlb_flush1", "will-it-scale tlb_flush1 (Linux only)", nullptr, false}};
#endif

}  // namespace

std::vector<std::pair<std::string, std::string>> native_workloads() {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& w : kWorkloads) out.emplace_back(w.name, w.description);
  return out;
}

NativeRun run_native_workload(std::string_view name, std::uint32_t threads, double warmup, double seconds,
                              const HostTopology& host, const TlbFlushTracepoint* trace) {
  const NativeWorkload* w = nullptr;
  std::string known;
  for (const auto& x : kWorkloads) {
    if (x.name == name) w = &x;
    known += (known.empty() ? "" : ", ") + std::string(x.name);
  }
  if (w == nullptr) throw InputError(fmt::format("unknown native workload '{}' (known: {})", name, known));
  const TaskBody body = w->body;
  return run_native_tasks(
      name, threads, w->processes,
      [body](const TaskSlot& s, std::uint32_t i, const std::vector<std::uint32_t>& cpus) {
        body(*static_cast<Control*>(s.control), i, cpus);
      },
      warmup, seconds, host, trace);
}

NativeRun run_native_tasks(std::string_view name, std::uint32_t threads, bool processes, const NativeTaskBody& body,
                           double warmup, double seconds, const HostTopology& host, const TlbFlushTracepoint* trace) {
  if (threads == 0 || threads > kMaxTasks) {
    throw InputError(fmt::format("--threads: {} is outside 1..{}", threads, kMaxTasks));
  }
#if defined(__linux__)
  void* mem = mmap(nullptr, sizeof(Control), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) fail("mmap of the shared counters");
  Control& c = *new (mem) Control();
  const auto sets = will_it_scale_cpusets(host, threads);
  std::vector<std::thread> tasks;
  std::vector<pid_t> procs;
  std::string error;
  std::mutex error_mu;
  auto stop_all = [&] {
    c.stop.store(true);
    for (auto& t : tasks) {
      if (t.joinable()) t.join();
    }
    bool failed = false;
    for (pid_t p : procs) {
      int status = 0;
      waitpid(p, &status, 0);
      failed = failed || !WIFEXITED(status) || WEXITSTATUS(status) != 0;
    }
    c.~Control();
    munmap(mem, sizeof(Control));
    return failed;
  };
  try {
    for (std::uint32_t i = 0; i < threads; ++i) {
      if (processes) {
        const pid_t pid = fork();
        if (pid < 0) fail("fork");
        if (pid == 0) {
          try {
            body(TaskSlot{c.stop, c.ready, c.tasks[i].ops, &c}, i, sets[i]);
          } catch (...) {
            _exit(1);
          }
          _exit(0);
        }
        procs.push_back(pid);
      } else {
        tasks.emplace_back([&c, i, &sets, &body, &error, &error_mu] {
          try {
            body(TaskSlot{c.stop, c.ready, c.tasks[i].ops, &c}, i, sets[i]);
          } catch (const std::exception& e) {
            const std::lock_guard lock(error_mu);
            error = e.what();
            c.stop.store(true);
          }
        });
      }
    }
  } catch (...) {
    stop_all();
    throw;
  }
  using Clock = std::chrono::steady_clock;
  // Set-up (file population, partner start) is not measured: wait for every task, up to a minute.
  for (const auto until = Clock::now() + std::chrono::seconds(60);
       c.ready.load() < threads && !c.stop.load() && Clock::now() < until;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  std::this_thread::sleep_for(std::chrono::duration<double>(warmup));
  NativeRun r{std::string(name), threads, 0, 0, read_kernel_counters(trace), {}, {}};
  const std::uint64_t ops0 = total_ops(c, threads);
  const auto t0 = Clock::now();
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  const std::uint64_t ops1 = total_ops(c, threads);
  const auto t1 = Clock::now();
  r.layout = mapping_layout(c, threads);
  r.after = read_kernel_counters(trace);
  const bool child_failed = stop_all();
  if (!error.empty()) throw std::runtime_error(error);
  if (child_failed) throw std::runtime_error(fmt::format("native benchmark: a {} task process failed", name));
  r.ops = ops1 - ops0;
  r.seconds = std::chrono::duration<double>(t1 - t0).count();
  return r;
#else
  (void)name, (void)processes, (void)body, (void)warmup, (void)seconds, (void)host, (void)trace;
  throw std::runtime_error("native benchmarks run on Linux only");
#endif
}

}  // namespace tlbsim::native
