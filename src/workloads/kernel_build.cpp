// `make -jN` of a Linux kernel as process churn (seeds 001 and 004; docs/model.md "kernel_build"). Each of the N job
// slots is a make process that, per object file, spawns the kbuild recipe the way GNU make does (posix_spawn:
// clone(CLONE_VM | CLONE_VFORK), the child borrowing make's mm until it execs):
//   make -> sh -c '<recipe>' -> gcc -pipe (driver) -> cc1 | as   (cc1 writes assembly into a pipe that as reads)
//                            -> fixdep                           (after gcc, rewrites the .d file)
// Every process execs into a fresh mm, faults in its footprint, computes, and exits (exit_mm, mmput, exit_mmap with
// the final flush, __mmdrop with cleanup_lazy_tlbs). Waiting parents and `as` blocking on the pipe sleep and are
// woken by select_task_rq's placement, which moves them when their previous CPU is busy: a process that ran on
// more than one CPU leaves stale mm_cpumask bits on powerpc, and those are the lazy-shootdown IPIs of seed 004.
// Reports jobs (object files) completed per second. Durations and sizes are assumptions listed in
// docs/calibration.md ("kernel_build"); none is fitted to a headline.
#include <array>
#include <memory>
#include <vector>

#include "fs/pipe.h"
#include "kernel/fork.h"
#include "kernel/sched/sched.h"
#include "mm/memory.h"
#include "sim/rng.h"
#include "util/registry.h"
#include "workloads/workload.h"

