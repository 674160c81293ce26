// The simulated executor of a workload file: will-it-scale's pinned tasks (start_pinned_threads), each running the
// file's set-up once and then its loop until the run ends, every operation the same system call or user access
// the C++ workloads make (mm/memory.h), so a file and its C++ twin give the same run.
#include <memory>
#include <vector>

#include "kernel/sched/sched.h"
#include "mm/memory.h"
#include "workloads/file/workload_file.h"
#include "workloads/tlb_flush.h"

namespace tlbsim::workloads {

namespace {

static_assert(kFilePageSize == kernel::kPageSize, "the file's pages are the model's pages");

// One task's view of the regions: its files and where each region is mapped now.
struct TaskRegions {
  std::vector<kernel::File*> files;
  std::vector<std::uint64_t> addr;
};

// Contract: start() resolves the file's parameters (--param) before it builds anything; each task counts one
// operation per `count` reached after the warm-up and stops at the first `count` or loop pass at or after the end.
class FileWorkload final : public Workload {
 public:
  explicit FileWorkload(std::shared_ptr<const WorkloadFile> f) : f_(std::move(f)) {}

  std::string metric_name() const override { return f_->metric_name; }
  std::string unit() const override { return f_->unit; }

  void start(kernel::Kernel& k, const WorkloadParams& p, std::vector<std::uint64_t>& ops) override {
    values_ = resolve_values(*f_, p.args);
    size_.clear();
    for (const FileRegion& g : f_->regions) size_.push_back(values_(g.size));
    workload_files_.assign(f_->regions.size(), nullptr);
    for (std::size_t r = 0; r < f_->regions.size(); ++r) {
      if (f_->regions[r].file && !f_->regions[r].per_task) workload_files_[r] = &new_file(k, r);
    }
    sched_ = start_pinned_threads(
        k, p, ops, f_->name,
        [this, &k](kernel::PerCpu& pc, kernel::MmStruct& mm, std::uint32_t, sim::SimTime from, sim::SimTime end,
                   std::uint64_t& n) {
          // Made when the task is, as a C++ workload makes its task's file (tlb_flush1, tlb_flush3).
          TaskRegions& t = *tasks_.emplace_back(std::make_unique<TaskRegions>());
          t.addr.assign(f_->regions.size(), 0);
          t.files = workload_files_;
          for (std::size_t r = 0; r < f_->regions.size(); ++r) {
            if (f_->regions[r].file && f_->regions[r].per_task) t.files[r] = &new_file(k, r);
          }
          return run_task(pc, mm, t, from, end, n);
        },
        f_->mode);
  }

 private:
  kernel::File& new_file(kernel::Kernel& k, std::size_t r) {
    kernel::File& file = k.new_file(size_[r]);
    if (f_->regions[r].populated) {
      for (std::uint64_t pg = 0; pg < size_[r] / kernel::kPageSize; ++pg) {
        file.pages.emplace(pg, k.frames().alloc(kernel::FrameUse::kPageCache));
      }
    }
    return file;
  }

  sim::Task<void> run_task(kernel::PerCpu& self, kernel::MmStruct& mm, TaskRegions& t, sim::SimTime from,
                           sim::SimTime end, std::uint64_t& n) {
    bool stop = false;
    co_await run_ops(self, mm, t, f_->setup, from, end, n, stop);
    while (!stop && self.cpu.now() < end) co_await run_ops(self, mm, t, f_->loop, from, end, n, stop);
  }

  // The operations of one list in order; a `count` at or after `end` sets `stop` and returns.
  sim::Task<void> run_ops(kernel::PerCpu& self, kernel::MmStruct& mm, TaskRegions& t, const std::vector<FileOp>& ops,
                          sim::SimTime from, sim::SimTime end, std::uint64_t& n, bool& stop) {
    for (const FileOp& o : ops) {
      const std::size_t r = o.region;
      switch (o.kind) {
        case FileOpKind::kMmap:
          t.addr[r] = co_await kernel::sys_mmap(self, mm, size_[r], f_->regions[r].shared, t.files[r], 0);
          break;
        case FileOpKind::kMunmap:
          co_await kernel::sys_munmap(self, mm, t.addr[r], size_[r]);
          break;
        case FileOpKind::kTouch: {
          const std::uint64_t off = o.offset ? values_(*o.offset) : 0;
          const std::uint64_t len = o.length ? values_(*o.length) : size_[r] - off;
          for (std::uint64_t a = off; a < off + len; a += values_(o.stride)) {
            co_await kernel::user_access(self, mm, t.addr[r] + a, o.write);
          }
          break;
        }
        case FileOpKind::kMadvise: {
          const std::uint64_t off = o.offset ? values_(*o.offset) : 0;
          const std::uint64_t len = o.length ? values_(*o.length) : size_[r] - off;
          co_await kernel::sys_madvise_dontneed(self, mm, t.addr[r] + off, len);
          break;
        }
        case FileOpKind::kForEachPage:
          for (std::uint64_t pg = 0; pg < size_[r]; pg += kernel::kPageSize) {
            const std::uint64_t addr = t.addr[r] + pg;
            for (const FileOp& b : o.body) {
              if (b.kind == FileOpKind::kTouch) {
                co_await kernel::user_access(self, mm, addr, b.write);
              } else if (b.kind == FileOpKind::kMadvise) {
                co_await kernel::sys_madvise_dontneed(self, mm, addr, kernel::kPageSize);
              } else if (count(self, from, end, n, stop)) {
                co_return;
              }
            }
          }
          break;
        case FileOpKind::kCount:
          if (count(self, from, end, n, stop)) co_return;
          break;
      }
    }
  }

  static bool count(kernel::PerCpu& self, sim::SimTime from, sim::SimTime end, std::uint64_t& n, bool& stop) {
    if (self.cpu.now() >= from) ++n;
    stop = self.cpu.now() >= end;
    return stop;
  }

  std::shared_ptr<const WorkloadFile> f_;
  ResolvedValues values_;
  std::vector<std::uint64_t> size_;
  std::vector<kernel::File*> workload_files_;
  std::vector<std::unique_ptr<TaskRegions>> tasks_;
  std::unique_ptr<kernel::Sched> sched_;  // last: its tasks refer to the members above
};

}  // namespace

std::unique_ptr<Workload> make_file_workload(std::shared_ptr<const WorkloadFile> f) {
  return std::make_unique<FileWorkload>(std::move(f));
}

}  // namespace tlbsim::workloads
