#include "native/file_workload.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <ctime>
#include <new>
#include <stdexcept>
#include <string>
#include <thread>

#include "native/host.h"
#include "util/error.h"

#if defined(__linux__)
#include <fcntl.h>
#include <linux/futex.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#endif

namespace tlbsim::native {

namespace {

using workloads::FileOp;
using workloads::FileOpKind;
using workloads::FileRegion;

[[noreturn]] void fail(const std::string& what) {
  throw std::runtime_error(fmt::format("native workload file: {} failed", what));
}

#if defined(__linux__)
// A file of `size` bytes in $TMPDIR, unlinked at once (will-it-scale's mkstemp, ftruncate, unlink); with its pages
// read into the page cache when the region says so (page_cache = "populated"; not timed).
int make_file(const FileRegion& g, std::uint64_t size) {
  const char* dir = std::getenv("TMPDIR");
  std::string path = fmt::format("{}/tlbsim-{}.XXXXXX", dir != nullptr ? dir : "/tmp", g.name);
  const int fd = mkstemp(path.data());
  if (fd < 0) fail("mkstemp");
  unlink(path.c_str());
  if (ftruncate(fd, static_cast<off_t>(size)) != 0) fail("ftruncate");
  if (g.populated) {
    if (void* m = mmap(nullptr, size, PROT_READ, MAP_SHARED | MAP_POPULATE, fd, 0); m != MAP_FAILED) munmap(m, size);
  }
  return fd;
}

class Task {
 public:
  Task(const NativeFileRun& run, const TaskSlot& c)
      : run_(run),
        f_(run.f),
        v_(run.v),
        c_(c),
        barrier_(run.barrier),
        fd_(run.f.regions.size(), -1),
        addr_(run.f.regions.size(), nullptr),
        own_(run.f.regions.size()) {
    for (std::size_t r = 0; r < f_.regions.size(); ++r) {
      const FileRegion& g = f_.regions[r];
      if (g.file) fd_[r] = g.per_task ? make_file(g, size(r)) : run.fds[r];
      own_[r] = g.file && g.per_task;
    }
  }
  ~Task() {
    for (std::size_t r = 0; r < f_.regions.size(); ++r) {
      if (addr_[r] != nullptr) munmap(addr_[r], size(r));
      if (own_[r]) close(fd_[r]);
    }
    for (const auto& p : pipes_) {
      for (int fd : p) {
        if (fd >= 0) close(fd);
      }
    }
  }
  Task(const Task&) = delete;
  Task& operator=(const Task&) = delete;

  void run() {
    if (f_.partner) start_partner();
    run_ops(f_.setup);
    c_.ready.fetch_add(1);
    while (!c_.stop.load(std::memory_order_relaxed) && run_ops(f_.loop)) {
    }
    if (f_.partner) stop_partner();
  }

 private:
  std::uint64_t size(std::size_t r) const { return v_(f_.regions[r].size); }

  // The partner, as will-it-scale's context_switch1 starts it: a thread, or a forked process, inheriting the task's
  // binding, on pipes made first. A forked partner closes the ends it does not use, so that each side sees
  // end-of-file when the other is gone.
  void start_partner() {
    pipes_.assign(f_.pipes.size(), {-1, -1});
    for (std::size_t q = 0; q < pipes_.size(); ++q) {
      // A socket pair's second descriptor is written and its first read, as a pipe's.
      const bool ok =
          f_.socket[q] ? socketpair(AF_UNIX, SOCK_STREAM, 0, pipes_[q].data()) == 0 : pipe(pipes_[q].data()) == 0;
      if (!ok) fail(f_.socket[q] ? "socketpair" : "pipe");
    }
    if (f_.mode == workloads::WisMode::kThreads) {
      partner_ = std::thread([this] {
        partner_loop();
        // The thread shares the task's descriptors: closing its write ends is what gives a task waiting to read
        // end-of-file, as a forked partner's exit does.
        for (const FileOp& o : f_.partner_loop) {
          int& w = pipes_[o.pipe][1];
          if (o.kind == FileOpKind::kPipeWrite && w >= 0) close(w), w = -1;
        }
        partner_done_.store(true);
      });
      return;
    }
    partner_pid_ = fork();
    if (partner_pid_ < 0) fail("fork");
    if (partner_pid_ == 0) {
      for (const FileOp& o : f_.partner_loop) {
        // Its own ends stay open; the task's ends of the same pipe close.
        int& other = pipes_[o.pipe][o.kind == FileOpKind::kPipeWrite ? 0 : 1];
        if (other >= 0) close(other), other = -1;
      }
      partner_loop();
      _exit(0);
    }
    for (const FileOp& o : f_.partner_loop) {  // and the task closes the partner's ends
      int& mine = pipes_[o.pipe][o.kind == FileOpKind::kPipeWrite ? 1 : 0];
      if (mine >= 0) close(mine), mine = -1;
    }
  }

