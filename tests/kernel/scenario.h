// A small machine running the modeled kernel, for scenario tests that script CPUs step by step.
#pragma once

#include <memory>
#include <utility>

#include "check/oracle.h"
#include "hw/machine.h"
#include "hw/system.h"
#include "kernel/kernel.h"
#include "mm/memory.h"
#include "mm/rmap.h"
#include "sim/timed_scheduler.h"

namespace tlbsim::testing {

struct Scenario {
  explicit Scenario(kernel::KernelConfig cfg = {}, const char* machine = "small-2s2c")
      : machine(hw::load_machine(machine)),
        sys(this->machine, [](std::size_t n) { return std::make_unique<sim::TimedScheduler>(n, 1); }),
        k(sys, cfg),
        oracle_(check::Oracle::attach(k)) {}
  // A scenario on a machine built or changed by the test.
  Scenario(hw::Machine m, kernel::KernelConfig cfg)
      : machine(std::move(m)),
        sys(this->machine, [](std::size_t n) { return std::make_unique<sim::TimedScheduler>(n, 1); }),
        k(sys, cfg),
        oracle_(check::Oracle::attach(k)) {}

  // The small built-in machine of the profile's architecture.
  static const char* machine_for(const kernel::KernelConfig& cfg) {
    if (cfg.arch == kernel::Arch::kArm64) return "rpi4-a72-4c";
    return cfg.arch == kernel::Arch::kPowerpc ? "power9-2s16c-smt4" : "small-2s2c";
  }

  kernel::PerCpu& cpu(std::uint32_t i) { return k.percpu(CpuId{i}); }
  // Starts `task` on cpu i and runs until every started task has finished (or time runs out).
  void run_on(std::uint32_t i, sim::Task<void> task) {
    cpu(i).cpu.start(std::move(task));
    sys.scheduler().run(sys.scheduler().now() + sim::milliseconds(50));
  }
  hw::Machine machine;
  hw::System sys;
  kernel::Kernel k;
  // The oracle, subscribed to the kernel's events as every run's is.
  check::Oracle& oracle() { return *oracle_; }

 private:
  std::unique_ptr<check::Oracle> oracle_;
};

// Scripted steps for Scenario::run_on: a context switch to `mm` (interrupts off around switch_mm_irqs_off, as the
// scheduler does), an anonymous mmap, a user access, a madvise(DONTNEED), and reclaim's unmap of one page with the
// batched flush and the batch's flush.
inline sim::Task<void> switch_to_mm(kernel::PerCpu& self, kernel::MmStruct& mm) {
  self.cpu.local_irq_disable();
  co_await self.k.arch().switch_mm_irqs_off(self, mm);
  co_await self.cpu.local_irq_enable();
  self.k.events().set_user_context(self.id, mm.id());
}
inline sim::Task<void> mmap_anon(kernel::PerCpu& self, kernel::MmStruct& mm, std::uint64_t len, std::uint64_t& addr) {
  addr = co_await kernel::sys_mmap(self, mm, len, false, nullptr, 0);
}
inline sim::Task<void> access(kernel::PerCpu& self, kernel::MmStruct& mm, std::uint64_t addr, bool write) {
  co_await kernel::user_access(self, mm, addr, write);
}
inline sim::Task<void> madvise(kernel::PerCpu& self, kernel::MmStruct& mm, std::uint64_t addr, std::uint64_t len) {
  co_await kernel::sys_madvise_dontneed(self, mm, addr, len);
}
inline sim::Task<void> unmap_batched(kernel::PerCpu& self, kernel::TlbflushUnmapBatch& ubc, kernel::MmStruct& mm,
                                     std::uint64_t addr) {
  const auto pte = mm.pgd.lookup(kernel::vpn_of(addr));
  co_await kernel::try_to_unmap_one(self, ubc, mm, kernel::vpn_of(addr), pte ? pte->pfn : Pfn{0}, true);
}
inline sim::Task<void> flush_batch(kernel::PerCpu& self, kernel::TlbflushUnmapBatch& ubc) {
  co_await kernel::try_to_unmap_flush(self, ubc);
}

}  // namespace tlbsim::testing
