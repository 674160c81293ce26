// The simulated executor of a workload file: will-it-scale's pinned tasks (start_pinned_threads), each running the
// file's set-up once and then its loop until the run ends, every operation the same system call or user access
// the C++ workloads make (mm/memory.h), so a file and its C++ twin give the same run.
#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "fs/pipe.h"
#include "kernel/fork.h"
#include "kernel/sched/fair_numa.h"
#include "kernel/sched/sched.h"
#include "mm/compaction.h"
#include "mm/huge_memory.h"
#include "mm/madvise.h"
#include "mm/memory.h"
#include "mm/migrate.h"
#include "mm/mprotect.h"
#include "mm/mremap.h"
#include "net/unix/af_unix.h"
#include "util/error.h"
#include "workloads/file/workload_file.h"
#include "workloads/tlb_flush.h"

namespace tlbsim::workloads {

namespace {

static_assert(kFilePageSize == kernel::kPageSize, "the file's pages are the model's pages");

struct SpawnSlot;

// One task's view of the regions (its files, where each region is mapped now), and its pair's pipes.
struct TaskRegions {
  std::vector<kernel::File*> files;
  std::vector<std::uint64_t> addr;
  std::vector<std::unique_ptr<kernel::Pipe>> pipes;            // by channel; null for a socket
  std::vector<std::unique_ptr<kernel::UnixStreamPair>> socks;  // by channel; null for a pipe
  std::unique_ptr<SpawnSlot> spawn;                            // the task's spawned child (spawn), made at its first
};

// Where a task runs: pinned to one CPU, or (with a partner) a scheduler task that may move among its core's
// hardware threads.
struct Runner {
  kernel::MmStruct& mm;
  TaskRegions& t;
  kernel::PerCpu* pinned = nullptr;
  kernel::Sched* s = nullptr;
  kernel::TaskStruct* task = nullptr;
  kernel::PerCpu& self() const { return pinned != nullptr ? *pinned : s->cpu_of(*task); }
  kernel::Sched& sched() const { return s != nullptr ? *s : *pinned->k.sched(); }
  // The task itself: a pinned task is the one running on its CPU.
  kernel::TaskStruct& current() const { return task != nullptr ? *task : sched().current(pinned->id); }
};

// A task's spawned child and its parent's wait (proc_churn's Slot): vfork completion, then the child's exit.
struct SpawnSlot {
  SpawnSlot(hw::CoherenceModel& m, kernel::SpinlockKind locks) : wait(m, "signal.wait_chldexit", locks) {}
  kernel::WaitQueue wait;
  bool vfork_done = false;
  bool child_exited = false;
  TaskRegions regions;  // the child's: the parent's files, its own mappings
};

// pthread_barrier_wait as glibc builds it on a futex: each arrival is one atomic RMW on the barrier's line; the
// last arrival of a round wakes the others (FUTEX_WAKE), which sleep on the futex's wait queue until it does
// (FUTEX_WAIT). The futex system calls' entry and exit are not charged (docs/model.md).
struct Barrier {
  Barrier(kernel::Kernel& k, std::uint32_t parties)
      : parties(parties),
        word{0, k.sys().coherence().add_line("barrier")},
        wq(k.sys().coherence(), "barrier.futex", k.arch().spinlock_kind()) {}
  std::uint32_t parties;
  hw::Shared<std::uint64_t> word;  // arrivals this round (low 32 bits) and the round (high 32 bits)
  kernel::WaitQueue wq;
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
    if (pages_out() && (!k.machine().kernel.swap_out || !k.machine().kernel.swap_in)) {
      throw InputError(fmt::format(
          "workload {} swaps pages out (madvise advice \"pageout\"), and machine {} gives no [kernel] swap_out and "
          "swap_in costs (docs/calibration.md, \"Swap costs\")",
          f_->name, k.machine().name));
    }
    size_.clear();
    for (const FileRegion& g : f_->regions) size_.push_back(values_(g.size));
    align_.clear();
    for (const FileRegion& g : f_->regions) align_.push_back(g.align ? values_(*g.align) : kernel::kPageSize);
    workload_files_.assign(f_->regions.size(), nullptr);
    for (std::size_t r = 0; r < f_->regions.size(); ++r) {
      if (f_->regions[r].file && !f_->regions[r].per_task) workload_files_[r] = &new_file(k, r);
    }
    if (f_->partner) {
      start_pairs(k, p, ops);
      if (uses_barrier()) barrier_ = std::make_unique<Barrier>(k, p.threads);
      return;
    }
    sched_ = start_pinned_threads(
        k, p, ops, f_->name,
        [this, &k](kernel::PerCpu& pc, kernel::MmStruct& mm, std::uint32_t, sim::SimTime from, sim::SimTime end,
                   std::uint64_t& n) {
          // Made when the task is, as a C++ workload makes its task's file (tlb_flush1, tlb_flush3).
          TaskRegions& t = new_task_regions(k);
          return run_task(Runner{mm, t, &pc}, from, end, n);
        },
        f_->mode, f_->cpus);
    if (uses_barrier()) barrier_ = std::make_unique<Barrier>(k, p.threads);  // its lines only where it is used
  }

