// Models the lockless GUP walk of one base page: arch/x86/mm/gup.c of v3.3 (gup_pte_range with get_page and no
// recheck) and mm/gup.c's generic one (lockless_pages_from_mm / internal_get_user_pages_fast, gup_pte_range with
// try_grab_folio and its rechecks) of v4.14, v5.17, v6.2 and v6.13.
#include "mm/gup.h"

#include "kernel/options.h"
#include "mm/pgtable.h"

namespace tlbsim::kernel {

GupFastEra gup_fast_era(const KernelConfig& config) {
  GupFastEra e;
  e.pte_recheck = config.version >= KernelVersion{4, 13} || config.arch != Arch::kX86;
  e.pmd_recheck = config.version >= KernelVersion{6, 1} && !planted(config, Mutation::collapse_skips_gup_fast_sync);
  return e;
}

sim::Task<std::optional<Pfn>> pin_user_pages_fast(PerCpu& self, MmStruct& mm, std::uint64_t addr, bool write) {
  const GupFastEra era = gup_fast_era(self.k.config());
  const hw::KernelCosts& costs = self.k.machine().kernel;
  FrameAllocator& frames = self.k.frames();
  const Vpn v = vpn_of(addr);
  std::optional<Pfn> pinned;
  co_await self.cpu.delay(costs.syscall);  // the caller's entry (a system call that pins a user buffer)
  self.cpu.local_irq_disable();            // local_irq_save
  // gup_pmd_range: pmdp_get_lockless, then gup_pte_range's pte_offset_map and ptep_get_lockless. The table the PMD
  // pointed to is read even if khugepaged unlinks it meanwhile: an unlinked table keeps its entries (the collapse
  // copies the pages before it clears them), so the PTE is read with the PMD, in one step.
  const PteTable* table = mm.pgd.table(v);
  const std::optional<Pfn> table_frame = table != nullptr ? std::optional<Pfn>(table->frame) : std::nullopt;
  const std::optional<Pte> pte = table != nullptr ? mm.pgd.lookup(v) : std::nullopt;
  co_await self.cpu.delay(costs.pte_update);
  const bool usable =
      pte && pte->present && !pte->protnone && !pte->huge && pte->pfn.get() != 0 && (!write || pte->writable);
  // try_grab_folio: a page whose last reference is gone (freed) cannot be grabbed.
  if (usable && frames.use(pte->pfn) != FrameUse::kFree) {
    frames.pin(pte->pfn, self.id);
    co_await self.cpu.delay(self.k.machine().coherence.local_rmw);  // the atomic on the page's reference count
    const PteTable* now = mm.pgd.table(v);
    const bool pmd_changed = now == nullptr || now->frame != *table_frame;
    // A table still linked is read again; one khugepaged unlinked still holds what was read.
    const std::optional<Pte> again = pmd_changed ? pte : mm.pgd.lookup(v);
    const bool pte_changed = !again || again->pfn != pte->pfn || again->present != pte->present ||
                             again->writable != pte->writable || again->protnone != pte->protnone;
    if ((era.pmd_recheck && pmd_changed) || (era.pte_recheck && pte_changed)) {
      frames.unpin(pte->pfn);  // gup_put_folio
    } else {
      pinned = pte->pfn;
    }
  }
  co_await self.cpu.local_irq_enable();  // local_irq_restore: a flush or sync IPI that waited is taken now
  co_return pinned;
}

void unpin_user_page(PerCpu& self, Pfn page) { self.k.frames().unpin(page); }

}  // namespace tlbsim::kernel
