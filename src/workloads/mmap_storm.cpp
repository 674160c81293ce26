// The mmap/touch/munmap storm `tlbsim validate` runs natively (src/native/workloads.cpp): each thread maps 16
// anonymous pages, writes each and unmaps them, one iteration per cycle. Threads share one mm and are pinned one per
// core.
//
// Where the threads' mappings land decides how the real kernel runs it (docs/fidelity-notes.md, "Validation", issue
// 31 parts 5 and 7): when they are adjacent, get_unmapped_area's top-down search puts them side by side and
// vma_merge makes one VMA of them (mode A), so each munmap's __split_vma write-locks the VMA the other thread faults
// in; when a thread's stack lies between them (mode B), each thread has its own VMA. Which one a real run gets is a
// race at its start: thread 0 is already mapping and unmapping when the main thread maps thread 1's stack
// (glibc's allocate_stack: the stack and its guard page, by mmap), and the search puts that stack either where
// thread 0's mapping is not at that moment or below it. The model does not race for it: parameter `apart` chooses.
#include <memory>
#include <vector>

#include "kernel/sched/sched.h"
#include "mm/memory.h"
#include "mm/mprotect.h"
#include "util/registry.h"
#include "workloads/tlb_flush.h"
#include "workloads/workload.h"

namespace tlbsim::workloads {

namespace {

constexpr std::uint64_t kStormPages = 16;
// glibc's default thread stack: RLIMIT_STACK's usual 8 MiB, and one guard page below it (allocate_stack).
constexpr std::uint64_t kThreadStack = 8u << 20;

// Thread `index`'s loop. With `first_mapped` (apart), a thread after the first waits until the thread before it has
// its first mapping in place, then maps its own stack, which the top-down search puts below that mapping, so that
// its own mappings land below the stack. The stack is mapped writable and its lowest page made read-only (the
// guard: glibc maps it PROT_NONE, which the model's mprotect does not have; the guard is never touched, so its
// only effect, that no neighbour merges with it, is the same).
sim::Task<void> mmap_storm_thread(kernel::PerCpu& self, kernel::MmStruct& mm, std::uint32_t index,
                                  std::vector<char>* first_mapped, sim::SimTime measure_from, sim::SimTime end,
                                  std::uint64_t& iterations) {
  if (first_mapped != nullptr && index > 0) {
    // The main thread creating the threads one after another, reduced to a wait (docs/model.md, "mmap_storm").
    while (!(*first_mapped)[index - 1]) co_await self.cpu.delay(sim::microseconds(1));
    const std::uint64_t stack =
        co_await kernel::sys_mmap(self, mm, kThreadStack + kernel::kPageSize, false, nullptr, 0);
    co_await kernel::sys_mprotect(self, mm, stack, kernel::kPageSize, false);
  }
  while (self.cpu.now() < end) {
    const std::uint64_t len = kStormPages * kernel::kPageSize;
    const std::uint64_t addr = co_await kernel::sys_mmap(self, mm, len, false, nullptr, 0);
    if (first_mapped != nullptr) (*first_mapped)[index] = 1;
    for (std::uint64_t i = 0; i < len; i += kernel::kPageSize) co_await kernel::user_access(self, mm, addr + i, true);
    co_await kernel::sys_munmap(self, mm, addr, len);
    if (self.cpu.now() >= measure_from) ++iterations;
  }
}

class MmapStorm final : public Workload {
 public:
  std::string metric_name() const override { return "ops_per_sec"; }
  std::string unit() const override { return "ops/s"; }
  void start(kernel::Kernel& k, const WorkloadParams& p, std::vector<std::uint64_t>& ops) override {
    const bool apart = p.param("apart", 0, 0, 1,
                               "1: a thread stack (8 MiB and a guard page) lies between each thread's mappings and "
                               "the next thread's (the real kernel's mode B); 0: the mappings are adjacent, one "
                               "merged VMA (mode A)") == 1;
    first_mapped_.assign(p.threads, 0);
    std::vector<char>* mapped = apart ? &first_mapped_ : nullptr;
    sched_ = start_pinned_threads(
        k, p, ops, "this workload",
        [mapped](kernel::PerCpu& pc, kernel::MmStruct& mm, std::uint32_t index, sim::SimTime from, sim::SimTime end,
                 std::uint64_t& n) { return mmap_storm_thread(pc, mm, index, mapped, from, end, n); });
  }

 private:
  std::vector<char> first_mapped_;  // per thread: its first mapping is in place (apart only)
  std::unique_ptr<kernel::Sched> sched_;
};

TLBSIM_REGISTER(Workload, MmapStorm, "mmap_storm",
                "threads mmap 16 anonymous pages, write each, munmap, in a loop (shared mm); --param apart=1: a "
                "thread stack between the threads' mappings");

}  // namespace
}  // namespace tlbsim::workloads
