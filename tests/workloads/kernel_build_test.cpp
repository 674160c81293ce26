// kernel_build: make -jN as process churn, on both sides of seed 004 (patches 1-4, and all five) and seed 001.
#include <gtest/gtest.h>

#include "hw/machine.h"
#include "workloads/run.h"

namespace tlbsim::workloads {
namespace {

RunOutput run(const char* machine, const char* kernel, std::uint32_t jobs, sim::Duration d, std::uint64_t seed) {
  RunSpec spec;
  spec.kernel = kernel;
  spec.workload = "kernel_build";
  spec.threads = jobs;
  spec.duration = d;
  spec.seed = seed;
  return run_workload(hw::load_machine(machine), spec);
}

}  // namespace
}  // namespace tlbsim::workloads
