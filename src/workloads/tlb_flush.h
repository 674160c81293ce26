// The loop will-it-scale's tlb_flush1 and tlb_flush2 share (tests/tlb_flush1.c, tests/tlb_flush2.c), and the
// start of a user thread of a shared mm on its CPU.
#pragma once

#include <cstdint>

#include "kernel/kernel.h"
#include "sim/task.h"
#include "sim/time.h"

namespace tlbsim::workloads {

// The thread starts running on its CPU: switch_mm (switch_mm_irqs_off with interrupts off), then user mode.
sim::Task<void> enter_user_thread(kernel::PerCpu& self, kernel::MmStruct& mm);

// Maps `size` bytes MAP_PRIVATE (of `file`, or anonymous when null) and, page by page, writes 1,
// madvise(MADV_DONTNEED)s the page and reads it back, one iteration per page counted from `measure_from`; then
// munmaps and maps again, until `end`.
sim::Task<void> tlb_flush_loop(kernel::PerCpu& self, kernel::MmStruct& mm, std::uint64_t size, kernel::File* file,
                               sim::SimTime measure_from, sim::SimTime end, std::uint64_t& iterations);

}  // namespace tlbsim::workloads
