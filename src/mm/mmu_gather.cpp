// Models mm/mmu_gather.c (v5.15); the flush itself is the architecture's tlb_flush() (ArchMmu).
#include "mm/mmu_gather.h"

#include <algorithm>

namespace tlbsim::kernel {

void MmuGather::reset_range() {
  if (fullmm) {
    start = end = ~std::uint64_t{0};
  } else {
    start = ~std::uint64_t{0};
    end = 0;
  }
  freed_tables = false;
  cleared_ptes = false;
  cleared_pmds = false;
}

void MmuGather::adjust_pmd_range(std::uint64_t haddr) {
  start = std::min(start, haddr);
  end = std::max(end, haddr + kHpagePmdSize);
  cleared_pmds = true;
}

std::uint8_t MmuGather::unmap_shift() const {
  return static_cast<std::uint8_t>(cleared_pmds && !cleared_ptes ? kPmdShift : kPageShift);
}

void MmuGather::adjust_range(std::uint64_t addr) {
  start = std::min(start, addr);
  end = std::max(end, addr + kPageSize);
  cleared_ptes = true;
}

sim::Task<void> tlb_gather_mmu(PerCpu& self, MmuGather& tlb) {
  tlb.reset_range();
  co_await self.k.mem().rmw(self.cpu, tlb.mm.tlb_flush_pending, [](int v) { return v + 1; });
}

sim::Task<void> tlb_flush_mmu_tlbonly(PerCpu& self, MmuGather& tlb) {
  if (!tlb.freed_tables && !tlb.cleared_ptes && !tlb.cleared_pmds) co_return;
  co_await self.k.arch().tlb_flush(self, tlb);
  tlb.reset_range();
}

sim::Task<void> tlb_end_vma(PerCpu& self, MmuGather& tlb) {
  if (tlb.fullmm || self.k.arch().mmu_gather_merge_vmas()) co_return;
  co_await tlb_flush_mmu_tlbonly(self, tlb);
}

sim::Task<void> tlb_flush_mmu(PerCpu& self, MmuGather& tlb) {
  co_await tlb_flush_mmu_tlbonly(self, tlb);
  // tlb_batch_pages_flush: the pages are freed only now that no TLB can still map them.
  for (Pfn p : tlb.pages) {
    self.k.frames().free(p);
  }
  tlb.pages.clear();
}

sim::Task<void> tlb_finish_mmu(PerCpu& self, MmuGather& tlb) {
  hw::Memory& m = self.k.mem();
  const int pending = co_await m.read(self.cpu, tlb.mm.tlb_flush_pending);
  if (pending > 1) {
    // mm_tlb_flush_nested: parallel gathers may have left stale entries; flush everything, lazy CPUs included.
    tlb.fullmm = true;
    tlb.reset_range();
    tlb.freed_tables = true;
  }
  co_await tlb_flush_mmu(self, tlb);
  co_await m.rmw(self.cpu, tlb.mm.tlb_flush_pending, [](int v) { return v - 1; });
}

}  // namespace tlbsim::kernel
