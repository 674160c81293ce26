// will-it-scale tests/tlb_flush2.c, threads mode ("TLB flush of anonymous memory private mapping"): each thread
// maps 1 MiB of anonymous memory MAP_PRIVATE and, page by page, writes 1, madvise(MADV_DONTNEED)s the page, and
// reads it back (asserting 0), counting one iteration per page; then munmaps and maps again. Threads share one mm and
// are pinned one per core, as will-it-scale pins thread i to core i % cores; in tlb_flush2_processes each task is a
// process with its own mm.
#include "kernel/sched/sched.h"
#include "mm/memory.h"
#include "util/registry.h"
#include "workloads/tlb_flush.h"
#include "workloads/workload.h"

namespace tlbsim::workloads {

namespace {

constexpr std::uint64_t kTlbFlush2Size = 1024 * 1024;

sim::Task<void> tlb_flush2_thread(kernel::PerCpu& self, kernel::MmStruct& mm, sim::SimTime measure_from,
                                  sim::SimTime end, std::uint64_t& iterations) {
  co_await tlb_flush_loop(self, mm, kTlbFlush2Size, nullptr, measure_from, end, iterations);
}

using ThreadBody = sim::Task<void> (*)(kernel::PerCpu&, kernel::MmStruct&, sim::SimTime, sim::SimTime, std::uint64_t&);

template <ThreadBody kBody, WisMode kMode = WisMode::kThreads>
class PinnedThreads final : public Workload {
 public:
  std::string metric_name() const override { return "ops_per_sec"; }
  std::string unit() const override { return "ops/s"; }
  void start(kernel::Kernel& k, const WorkloadParams& p, std::vector<std::uint64_t>& ops) override {
    sched_ = start_pinned_threads(
        k, p, ops, "this workload",
        [](kernel::PerCpu& pc, kernel::MmStruct& mm, std::uint32_t, sim::SimTime from, sim::SimTime end,
           std::uint64_t& n) { return kBody(pc, mm, from, end, n); },
        kMode);
  }

 private:
  std::unique_ptr<kernel::Sched> sched_;
};

TLBSIM_REGISTER(Workload, PinnedThreads<tlb_flush2_thread>, "tlb_flush2",
                "will-it-scale tlb_flush2, threads mode: tlb_flush1's loop on 1 MiB of anonymous memory");
using TlbFlush2Processes = PinnedThreads<tlb_flush2_thread, WisMode::kProcesses>;
TLBSIM_REGISTER(Workload, TlbFlush2Processes, "tlb_flush2_processes",
                "will-it-scale tlb_flush2, processes mode: each process its own mm and CPU");

}  // namespace
}  // namespace tlbsim::workloads
