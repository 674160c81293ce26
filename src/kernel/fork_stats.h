// kernel/fork.c's counters (seed 004): cleanup_lazy_tlbs runs, the IPIs it sends (remote CPUs of mm_cpumask), and
// the CPUs it switched off a lazily used mm. One per Kernel; fork.cpp increments and registers them.
#pragma once

#include <cstdint>

#include "model/stats.h"

namespace tlbsim::kernel {

struct ShootLaziesStats {
  std::uint64_t calls = 0, ipis = 0, switched = 0;
  void register_stats(Stats& stats) const;
};

}  // namespace tlbsim::kernel
