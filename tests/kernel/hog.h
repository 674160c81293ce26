// Test tasks shared by the scheduler's scenario tests: a CPU-bound hog that takes pending preemptions, a napper,
// and a one-CPU affinity mask.
#pragma once

#include <cstdint>

#include "kernel/sched/sched.h"

namespace tlbsim::testing {

using kernel::Cpumask;
using kernel::Sched;
using kernel::TaskStruct;
using kernel::WaitQueue;

// What a hog saw: when it was first preempted, and the CPU it last ran on (99: never ran).
struct Hog {
  sim::SimTime first_preempted = sim::SimTime::max();
  std::uint32_t ran_on = 99;
};

// Runs forever in `step`s, taking a pending preemption (need_resched) after each.
inline sim::Task<void> hog_body(Sched& s, TaskStruct& t, Hog& h, sim::Duration step) {
  for (;;) {
    h.ran_on = t.cpu.get();
    co_await s.cpu_of(t).cpu.delay(step);
    if (s.need_resched(t)) {
      if (h.first_preempted == sim::SimTime::max()) h.first_preempted = s.cpu_of(t).cpu.now();
      co_await s.schedule(t);
    }
  }
}

// Sleeps for `nap`, then waits forever on `never`.
inline sim::Task<void> napper(Sched& s, TaskStruct& t, sim::Duration nap, WaitQueue& never) {
  co_await s.sleep(t, nap);
  co_await s.wait_event(t, never, [] { return false; });
}

// The affinity mask of one CPU.
inline Cpumask only(std::uint32_t ncpus, std::uint32_t cpu) {
  Cpumask m(ncpus);
  m.set(CpuId{cpu});
  return m;
}

}  // namespace tlbsim::testing
