// A small machine running the modeled kernel, for scenario tests that script CPUs step by step.
#pragma once

#include <memory>
#include <utility>

#include "check/oracle.h"
#include "hw/machine.h"
#include "hw/system.h"
#include "kernel/kernel.h"
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

}  // namespace tlbsim::testing
