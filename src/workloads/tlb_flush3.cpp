// will-it-scale tests/tlb_flush3.c, threads mode ("TLB flush of separated file shared mapping"): each thread
// creates its own 128 MiB file (mkstemp, ftruncate, unlink), maps it MAP_SHARED and, page by page, writes 1,
// madvise(MADV_DONTNEED)s the page and reads it back (the page cache keeps the 1), counting one iteration per
// page; then munmaps and maps again. Threads share one mm and are pinned one per core, as will-it-scale pins
// thread i to core i % cores; in tlb_flush3_processes each task is a process with its own mm.
#include "kernel/sched/sched.h"
#include "mm/memory.h"
#include "util/registry.h"
#include "workloads/tlb_flush.h"
#include "workloads/workload.h"

namespace tlbsim::workloads {

namespace {

constexpr std::uint64_t kFileSize = 128ull * 1024 * 1024;  // FILESIZE

sim::Task<void> tlb_flush3_thread(kernel::PerCpu& self, kernel::MmStruct& mm, kernel::File& file,
                                  sim::SimTime measure_from, sim::SimTime end, std::uint64_t& iterations) {
  co_await tlb_flush_loop(self, mm, kFileSize, &file, measure_from, end, iterations, true);
}

template <WisMode kMode>
class TlbFlush3 final : public Workload {
 public:
  std::string metric_name() const override { return "ops_per_sec"; }
  std::string unit() const override { return "ops/s"; }
  void start(kernel::Kernel& k, const WorkloadParams& p, std::vector<std::uint64_t>& ops) override {
    sched_ = start_pinned_threads(
        k, p, ops, kMode == WisMode::kThreads ? "tlb_flush3" : "tlb_flush3_processes",
        [&k](kernel::PerCpu& pc, kernel::MmStruct& mm, std::uint32_t, sim::SimTime from, sim::SimTime end,
             std::uint64_t& n) {
          return tlb_flush3_thread(pc, mm, k.new_file(kFileSize), from, end, n);  // its own file
        },
        kMode);
  }

 private:
  std::unique_ptr<kernel::Sched> sched_;
};

TLBSIM_REGISTER(Workload, TlbFlush3<WisMode::kProcesses>, "tlb_flush3_processes",
                "will-it-scale tlb_flush3, processes mode: each process its own mm, file and CPU");
TLBSIM_REGISTER(Workload, TlbFlush3<WisMode::kThreads>, "tlb_flush3",
                "will-it-scale tlb_flush3, threads mode: each thread's own 128 MiB file mapped MAP_SHARED; write, "
                "madvise(DONTNEED), read back");

}  // namespace
}  // namespace tlbsim::workloads
