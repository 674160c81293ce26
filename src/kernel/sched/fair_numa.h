// NUMA balancing's scanner (kernel/sched/fair.c, task_numa_work): run as task work on a task's return to user once
// its scan period has passed, it turns the next window of the task's address space into PROT_NONE hinting PTEs
// (change_prot_numa), so that the faults that follow tell which node uses each page.
#pragma once

#include <cstdint>

#include "kernel/kernel.h"

namespace tlbsim::kernel {

// sysctl_numa_balancing_scan_size (MB): the pages one scan may update.
inline constexpr std::uint64_t kNumaBalancingScanSizeMb = 256;

// task_numa_work for the task running on `self` in `mm`: under mmap_lock held for read, change_prot_numa over each
// VMA from mm->numa_scan_offset on, until the window's pages (256 MB) have been updated or 8 times that has been
// scanned; the offset is kept for the next scan, reset at the end of the address space. Skips read-only file
// mappings. Returns the PTEs updated; ends as a return to user (the oracle's completion of its removals).
sim::Task<std::uint64_t> task_numa_work(PerCpu& self, MmStruct& mm);

}  // namespace tlbsim::kernel
