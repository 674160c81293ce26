// Models mm/mremap.c: mremap_to -> move_vma -> copy_vma, move_page_tables -> move_ptes, then do_munmap of the old
// range, per era (v3.3, v4.14, v5.17, v6.2 powerpc, v6.13; the era switches are MremapEra's, each with the change that
// made it). docs/model.md ("mremap") names the trees read for each era.
#include "mm/mremap.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <stdexcept>

#include "kernel/options.h"
#include "mm/huge_memory.h"
#include "mm/memory.h"
#include "mm/rmap.h"

namespace tlbsim::kernel {

namespace {

constexpr std::uint64_t kPmdSize = kPtesPerTable * kPageSize;
constexpr std::uint64_t kLatencyLimit = 64 * kPageSize;  // LATENCY_LIMIT (mm/mremap.c, before v4.18)

// move_ptes for [old_addr, old_end) -> new_addr, within one old and one new page table. Takes the old table's PTE
// lock, then the new one's (spin_lock_nested) when they differ; moves each PTE (ptep_get_and_clear, move_pte,
// set_pte_at). Where the era says so, flushes the moved range before the old PTE lock drops (force_flush: v4.9-v4.18
// after the new lock drops, v4.19+ before) and returns false; otherwise returns true: the caller's need_flush. The
// rmap locks (i_mmap_mutex for a file VMA in v3.2-v3.6; take_rmap_locks when need_rmap_locks from v3.7) are not
// modeled (docs/model.md).
sim::Task<bool> move_ptes(PerCpu& self, MmStruct& mm, std::uint64_t old_addr, std::uint64_t old_end,
                          std::uint64_t new_addr, const MremapEra& era, bool skip_flush) {
  hw::Memory& m = self.k.mem();
  Spinlock& old_ptl = mm.ptl(vpn_of(old_addr));
  Spinlock& new_ptl = mm.ptl(vpn_of(new_addr));
  co_await old_ptl.lock(m, self.cpu);  // pte_offset_map_lock of the old table
  if (&new_ptl != &old_ptl) co_await new_ptl.lock(m, self.cpu);
  if (era.batched_pending) co_await flush_tlb_batched_pending(self, mm);
  bool force_flush = false;
  for (std::uint64_t a = old_addr, n = new_addr; a < old_end; a += kPageSize, n += kPageSize) {
    const Vpn v = vpn_of(a);
    // A migration entry moves too (move_ptes moves every non-none entry; move_pte and set_pte_at of a non-present
    // one): no CPU caches it, so it asks for no flush, and the migration's remove_migration_ptes finds it at its new
    // address through the rmap. No modeled path migrates a page while mremap runs (each holds mmap_lock or the VMA
    // lock), so nothing reaches this yet.
    if (const auto entry = mm.pgd.migration_entry(v)) {
      mm.pgd.clear_migration_entry(v);
      mm.pgd.set(vpn_of(n), *entry);
      co_await self.cpu.delay(self.k.machine().kernel.pte_update);
      continue;
    }
    const auto pte = mm.pgd.clear(v);  // ptep_get_and_clear
    if (!pte) continue;                // pte_none
    // move_pte, set_pte_at (pte_alloc made the new table: PageTables::set here). Set in the same step as the clear:
    // the page's mapcount never drops, so to reclaim's rmap walk the page stays mapped throughout.
    mm.pgd.set(vpn_of(n), *pte);
    // The old address's translation is gone: complete, to the oracle, when mremap returns or the page is freed.
    self.k.events().on_pte_removed(mm, v, *pte, self.id, self.cpu.now());
    // The model's PTEs have no dirty bit: a writable PTE is dirty (every path that makes one writable does so on a
    // write, or for an anonymous page, which is dirty; docs/model.md).
    if (era.flush_present_under_ptl || (era.flush_dirty_under_ptl && pte->writable)) force_flush = true;
    co_await self.cpu.delay(self.k.machine().kernel.pte_update);
  }
  // flush_tlb_range(vma, old_end - len, old_end) with the old PTE lock still held, and the new one too from v4.19.
  const bool flush = force_flush && !skip_flush;
  if (flush && era.flush_present_under_ptl) {
    co_await self.k.arch().flush_tlb_mm_range(self, mm, old_addr, old_end, kPageShift, false);
  }
  if (&new_ptl != &old_ptl) co_await new_ptl.unlock(m, self.cpu);
  if (flush && !era.flush_present_under_ptl) {
    co_await self.k.arch().flush_tlb_mm_range(self, mm, old_addr, old_end, kPageShift, false);
  }
  co_await old_ptl.unlock(m, self.cpu);  // pte_unmap_unlock
  co_return !force_flush;
}

// move_normal_pmd(vma, old_addr, new_addr, old_pmd, new_pmd): under the old PMD lock and the new one
// (spin_lock_nested), the old PMD is cleared and its PTE table linked at the new PMD (pmd_populate), then
// flush_tlb_range(vma, old_addr, old_addr + PMD_SIZE) with both locks held. To the oracle every translation at the
// old addresses is removed.
sim::Task<void> move_normal_pmd(PerCpu& self, MmStruct& mm, std::uint64_t old_addr, std::uint64_t new_addr,
                                bool skip_flush) {
  hw::Memory& m = self.k.mem();
  const Vpn old_first = vpn_of(old_addr);
  Spinlock& old_ptl = mm.ptl(old_first);
  Spinlock& new_ptl = mm.ptl(vpn_of(new_addr));
  co_await old_ptl.lock(m, self.cpu);
  if (&new_ptl != &old_ptl) co_await new_ptl.lock(m, self.cpu);
  if (std::optional<PteTable> table = mm.pgd.unlink_table(old_first)) {
    for (std::uint64_t i = 0; i < kPtesPerTable; ++i) {
      if (table->ptes[i].present) {
        self.k.events().on_pte_removed(mm, Vpn{old_first.get() + i}, table->ptes[i], self.id, self.cpu.now());
      }
    }
    mm.pgd.relink_table(vpn_of(new_addr), std::move(*table));
    co_await self.cpu.delay(self.k.machine().kernel.pte_update);
    if (!skip_flush)
      co_await self.k.arch().flush_tlb_mm_range(self, mm, old_addr, old_addr + kPmdSize, kPageShift, false);
  }
  if (&new_ptl != &old_ptl) co_await new_ptl.unlock(m, self.cpu);
  co_await old_ptl.unlock(m, self.cpu);
}

// take_rmap_locks(vma) for a table move from v5.14 (MremapEra::rmap_locks_for_table_moves): the anon_vma's lock for
// write, if the VMA at `old_addr` has one; returned for drop_rmap_locks (nullptr: none taken). A file VMA's
// i_mmap_rwsem is not modeled (docs/model.md).
sim::Task<RwSem*> take_rmap_locks(PerCpu& self, MmStruct& mm, std::uint64_t old_addr, const MremapEra& era) {
  const Vma* vma = mm.find_vma(old_addr);
  RwSem* lock = nullptr;
  if (era.rmap_locks_for_table_moves && vma != nullptr && vma->contains(old_addr) && vma->anon_vma) {
    lock = &mm.anon_vma_lock();
    co_await lock->down_write(self);
  }
  co_return lock;
}

// Whether the PUD covering v is not none: in the model, whether a PTE table or a THP's PMD lies in its 1 GiB (the
// model keeps no PMD tables; docs/model.md).
bool pud_present(const MmStruct& mm, std::uint64_t addr) {
  const std::uint64_t first = addr / kPudSize * kPudSize;
  for (std::uint64_t a = first; a < first + kPudSize; a += kPmdSize) {
    if (mm.pgd.table(vpn_of(a)) != nullptr || mm.pgd.huge_pmd(vpn_of(a)) != nullptr) return true;
  }
  return false;
}

// move_normal_pud(vma, old_addr, new_addr, old_pud, new_pud) (mm/mremap.c, v5.11+): the new PUD must be none
// (WARN_ON_ONCE, free_pgtables should have released it; otherwise false, and the caller moves by PMDs). Under
// pud_lock of the old PUD and pud_lockptr of the new one, both mm->page_table_lock, the old PUD is cleared and its PMD
// table linked at the new PUD (set_pud_at in v5.11, pud_populate from v5.14), then flush_tlb_range(vma, old_addr,
// old_addr + PUD_SIZE) with the lock held. In the model every PTE table and THP PMD of the old 1 GiB moves in that
// one step, each to the same offset in the new 1 GiB; to the oracle every translation at the old addresses is removed.
sim::Task<bool> move_normal_pud(PerCpu& self, MmStruct& mm, std::uint64_t old_addr, std::uint64_t new_addr,
                                bool skip_flush) {
  if (pud_present(mm, new_addr)) co_return false;
  hw::Memory& m = self.k.mem();
  Spinlock& ptl = mm.page_table_lock();
  co_await ptl.lock(m, self.cpu);
  for (std::uint64_t off = 0; off < kPudSize; off += kPmdSize) {
    const Vpn from = vpn_of(old_addr + off);
    const Vpn to = vpn_of(new_addr + off);
    if (std::optional<PteTable> table = mm.pgd.unlink_table(from)) {
      for (std::uint64_t i = 0; i < kPtesPerTable; ++i) {
        if (table->ptes[i].present) {
          self.k.events().on_pte_removed(mm, Vpn{from.get() + i}, table->ptes[i], self.id, self.cpu.now());
        }
      }
      mm.pgd.relink_table(to, std::move(*table));
    } else if (std::optional<HugePmd> pmd = mm.pgd.clear_huge_pmd(from)) {
      for (std::uint64_t i = 0; i < kHpagePmdNr; ++i) {
        // A hinting PMD still maps the THP to the kernel, as a hinting PTE does (Pte::protnone); a migration entry
        // maps nothing.
        const Pte pte{Pfn{pmd->page.get() + i}, !pmd->migration, pmd->writable, !pmd->zero};
        if (pte.present) self.k.events().on_pte_removed(mm, Vpn{from.get() + i}, pte, self.id, self.cpu.now());
      }
      mm.pgd.set_huge_pmd(to, *pmd);
    }
  }
  co_await self.cpu.delay(self.k.machine().kernel.pte_update);
  if (!skip_flush)
    co_await self.k.arch().flush_tlb_mm_range(self, mm, old_addr, old_addr + kPudSize, kPageShift, false);
  co_await ptl.unlock(m, self.cpu);
  co_return true;
}

// move_page_tables(vma, old_addr, new_vma, new_addr, len): moves extent by extent, an extent ending at the next PMD
// boundary of either address or (before v4.18) at LATENCY_LIMIT; an old extent without a page table is skipped
// (get_old_pmd). Then, unless every move_ptes flushed under its lock, flush_tlb_range(vma, old_end - len, old_addr)
// over the old range, after every PTE lock has dropped.
sim::Task<void> move_page_tables(PerCpu& self, MmStruct& mm, std::uint64_t old_addr, std::uint64_t new_addr,
                                 std::uint64_t len, const MremapEra& era, bool skip_flush) {
  const std::uint64_t old_end = old_addr + len;
  const std::uint64_t start = old_addr;
  bool need_flush = false;
  for (std::uint64_t extent = 0; old_addr < old_end; old_addr += extent, new_addr += extent) {
    // get_extent(NORMAL_PUD): a whole PUD at both addresses moves by its PUD where the era has move_normal_pud; an
    // old PUD that is none is skipped whole (get_old_pud).
    extent = std::min({(old_addr + kPudSize) / kPudSize * kPudSize, old_end,
                       old_addr + ((new_addr + kPudSize) / kPudSize * kPudSize - new_addr)}) -
             old_addr;
    if (era.move_normal_pud && extent == kPudSize) {
      if (!pud_present(mm, old_addr)) continue;
      RwSem* rmap_lock = co_await take_rmap_locks(self, mm, old_addr, era);
      const bool moved = co_await move_normal_pud(self, mm, old_addr, new_addr, skip_flush);
      if (rmap_lock != nullptr) co_await rmap_lock->up_write(self);  // drop_rmap_locks
      if (moved) continue;
    }
    extent = std::min((old_addr + kPmdSize) / kPmdSize * kPmdSize, old_end) - old_addr;
    // A THP's PMD moves whole (move_huge_pmd) when the extent is the whole PMD at both addresses: before v5.9
    // move_huge_pmd checks new_addr's alignment itself, from v5.9 the extent does (both ends the same test).
    // Otherwise, or when the destination PMD is not none, it is split and its PTEs move.
    if (mm.pgd.huge_pmd(vpn_of(old_addr)) != nullptr) {
      if (extent == kPmdSize && new_addr % kPmdSize == 0) {
        const MovedHugePmd r = co_await move_huge_pmd(self, mm, old_addr, new_addr, era, skip_flush);
        if (r.moved) {
          need_flush = need_flush || r.need_flush;
          continue;
        }
      }
      co_await split_huge_pmd(self, mm, old_addr);
    }
    if (mm.pgd.table(vpn_of(old_addr)) == nullptr) continue;
    extent = std::min(extent, (new_addr + kPmdSize) / kPmdSize * kPmdSize - new_addr);
    if (era.latency_limit) extent = std::min(extent, kLatencyLimit);
    if (era.move_normal_pmd && extent == kPmdSize && mm.pgd.table(vpn_of(new_addr)) == nullptr &&
        mm.pgd.huge_pmd(vpn_of(new_addr)) == nullptr) {
      RwSem* rmap_lock = co_await take_rmap_locks(self, mm, old_addr, era);
      co_await move_normal_pmd(self, mm, old_addr, new_addr, skip_flush);
      if (rmap_lock != nullptr) co_await rmap_lock->up_write(self);  // drop_rmap_locks
      continue;
    }
    // (Awaited into a local: GCC 12 miscompiles a co_await in an `if` condition here; see do_munmap's caller.)
    const bool deferred = co_await move_ptes(self, mm, old_addr, old_addr + extent, new_addr, era, skip_flush);
    need_flush = need_flush || deferred;
  }
  // From v4.19 (flush_present_under_ptl) every flush happens under the page-table locks and move_page_tables has
  // none of its own: a range that held no present PTE is not flushed at all.
  if (need_flush && !skip_flush && !era.flush_present_under_ptl) {
    co_await self.k.arch().flush_tlb_mm_range(self, mm, start, old_end, kPageShift, false);
  }
}

}  // namespace

MremapEra mremap_era(const KernelConfig& config) {
  MremapEra e;
  e.batched_pending = config.version >= KernelVersion{4, 13};
  e.flush_dirty_under_ptl = config.version >= KernelVersion{4, 9};
  e.flush_present_under_ptl = config.version >= KernelVersion{4, 19} || config.on(Option::move_ptes_flush_present);
  e.latency_limit = config.version < KernelVersion{4, 18};
  e.move_normal_pmd = config.version >= (config.arch == Arch::kX86 ? KernelVersion{5, 1} : KernelVersion{5, 14});
  e.move_normal_pud = config.version >= (config.arch == Arch::kPowerpc ? KernelVersion{5, 14} : KernelVersion{5, 11});
  e.move_huge_pmd_flush_pmd_range = config.version >= KernelVersion{6, 0};
  e.rmap_locks_for_table_moves = config.version >= KernelVersion{5, 14};
  return e;
}

sim::Task<void> sys_mremap(PerCpu& self, MmStruct& mm, std::uint64_t old_addr, std::uint64_t len,
                           std::uint64_t new_addr) {
  const auto what = [&] { return fmt::format("mremap({:#x}, {:#x}, -> {:#x})", old_addr, len, new_addr); };
  if (old_addr % kPageSize != 0 || new_addr % kPageSize != 0 || len == 0 || len % kPageSize != 0) {
    throw std::invalid_argument(what() + ": not whole pages");
  }
  // mremap_to's EINVAL for overlapping ranges; vma_to_resize's EFAULT for a range one VMA does not cover.
  if (new_addr < old_addr + len && old_addr < new_addr + len) throw std::invalid_argument(what() + ": ranges overlap");
  const auto covered = [&] {
    const Vma* v = mm.find_vma(old_addr);
    return v != nullptr && v->end >= old_addr + len;
  };
  const auto dest_mapped = [&] {
    const Vma* v = mm.vma_above(new_addr);
    const Vma* below = mm.vma_below(new_addr);
    return (v != nullptr && v->start < new_addr + len) || (below != nullptr && below->end > new_addr);
  };
  if (!covered()) throw std::invalid_argument(what() + ": the old range is not one mapping");
  const MremapEra era = mremap_era(self.k.config());
  const bool skip_flush = planted(self.k.config(), Mutation::mremap_flush_skipped);
  co_await self.cpu.delay(self.k.machine().kernel.syscall);
  co_await mm.mmap_lock.down_write(self);
  // mremap_to, MREMAP_FIXED: do_munmap(mm, new_addr, new_len) first, under the write lock, in every modeled era
  // (v3.3 mm/mremap.c; v5.17 and v6.13 the same, with uf_unmap_early); do_vmi_munmap of a range without a VMA does
  // nothing, so an unmapped destination costs nothing here.
  if (dest_mapped()) co_await do_munmap(self, mm, new_addr, len, false);
  // Changed while we waited for the lock (another thread's munmap): the call fails, nothing moved.
  if (covered()) {
    Vma& vma = *mm.find_vma(old_addr);
    // move_vma: the old VMA is write-locked (v6.4+, a no-op before), then copy_vma links a new VMA for the
    // destination (vma_link, into the file's i_mmap after the old one); a fresh VMA needs no rmap locks
    // (need_rmap_locks false), and merging it with a neighbour is not modeled (docs/model.md).
    co_await vma_start_write(self, mm, vma);
    Vma moved = vma;
    moved.start = new_addr;
    moved.end = new_addr + len;
    moved.pgoff = vma.pgoff + (old_addr - vma.start) / kPageSize;
    moved.vm_lock = nullptr;
    // anon_vma_clone links the new VMA into the anon_vma's tree under anon_vma_lock_write: no rmap walk of the
    // mm's anonymous pages is in progress while the VMA appears, so a walk either sees it from its start or runs
    // after it (and after any PTE it will find moved). A VMA without an anon_vma has nothing to clone.
    const bool clone_anon_vma = vma.anon_vma;
    // copy_vma write-locks the new VMA before vma_link makes it visible (v6.4+): a fault at the destination falls
    // back to mmap_lock and waits for the move, never maps a page where move_ptes will put one.
    if (clone_anon_vma) co_await mm.anon_vma_lock().down_write(self);
    Vma& linked = mm.insert_vma(moved);
    co_await vma_start_write_unlinked(self, mm, linked);  // marks it before its first step
    if (clone_anon_vma) co_await mm.anon_vma_lock().up_write(self);
    co_await self.cpu.delay(self.k.machine().kernel.mmap_region);  // copy_vma's VMA work, as mmap_region's
    co_await move_page_tables(self, mm, old_addr, new_addr, len, era, skip_flush);
    // do_munmap(mm, old_addr, old_len): the old VMA (split where the move took part of it) and its page tables.
    co_await do_munmap(self, mm, old_addr, len, false);
  }
  co_await mmap_write_unlock(self, mm);
  self.k.events().on_syscall_return(self.id);
}

}  // namespace tlbsim::kernel