 private:
  bool pages_out() const {
    const auto has = [](const std::vector<FileOp>& ops) {
      return std::ranges::any_of(
          ops, [](const FileOp& o) { return o.kind == FileOpKind::kMadvise && o.advice == FileAdvice::kPageout; });
    };
    return has(f_->setup) || has(f_->loop);
  }
  bool uses_barrier() const {
    const auto has = [](const std::vector<FileOp>& ops) {
      return std::ranges::any_of(ops, [](const FileOp& o) { return o.kind == FileOpKind::kBarrier; });
    };
    return has(f_->setup) || has(f_->loop);
  }

  TaskRegions& new_task_regions(kernel::Kernel& k) {
    TaskRegions& t = *tasks_.emplace_back(std::make_unique<TaskRegions>());
    t.addr.assign(f_->regions.size(), 0);
    t.files = workload_files_;
    for (std::size_t r = 0; r < f_->regions.size(); ++r) {
      if ((f_->regions[r].file && f_->regions[r].per_task) || f_->regions[r].shmem) t.files[r] = &new_file(k, r);
    }
    return t;
  }

  // will-it-scale's context_switch1 placement: task i bound to core i % cores (all its hardware threads), its
  // partner inheriting the binding; the scheduler's idle-sibling search starts the pair on two hardware threads
  // of that core. Threads mode: one mm for every task and partner; processes mode: an mm each.
  void start_pairs(kernel::Kernel& k, const WorkloadParams& p, std::vector<std::uint64_t>& ops) {
    const auto& topology = k.sys().topology();
    const auto& topo = topology.params();
    const std::uint32_t cores = topo.sockets * topo.cores_per_socket;
    if (p.threads == 0 || p.threads > cores * topo.threads_per_core) {
      throw InputError(fmt::format("--threads: {} runs at most one task per hardware thread ({} here)", f_->name,
                                   cores * topo.threads_per_core));
    }
    sched_ = std::make_unique<kernel::Sched>(k);
    sched_->start();
    ops.assign(p.threads, 0);
    const sim::SimTime from = sim::kTimeZero + p.warmup, end = from + p.duration;
    kernel::MmStruct* shared_mm = f_->mode == WisMode::kThreads ? &k.new_mm() : nullptr;
    kernel::Sched& s = *sched_;
    for (std::uint32_t i = 0; i < p.threads; ++i) {
      TaskRegions& t = new_task_regions(k);
      for (std::size_t q = 0; q < f_->pipes.size(); ++q) {
        const bool socket = f_->socket[q];
        t.pipes.push_back(socket ? nullptr
                                 : std::make_unique<kernel::Pipe>(k.sys().coherence(), k.arch().spinlock_kind()));
        t.socks.push_back(
            socket ? std::make_unique<kernel::UnixStreamPair>(k.sys().coherence(), k.arch().spinlock_kind()) : nullptr);
      }
      const std::uint32_t core = i % cores, slot = i / cores;
      const std::uint32_t socket = core / topo.cores_per_socket, in_socket = core % topo.cores_per_socket;
      const CpuId task_cpu = topology.cpu_at(socket, in_socket, (2 * slot) % topo.threads_per_core);
      const CpuId partner_cpu = topology.cpu_at(socket, in_socket, (2 * slot + 1) % topo.threads_per_core);
      kernel::MmStruct* task_mm = shared_mm != nullptr ? shared_mm : &k.new_mm();
      kernel::MmStruct* partner_mm = shared_mm != nullptr ? shared_mm : &k.new_mm();
      kernel::Cpumask core_mask(k.ncpus());
      for (std::uint32_t th = 0; th < topo.threads_per_core; ++th)
        core_mask.set(topology.cpu_at(socket, in_socket, th));
      std::uint64_t& n = ops[i];
      kernel::TaskStruct& task =
          s.create_task(f_->name, task_mm, task_cpu, [this, &s, &t, task_mm, from, end, &n](kernel::TaskStruct& me) {
            return run_task(Runner{*task_mm, t, nullptr, &s, &me}, from, end, n);
          });
      kernel::TaskStruct& partner =
          s.create_task(f_->name, partner_mm, partner_cpu, [this, &s, &t, partner_mm, end](kernel::TaskStruct& me) {
            return run_partner(Runner{*partner_mm, t, nullptr, &s, &me}, end);
          });
      task.cpus_allowed = core_mask;
      partner.cpus_allowed = core_mask;
    }
  }
  kernel::File& new_file(kernel::Kernel& k, std::size_t r) {
    kernel::File& file = k.new_file(size_[r]);
    file.shmem = f_->regions[r].shmem;  // shmem_zero_setup's file (shmem_kernel_file_setup)
    if (f_->regions[r].populated) {
      for (std::uint64_t pg = 0; pg < size_[r] / kernel::kPageSize; ++pg) {
        file.pages.emplace(pg, k.frames().alloc(kernel::FrameUse::kPageCache));
      }
    }
    return file;
  }