  void partner_loop() {
    while (!c_.stop.load(std::memory_order_relaxed)) {
      for (const FileOp& o : f_.partner_loop) {
        if (!pipe_io(o)) return;  // the task has gone (end-of-file) or stopped
      }
    }
  }

  // The task stops: it closes the ends it writes, so a partner waiting to read sees end-of-file, and waits for it.
  void stop_partner() {
    for (const FileOp& o : f_.loop) {
      if (o.kind != FileOpKind::kPipeWrite) continue;
      int& w = pipes_[o.pipe][1];
      if (w >= 0) close(w), w = -1;
    }
    // A partner blocked writing to a full pipe the task reads is freed by draining it until the partner is gone.
    for (const FileOp& o : f_.loop) {
      if (o.kind == FileOpKind::kPipeRead && pipes_[o.pipe][0] >= 0) {
        fcntl(pipes_[o.pipe][0], F_SETFL, fcntl(pipes_[o.pipe][0], F_GETFL) | O_NONBLOCK);
      }
    }
    for (;;) {
      const bool gone =
          partner_pid_ > 0 ? waitpid(partner_pid_, nullptr, WNOHANG) == partner_pid_ : partner_done_.load();
      if (gone) break;
      thread_local std::array<char, workloads::kMaxPipeBytes> sink{};
      for (const FileOp& o : f_.loop) {
        if (o.kind == FileOpKind::kPipeRead && pipes_[o.pipe][0] >= 0) {
          while (::read(pipes_[o.pipe][0], sink.data(), sink.size()) > 0) {
          }
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (partner_.joinable()) partner_.join();
  }

  // write() or read() of the operation's bytes, in as many calls as the pipe takes; false at end-of-file or error.
  bool pipe_io(const FileOp& o) {
    thread_local std::array<char, workloads::kMaxPipeBytes> buf{};
    const bool write = o.kind == FileOpKind::kPipeWrite;
    const int fd = pipes_[o.pipe][write ? 1 : 0];
    for (std::uint64_t done = 0; done < o.bytes;) {
      const ssize_t n = write ? ::write(fd, buf.data(), o.bytes - done) : ::read(fd, buf.data(), o.bytes - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      done += static_cast<std::uint64_t>(n);
    }
    return true;
  }

  // Returns false once a count finds `stop` set.
  bool run_ops(const std::vector<FileOp>& ops) {
    for (const FileOp& o : ops) {
      const std::size_t r = o.region;
      auto* base = r < addr_.size() ? static_cast<volatile char*>(addr_[r]) : nullptr;  // pipe ops name no region
      switch (o.kind) {
        case FileOpKind::kMmap: {
          const FileRegion& g = f_.regions[r];
          const int flags = (g.shared ? MAP_SHARED : MAP_PRIVATE) | (g.file ? 0 : MAP_ANONYMOUS);
          void* a = mmap_aligned(size(r), g.align ? v_(*g.align) : 0, flags, fd_[r]);
          if (a == MAP_FAILED) fail(fmt::format("{}: mmap", o.where));
          addr_[r] = a;
          break;
        }
        case FileOpKind::kMunmap:
          if (munmap(addr_[r], size(r)) != 0) fail(fmt::format("{}: munmap", o.where));
          addr_[r] = nullptr;
          break;
        case FileOpKind::kTouch: {
          const std::uint64_t off = o.offset ? v_(*o.offset) : 0;
          const std::uint64_t len = o.length ? v_(*o.length) : size(r) - off;
          for (std::uint64_t a = off; a < off + len; a += v_(o.stride)) touch(base + a, o.write);
          break;
        }
        case FileOpKind::kMadvise: {
          const std::uint64_t off = o.offset ? v_(*o.offset) : 0;
          const std::uint64_t len = o.length ? v_(*o.length) : size(r) - off;
          const int advice = o.advice == workloads::FileAdvice::kHugepage  ? MADV_HUGEPAGE
                             : o.advice == workloads::FileAdvice::kPageout ? MADV_PAGEOUT
                                                                           : MADV_DONTNEED;
          if (madvise(const_cast<char*>(base + off), len, advice) != 0) {
            fail(fmt::format("{}: madvise", o.where));
          }
          break;
        }
        case FileOpKind::kMprotect: {
          const std::uint64_t off = o.offset ? v_(*o.offset) : 0;
          const std::uint64_t len = o.length ? v_(*o.length) : size(r) - off;
          if (mprotect(const_cast<char*>(base + off), len, PROT_READ | (o.write ? PROT_WRITE : 0)) != 0) {
            fail(fmt::format("{}: mprotect", o.where));
          }
          break;
        }
        case FileOpKind::kMremap:
          if (mremap(addr_[r], size(r), size(r), MREMAP_MAYMOVE | MREMAP_FIXED, addr_[o.to]) != addr_[o.to]) {
            fail(fmt::format("{}: mremap", o.where));
          }
          addr_[r] = nullptr;
          break;
        case FileOpKind::kNumaScan:
        case FileOpKind::kMigratePages:
        case FileOpKind::kCompactMemory:
          fail(fmt::format("{}: not runnable natively", o.where));  // refused before the run (kernel_only_op)
          break;
        case FileOpKind::kForEachPage:
          for (std::uint64_t pg = 0; pg < size(r); pg += workloads::kFilePageSize) {
            for (const FileOp& b : o.body) {
              if (b.kind == FileOpKind::kTouch) {
                touch(base + pg, b.write);
              } else if (b.kind == FileOpKind::kMadvise) {
                if (madvise(const_cast<char*>(base + pg), workloads::kFilePageSize, MADV_DONTNEED) != 0) {
                  fail(fmt::format("{}: madvise", b.where));
                }
              } else if (!count(b.n)) {
                return false;
              }
            }
          }
          break;
        case FileOpKind::kCount:
          if (!count(o.n)) return false;
          break;
        case FileOpKind::kSleep: {
          const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(o.duration).count();
          timespec ts{static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)};
          while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
          }
          break;
        }
        case FileOpKind::kBarrier:
          if (!barrier_wait()) return false;
          break;
        case FileOpKind::kSpawn:
          spawn(o);
          break;
        case FileOpKind::kPipeWrite:
        case FileOpKind::kPipeRead:
          if (!pipe_io(o)) {
            if (c_.stop.load(std::memory_order_relaxed)) return false;
            fail(fmt::format("{}: pipe {}", o.where, o.kind == FileOpKind::kPipeWrite ? "write" : "read"));
          }
          break;
      }
    }
    return true;
  }

  static void touch(volatile char* p, bool write) {
    if (write) {
      *p = 1;
    } else {
      (void)*p;
    }
  }

  // posix_spawn of tlbsim's child program (vfork and exec, as the model's spawn), which runs the body; then wait4.
  void spawn(const FileOp& o) {
    const std::string n = std::to_string(o.spawn);
    std::vector<char*> argv = {const_cast<char*>(run_.spawn_helper.c_str()), const_cast<char*>("__spawn-child"),
                               const_cast<char*>(run_.name.c_str()), const_cast<char*>(n.c_str()), nullptr};
    pid_t pid = -1;
    if (posix_spawn(&pid, run_.spawn_helper.c_str(), nullptr, nullptr, argv.data(), environ) != 0) {
      fail(fmt::format("{}: posix_spawn of {}", o.where, run_.spawn_helper));
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) fail(fmt::format("{}: the spawned child", o.where));
  }

 public:
  // The spawned child's side: the body, then (on return) exit.
  void run_body(const std::vector<FileOp>& body) { run_ops(body); }

 private:
  // pthread_barrier_wait's futex protocol on shared memory; false when the run stops while this task waits.
  bool barrier_wait() {
    const std::uint32_t round = barrier_.round.load();
    if (barrier_.arrived.fetch_add(1) + 1 == barrier_.parties) {
      barrier_.arrived.store(0);
      barrier_.round.fetch_add(1);
      syscall(SYS_futex, &barrier_.round, FUTEX_WAKE, INT32_MAX, nullptr, nullptr, 0);
      return true;
    }
    while (barrier_.round.load() == round) {
      if (c_.stop.load(std::memory_order_relaxed)) return false;
      const timespec ten_ms{0, 10000000};
      syscall(SYS_futex, &barrier_.round, FUTEX_WAIT, round, &ten_ms, nullptr, 0);
    }
    return true;
  }

  bool count(std::uint64_t n) {
    c_.ops.fetch_add(n, std::memory_order_relaxed);
    return !c_.stop.load(std::memory_order_relaxed);
  }

  const NativeFileRun& run_;
  const workloads::WorkloadFile& f_;
  const workloads::ResolvedValues& v_;
  const TaskSlot& c_;
  NativeBarrier& barrier_;
  std::vector<int> fd_;
  std::vector<void*> addr_;
  std::vector<bool> own_;  // the task made the region's file
  std::vector<std::array<int, 2>> pipes_;  // the pair's pipes: [0] read end, [1] write end
  std::thread partner_;
  std::atomic<bool> partner_done_{false};
  pid_t partner_pid_ = -1;
};
#endif

}  // namespace

WorkloadFds::WorkloadFds(const workloads::WorkloadFile& f, const workloads::ResolvedValues& v)
    : fds_(f.regions.size(), -1) {
#if defined(__linux__)
  for (std::size_t r = 0; r < f.regions.size(); ++r) {
    if (f.regions[r].file && !f.regions[r].per_task) fds_[r] = make_file(f.regions[r], v(f.regions[r].size));
  }
#else
  (void)v;
#endif
}

WorkloadFds::~WorkloadFds() {
#if defined(__linux__)
  for (int fd : fds_) {
    if (fd >= 0) close(fd);
  }
#endif
}

void run_file_task(const NativeFileRun& run, const TaskSlot& c, const std::vector<std::uint32_t>& cpus) {
#if defined(__linux__)
  pin_this_thread(cpus);
  Task t(run, c);
  t.run();
#else
  (void)run, (void)c, (void)cpus;
  throw std::runtime_error("native benchmarks run on Linux only");
#endif
}

// The first operation a native run cannot make (numa_scan: NUMA balancing's scanner runs on the kernel's own
// period; migrate_pages: the file names no nodes for the system call; compact_memory: a root-only sysctl that
// compacts the whole machine), searching spawned bodies too.
static const FileOp* kernel_only_op(const std::vector<FileOp>& ops) {
  for (const FileOp& o : ops) {
    if (o.kind == FileOpKind::kNumaScan || o.kind == FileOpKind::kMigratePages || o.kind == FileOpKind::kCompactMemory)
      return &o;
    if (const FileOp* b = kernel_only_op(o.body)) return b;
  }
  return nullptr;
}

NativeRun run_native_file_workload(std::string_view name, std::uint32_t threads, double warmup, double seconds,
                                   const HostTopology& host, const TlbFlushTracepoint* trace,
                                   std::string spawn_helper) {
  const auto file = workloads::load_workload_file(name);
  const workloads::ResolvedValues values = workloads::resolve_values(*file, nullptr);
  for (const auto* ops : {&file->setup, &file->loop}) {
    if (const FileOp* o = kernel_only_op(*ops)) {
      throw InputError(
          fmt::format("{}: '{}' cannot run natively: NUMA balancing's scan runs on the kernel's own "
                      "period, migrate_pages needs node masks the file does not give, and compact_memory is a "
                      "root-only sysctl that compacts the whole machine",
                      o->where,
                      o->kind == FileOpKind::kNumaScan       ? "numa_scan"
                      : o->kind == FileOpKind::kMigratePages ? "migrate_pages"
                                                             : "compact_memory"));
    }
  }
  const WorkloadFds fds(*file, values);
  // placement = "cpus": task i on the listed CPU (which this host must have), else will-it-scale's binding.
  for (std::uint32_t cpu : file->cpus) {
    if (std::none_of(host.cpus.begin(), host.cpus.end(), [cpu](const auto& c) { return c.cpu == cpu; })) {
      throw InputError(fmt::format("{}: cpus lists CPU {}, which this host does not have online", name, cpu));
    }
  }
#if defined(__linux__)
  // Shared with forked tasks, as the runner's counters are.
  void* mem = mmap(nullptr, sizeof(NativeBarrier), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) fail("mmap of the barrier");
  NativeBarrier& barrier = *new (mem) NativeBarrier();
  barrier.parties = threads;
  struct Unmap {
    void* p;
    ~Unmap() { munmap(p, sizeof(NativeBarrier)); }
  } unmap{mem};
#else
  NativeBarrier barrier;
#endif
  const NativeFileRun run{*file, values, fds, barrier, std::string(name), std::move(spawn_helper)};
  return run_native_tasks(
      name, threads, file->mode == workloads::WisMode::kProcesses,
      [&](const TaskSlot& s, std::uint32_t i, const std::vector<std::uint32_t>& cpus) {
        if (file->cpus.empty()) return run_file_task(run, s, cpus);
        run_file_task(run, s, {file->cpus[i % file->cpus.size()]});
      },
      warmup, seconds, host, trace);
}

void* mmap_aligned(std::uint64_t len, std::uint64_t align, int flags, int fd) {
#if defined(__linux__)
  if (align <= workloads::kFilePageSize) return mmap(nullptr, len, PROT_READ | PROT_WRITE, flags, fd, 0);
  auto* res =
      static_cast<char*>(mmap(nullptr, len + align, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0));
  if (res == MAP_FAILED) return MAP_FAILED;
  const std::uint64_t head = (align - reinterpret_cast<std::uintptr_t>(res) % align) % align;
  if (head != 0) munmap(res, head);
  munmap(res + head + len, align - head);
  return mmap(res + head, len, PROT_READ | PROT_WRITE, flags | MAP_FIXED, fd, 0);
#else
  (void)len, (void)align, (void)flags, (void)fd;
  throw std::runtime_error("native workloads need Linux");
#endif
}

int run_spawned_child(std::string_view name, std::size_t n) {
#if defined(__linux__)
  try {
    const auto file = workloads::load_workload_file(name);
    const workloads::FileOp* spawn = workloads::find_spawn(*file, n);
    if (spawn == nullptr) return 2;
    const workloads::ResolvedValues values = workloads::resolve_values(*file, nullptr);
    const WorkloadFds fds(*file, values);
    NativeBarrier barrier;
    const NativeFileRun run{*file, values, fds, barrier, std::string(name), ""};
    std::atomic<bool> stop{false};
    std::atomic<std::uint32_t> ready{0};
    std::atomic<std::uint64_t> ops{0};
    const TaskSlot slot{stop, ready, ops, nullptr};
    Task t(run, slot);
    t.run_body(spawn->body);
    return 0;
  } catch (const InputError&) {
    return 2;
  } catch (const std::exception&) {
    return 1;
  }
#else
  (void)name, (void)n;
  return 1;
#endif
}

}  // namespace tlbsim::native
