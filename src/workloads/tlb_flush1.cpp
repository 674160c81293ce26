// will-it-scale tests/tlb_flush1.c, threads mode ("TLB flush of separated file private mapping"): each thread
// maps its own 128 MiB file MAP_PRIVATE and, page by page, writes 1, madvise(MADV_DONTNEED)s the page, and reads
// it back (asserting 0), counting one iteration per page; then munmaps and maps again. Threads share one mm and
// are pinned one per core, as will-it-scale's main.c pins thread i to core i % cores. Processes mode
// (tlb_flush1_processes): the same, each task a process with its own mm.
#include <fmt/format.h>

#include <stdexcept>

#include "kernel/sched/sched.h"
#include "mm/memory.h"
#include "trace/tracer.h"
#include "util/registry.h"
#include "workloads/tlb_flush.h"
#include "workloads/workload.h"

namespace tlbsim::workloads {

namespace {

constexpr std::uint64_t kFileSize = 128ull * 1024 * 1024;

}  // namespace

sim::Task<void> tlb_flush_loop(kernel::PerCpu& self, kernel::MmStruct& mm, std::uint64_t size, kernel::File* file,
                               sim::SimTime measure_from, sim::SimTime end, std::uint64_t& iterations, bool shared) {
  while (self.cpu.now() < end) {
    const std::uint64_t addr = co_await kernel::sys_mmap(self, mm, size, shared, file, 0);
    for (std::uint64_t i = 0; i < size; i += kernel::kPageSize) {
      co_await kernel::user_access(self, mm, addr + i, true);                        // *(addr + i) = 1;
      co_await kernel::sys_madvise_dontneed(self, mm, addr + i, kernel::kPageSize);  // madvise(..., MADV_DONTNEED)
      co_await kernel::user_access(self, mm, addr + i, false);                       // assert(*(addr + i) == 0);
      if (self.cpu.now() >= measure_from) ++iterations;
      if (self.cpu.now() >= end) co_return;
    }
    co_await kernel::sys_munmap(self, mm, addr, size);
  }
}

std::unique_ptr<kernel::Sched> start_pinned_threads(kernel::Kernel& k, const WorkloadParams& p,
                                                    std::vector<std::uint64_t>& ops, std::string_view workload,
                                                    const PinnedThreadBody& body, WisMode mode,
                                                    std::span<const std::uint32_t> cpus) {
  const auto& topo = k.sys().topology();
  const std::uint32_t cores = topo.params().sockets * topo.params().cores_per_socket;
  for (std::uint32_t c : cpus) {
    if (c >= k.ncpus()) {
      throw InputError(fmt::format("{}: cpus lists CPU {}; this machine has CPUs 0..{}", workload, c, k.ncpus() - 1));
    }
  }
  if (!cpus.empty() && (p.threads == 0 || p.threads > 64 * k.ncpus())) {
    throw InputError(fmt::format("--threads: {} is outside 1..{} (64 tasks a CPU)", p.threads, 64 * k.ncpus()));
  }
  if (cpus.empty() && (p.threads == 0 || p.threads > k.ncpus())) {
    throw InputError(
        fmt::format("--threads: {} is outside 1..{}: {} runs up to one task per hardware thread "
                    "(will-it-scale's runtest.py sweeps to the CPU count); this machine has {} CPUs",
                    p.threads, k.ncpus(), workload, k.ncpus()));
  }
  auto sched = std::make_unique<kernel::Sched>(k);
  sched->start();
  kernel::MmStruct* shared = nullptr;
  if (mode == WisMode::kThreads) {
    shared = &k.new_mm();
    shared->map_process_image();
    shared->mm_users.value = p.threads;  // each thread (clone(CLONE_VM)) holds an mm_users reference
  }
  ops.assign(p.threads, 0);
  const sim::SimTime from = sim::kTimeZero + p.warmup, end = from + p.duration;
  for (std::uint32_t i = 0; i < p.threads; ++i) {
    // main.c binds task i to the cpuset of hwloc core i % cores, all its hardware threads. The model pins it to one
    // of them, thread i / cores of the core: where the task runs once every task is busy (each core's threads run its
    // tasks), without the wake-up placement moving a lone task between siblings (docs/model.md, "will-it-scale").
    const std::uint32_t core = i % cores;
    const std::uint32_t socket = core / topo.params().cores_per_socket,
                        in_socket = core % topo.params().cores_per_socket;
    const std::uint32_t tpc = topo.params().threads_per_core;
    const CpuId cpu = !cpus.empty() ? CpuId{cpus[i % cpus.size()]} : topo.cpu_at(socket, in_socket, (i / cores) % tpc);
    kernel::PerCpu& pc = k.percpu(cpu);
    kernel::MmStruct* own = shared != nullptr ? nullptr : &k.new_mm();  // processes mode: fork()ed, its own mm
    if (own != nullptr) own->map_process_image();
    kernel::MmStruct& mm = shared != nullptr ? *shared : *own;
    std::uint64_t& n = ops[i];
    kernel::TaskStruct& t = sched->create_task(
        std::string(workload), &mm, cpu,
        [&pc, &mm, i, from, end, &n, body](kernel::TaskStruct&) { return body(pc, mm, i, from, end, n); });
    t.cpus_allowed = kernel::Cpumask(k.ncpus());
    t.cpus_allowed.set(cpu);
  }
  return sched;
}

namespace {

sim::Task<void> tlb_flush1_thread(kernel::PerCpu& self, kernel::MmStruct& mm, kernel::File& file,
                                  sim::SimTime measure_from, sim::SimTime end, std::uint64_t& iterations) {
  co_await tlb_flush_loop(self, mm, kFileSize, &file, measure_from, end, iterations);
}

template <WisMode kMode>
class TlbFlush1 final : public Workload {
 public:
  std::string metric_name() const override { return "ops_per_sec"; }
  std::string unit() const override { return "ops/s"; }
  void start(kernel::Kernel& k, const WorkloadParams& p, std::vector<std::uint64_t>& ops) override {
    sched_ = start_pinned_threads(
        k, p, ops, kMode == WisMode::kThreads ? "tlb_flush1" : "tlb_flush1_processes",
        [&k](kernel::PerCpu& pc, kernel::MmStruct& mm, std::uint32_t, sim::SimTime from, sim::SimTime end,
             std::uint64_t& n) {
          kernel::File& file = k.new_file(kFileSize);
          // Steady state: after will-it-scale's warm-up the file's pages are in the page cache
          // (read back as zeros).
          for (std::uint64_t pg = 0; pg < kFileSize / kernel::kPageSize; ++pg) {
            file.pages.emplace(pg, k.frames().alloc(kernel::FrameUse::kPageCache));
          }
          return tlb_flush1_thread(pc, mm, file, from, end, n);
        },
        kMode);
  }

 private:
  std::unique_ptr<kernel::Sched> sched_;
};

TLBSIM_REGISTER(Workload, TlbFlush1<WisMode::kThreads>, "tlb_flush1",
                "will-it-scale tlb_flush1, threads mode: write, madvise(MADV_DONTNEED), read, page by page");
TLBSIM_REGISTER(Workload, TlbFlush1<WisMode::kProcesses>, "tlb_flush1_processes",
                "will-it-scale tlb_flush1, processes mode: each process its own mm, file and CPU");

}  // namespace
}  // namespace tlbsim::workloads
