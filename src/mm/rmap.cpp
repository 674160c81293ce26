// Models the batched-unmap flush of mm/rmap.c (read in Rtoax/linux-5.10.13 @09c16ecb, the same logic as v5.17).
#include "mm/rmap.h"

#include <algorithm>
#include <tuple>

#include "kernel/options.h"

namespace tlbsim::kernel {

sim::Task<bool> should_defer_flush(PerCpu& self, MmStruct& mm, bool ttu_batch_flush) {
  // Without ARCH_WANT_BATCHED_UNMAP_TLB_FLUSH the generic stub never defers.
  if (!ttu_batch_flush || !self.k.arch().batched_unmap(self.k.config())) co_return false;
  // Seed 001 patch 1/2 moves the test (another CPU in mm_cpumask on x86) behind arch_tlbbatch_should_defer.
  co_return co_await self.k.arch().arch_tlbbatch_should_defer(self, mm);
}

sim::Task<void> set_tlb_ubc_flush_pending(PerCpu& self, TlbflushUnmapBatch& ubc, MmStruct& mm, bool writable,
                                          std::uint64_t uaddr) {
  // Mutation tlbbatch_add_mm_skipped: the batch never learns which CPUs may cache the mm's entries.
  if (!planted(self.k.config(), Mutation::tlbbatch_add_mm_skipped))
    co_await self.k.arch().arch_tlbbatch_add_mm(self, ubc.arch, mm, uaddr);
  ubc.flush_required = true;
  // Ensure compiler ordering of the batch flag before the mm's (barrier()), then mark the mm.
  co_await self.k.mem().write(self.cpu, mm.tlb_flush_batched, true);
  if (writable) ubc.writable = true;
}

sim::Task<void> try_to_unmap_flush(PerCpu& self, TlbflushUnmapBatch& ubc) {
  if (!ubc.flush_required) co_return;
  co_await self.k.arch().arch_tlbbatch_flush(self, ubc.arch);
  ubc.flush_required = false;
  ubc.writable = false;
}

sim::Task<void> try_to_unmap_flush_dirty(PerCpu& self, TlbflushUnmapBatch& ubc) {
  if (ubc.writable) co_await try_to_unmap_flush(self, ubc);
}

sim::Task<void> flush_tlb_batched_pending(PerCpu& self, MmStruct& mm) {
  const bool batched = co_await self.k.mem().read(self.cpu, mm.tlb_flush_batched);
  if (!batched) co_return;
  co_await self.k.arch().arch_flush_tlb_batched_pending(self, mm);
  co_await self.k.mem().write(self.cpu, mm.tlb_flush_batched, false);
}

sim::Task<void> try_to_unmap_one(PerCpu& self, TlbflushUnmapBatch& ubc, MmStruct& mm, Vpn v, Pfn page,
                                 bool ttu_batch_flush) {
  Spinlock& ptl = mm.ptl(v);
  co_await ptl.lock(self.k.mem(), self.cpu);
  const auto old = mm.pgd.lookup(v);
  if (old && old->pfn == page) {
    const bool defer = co_await should_defer_flush(self, mm, ttu_batch_flush);
    mm.pgd.clear(v);  // ptep_get_and_clear (deferred) or ptep_clear_flush
    self.k.events().on_pte_removed(mm, v, *old, self.id, self.cpu.now());
    co_await self.cpu.delay(self.k.machine().kernel.pte_update);
    if (defer) {
      // set_tlb_ubc_flush_pending(mm, pte_dirty(pteval)): the model's PTEs carry no dirty bit; a writable one was
      // installed by a write fault, which the kernel maps dirty, and a read fault maps the model's PTE read-only
      // where the kernel maps it writable and clean (docs/model.md, "Swap").
      co_await set_tlb_ubc_flush_pending(self, ubc, mm, old->writable, v.get() << kPageShift);
    } else {
      co_await self.k.arch().flush_tlb_page(self, mm, v.get() << kPageShift);
    }
  }
  co_await ptl.unlock(self.k.mem(), self.cpu);
}

std::vector<Vpn> rmap_walk_anon(PerCpu& self, const AnonRmap& r) {
  struct Hit {
    std::uint64_t pgoff, seq;
    Vpn vpn;
  };
  std::vector<Hit> hits;
  for (const auto& [start, vma] : r.mm->vmas) {
    if (!vma.anon_vma) continue;  // a private file VMA's copied pages are anonymous too
    const std::uint64_t pages = (vma.end - vma.start) / kPageSize;
    if (r.index < vma.pgoff || r.index - vma.pgoff >= pages) continue;
    hits.push_back(Hit{vma.pgoff, vma.anon_vma_seq, Vpn{(vma.start >> kPageShift) + r.index - vma.pgoff}});
  }
  // v3.7+ (the anon_vma interval tree): by vm_pgoff, then link order. Before it, the same_anon_vma list in link
  // order, where mremap's anon_vma_moveto_tail keeps a moved-to VMA after the VMA it moves from.
  const bool interval_tree = self.k.config().version >= KernelVersion{3, 7};
  std::sort(hits.begin(), hits.end(), [interval_tree](const Hit& a, const Hit& b) {
    return interval_tree ? std::tie(a.pgoff, a.seq) < std::tie(b.pgoff, b.seq) : a.seq < b.seq;
  });
  // Mutation rmap_walk_newest_first: the order mremap relies on, reversed.
  if (planted(self.k.config(), Mutation::rmap_walk_newest_first)) std::reverse(hits.begin(), hits.end());
  std::vector<Vpn> out;
  out.reserve(hits.size());
  for (const Hit& h : hits) out.push_back(h.vpn);
  return out;
}

}  // namespace tlbsim::kernel
