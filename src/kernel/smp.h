// Cross-CPU function calls (kernel/smp.c, v5.17): smp_call_function_many_cond and the IPI handler's
// flush_smp_call_function_queue.
#pragma once

#include "kernel/kernel.h"
#include "lib/cpumask.h"

namespace tlbsim::kernel {

inline constexpr unsigned SCF_WAIT = 1u << 0;
inline constexpr unsigned SCF_RUN_LOCAL = 1u << 1;

// smp_call_function_many_cond(mask, func, info, scf_flags, cond_func), run by `self` with preemption disabled
// and interrupts enabled. Queues a csd on each target that passes `cond` (evaluated in the queueing loop), sends
// an IPI to each target whose queue was empty, runs `func` locally if SCF_RUN_LOCAL and self is in the mask, and
// with SCF_WAIT waits for every target's csd to be released.
sim::Task<void> smp_call_function_many_cond(PerCpu& self, const Cpumask& mask, SmpCallFunc func, const void* info,
                                            unsigned scf_flags, SmpCondFunc cond);

// on_each_cpu_cond_mask / on_each_cpu_mask: SCF_RUN_LOCAL, and SCF_WAIT when `wait`.
sim::Task<void> on_each_cpu_cond_mask(PerCpu& self, SmpCondFunc cond, SmpCallFunc func, const void* info, bool wait,
                                      const Cpumask& mask);

// flush_smp_call_function_queue: runs every queued csd on this CPU (interrupts disabled).
sim::Task<void> flush_smp_call_function_queue(PerCpu& self);

}  // namespace tlbsim::kernel
