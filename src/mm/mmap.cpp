// Models the mmap and munmap paths of mm/mmap.c (and free_pgtables of mm/memory.c) as far as TLB shootdown depends
// on them: the VMA work under mmap_lock, the zap, the freed page tables and the flush before they are freed.
#include <fmt/format.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "mm/memory.h"
#include "mm/mmu_gather.h"
#include "trace/tracer.h"

namespace tlbsim::kernel {

std::uint64_t mmap_thp_align(KernelVersion version, bool anon, std::uint64_t len) {
  constexpr std::uint64_t kPmdSize = kPtesPerTable * kPageSize;
  if (!anon || version < KernelVersion{6, 8}) return kPageSize;
  if (version < KernelVersion{6, 12}) return kPmdSize;
  return len % kPmdSize == 0 ? kPmdSize : kPageSize;
}

namespace {

// vma_merge's compatibility test (is_mergeable_vma, can_vma_merge_before/after): same flags and file, contiguous
// vm_pgoff (an anonymous VMA's is its address at mmap, kept by mremap, so a moved VMA merges only with what fits its
// offsets). An anonymous MAP_SHARED mapping has its own shmem file and never merges.
bool mergeable(const Vma& a, const Vma& b) {
  if (a.end != b.start || a.writable != b.writable || a.shared != b.shared || a.file != b.file) return false;
  if (a.file == nullptr && a.shared) return false;
  return a.pgoff + (a.end - a.start) / kPageSize == b.pgoff;
}

}  // namespace

sim::Task<std::uint64_t> sys_mmap(PerCpu& self, MmStruct& mm, std::uint64_t len, bool shared, File* file,
                                  std::uint64_t pgoff, std::uint64_t align) {
  const trace::TraceSpan span(self.k.tracer(), self.cpu, "sys_mmap", "syscall");
  co_await self.cpu.delay(self.k.machine().kernel.syscall);
  co_await mm.mmap_lock.down_write(self);
  const std::uint64_t addr = mm.get_unmapped_area(
      len, std::max(align, mmap_thp_align(self.k.config().version, file == nullptr && !shared, len)));
  // do_mmap: a private anonymous mapping's vm_pgoff is its address in pages.
  if (file == nullptr && !shared) pgoff = addr >> kPageShift;
  const Vma vma{addr, addr + (len + kPageSize - 1) / kPageSize * kPageSize, true, shared, file, pgoff, nullptr};
  // mmap_region's vma_merge (vma_merge_new_range from v6.12): the new range extends a compatible neighbour (both,
  // when it fills the gap between them) instead of making a VMA of its own; each VMA changed is write-locked first.
  Vma* prev = mm.vma_below(vma.start);
  Vma* next = mm.vma_above(vma.end);
  const bool merge_prev = prev != nullptr && mergeable(*prev, vma);
  const bool merge_next = next != nullptr && next->start == vma.end && mergeable(vma, *next);
  if (merge_prev) co_await vma_start_write(self, mm, *prev);
  if (merge_next) co_await vma_start_write(self, mm, *next);
  if (merge_prev && merge_next) {
    const std::uint64_t end = next->end;
    prev->anon_vma = prev->anon_vma || next->anon_vma;  // is_mergeable_anon_vma: at most one of them has one
    mm.remove_vma(next->start);
    mm.resize_vma(*prev, prev->start, end);
  } else if (merge_prev) {
    mm.resize_vma(*prev, prev->start, vma.end);
  } else if (merge_next) {
    mm.resize_vma(*next, vma.start, next->end);
  } else {
    mm.insert_vma(vma);
  }
  co_await self.cpu.delay(self.k.machine().kernel.mmap_region);  // charged after the VMA change it stands for
  co_await mmap_write_unlock(self, mm);
  co_return addr;
}

// free_pgtables over an unmapped [start, end) whose neighbours end at `floor` and start at `ceiling` (0: none above,
// USER_PGTABLES_CEILING): free_pgd_range frees a leaf table only when the 2 MiB it maps lies wholly within
// [floor, ceiling), so a table that another VMA still uses stays (mm/memory.c, every modeled era). The freed tables
// go into the gather (pte_free_tlb), freed after its flush, and set freed_tables.
static void free_pgtables(MmuGather& tlb, MmStruct& mm, std::uint64_t start, std::uint64_t end, std::uint64_t floor,
                          std::uint64_t ceiling) {
  constexpr std::uint64_t kPmdSize = kPtesPerTable * kPageSize;
  for (std::uint64_t base = start & ~(kPmdSize - 1); base < end; base += kPmdSize) {
    if (base < floor || (ceiling != 0 && base + kPmdSize > ceiling)) continue;
    if (const auto frame = mm.pgd.detach_empty_table(vpn_of(base))) {
      tlb.pages.push_back(*frame);
      tlb.freed_tables = true;
      tlb.adjust_range(std::max(base, start));
    }
  }
}

sim::Task<bool> do_munmap(PerCpu& self, MmStruct& mm, std::uint64_t addr, std::uint64_t len, bool downgrade) {
  const std::uint64_t end = addr + len;
  // do_vmi_munmap's gather (detach_vmas_to_be_unmapped before v6.1): the VMAs that straddle the range's ends are
  // split (__split_vma), those inside it are detached; each is write-locked first (v6.4+).
  if (Vma* first = mm.find_vma(addr); first != nullptr && first->start < addr) {
    co_await vma_start_write(self, mm, *first);
    mm.split_vma(*first, addr);
  }
  if (Vma* last = mm.find_vma(end - 1); last != nullptr && last->end > end) {
    co_await vma_start_write(self, mm, *last);
    mm.split_vma(*last, end);
  }
  std::vector<std::pair<std::uint64_t, std::uint64_t>> detached;  // each detached VMA's [start, end)
  for (;;) {
    Vma* v = mm.vma_above(addr);
    if (v == nullptr || v->start >= end) break;
    co_await vma_start_write(self, mm, *v);
    detached.emplace_back(v->start, v->end);
    mm.remove_vma(v->start);
  }
  // The neighbours bound free_pgtables.
  const Vma* prev = std::as_const(mm).vma_below(addr);
  const Vma* next = std::as_const(mm).vma_above(end);
  const std::uint64_t floor = prev != nullptr ? prev->end : 0;      // FIRST_USER_ADDRESS
  const std::uint64_t ceiling = next != nullptr ? next->start : 0;  // USER_PGTABLES_CEILING
  co_await self.cpu.delay(self.k.machine().kernel.munmap_vmas);
  if (downgrade) co_await mmap_write_downgrade(self, mm);
  // unmap_region: unmap_vmas zaps each VMA (unmap_single_vma -> unmap_page_range, which ends with tlb_end_vma: a
  // flush of that VMA's range where the architecture does not merge VMAs, arm64), then free_pgtables (the range's
  // leaf tables are now empty), then finish.
  MmuGather tlb(mm);
  co_await tlb_gather_mmu(self, tlb);
  for (const auto& [vma_start, vma_end] : detached) {
    co_await zap_page_range_in(self, tlb, mm, vma_start, vma_end);
    co_await tlb_end_vma(self, tlb);
  }
  free_pgtables(tlb, mm, addr, end, floor, ceiling);
  co_await tlb_finish_mmu(self, tlb);
  co_return downgrade;
}

sim::Task<void> sys_munmap(PerCpu& self, MmStruct& mm, std::uint64_t addr, std::uint64_t len) {
  const trace::TraceSpan span(self.k.tracer(), self.cpu, "sys_munmap", "syscall");
  co_await self.cpu.delay(self.k.machine().kernel.syscall);
  co_await mm.mmap_lock.down_write(self);
  // From v4.20 ("mm: mmap: zap pages with read mmap_sem in munmap", dd2283f2605e) munmap downgrades mmap_lock to
  // read once the VMAs are detached, and zaps and flushes under the read lock (__do_munmap's `downgrade`;
  // vms_complete_munmap_vmas's mmap_write_downgrade in v6.12+); before it, the whole munmap holds it for write.
  const bool downgrade = self.k.config().version >= KernelVersion{4, 20};
  // Awaited into a local, not in the `if` condition: GCC 12 miscompiled that form here (the coroutine never
  // resumed after the flush's IPI wait; found by the lazy-CPU munmap tests).
  const bool downgraded = co_await do_munmap(self, mm, addr, len, downgrade);
  if (downgraded) {
    co_await mm.mmap_lock.up_read(self);
  } else {
    co_await mmap_write_unlock(self, mm);
  }
  self.k.events().on_syscall_return(self.id);
}

}  // namespace tlbsim::kernel