  sim::Task<void> run_task(Runner run, sim::SimTime from, sim::SimTime end, std::uint64_t& n) {
    bool stop = false;
    co_await run_ops(run, f_->setup, from, end, n, stop);
    while (!stop && run.self().cpu.now() < end) co_await run_ops(run, f_->loop, from, end, n, stop);
  }

  sim::Task<void> run_partner(Runner run, sim::SimTime end) {
    std::uint64_t none = 0;
    bool stop = false;
    while (run.self().cpu.now() < end) co_await run_ops(run, f_->partner_loop, end, end, none, stop);
  }

  // The operations of one list in order; a `count` at or after `end` sets `stop` and returns.
  sim::Task<void> run_ops(const Runner& run, const std::vector<FileOp>& ops, sim::SimTime from, sim::SimTime end,
                          std::uint64_t& n, bool& stop) {
    kernel::MmStruct& mm = run.mm;
    TaskRegions& t = run.t;
    for (const FileOp& o : ops) {
      const std::size_t r = o.region;
      switch (o.kind) {
        case FileOpKind::kMmap:
          t.addr[r] =
              co_await kernel::sys_mmap(run.self(), mm, size_[r], f_->regions[r].shared, t.files[r], 0, align_[r]);
          break;
        case FileOpKind::kMunmap:
          co_await kernel::sys_munmap(run.self(), mm, t.addr[r], size_[r]);
          break;
        case FileOpKind::kTouch: {
          const std::uint64_t off = o.offset ? values_(*o.offset) : 0;
          const std::uint64_t len = o.length ? values_(*o.length) : size_[r] - off;
          for (std::uint64_t a = off; a < off + len; a += values_(o.stride)) {
            co_await kernel::user_access(run.self(), mm, t.addr[r] + a, o.write);
          }
          break;
        }
        case FileOpKind::kMadvise: {
          const std::uint64_t off = o.offset ? values_(*o.offset) : 0;
          const std::uint64_t len = o.length ? values_(*o.length) : size_[r] - off;
          if (o.advice == FileAdvice::kHugepage) {
            co_await kernel::sys_madvise_hugepage(run.self(), mm, t.addr[r] + off, len);
          } else if (o.advice == FileAdvice::kPageout) {
            co_await kernel::sys_madvise_pageout(run.self(), mm, t.addr[r] + off, len);
          } else {
            co_await kernel::sys_madvise_dontneed(run.self(), mm, t.addr[r] + off, len);
          }
          break;
        }
        case FileOpKind::kMprotect: {
          const std::uint64_t off = o.offset ? values_(*o.offset) : 0;
          const std::uint64_t len = o.length ? values_(*o.length) : size_[r] - off;
          co_await kernel::sys_mprotect(run.self(), mm, t.addr[r] + off, len, o.write);
          break;
        }
        case FileOpKind::kNumaScan: {
          const std::uint64_t updated = co_await kernel::task_numa_work(run.self(), mm);
          (void)updated;
          break;
        }
        case FileOpKind::kMigratePages: {
          const std::uint64_t migrated = co_await kernel::sys_migrate_pages(run.self(), mm);
          (void)migrated;
          break;
        }
        case FileOpKind::kCompactMemory: {
          const std::uint64_t migrated = co_await kernel::sysctl_compact_memory(run.self());
          (void)migrated;
          break;
        }
        case FileOpKind::kMremap:
          co_await kernel::sys_mremap(run.self(), mm, t.addr[r], size_[r], t.addr[o.to]);
          break;
        case FileOpKind::kForEachPage:
          for (std::uint64_t pg = 0; pg < size_[r]; pg += kernel::kPageSize) {
            const std::uint64_t addr = t.addr[r] + pg;
            for (const FileOp& b : o.body) {
              if (b.kind == FileOpKind::kTouch) {
                co_await kernel::user_access(run.self(), mm, addr, b.write);
              } else if (b.kind == FileOpKind::kMadvise) {
                co_await kernel::sys_madvise_dontneed(run.self(), mm, addr, kernel::kPageSize);
              } else if (count(run.self(), b.n, from, end, n, stop)) {
                co_return;
              }
            }
          }
          break;
        case FileOpKind::kCount:
          if (count(run.self(), o.n, from, end, n, stop)) co_return;
          break;
        case FileOpKind::kPipeWrite:
          if (t.socks[o.pipe] != nullptr) {
            co_await kernel::unix_stream_sendmsg(*run.s, *run.task, *t.socks[o.pipe], kernel::kSkbTruesize100);
          } else {
            co_await kernel::pipe_write(*run.s, *run.task, *t.pipes[o.pipe], static_cast<std::uint32_t>(o.bytes));
          }
          co_await run.s->exit_to_user_mode(*run.task);
          break;
        case FileOpKind::kSleep:
          co_await run.sched().sleep(run.current(), o.duration);
          break;
        case FileOpKind::kSpawn:
          co_await spawn(run, o);
          break;
        case FileOpKind::kBarrier:
          co_await barrier_wait(run);
          break;
        case FileOpKind::kPipeRead:
          if (t.socks[o.pipe] != nullptr) {
            co_await kernel::unix_stream_recvmsg(*run.s, *run.task, *t.socks[o.pipe], kernel::kSkbTruesize100);
            co_await run.s->exit_to_user_mode(*run.task);
            break;
          }
          // read() returns what the pipe holds: repeated, each returning to user mode, until all bytes came.
          for (std::uint64_t done = 0; done < o.bytes;) {
            done += co_await kernel::pipe_read(*run.s, *run.task, *t.pipes[o.pipe],
                                               static_cast<std::uint32_t>(o.bytes - done));
            co_await run.s->exit_to_user_mode(*run.task);
          }
          break;
      }
    }
  }

