// Models mm/mprotect.c: do_mprotect_pkey -> mprotect_fixup -> change_protection -> change_pte_range, per era
// (v3.3, v4.14, v5.17, v6.2 powerpc, v6.13; the era switches are MprotectEra's, each with the change that made it).
// Read: v3.4 (an HTC vendor tree, checked against a v3.0 one), v4.14.79, v5.15, android14-6.1 and a v6.6 tree, and
// torvalds/linux between v6.15-rc1 and v6.16-rc1 (whose flush logic a v6.10 tree shares); docs/model.md names them.
#include "mm/mprotect.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <utility>
#include <vector>

#include "kernel/options.h"
#include "mm/huge_memory.h"
#include "mm/memory.h"
#include "mm/mmu_gather.h"
#include "mm/rmap.h"

namespace tlbsim::kernel {

namespace {

// pte_needs_flush / huge_pmd_needs_flush of a present PTE or PMD whose write permission goes from `was` to `now`.
bool needs_flush_of(const MprotectEra& era, bool was, bool now) {
  if (era.needs_flush == PteNeedsFlush::kX86) return was != now;
  if (era.needs_flush == PteNeedsFlush::kPowerpcRadix) return was && !now;
  return true;
}

// change_huge_pmd (mm/huge_memory.c) of the THP at `haddr`, under the PMD lock. Before v5.19 pmdp_invalidate flushes
// the 2 MiB at once (x86: flush_tlb_range at PAGE_SIZE stride, the whole mm; radix: 2 MiB pages), and the caller's
// flush_tlb_range follows. From v5.19 x86's pmdp_invalidate_ad makes no flush and the gather gets the PMD's range when
// huge_pmd_needs_flush says so; powerpc has no pmdp_invalidate_ad and flushes at once as before. MM_CP_PROT_NUMA
// makes a PROT_NONE hinting PMD (the write bit kept), and skips the huge zero page and a PMD that is already one
// (v4.14 to v6.13 alike: no node check for a PMD; NUMA_BALANCING_NORMAL, the default, skips no top tier from v6.1;
// every modeled arch of v5.14+ has thp_migration_supported). A PMD migration entry is left as it is. Returns
// HPAGE_PMD_NR when it changed the PMD, else 0.
sim::Task<std::uint64_t> change_huge_pmd(PerCpu& self, MmStruct& mm, std::uint64_t haddr, const ChangeProt& cp,
                                         const MprotectEra& era, MmuGather* tlb) {
  const Vpn v = vpn_of(haddr);
  Spinlock& ptl = mm.ptl(v);
  co_await ptl.lock(self.k.mem(), self.cpu);
  const HugePmd* h = mm.pgd.huge_pmd(v);
  if (h == nullptr || h->migration || (cp.prot_numa && (h->zero || h->protnone))) {  // split or zapped meanwhile
    co_await ptl.unlock(self.k.mem(), self.cpu);
    co_return 0;
  }
  const HugePmd was = *h;
  HugePmd next = was;
  bool flush = true;  // huge_pmd_needs_flush: a hinting PMD is a flush in every era (as for a PTE)
  if (cp.prot_numa) {
    next.protnone = true;  // pmd_modify(entry, PAGE_NONE)
  } else {
    next.protnone = false;
    if (!cp.writable) {
      next.writable = false;
    } else if (era.upgrade_exclusive_anon && !was.zero) {
      next.writable = true;  // can_change_pmd_writable: an exclusive anonymous THP (the huge zero page is neither)
    }
    flush = needs_flush_of(era, was.writable, next.writable);
    if (era.needs_flush != PteNeedsFlush::kAlways && was.protnone) flush = false;  // it was not accessible
  }
  co_await self.cpu.delay(self.k.machine().kernel.pte_update);
  if (!was.protnone && ((was.writable && !next.writable) || next.protnone)) {
    for (std::uint64_t i = 0; i < kHpagePmdNr; ++i) {
      const Pte old{Pfn{was.page.get() + i}, true, was.writable, true};
      self.k.events().on_pte_removed(mm, Vpn{v.get() + i}, old, self.id, self.cpu.now());
    }
  }
  // pmdp_invalidate (the PMD made invalid, then flushed) and set_pmd_at: the model stores the new PMD first and
  // flushes after, so that no walk during the flush refills the old permissions.
  mm.pgd.clear_huge_pmd(v);
  mm.pgd.set_huge_pmd(v, next);
  const bool x86_ad = tlb != nullptr && self.k.arch().arch() == Arch::kX86;  // pmdp_invalidate_ad
  if (!x86_ad && !cp.skip_flush) co_await flush_pmd_tlb_range(self, mm, haddr);
  if (tlb != nullptr && flush) tlb->adjust_pmd_range(haddr);  // tlb_flush_pmd_range
  co_await ptl.unlock(self.k.mem(), self.cpu);
  co_return kHpagePmdNr;
}

// change_pte_range over [start, end) of one VMA. mprotect: the new protection is `cp.writable`. MM_CP_PROT_NUMA
// (change_prot_numa): every present PTE of an anonymous page becomes a PROT_NONE hinting PTE, except those the era
// skips. Returns the PTEs rewritten (`pages`). With a gather (v5.19+), each one that pte_needs_flush says needs a
// flush widens its range (tlb_flush_pte_range); before, the caller flushes the VMA's range (when pages > 0, from
// v4.x).
sim::Task<std::uint64_t> change_pte_range(PerCpu& self, MmStruct& mm, std::uint64_t start, std::uint64_t end,
                                          const ChangeProt& cp, const MprotectEra& era, MmuGather* tlb) {
  hw::Memory& m = self.k.mem();
  std::uint64_t pages = 0;
  // prot_numa's target_node: "don't mess with PTEs if page is already on the node a single-threaded process is
  // running on" (mm_users == 1; the model's VMAs it scans are private).
  std::optional<std::uint16_t> target_node;
  if (cp.prot_numa && co_await m.read(self.cpu, mm.mm_users) == 1) target_node = self.k.cpu_to_node(self.id);
  std::uint64_t addr = start;
  while (addr < end) {
    const Vpn first = vpn_of(addr);
    const std::uint64_t table_end = std::min(end, (table_index(first) + 1) * kPtesPerTable * kPageSize);
    if (mm.pgd.huge_pmd(first) != nullptr) {
      // change_pmd_range: a THP the range covers whole is changed by change_huge_pmd (mprotect, or a hinting PMD for
      // NUMA balancing); one it covers partly is split first.
      if (addr % kHpagePmdSize == 0 && table_end - addr == kHpagePmdSize) {
        pages += co_await change_huge_pmd(self, mm, addr, cp, era, tlb);
        addr = table_end;
        continue;
      }
      co_await split_huge_pmd(self, mm, addr);
    }
    if (mm.pgd.table(first) == nullptr) {  // change_pmd_range: pmd_none_or_clear_bad
      addr = table_end;
      continue;
    }
    Spinlock& ptl = mm.ptl(first);
    co_await ptl.lock(m, self.cpu);  // pte_offset_map_lock
    if (era.batched_pending && !cp.skip_batched_pending) co_await flush_tlb_batched_pending(self, mm);
    for (; addr < table_end; addr += kPageSize) {
      const Vpn v = vpn_of(addr);
      const auto old = mm.pgd.lookup(v);
      if (!old) {
        // pte_none; or a migration entry, which a write-protect makes readable (make_readable_migration_entry;
        // make_migration_entry_read before v5.14), so that remove_migration_pte maps the copy read-only. Counted in
        // `pages`; no flush of its own (nothing caches a migration entry). To the oracle the page's write
        // permission is removed by this call.
        const auto entry = mm.pgd.migration_entry(v);
        if (entry && !cp.prot_numa && !cp.writable && entry->writable) {
          co_await self.cpu.delay(self.k.machine().kernel.pte_update);
          Pte readable = *entry;
          readable.writable = false;
          mm.pgd.set(v, readable);
          ++pages;
          self.k.events().on_pte_removed(mm, v, Pte{entry->pfn, true, true, true}, self.id, self.cpu.now());
        }
        continue;
      }
      Pte next = *old;
      bool needs_flush = true;
      if (cp.prot_numa) {
        // Already a hinting PTE; the zero page (vm_normal_page: no page); a page that is not anonymous (the model
        // scans anonymous memory only); a page on the single-threaded process's own node.
        if (old->protnone || old->pfn.get() == 0 || !old->anon) continue;
        if (target_node && self.k.frames().nid(old->pfn) == *target_node) continue;
        next.protnone = true;  // pte_modify(oldpte, PAGE_NONE), the write bit kept (see Pte::protnone)
        // pte_needs_flush: x86 clears _PAGE_PRESENT, powerpc radix clears the RWX bits: a flush in every era.
      } else {
        next.protnone = false;  // pte_modify(oldpte, newprot): a hinting PTE becomes an ordinary one
        if (!cp.writable) {
          next.writable = false;  // pte_modify to PAGE_READONLY
        } else if (era.upgrade_exclusive_anon && old->anon && old->pfn.get() != 0) {
          next.writable = true;  // can_change_pte_writable: an exclusive anonymous page (PageAnonExclusive)
        }
        // tlb_flush_pte_range when pte_needs_flush(oldpte, ptent). The model's present PTEs are all accessed, and
        // only the write permission changes here; a hinting PTE was not accessible (x86: !_PAGE_PRESENT; powerpc:
        // permissions only relaxed).
        needs_flush = needs_flush_of(era, old->writable, next.writable);
        if (era.needs_flush != PteNeedsFlush::kAlways && old->protnone) needs_flush = false;
      }
      // ptep_modify_prot_start / ptep_modify_prot_commit, for every present PTE (counted in `pages` whether it
      // changed or not). A write-protect, or a hinting PTE, is to the oracle the removal of the translation (the
      // writable one, or every one): complete when the system call, or the scan, returns.
      co_await self.cpu.delay(self.k.machine().kernel.pte_update);
      ++pages;
      if (next.writable != old->writable || next.protnone != old->protnone) {
        mm.pgd.set(v, next);
        const bool removed = (old->writable && !next.writable) || next.protnone;
        if (removed && !old->protnone) self.k.events().on_pte_removed(mm, v, *old, self.id, self.cpu.now());
      }
      if (tlb != nullptr && needs_flush) tlb->adjust_range(addr);
    }
    co_await ptl.unlock(m, self.cpu);  // pte_unmap_unlock
  }
  co_return pages;
}

}  // namespace

sim::Task<std::uint64_t> change_protection(PerCpu& self, MmStruct& mm, std::uint64_t start, std::uint64_t end,
                                           ChangeProt cp, MmuGather* tlb) {
  const MprotectEra era = mprotect_era(self.k.config().version, self.k.arch().arch());
  if (tlb != nullptr) co_return co_await change_pte_range(self, mm, start, end, cp, era, tlb);
  hw::Memory& m = self.k.mem();
  // change_protection_range before v5.19: inc_tlb_flush_pending, the walk, flush_tlb_range (x86: flush_tlb_mm_range
  // with PAGE_SHIFT) always in v3.x and else when the walk rewrote a PTE, dec_tlb_flush_pending. The planted
  // numa_flush_pending_late raises the count only after the walk.
  const bool late = cp.prot_numa && planted(self.k.config(), Mutation::numa_flush_pending_late);
  if (era.flush_pending && !late) co_await m.rmw(self.cpu, mm.tlb_flush_pending, [](int c) { return c + 1; });
  const std::uint64_t pages = co_await change_pte_range(self, mm, start, end, cp, era, nullptr);
  if (era.flush_pending && late) co_await m.rmw(self.cpu, mm.tlb_flush_pending, [](int c) { return c + 1; });
  if ((pages > 0 || era.flush_range_always) && !cp.skip_flush)
    co_await self.k.arch().flush_tlb_mm_range(self, mm, start, end, kPageShift, false);
  if (era.flush_pending) co_await m.rmw(self.cpu, mm.tlb_flush_pending, [](int c) { return c - 1; });
  co_return pages;
}

MprotectEra mprotect_era(KernelVersion version, Arch arch) {
  MprotectEra e;
  e.flush_pending = version >= KernelVersion{3, 13};
  e.batched_pending = version >= KernelVersion{4, 13};
  e.flush_range_always = version < KernelVersion{4, 0};
  e.mmu_gather = version >= KernelVersion{5, 19};
  if (arch == Arch::kX86 && version >= KernelVersion{5, 19}) e.needs_flush = PteNeedsFlush::kX86;
  if (arch == Arch::kPowerpc && version >= KernelVersion{6, 1}) e.needs_flush = PteNeedsFlush::kPowerpcRadix;
  e.upgrade_exclusive_anon = version >= KernelVersion{6, 0};
  return e;
}

sim::Task<void> sys_mprotect(PerCpu& self, MmStruct& mm, std::uint64_t addr, std::uint64_t len, bool writable) {
  if (addr % kPageSize != 0 || len == 0 || len % kPageSize != 0) {
    throw std::invalid_argument(fmt::format("mprotect({:#x}, {:#x}): not a whole number of pages", addr, len));
  }
  const std::uint64_t end = addr + len;
  const MprotectEra era = mprotect_era(self.k.config().version, self.k.arch().arch());
  const bool skip_flush = planted(self.k.config(), Mutation::mprotect_flush_skipped);
  const bool skip_batched_pending = planted(self.k.config(), Mutation::mprotect_skips_batched_pending);
  // do_mprotect_pkey's -ENOMEM for a range not mapped throughout, tested here before the lock so that the caller's
  // error leaves no lock held.
  for (std::uint64_t a = addr; a < end;) {
    const Vma* v = mm.find_vma(a);
    if (v == nullptr || v->start > a) {
      throw std::invalid_argument(fmt::format("mprotect({:#x}, {:#x}): {:#x} is not mapped", addr, len, a));
    }
    a = v->end;
  }
  co_await self.cpu.delay(self.k.machine().kernel.syscall);
  co_await mm.mmap_lock.down_write(self);
  // v5.19+: one gather for the whole call (tlb_gather_mmu, which increments tlb_flush_pending).
  MmuGather tlb(mm);
  if (era.mmu_gather) co_await tlb_gather_mmu(self, tlb);
  std::vector<std::pair<std::uint64_t, std::uint64_t>> changed;  // the ranges change_protection walked
  for (std::uint64_t a = addr; a < end;) {
    Vma* vma = mm.find_vma(a);
    if (vma == nullptr || vma->start > a) break;  // unmapped while we waited for the lock: -ENOMEM, done so far stands
    if (vma->writable == writable) {  // mprotect_fixup: newflags == oldflags
      a = vma->end;
      continue;
    }
    // mprotect_fixup: split off the parts outside the range (each split write-locks the VMA first, v6.4+), then
    // write-lock the VMA and set its flags (vm_flags_reset, vma_set_page_prot). Merging with neighbours of the
    // same flags is not modeled (docs/model.md).
    if (vma->start < a) {
      co_await vma_start_write(self, mm, *vma);
      vma = &mm.split_vma(*vma, a);
    }
    if (vma->end > end) {
      co_await vma_start_write(self, mm, *vma);
      mm.split_vma(*vma, end);
    }
    co_await vma_start_write(self, mm, *vma);
    vma->writable = writable;
    const std::uint64_t start = vma->start, stop = vma->end;
    // change_protection -> change_protection_range.
    co_await change_protection(
        self, mm, start, stop,
        ChangeProt{.writable = writable, .skip_flush = skip_flush, .skip_batched_pending = skip_batched_pending},
        era.mmu_gather ? &tlb : nullptr);
    changed.emplace_back(start, stop);
    a = stop;
  }
  if (era.mmu_gather) {
    if (skip_flush) tlb.reset_range();  // the planted bug: the gathered PTE changes are never flushed
    co_await tlb_finish_mmu(self, tlb);
  }
  co_await mmap_write_unlock(self, mm);
  for (const auto& [from, to] : changed) self.k.events().on_range_synced(self.id, mm, from, to);
  self.k.events().on_syscall_return(self.id);
}

}  // namespace tlbsim::kernel
