// Checker scenarios for x86 broadcast invalidation (Linux v6.15, AMD INVLPGB/TLBSYNC): an mm on four CPUs gets a
// global ASID at a flush (consider_global_asid: more than 3 CPUs run it), moves its CPUs onto it (the transition),
// and is then flushed by INVLPGB + TLBSYNC. They run on the AMD Milan model, whose CPUs have INVLPGB; the checker runs
// without tasks, as pid 0, so at jiffies 0 every flush by IPI considers a global ASID (docs/model.md).
#include "check/scenario.h"
#include "mm/memory.h"

namespace tlbsim::check {

namespace {

using kernel::kPageSize;
using kernel::MmStruct;
using kernel::PerCpu;

// Four CPUs run one mm and have touched its pages X, Y and Z.
class GlobalAsidBase : public CheckScenario {
 public:
  std::uint32_t cpus() const override { return 4; }
  std::string machine() const override { return "milan-36c"; }
  std::string applies_to(const kernel::KernelConfig& cfg) const override {
    if (cfg.arch != kernel::Arch::kX86) return "INVLPGB is an x86 (AMD) instruction";
    if (cfg.version < kernel::KernelVersion{6, 15}) return "global ASIDs and broadcast flushes came with v6.15";
    return "";
  }

 protected:
  void prepare(ScenarioRun& run) {
    kernel::Kernel& k = run.kernel();
    mm_ = &k.new_mm();
    for (std::uint32_t c = 0; c < cpus(); ++c) run.prepare(c, switch_to(k.percpu(CpuId{c}), *mm_));
    run.prepare(0, map(k.percpu(CpuId{0}), *mm_, 3 * kPageSize, x_));
    y_ = x_ + kPageSize;
    z_ = y_ + kPageSize;
    touch_all(run);
  }
  // Three flushes by cpu0 before the race: the first gives the mm its global ASID, the second's
  // finish_asid_transition IPIs the CPUs still on their dynamic ASIDs, the third ends the transition.
  void settle_on_global_asid(ScenarioRun& run) {
    kernel::Kernel& k = run.kernel();
    for (int i = 0; i < 3; ++i) {
      run.prepare(0, touch(k.percpu(CpuId{0}), *mm_, z_));  // a PTE to zap: a madvise of nothing flushes nothing
      run.prepare(0, madvise(k.percpu(CpuId{0}), *mm_, z_));
    }
  }
  void touch_all(ScenarioRun& run) {
    kernel::Kernel& k = run.kernel();
    for (std::uint32_t c = 0; c < cpus(); ++c) {
      for (std::uint64_t a : {x_, y_, z_}) run.prepare(c, touch(k.percpu(CpuId{c}), *mm_, a));
    }
  }
  static sim::Task<void> map(PerCpu& self, MmStruct& mm, std::uint64_t len, std::uint64_t& addr) {
    addr = co_await kernel::sys_mmap(self, mm, len, false, nullptr, 0);
  }
  static sim::Task<void> touch(PerCpu& self, MmStruct& mm, std::uint64_t addr) {
    co_await user_touch(self, mm, addr, true);
  }
  static sim::Task<void> madvise(PerCpu& self, MmStruct& mm, std::uint64_t addr) {
    co_await kernel::sys_madvise_dontneed(self, mm, addr, kPageSize);
  }
  static sim::Task<void> madvise2(PerCpu& self, MmStruct& mm, std::uint64_t a, std::uint64_t b) {
    co_await kernel::sys_madvise_dontneed(self, mm, a, kPageSize);
    co_await kernel::sys_madvise_dontneed(self, mm, b, kPageSize);
  }
  MmStruct* mm_ = nullptr;
  std::uint64_t x_ = 0, y_ = 0, z_ = 0;
};

// The mm already on its global ASID everywhere (three flushes before the race: the first assigns it, the second's
// finish_asid_transition IPIs the CPUs still on their dynamic ASIDs, the third ends the transition; then every CPU
// touches X, Y and Z again under the global PCID). cpu0 madvises X by INVLPGB while cpu1 keeps reading X.
class GlobalAsidMadvise final : public GlobalAsidBase {
 public:
  void start(ScenarioRun& run) override {
    prepare(run);
    kernel::Kernel& k = run.kernel();
    settle_on_global_asid(run);
    touch_all(run);
    run.race(0, madvise(k.percpu(CpuId{0}), *mm_, x_));
    run.race(1, touch_n(k.percpu(CpuId{1}), *mm_, x_, 3));
  }
};
TLBSIM_SCENARIO(GlobalAsidMadvise, "global_asid_madvise",
                "4 CPUs on an mm with a global ASID: cpu0 madvises a page by INVLPGB + TLBSYNC while cpu1 reads it");

// A CPU coming back to an mm on its global ASID: the mm on its global ASID everywhere (as global_asid_madvise), then
// cpu1 switches to another process. In the race cpu1 switches back and reads X while cpu0 madvises X by INVLPGB:
// cpu1 must come back on the global ASID, the one the INVLPGBs reach.
class GlobalAsidSwitchBack final : public GlobalAsidBase {
 public:
  void start(ScenarioRun& run) override {
    prepare(run);
    kernel::Kernel& k = run.kernel();
    settle_on_global_asid(run);
    other_ = &k.new_mm();
    run.prepare(1, switch_to(k.percpu(CpuId{1}), *other_));
    run.race(0, madvise(k.percpu(CpuId{0}), *mm_, x_));
    run.race(1, back_and_read(k.percpu(CpuId{1}), *mm_, x_));
  }