  // posix_spawn as make runs its jobs (proc_churn): clone(CLONE_VM | CLONE_VFORK) of a child that inherits the
  // task's CPU binding and borrows its mm until it execs into a fresh one; the child runs the body and exits
  // (exit_mm: exit_mmap's flush, the lazy references), and the task waits for it (wait4).
  sim::Task<void> spawn(const Runner& run, const FileOp& o) {
    kernel::Sched& s = run.sched();
    kernel::TaskStruct& parent = run.current();
    kernel::Kernel& k = run.self().k;
    if (run.t.spawn == nullptr)
      run.t.spawn = std::make_unique<SpawnSlot>(k.sys().coherence(), k.arch().spinlock_kind());
    SpawnSlot& slot = *run.t.spawn;
    slot.vfork_done = slot.child_exited = false;
    slot.regions.files = run.t.files;
    slot.regions.addr.assign(f_->regions.size(), 0);
    co_await kernel::mmget(run.self(), *parent.mm);
    kernel::TaskStruct& child = s.create_task(
        f_->name, parent.mm, parent.cpu,
        [this, &s, &slot, &o](kernel::TaskStruct& c) { return run_child(s, c, slot, o); }, false);
    child.cpus_allowed = parent.cpus_allowed;
    co_await s.wake_up_new_task(parent, child);
    co_await s.wait_event(parent, slot.wait, [&slot] { return slot.vfork_done; });
    co_await s.wait_event(parent, slot.wait, [&slot] { return slot.child_exited; });
  }

