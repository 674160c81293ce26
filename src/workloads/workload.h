// A benchmark run on the modeled kernel, self-registered by name (`tlbsim list workloads`).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernel/kernel.h"
#include "sim/time.h"
#include "workloads/workload_args.h"

namespace tlbsim::workloads {

// will-it-scale's two modes: tasks are threads of one process (one mm), or processes (an mm each).
enum class WisMode { kThreads, kProcesses };

struct WorkloadParams {
  std::uint32_t threads = 1;
  sim::Duration warmup{0};    // run but not counted, as will-it-scale discards its first samples
  sim::Duration duration{0};  // counted
  std::uint64_t seed = 0;     // the run's --seed, for workloads that draw random choices
  WorkloadArgs* args = nullptr;  // the run's --param NAME=VALUE (none when null)

  // The workload's integer parameter `name` (min..max), or `fallback` when it was not given.
  std::uint64_t param(const std::string& name, std::uint64_t fallback, std::uint64_t min, std::uint64_t max,
                      const std::string& doc) const {
    return args != nullptr ? args->integer(name, fallback, min, max, doc) : fallback;
  }
};

// Contract: start() creates the workload's address spaces and starts one task per thread on its CPU; each task
// adds to ops[thread] once per iteration completed after the warm-up, and stops at warmup + duration.
class Workload {
 public:
  virtual ~Workload() = default;
  // The benchmark's own unit for its figure, e.g. "ops/s".
  virtual std::string metric_name() const = 0;
  virtual std::string unit() const = 0;
  virtual void start(kernel::Kernel& k, const WorkloadParams& p, std::vector<std::uint64_t>& ops) = 0;
  // The benchmark's own report as its program prints it, from the run's figure (e.g. hackbench's "Time:" for its
  // --loops); null when the figure is all it reports.
  virtual nlohmann::json benchmark_report(double metric) const {
    (void)metric;
    return nullptr;
  }
  // The fewest --threads the workload runs with (idle: 0, a machine on which no user process ever ran).
  virtual std::uint32_t min_threads() const { return 1; }
  // Whether the workload draws from --seed itself (job sizes, think times), beyond the order of simultaneous
  // events that the seed decides in every run.
  virtual bool draws_from_seed() const { return false; }
  // The run stopped at `end` (tasks may be mid-step): account what is still open, e.g. CPU time.
  virtual void finish(kernel::Kernel& k, sim::SimTime end) {
    (void)k;
    (void)end;
  }
};

}  // namespace tlbsim::workloads
