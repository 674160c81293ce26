// Checker scenarios of arm64's ASID allocator (arch/arm64/mm/context.c): rollovers while an mm still runs, the reuse of
// an ASID in the next generation, and the fast path racing a rollover. Each runs on a 2-bit ASID space (ASIDs 1..3 per
// generation), so that four processes make a rollover.
#include <vector>

#include "check/scenario.h"
#include "mm/memory.h"

namespace tlbsim::check {
namespace {

using kernel::MmStruct;
using kernel::PerCpu;

constexpr std::uint64_t kPage = kernel::kPageSize;

class Arm64RolloverScenario : public CheckScenario {
 public:
  std::uint32_t asid_bits() const override { return 2; }
  std::string applies_to(const kernel::KernelConfig& cfg) const override {
    return cfg.arch == kernel::Arch::kArm64 ? "" : "arm64's ASID allocator (generations and rollover)";
  }

 protected:
  // An mm with one page mapped and written (by `cpu`, which then runs it); `addr` gets the page's address.
  MmStruct& process(ScenarioRun& run, std::uint32_t cpu, std::uint64_t& addr) {
    kernel::Kernel& k = run.kernel();
    MmStruct& mm = k.new_mm();
    run.prepare(cpu, switch_to(k.percpu(CpuId{cpu}), mm));
    run.prepare(cpu, map_and_write(k.percpu(CpuId{cpu}), mm, addr));
    return mm;
  }
  static sim::Task<void> map_and_write(PerCpu& self, MmStruct& mm, std::uint64_t& addr) {
    addr = co_await kernel::sys_mmap(self, mm, kPage, false, nullptr, 0);
    co_await user_touch(self, mm, addr, true);
  }
};

// cpu0 runs A, whose page X it caches; cpu1 has used B and C, so the generation's three ASIDs are taken. cpu1 then
// switches to D (a rollover: A's ASID must stay reserved, as cpu0 still runs A), then to A, and madvises X away while
// cpu0 keeps reading it: cpu1's flush must reach cpu0's entries, under the ASID A keeps across the rollover.
class AsidRolloverRunning final : public Arm64RolloverScenario {
 public:
  void start(ScenarioRun& run) override {
    kernel::Kernel& k = run.kernel();
    std::uint64_t unused = 0;
    a_ = &process(run, 0, x_);
    process(run, 1, unused);
    process(run, 1, unused);
    d_ = &k.new_mm();
    run.race(0, touch_n(k.percpu(CpuId{0}), *a_, x_, 3));
    run.race(1, rollover_then_madvise(k.percpu(CpuId{1}), *d_, *a_, x_));
  }

 private:
  static sim::Task<void> rollover_then_madvise(PerCpu& self, MmStruct& d, MmStruct& a, std::uint64_t x) {
    co_await switch_to(self, d);
    co_await switch_to(self, a);
    co_await kernel::sys_madvise_dontneed(self, a, x, kPage);
  }
  MmStruct* a_ = nullptr;
  MmStruct* d_ = nullptr;
  std::uint64_t x_ = 0;
};
TLBSIM_SCENARIO(AsidRolloverRunning, "asid_rollover_running",
                "arm64, 2-bit ASIDs: cpu1's switches roll the generation over while cpu0 runs A; cpu1 then madvises "
                "A's page that cpu0 reads");

// cpu1 ran B and cached B's page Y under ASID 1, then C and D. Its switch to E rolls the generation over and gives E
// ASID 1 again: E, which maps its own page at the same address Y, must not hit B's translation (the rollover's
// tlb_flush_pending makes cpu1 flush its TLB at that switch). cpu0 meanwhile reads a page of its own process.
class AsidRolloverReuse final : public Arm64RolloverScenario {
 public:
  void start(ScenarioRun& run) override {
    kernel::Kernel& k = run.kernel();
    std::uint64_t unused = 0;
    a_ = &process(run, 0, x_);
    process(run, 1, y_);
    process(run, 1, unused);
    e_ = &k.new_mm();
    run.race(0, touch_n(k.percpu(CpuId{0}), *a_, x_, 2));
    run.race(1, switch_and_touch(k.percpu(CpuId{1}), *e_));
  }

 private:
  static sim::Task<void> switch_and_touch(PerCpu& self, MmStruct& e) {
    std::uint64_t y = 0;
    co_await switch_to(self, e);
    co_await map_and_write(self, e, y);
    co_await touch_n(self, e, y, 2);
  }
  MmStruct* a_ = nullptr;
  MmStruct* e_ = nullptr;
  std::uint64_t x_ = 0, y_ = 0;
};
TLBSIM_SCENARIO(AsidRolloverReuse, "asid_rollover_reuse",
                "arm64, 2-bit ASIDs: cpu1's switch to a fourth process rolls over and reuses the ASID of a page it "
                "cached; the new process maps and reads the same address");

// cpu0 ran A (page X cached under ASID 1) and then P; cpu1 runs Q: the generation is full. cpu0 switches back to A on
// the fast path (A's ASID is current) while cpu1's switch to E rolls the generation over; then cpu0 switches to E.
// Whatever the interleaving, cpu0 must never run E with A's entries: the fast path's cmpxchg on active_asids either
// loses to the rollover's xchg (and takes the slow path, which flushes) or is reserved by it.
class AsidRolloverFastpath final : public Arm64RolloverScenario {
 public:
  void start(ScenarioRun& run) override {
    kernel::Kernel& k = run.kernel();
    std::uint64_t unused = 0;
    a_ = &process(run, 0, x_);
    process(run, 0, unused);
    process(run, 1, unused);
    e_ = &k.new_mm();
    run.race(0, back_then_to_e(k.percpu(CpuId{0}), *a_, *e_, x_));
    run.race(1, switch_and_map(k.percpu(CpuId{1}), *e_));
  }

 private:
  static sim::Task<void> back_then_to_e(PerCpu& self, MmStruct& a, MmStruct& e, std::uint64_t x) {
    co_await switch_to(self, a);
    co_await user_touch(self, a, x, false);
    co_await switch_to(self, e);
    co_await touch_n(self, e, x, 2);
  }
  static sim::Task<void> switch_and_map(PerCpu& self, MmStruct& e) {
    std::uint64_t y = 0;
    co_await switch_to(self, e);
    co_await map_and_write(self, e, y);
  }
  MmStruct* a_ = nullptr;
  MmStruct* e_ = nullptr;
  std::uint64_t x_ = 0;
};
TLBSIM_SCENARIO(AsidRolloverFastpath, "asid_rollover_fastpath",
                "arm64, 2-bit ASIDs: cpu0 switches back to A on the fast path, then to E, while cpu1's switch to E "
                "rolls the generation over");

}  // namespace
}  // namespace tlbsim::check
