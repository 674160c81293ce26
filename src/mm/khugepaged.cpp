// Models collapse_huge_page, __collapse_huge_page_isolate and __collapse_huge_page_copy (mm/khugepaged.c) with
// pmdp_collapse_flush (mm/pgtable-generic.c; arch/powerpc/mm/book3s64/radix_pgtable.c) and
// tlb_remove_table_sync_one (mm/mmu_gather.c). Read (helper report /work/tmp/thp_eras.md): 4.14.177, 5.15.0,
// 6.1.20 and 6.13.7 trees.
#include "mm/khugepaged.h"

#include <vector>

#include "kernel/options.h"
#include "kernel/smp.h"
#include "mm/memory.h"

namespace tlbsim::kernel {

namespace {

const hw::KernelCosts& costs(PerCpu& self) { return self.k.machine().kernel; }

sim::Task<void> do_nothing(PerCpu&, const void*) { co_return; }

// The IPI of serialize_against_pte_lookup (powerpc before v6.1: mm_cpumask) or tlb_remove_table_sync_one (v6.1+: every
// online CPU, smp_call_function): each target takes an interrupt, with interrupts enabled, once every lockless
// page-table walker (GUP-fast, which runs with interrupts off) has finished.
sim::Task<void> sync_ipi(PerCpu& self, const Cpumask& mask) {
  co_await smp_call_function_many_cond(self, mask, do_nothing, nullptr, SCF_WAIT, nullptr);
}

// pmdp_collapse_flush: the PMD cleared (the PTE table unlinked), then the 2 MiB flushed. Generic (x86):
// flush_tlb_range at PAGE_SIZE stride (the whole mm: 512 pages exceed the single-page ceiling). powerpc radix:
// radix__flush_tlb_collapsed_pmd flushes the page-walk cache and the range; before v6.1 serialize_against_pte_lookup
// first IPIs mm_cpumask.
sim::Task<void> pmdp_collapse_flush(PerCpu& self, MmStruct& mm, std::uint64_t haddr) {
  if (self.k.arch().arch() == Arch::kPowerpc && self.k.config().version < KernelVersion{6, 1}) {
    const Cpumask mask = co_await mm.cpumask.read(self.k.mem(), self.cpu);
    co_await sync_ipi(self, mask);
  }
  if (planted(self.k.config(), Mutation::collapse_flush_skipped)) co_return;
  // flush_tlb_range: freed_tables false (the table is deposited, not freed), so lazy CPUs are not interrupted on x86.
  co_await self.k.arch().flush_tlb_mm_range(self, mm, haddr, haddr + kHpagePmdSize,
                                            static_cast<std::uint8_t>(kPageShift), false);
}

}  // namespace

bool collapse_sync_ipi(KernelVersion version, Arch arch) {
  if (version < KernelVersion{6, 1}) return false;
  return arch == Arch::kPowerpc || arch == Arch::kArm64 || version >= KernelVersion{6, 15};
}

sim::Task<bool> collapse_huge_page(PerCpu& self, MmStruct& mm, std::uint64_t haddr) {
  hw::Memory& m = self.k.mem();
  FrameAllocator& frames = self.k.frames();
  const Vpn first = vpn_of(haddr);
  // khugepaged_alloc_page / alloc_charge_folio, with no mmap_lock held; the node of khugepaged's CPU.
  const Pfn hpage = frames.alloc_huge(FrameUse::kAnon, self.k.cpu_to_node(self.id));
  co_await self.cpu.delay(costs(self).page_alloc + costs(self).memcg_charge);
  const auto give_up = [&frames, hpage]() {
    for (std::uint64_t i = 0; i < kHpagePmdNr; ++i) frames.free(Pfn{hpage.get() + i});
  };
  co_await mm.mmap_lock.down_write(self);  // mmap_write_lock
  // hugepage_vma_revalidate.
  Vma* vma = mm.find_vma(haddr);
  if (vma == nullptr || !thp_collapse_suitable(*vma, haddr) || mm.pgd.table(first) == nullptr) {
    co_await mmap_write_unlock(self, mm);
    give_up();
    co_return false;
  }
  co_await vma_start_write(self, mm, *vma);  // v6.4+: faults under the VMA lock are kept out
  // anon_vma_lock_write (no model: no rmap walker of anonymous pages runs without mmap_lock), the PMD lock, the
  // clear, the flush.
  Spinlock& ptl = mm.ptl(first);
  co_await ptl.lock(m, self.cpu);
  std::optional<PteTable> table = mm.pgd.unlink_table(first);
  if (!table) {  // cannot happen under mmap_lock held for write (the table was there): give up all the same
    co_await ptl.unlock(m, self.cpu);
    co_await mmap_write_unlock(self, mm);
    give_up();
    co_return false;
  }
  // To the oracle every translation of the table is removed here; the old page's free, or the collapse's end,
  // completes the removal.
  for (std::uint64_t i = 0; i < kPtesPerTable; ++i) {
    if (table->ptes[i].present) {
      self.k.events().on_pte_removed(mm, Vpn{first.get() + i}, table->ptes[i], self.id, self.cpu.now());
    }
  }
  co_await ptl.unlock(m, self.cpu);
  co_await pmdp_collapse_flush(self, mm, haddr);
  if (collapse_sync_ipi(self.k.config().version, self.k.arch().arch()) &&
      !planted(self.k.config(), Mutation::collapse_skips_gup_fast_sync)) {
    Cpumask all(self.k.ncpus());
    for (std::uint32_t c = 0; c < self.k.ncpus(); ++c) {
      if (c != self.id.get()) all.set(CpuId{c});  // smp_call_function: every online CPU but this one
    }
    co_await sync_ipi(self, all);
  }
  // __collapse_huge_page_isolate under the PTE lock (the table is unlinked: no one else reaches it).
  co_await ptl.lock(m, self.cpu);
  std::uint64_t none = 0;
  bool ok = true;
  for (std::uint64_t i = 0; i < kPtesPerTable && ok; ++i) {
    const Pte& p = table->ptes[i];
    if (!p.present && !p.migration) {
      ++none;
    } else if (p.present && p.pfn.get() == 0) {
      ++none;  // the zero page counts as none
    } else if (p.migration || !p.anon || p.protnone) {
      ok = false;  // not a present anonymous page (a migration entry, a page-cache page, a hinting PTE)
    } else if (frames.pins(p.pfn) > 0) {
      ok = false;  // page_count beyond the mapping's reference: a GUP pin (SCAN_PAGE_COUNT), in every era
    }
  }
  // The table's PTEs, read and checked: private to this CPU (the table is unlinked), so one step for all of them.
  co_await self.cpu.delay(costs(self).pte_update * static_cast<std::int64_t>(kPtesPerTable));
  if (none > kKhugepagedMaxPtesNone) ok = false;
  if (!ok) {
    // The old table goes back (pmd_populate); nothing was freed, so the flush did no harm.
    mm.pgd.relink_table(first, std::move(*table));
    co_await ptl.unlock(m, self.cpu);
    co_await mmap_write_unlock(self, mm);
    self.k.events().on_syscall_return(self.id);
    give_up();
    co_return false;
  }
  co_await ptl.unlock(m, self.cpu);
  // __collapse_huge_page_copy: each page copied (a none one zeroed) into the THP, then the old pages released.
  std::int64_t copied = 0;
  for (const Pte& p : table->ptes) copied += p.present && p.pfn.get() != 0 ? 1 : 0;
  co_await self.cpu.delay(costs(self).page_copy * copied +
                          costs(self).page_zero * (static_cast<std::int64_t>(kPtesPerTable) - copied));
  for (std::uint64_t i = 0; i < kPtesPerTable; ++i) {
    const Pte& p = table->ptes[i];
    if (!p.present || p.pfn.get() == 0) continue;
    self.k.events().on_page_replaced(mm, Vpn{first.get() + i}, p.pfn, self.id, self.cpu.now());
    frames.free(p.pfn);  // release_pte_pages
  }
  // Under the PMD lock: the old table deposited, the THP mapped (set_pmd_at). The THP is writable as the VMA is
  // (maybe_pmd_mkwrite).
  co_await ptl.lock(m, self.cpu);
  co_await self.cpu.delay(costs(self).pte_update);
  mm.pgd.set_huge_pmd(first, HugePmd{hpage, vma->writable, table->frame});
  co_await ptl.unlock(m, self.cpu);
  co_await mmap_write_unlock(self, mm);
  self.k.events().on_syscall_return(self.id);  // the collapse is done: its removals are complete
  co_return true;
}

}  // namespace tlbsim::kernel
