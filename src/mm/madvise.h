// madvise(MADV_PAGEOUT), modeled on Linux v6.5/v6.6 mm/madvise.c (madvise_pageout,
// madvise_cold_or_pageout_pte_range) and the reclaim it calls in mm/vmscan.c (reclaim_pages, reclaim_folio_list,
// shrink_folio_list), for shmem mappings (MAP_SHARED | MAP_ANONYMOUS); the swap-out itself is mm/shmem.cpp's.
#pragma once

#include <cstdint>

#include "kernel/kernel.h"

namespace tlbsim::kernel {

// madvise(addr, len, MADV_PAGEOUT) of one VMA. Contract: [addr, addr + len) lies in one shmem VMA
// (File::shmem); the workload file checks that pageout names a shmem region.
sim::Task<void> sys_madvise_pageout(PerCpu& self, MmStruct& mm, std::uint64_t addr, std::uint64_t len);

}  // namespace tlbsim::kernel