 private:
  static sim::Task<void> back_and_read(PerCpu& self, MmStruct& mm, std::uint64_t x) {
    co_await switch_to(self, mm);
    co_await touch_n(self, mm, x, 3);
  }
  MmStruct* other_ = nullptr;
};
TLBSIM_SCENARIO(GlobalAsidSwitchBack, "global_asid_switch_back",
                "4 CPUs on an mm's global ASID: cpu1 comes back from another process and reads a page cpu0 madvises");

// The transition raced: cpu0's madvise of Y (by IPI, before the race) gave the mm a global ASID while every CPU runs
// it on its dynamic one. cpu0 madvises X, a broadcast flush whose finish_asid_transition must IPI the CPUs still on
// their dynamic ASIDs (the INVLPGB reaches only the global PCID); cpu1 keeps reading X.
class GlobalAsidTransition final : public GlobalAsidBase {
 public:
  void start(ScenarioRun& run) override {
    prepare(run);
    kernel::Kernel& k = run.kernel();
    run.prepare(0, madvise(k.percpu(CpuId{0}), *mm_, y_));
    run.race(0, madvise(k.percpu(CpuId{0}), *mm_, x_));
    run.race(1, touch_n(k.percpu(CpuId{1}), *mm_, x_, 3));
  }
};
TLBSIM_SCENARIO(
    GlobalAsidTransition, "global_asid_transition",
    "4 CPUs on dynamic ASIDs, the mm just given a global one: cpu0 madvises a page by INVLPGB, cpu1 reads it");

// The assignment raced: cpu0's madvise of Y (by IPI) gives the mm a global ASID (mm_assign_global_asid) while cpu2
// madvises Z, a broadcast flush if it already sees the global ASID, and cpu3, on its dynamic ASID, keeps reading Z.
class GlobalAsidAssign final : public GlobalAsidBase {
 public:
  void start(ScenarioRun& run) override {
    prepare(run);
    kernel::Kernel& k = run.kernel();
    run.race(0, madvise(k.percpu(CpuId{0}), *mm_, y_));
    run.race(2, madvise(k.percpu(CpuId{2}), *mm_, z_));
    run.race(3, touch_n(k.percpu(CpuId{3}), *mm_, z_, 3));
  }
};
TLBSIM_SCENARIO(GlobalAsidAssign, "global_asid_assign",
                "4 CPUs: cpu0's flush gives the mm a global ASID while cpu2 madvises a page that cpu3 keeps reading");

}  // namespace

}  // namespace tlbsim::check