  sim::Task<void> run_child(kernel::Sched& s, kernel::TaskStruct& c, SpawnSlot& slot, const FileOp& o) {
    kernel::MmStruct& mm = s.k.new_mm();
    co_await kernel::exec_mmap(s, c, mm);
    slot.vfork_done = true;  // mm_release -> complete_vfork_done
    co_await s.wake_up(c, slot.wait);
    std::uint64_t none = 0;
    bool stop = false;
    co_await run_ops(Runner{mm, slot.regions, nullptr, &s, &c}, o.body, sim::kTimeZero, sim::kTimeZero, none, stop);
    co_await kernel::exit_mm(s, c);
    slot.child_exited = true;  // exit_notify -> __wake_up_parent
    co_await s.wake_up(c, slot.wait, kernel::WF_SYNC);
  }

  sim::Task<void> barrier_wait(const Runner& run) {
    Barrier& b = *barrier_;
    const std::uint32_t parties = b.parties;
    const std::uint64_t old = co_await run.self().k.mem().rmw(run.self().cpu, b.word, [parties](std::uint64_t w) {
      const std::uint64_t arrived = (w & 0xffffffffu) + 1;
      return arrived == parties ? ((w >> 32) + 1) << 32 : (w & ~std::uint64_t{0xffffffffu}) | arrived;
    });
    const std::uint64_t round = old >> 32;
    if ((old & 0xffffffffu) + 1 == parties) {
      co_await run.sched().wake_up(run.current(), b.wq);
    } else {
      co_await run.sched().wait_event(run.current(), b.wq, [&b, round] { return (b.word.value >> 32) != round; });
    }
  }

  static bool count(kernel::PerCpu& self, std::uint64_t k, sim::SimTime from, sim::SimTime end, std::uint64_t& n,
                    bool& stop) {
    if (self.cpu.now() >= from) n += k;
    stop = self.cpu.now() >= end;
    return stop;
  }

  std::shared_ptr<const WorkloadFile> f_;
  ResolvedValues values_;
  std::vector<std::uint64_t> size_;
  std::vector<std::uint64_t> align_;  // each region's mmap alignment (a page where it gives none)
  std::vector<kernel::File*> workload_files_;
  std::vector<std::unique_ptr<TaskRegions>> tasks_;
  std::unique_ptr<Barrier> barrier_;
  std::unique_ptr<kernel::Sched> sched_;  // last: its tasks refer to the members above
};

}  // namespace

std::unique_ptr<Workload> make_file_workload(std::shared_ptr<const WorkloadFile> f) {
  return std::make_unique<FileWorkload>(std::move(f));
}

}  // namespace tlbsim::workloads
