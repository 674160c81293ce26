// Checker scenarios for madvise(MADV_PAGEOUT) of shmem (mm/madvise.cpp, mm/shmem.cpp): the swap-out's unmap, with its
// flush at once or batched into one DSB ISH or IPI at the end of shrink_folio_list, racing another CPU's accesses and
// mprotect. They run on every profile: the checker's machine gets swap costs of zero (only the order of steps matters).
#include "check/scenario.h"
#include "mm/madvise.h"
#include "mm/memory.h"
#include "mm/mprotect.h"

namespace tlbsim::check {

namespace {

using kernel::kPageSize;
using kernel::MmStruct;
using kernel::PerCpu;

// Both CPUs run one mm with a two-page shmem mapping (MAP_SHARED | MAP_ANONYMOUS) at X: cpu0 wrote both pages,
// cpu1 read them (its TLB holds both).
class ShmemPair : public CheckScenario {
 protected:
  void prepare(ScenarioRun& run) {
    kernel::Kernel& k = run.kernel();
    mm_ = &k.new_mm();
    file_ = &k.new_file(2 * kPageSize);
    file_->shmem = true;
    run.prepare(0, switch_to(k.percpu(CpuId{0}), *mm_));
    run.prepare(1, switch_to(k.percpu(CpuId{1}), *mm_));
    run.prepare(0, map(k.percpu(CpuId{0}), *mm_, *file_, x_));
    for (std::uint64_t a : {x_, x_ + kPageSize}) {
      run.prepare(0, touch(k.percpu(CpuId{0}), *mm_, a, true));
      run.prepare(1, touch(k.percpu(CpuId{1}), *mm_, a, false));
    }
  }
  static sim::Task<void> map(PerCpu& self, MmStruct& mm, kernel::File& file, std::uint64_t& addr) {
    addr = co_await kernel::sys_mmap(self, mm, file.size, true, &file, 0);
  }
  static sim::Task<void> touch(PerCpu& self, MmStruct& mm, std::uint64_t addr, bool write) {
    co_await user_touch(self, mm, addr, write);
  }
  static sim::Task<void> pageout_then_read(PerCpu& self, MmStruct& mm, std::uint64_t x) {
    co_await kernel::sys_madvise_pageout(self, mm, x, 2 * kPageSize);
    co_await user_touch(self, mm, x, false);  // swapped back in
  }
  MmStruct* mm_ = nullptr;
  kernel::File* file_ = nullptr;
  std::uint64_t x_ = 0;
};

// cpu0 pages both pages out and reads X back in while cpu1 keeps reading X and X+1: after the madvise returns, no CPU
// may use a translation to a frame it freed.
class PageoutVsAccess final : public ShmemPair {
 public:
  void start(ScenarioRun& run) override {
    prepare(run);
    kernel::Kernel& k = run.kernel();
    run.race(0, pageout_then_read(k.percpu(CpuId{0}), *mm_, x_));
    run.race(1, reads(k.percpu(CpuId{1}), *mm_, x_));
  }

 private:
  static sim::Task<void> reads(PerCpu& self, MmStruct& mm, std::uint64_t x) {
    for (int i = 0; i < 2; ++i) {
      co_await user_touch(self, mm, x, false);
      co_await user_touch(self, mm, x + kPageSize, false);
    }
  }
};
TLBSIM_SCENARIO(PageoutVsAccess, "pageout_vs_access",
                "cpu0 madvise(PAGEOUT)s two shmem pages (unmap, swap-out, batched flush) that cpu1 keeps reading");

// mprotect_vs_reclaim with the swap-out madvise(PAGEOUT) runs: cpu0 pages X out (its flush batched where the era
// batches), cpu1 write-protects X and writes it. mprotect finds no PTE at X; cpu1 wrote X, so its PTE was dirty and
// shrink_folio_list's try_to_unmap_flush_dirty completes the flush before pageout: F10's window (arm64 v6.6, a
// batched-pending flush that waits only for the caller's own TLBIs) stays shut on this path. A PTE only read is
// clean, and read-only in the model's TLB (on arm64 with hardware dirty bits a clean entry needs a walk to write).
class MprotectVsPageout final : public ShmemPair {
 public:
  void start(ScenarioRun& run) override {
    prepare(run);
    kernel::Kernel& k = run.kernel();
    run.prepare(1, touch(k.percpu(CpuId{1}), *mm_, x_, true));  // cpu1's TLB holds X writable
    run.race(0, pageout(k.percpu(CpuId{0}), *mm_, x_));
    run.race(1, protect_then_write(k.percpu(CpuId{1}), *mm_, x_));
  }

 private:
  static sim::Task<void> pageout(PerCpu& self, MmStruct& mm, std::uint64_t x) {
    co_await kernel::sys_madvise_pageout(self, mm, x, kPageSize);
  }
  static sim::Task<void> protect_then_write(PerCpu& self, MmStruct& mm, std::uint64_t x) {
    co_await kernel::sys_mprotect(self, mm, x, kPageSize, false);
    co_await user_touch(self, mm, x, true);  // must fault (SIGSEGV): X is read-only now
  }
};
TLBSIM_SCENARIO(MprotectVsPageout, "mprotect_vs_pageout",
                "cpu0 madvise(PAGEOUT)s a shmem page that cpu1 wrote, while cpu1 mprotects it read-only and writes it");

}  // namespace

}  // namespace tlbsim::check
