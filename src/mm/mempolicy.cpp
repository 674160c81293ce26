// Models change_prot_numa and mpol_misplaced (mm/mempolicy.c) with should_numa_migrate_memory
// (kernel/sched/fair.c); docs/model.md ("NUMA hinting") names the trees read.
#include "mm/mempolicy.h"

#include "kernel/options.h"
#include "mm/mmu_gather.h"
#include "mm/mprotect.h"

namespace tlbsim::kernel {

bool numa_balancing(KernelVersion version) { return version >= KernelVersion{3, 8}; }

sim::Task<std::uint64_t> change_prot_numa(PerCpu& self, MmStruct& mm, std::uint64_t start, std::uint64_t end) {
  const ChangeProt cp{.prot_numa = true};
  if (!mprotect_era(self.k.config().version, self.k.arch().arch()).mmu_gather) {
    co_return co_await change_protection(self, mm, start, end, cp, nullptr);
  }
  // v5.19+: tlb_gather_mmu (inc_tlb_flush_pending), change_protection(&tlb, ...), tlb_finish_mmu. The planted
  // numa_flush_pending_late raises the count only after the walk.
  const bool late = planted(self.k.config(), Mutation::numa_flush_pending_late);
  MmuGather tlb(mm);
  if (late) {
    tlb.reset_range();
  } else {
    co_await tlb_gather_mmu(self, tlb);
  }
  const std::uint64_t pages = co_await change_protection(self, mm, start, end, cp, &tlb);
  if (late) co_await self.k.mem().rmw(self.cpu, mm.tlb_flush_pending, [](int c) { return c + 1; });
  co_await tlb_finish_mmu(self, tlb);
  co_return pages;
}

std::optional<std::uint16_t> mpol_misplaced(PerCpu& self, Pfn page) {
  FrameAllocator& frames = self.k.frames();
  const std::uint16_t curnid = frames.nid(page);
  const std::uint16_t thisnid = self.k.cpu_to_node(self.id);
  // should_numa_migrate_memory: the two-stage filter. The fault's node replaces the last one recorded in the page;
  // a page whose last hinting fault came from another node does not move yet (a first fault, last_cpupid unset,
  // may). The model records nodes, not tasks (docs/model.md).
  const std::int32_t last = frames.xchg_last_nid(page, thisnid);
  if (last != FrameAllocator::kNoLastNid && last != thisnid) return std::nullopt;
  if (curnid == thisnid) return std::nullopt;
  return thisnid;
}

}  // namespace tlbsim::kernel