namespace tlbsim::workloads {

namespace {

using sim::microseconds;
using sim::milliseconds;

// ASSUMPTIONS (docs/calibration.md, "kernel_build"): CPU time of each program per object file, and the memory it
// touches. The footprint is faulted at 64 KiB granularity, one model (4 KiB) page per 64 KiB, which is the number
// of faults a ppc64 kernel with 64 KiB base pages takes for it.
struct Program {
  const char* comm;
  sim::Duration startup;          // exec, dynamic linking, option parsing: compute before the main work
  std::uint64_t footprint_bytes;  // anonymous memory touched over the process's life
};
constexpr std::uint64_t kMiB = 1024 * 1024;
constexpr std::uint64_t kFaultStride = 64 * 1024;  // ppc64 base page size
enum Kind : std::uint8_t { kSh, kGcc, kCc1, kAs, kFixdep, kNumKinds };
constexpr std::array<Program, kNumKinds> kPrograms{{
    {"sh", microseconds(1000), 2 * kMiB},
    {"gcc", microseconds(2000), 4 * kMiB},
    {"cc1", microseconds(0), 64 * kMiB},
    {"as", microseconds(1000), 8 * kMiB},
    {"fixdep", microseconds(500), 2 * kMiB},
}};
constexpr sim::Duration kCc1Compute = milliseconds(250);  // cc1 CPU time per object file
constexpr std::uint32_t kAsmWrites = 8;                   // 64 KiB pipe writes of assembly (512 KiB of .s per object)
constexpr sim::Duration kAsPerWrite = microseconds(500);  // as: assembling one 64 KiB chunk
constexpr sim::Duration kAsFinish = microseconds(1000);   // as: relaxation, writing the .o
// The model cannot interrupt a compute delay, so a CPU-bound task takes a pending preemption (need_resched, set by
// a waking sleeper or by the tick once its slice is used up) at kPreemptCheck boundaries.
constexpr sim::Duration kPreemptCheck = microseconds(1000);

// A child's vfork completion and exit, as its parent waits for them (mm_release's complete_vfork_done; wait4).
struct Child {
  bool vfork_done = false;
  bool exited = false;
};

struct Slot {
  Slot(hw::CoherenceModel& m, kernel::SpinlockKind locks)
      : make_wait(m, "signal.wait_chldexit", locks),
        sh_wait(m, "signal.wait_chldexit", locks),
        gcc_wait(m, "signal.wait_chldexit", locks),
        pipe(m, locks) {}
  kernel::WaitQueue make_wait, sh_wait, gcc_wait;  // each parent's wait for its children
  kernel::Pipe pipe;                               // gcc -pipe: cc1's stdout to as's stdin
  std::array<Child, kNumKinds> child{};
  double cc1_fraction = 1.0;  // the first job starts part-way through its cc1 (steady state at t = 0)
};

kernel::WaitQueue& parent_wait(Slot& slot, Kind k) {
  if (k == kSh) return slot.make_wait;
  if (k == kGcc || k == kFixdep) return slot.sh_wait;
  return slot.gcc_wait;
}

// CPU-bound user time on the task's CPU, preempted at kPreemptCheck boundaries.
sim::Task<void> compute(kernel::Sched& s, kernel::TaskStruct& t, sim::Duration d) {
  while (d.count() > 0) {
    const sim::Duration step = std::min(d, kPreemptCheck);
    co_await s.cpu_of(t).cpu.delay(step);
    d -= step;
    if (s.need_resched(t)) co_await s.schedule(t);
  }
}

// Faults in pages [from, to) of a footprint mapped at `base`, one model page per kFaultStride.
sim::Task<void> touch(kernel::Sched& s, kernel::TaskStruct& t, std::uint64_t base, std::uint64_t from,
                      std::uint64_t to) {
  for (std::uint64_t i = from; i < to; ++i) {
    co_await kernel::user_access(s.cpu_of(t), *t.mm, base + i * kFaultStride, true);
  }
}

sim::Task<void> process_main(kernel::Sched& s, kernel::TaskStruct& t, Slot& slot, Kind kind);

// posix_spawn (CLONE_VM | CLONE_VFORK, then exec): returns once the child has exec'd (kernel/fork.c v6.1
// kernel_clone with CLONE_VFORK waits in wait_for_vfork_done). The new task starts on the parent's CPU and
// wake_up_new_task places it (select_task_rq: an idle CPU of the LLC if there is one).
sim::Task<void> spawn(kernel::Sched& s, kernel::TaskStruct& parent, Slot& slot, Kind kind) {
  slot.child[kind] = Child{};
  co_await kernel::mmget(s.cpu_of(parent), *parent.mm);  // CLONE_VM: the child uses our mm until it execs
  kernel::TaskStruct& child = s.create_task(
      kPrograms[kind].comm, parent.mm, parent.cpu,
      [&s, &slot, kind](kernel::TaskStruct& c) { return process_main(s, c, slot, kind); }, false);
  co_await s.wake_up_new_task(parent, child);
  Child& c = slot.child[kind];
  co_await s.wait_event(parent, parent_wait(slot, kind), [&c] { return c.vfork_done; });
}

// wait4(pid): sleeps until the child has exited (exit_notify -> __wake_up_parent).
sim::Task<void> wait_child(kernel::Sched& s, kernel::TaskStruct& parent, Slot& slot, Kind kind) {
  Child& c = slot.child[kind];
  co_await s.wait_event(parent, parent_wait(slot, kind), [&c] { return c.exited; });
}

// cc1: parse, optimize and emit; assembly goes out in kAsmWrites pipe writes over the second half of its run
// (functions are emitted as they are compiled). The footprint grows evenly (the GC heap).
sim::Task<void> run_cc1(kernel::Sched& s, kernel::TaskStruct& t, Slot& slot, std::uint64_t base) {
  const auto total = static_cast<sim::Duration::rep>(static_cast<double>(kCc1Compute.count()) * slot.cc1_fraction);
  slot.cc1_fraction = 1.0;
  constexpr std::uint32_t kSteps = 2 * kAsmWrites;
  const std::uint64_t pages = kPrograms[kCc1].footprint_bytes / kFaultStride;
  for (std::uint32_t i = 0; i < kSteps; ++i) {
    co_await touch(s, t, base, pages * i / kSteps, pages * (i + 1) / kSteps);
    co_await compute(s, t, sim::Duration{total / kSteps});
    if (i >= kSteps - kAsmWrites) co_await kernel::pipe_write(s, t, slot.pipe);
  }
}

// as: reads the assembly until EOF (the write end closed when cc1 exits), assembling each chunk, then writes the .o.
sim::Task<void> run_as(kernel::Sched& s, kernel::TaskStruct& t, Slot& slot, std::uint64_t base) {
  const std::uint64_t pages = kPrograms[kAs].footprint_bytes / kFaultStride;
  for (std::uint32_t i = 0; i < kAsmWrites; ++i) {
    co_await kernel::pipe_read(s, t, slot.pipe);
    co_await touch(s, t, base, pages * i / kAsmWrites, pages * (i + 1) / kAsmWrites);
    co_await compute(s, t, kAsPerWrite);
  }
  co_await kernel::pipe_read(s, t, slot.pipe);  // read() returns 0: EOF
  co_await compute(s, t, kAsFinish);
}

sim::Task<void> process_main(kernel::Sched& s, kernel::TaskStruct& t, Slot& slot, Kind kind) {
  const Program& prog = kPrograms[kind];
  kernel::MmStruct& mm = s.k.new_mm();
  co_await kernel::exec_mmap(s, t, mm);
  Child& me = slot.child[kind];
  me.vfork_done = true;  // mm_release -> complete_vfork_done
  co_await s.wake_up(t, parent_wait(slot, kind));
  const std::uint64_t base = co_await kernel::sys_mmap(s.cpu_of(t), mm, prog.footprint_bytes, false, nullptr, 0);
  const std::uint64_t pages = prog.footprint_bytes / kFaultStride;
  co_await compute(s, t, prog.startup);
  switch (kind) {
    case kSh:
      co_await touch(s, t, base, 0, pages);
      co_await spawn(s, t, slot, kGcc);
      co_await wait_child(s, t, slot, kGcc);
      co_await spawn(s, t, slot, kFixdep);
      co_await wait_child(s, t, slot, kFixdep);
      break;
    case kGcc:
      co_await touch(s, t, base, 0, pages);
      co_await spawn(s, t, slot, kCc1);
      co_await spawn(s, t, slot, kAs);
      co_await wait_child(s, t, slot, kCc1);
      co_await wait_child(s, t, slot, kAs);
      break;
    case kCc1:
      co_await run_cc1(s, t, slot, base);
      break;
    case kAs:
      co_await run_as(s, t, slot, base);
      break;
    case kFixdep:
    case kNumKinds:
      co_await touch(s, t, base, 0, pages);
      break;
  }
  co_await kernel::exit_mm(s, t);                                  // do_exit: exit_mm before exit_files
  if (kind == kCc1) co_await kernel::pipe_write(s, t, slot.pipe);  // exit_files -> pipe_release wakes the reader
  me.exited = true;                                                // exit_notify -> __wake_up_parent
  co_await s.wake_up(t, parent_wait(slot, kind), kernel::WF_SYNC);  // __wake_up_sync_key
}

// make's job slot: one recipe (object file) after another; counts the jobs finished after the warm-up.
sim::Task<void> make_body(kernel::Sched& s, kernel::TaskStruct& t, Slot& slot, sim::SimTime measure_from,
                          sim::SimTime end, std::uint64_t& jobs) {
  while (s.cpu_of(t).cpu.now() < end) {
    co_await spawn(s, t, slot, kSh);
    co_await wait_child(s, t, slot, kSh);
    if (s.cpu_of(t).cpu.now() >= measure_from) ++jobs;
  }
}

class KernelBuild final : public Workload {
 public:
  std::string metric_name() const override { return "jobs_per_sec"; }
  std::string unit() const override { return "jobs/s"; }
  bool draws_from_seed() const override { return true; }
  void start(kernel::Kernel& k, const WorkloadParams& p, std::vector<std::uint64_t>& ops) override {
    const std::uint32_t n = k.ncpus();
    if (p.threads == 0 || p.threads > n) {
      throw InputError("--threads: kernel_build runs make -jN with N at most the CPU count (" + std::to_string(n) +
                       " here)");
    }
    sched_ = std::make_unique<kernel::Sched>(k);
    sched_->start();
    ops.assign(p.threads, 0);
    const sim::SimTime from = sim::kTimeZero + p.warmup, end = from + p.duration;
    sim::Rng rng = sim::Rng(p.seed).split(0x6b62);
    for (std::uint32_t i = 0; i < p.threads; ++i) {
      slots_.push_back(std::make_unique<Slot>(k.sys().coherence(), k.arch().spinlock_kind()));
      Slot& slot = *slots_.back();
      slot.cc1_fraction = 1.0 - rng.uniform();  // (0, 1]
      kernel::MmStruct& mm = k.new_mm();
      kernel::Sched& s = *sched_;
      std::uint64_t& counter = ops[i];
      // Job slots start spread over the CPUs, as make's children would be after the build's first seconds.
      s.create_task("make", &mm, CpuId{i * n / p.threads}, [&s, &slot, from, end, &counter](kernel::TaskStruct& t) {
        return make_body(s, t, slot, from, end, counter);
      });
    }
  }

 private:
  std::unique_ptr<kernel::Sched> sched_;
  std::vector<std::unique_ptr<Slot>> slots_;
};

TLBSIM_REGISTER(Workload, KernelBuild, "kernel_build",
                "make -jN of a kernel: make -> sh -> gcc -pipe -> cc1 | as, fixdep; processes exec, fault, exit");

}  // namespace
}  // namespace tlbsim::workloads
