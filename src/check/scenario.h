// Checker scenarios: small concrete situations at the protocol's risky boundaries (munmap racing accesses, a
// context switch racing a flush, exit racing lazy users, batched reclaim, ASID reuse), each registered under a
// name and run against any kernel profile through the exploring scheduler.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "kernel/kernel.h"
#include "sim/task.h"
#include "util/registry.h"

namespace tlbsim::check {

// What a scenario does with the kernel of one explored run.
class ScenarioRun {
 public:
  virtual ~ScenarioRun() = default;
  virtual kernel::Kernel& kernel() = 0;
  // Runs `task` on `cpu` to completion at once, in a fixed order: the initial state, not explored.
  virtual void prepare(std::uint32_t cpu, sim::Task<void> task) = 0;
  // Starts `task` on `cpu`; it runs when exploration starts, interleaved as the strategy chooses.
  virtual void race(std::uint32_t cpu, sim::Task<void> task) = 0;
};

// Contract: start() builds the initial state with prepare() and starts the racing code with race(); the instance
// lives as long as the run and owns whatever the scenario's tasks reference. The same instance is never run twice.
class CheckScenario {
 public:
  virtual ~CheckScenario() = default;
  // The CPUs the scenario needs (the checker's machine has exactly these).
  virtual std::uint32_t cpus() const { return 2; }
  // The NUMA nodes (sockets) the CPUs are spread over, in equal blocks (a multiple of cpus()).
  virtual std::uint32_t nodes() const { return 1; }
  // The machine the checker builds the scenario's CPUs from when none is named: "" for the architecture's default, or
  // one with hardware the scenario exercises that the default lacks (INVLPGB: "milan-36c").
  virtual std::string machine() const { return ""; }
  // The ASID width the checker's machine gets, or 0 for the machine's own: a scenario about ASID rollover narrows it
  // so that a few processes exhaust a generation (arm64's allocator is the same for any width; docs/model.md).
  virtual std::uint32_t asid_bits() const { return 0; }
  // Whether the scenario can run on this kernel (e.g. reclaim batching needs the option on); "" if yes, else why not.
  virtual std::string applies_to(const kernel::KernelConfig&) const { return ""; }
  virtual void start(ScenarioRun& run) = 0;
};

// Touches `addr` from user mode; a SIGSEGV (the range was unmapped under us) ends the access quietly, as the
// signal would end the task, and returns false.
sim::Task<bool> user_touch(kernel::PerCpu& self, kernel::MmStruct& mm, std::uint64_t addr, bool write);
// `n` such touches of `addr` (loads, or stores with `write`), ending at the first SIGSEGV.
sim::Task<void> touch_n(kernel::PerCpu& self, kernel::MmStruct& mm, std::uint64_t addr, int n, bool write = false);

// The scheduler's switch to a user task of `mm` (context_switch -> switch_mm_irqs_off with interrupts off); the
// oracle sees the CPU in the kernel until the switch is done.
sim::Task<void> switch_to(kernel::PerCpu& self, kernel::MmStruct& mm);
// The scheduler's switch to a kernel thread: enter_lazy_tlb keeps `mm` loaded.
sim::Task<void> switch_to_kthread(kernel::PerCpu& self, kernel::MmStruct& mm);

}  // namespace tlbsim::check

#define TLBSIM_SCENARIO(Impl, NAME, DESC) TLBSIM_REGISTER(::tlbsim::check::CheckScenario, Impl, NAME, DESC)
