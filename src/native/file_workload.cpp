#include "native/file_workload.h"

#include <fmt/format.h>

#include <cstdlib>
#include <stdexcept>
#include <string>

#include "native/host.h"

#if defined(__linux__)
#include <sys/mman.h>
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
  Task(const workloads::WorkloadFile& f, const workloads::ResolvedValues& v, const WorkloadFds& shared,
       const TaskSlot& c)
      : f_(f), v_(v), c_(c), fd_(f.regions.size(), -1), addr_(f.regions.size(), nullptr), own_(f.regions.size()) {
    for (std::size_t r = 0; r < f.regions.size(); ++r) {
      const FileRegion& g = f.regions[r];
      if (g.file) fd_[r] = g.per_task ? make_file(g, size(r)) : shared[r];
      own_[r] = g.file && g.per_task;
    }
  }
  ~Task() {
    for (std::size_t r = 0; r < f_.regions.size(); ++r) {
      if (addr_[r] != nullptr) munmap(addr_[r], size(r));
      if (own_[r]) close(fd_[r]);
    }
  }
  Task(const Task&) = delete;
  Task& operator=(const Task&) = delete;

  void run() {
    run_ops(f_.setup);
    c_.ready.fetch_add(1);
    while (!c_.stop.load(std::memory_order_relaxed) && run_ops(f_.loop)) {
    }
  }

 private:
  std::uint64_t size(std::size_t r) const { return v_(f_.regions[r].size); }

  // Returns false once a count finds `stop` set.
  bool run_ops(const std::vector<FileOp>& ops) {
    for (const FileOp& o : ops) {
      const std::size_t r = o.region;
      auto* base = static_cast<volatile char*>(addr_[r]);
      switch (o.kind) {
        case FileOpKind::kMmap: {
          const FileRegion& g = f_.regions[r];
          const int flags = (g.shared ? MAP_SHARED : MAP_PRIVATE) | (g.file ? 0 : MAP_ANONYMOUS);
          void* a = mmap(nullptr, size(r), PROT_READ | PROT_WRITE, flags, fd_[r], 0);
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
          if (madvise(const_cast<char*>(base + off), len, MADV_DONTNEED) != 0) {
            fail(fmt::format("{}: madvise", o.where));
          }
          break;
        }
        case FileOpKind::kForEachPage:
          for (std::uint64_t pg = 0; pg < size(r); pg += workloads::kFilePageSize) {
            for (const FileOp& b : o.body) {
              if (b.kind == FileOpKind::kTouch) {
                touch(base + pg, b.write);
              } else if (b.kind == FileOpKind::kMadvise) {
                if (madvise(const_cast<char*>(base + pg), workloads::kFilePageSize, MADV_DONTNEED) != 0) {
                  fail(fmt::format("{}: madvise", b.where));
                }
              } else if (!count()) {
                return false;
              }
            }
          }
          break;
        case FileOpKind::kCount:
          if (!count()) return false;
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

  bool count() {
    c_.ops.fetch_add(1, std::memory_order_relaxed);
    return !c_.stop.load(std::memory_order_relaxed);
  }

  const workloads::WorkloadFile& f_;
  const workloads::ResolvedValues& v_;
  const TaskSlot& c_;
  std::vector<int> fd_;
  std::vector<void*> addr_;
  std::vector<bool> own_;  // the task made the region's file
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

void run_file_task(const workloads::WorkloadFile& f, const workloads::ResolvedValues& v, const WorkloadFds& shared,
                   const TaskSlot& c, const std::vector<std::uint32_t>& cpus) {
#if defined(__linux__)
  pin_this_thread(cpus);
  Task t(f, v, shared, c);
  t.run();
#else
  (void)f, (void)v, (void)shared, (void)c, (void)cpus;
  throw std::runtime_error("native benchmarks run on Linux only");
#endif
}

NativeRun run_native_file_workload(std::string_view name, std::uint32_t threads, double warmup, double seconds,
                                   const HostTopology& host, const TlbFlushTracepoint* trace) {
  const auto file = workloads::load_workload_file(name);
  const workloads::ResolvedValues values = workloads::resolve_values(*file, nullptr);
  const WorkloadFds fds(*file, values);
  NativeRun r = run_native_tasks(
      name, threads, file->mode == workloads::WisMode::kProcesses,
      [&](const TaskSlot& s, std::uint32_t, const std::vector<std::uint32_t>& cpus) {
        run_file_task(*file, values, fds, s, cpus);
      },
      warmup, seconds, host, trace);
  return r;
}

}  // namespace tlbsim::native
