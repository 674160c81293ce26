// run_workload's JSON (src/workloads/run.cpp): the identity of the kernel code that ran.
#include "workloads/run.h"

#include <gtest/gtest.h>

#include "hw/machine.h"

namespace tlbsim::workloads {
namespace {

// The run names the spinlock algorithm of its release: a reader of the figures can tell a queued lock's hand-off
// from a test-and-set herd without opening the source.
TEST(Run, NamesTheSpinlockAlgorithmOfTheKernelRelease) {
  const auto spinlock = [](const char* machine, const char* kernel) {
    RunSpec spec;
    spec.kernel = kernel;
    spec.duration = sim::microseconds(20);
    return run_workload(hw::load_machine(machine), spec).json["kernel_spinlock"].get<std::string>();
  };
  EXPECT_EQ(spinlock("small-2s2c", "linux-3.3"), "ticket");
  EXPECT_EQ(spinlock("small-2s2c", "linux-5.17"), "queued");
  EXPECT_EQ(spinlock("power9-2s16c-smt4", "linux-4.14-ppc"), "test-and-set");
  EXPECT_EQ(spinlock("power9-2s16c-smt4", "linux-6.2-ppc"), "queued");
}

}  // namespace
}  // namespace tlbsim::workloads
