// Models task_numa_work (kernel/sched/fair.c; v4.14, v5.15, v6.1 and v6.15 trees, docs/model.md "NUMA hinting").
#include "kernel/sched/fair_numa.h"

#include <algorithm>

#include "mm/mempolicy.h"
#include "mm/pgtable.h"

namespace tlbsim::kernel {

sim::Task<std::uint64_t> task_numa_work(PerCpu& self, MmStruct& mm) {
  constexpr std::uint64_t kHpageSize = kPtesPerTable * kPageSize;
  std::int64_t pages = static_cast<std::int64_t>(kNumaBalancingScanSizeMb << (20 - kPageShift));
  std::int64_t virtpages = pages * 8;  // scan up to this much virtual space
  std::uint64_t updated = 0;
  // mmap_read_trylock (down_read_trylock in v4.14): a scan that would wait for mmap_lock is skipped.
  const bool locked = co_await mm.mmap_lock.down_read_trylock(self);
  if (!locked) {
    self.k.events().on_syscall_return(self.id);
    co_return 0;
  }
  std::uint64_t start = mm.numa_scan_offset;
  bool more = false;  // the window ran out before the address space did
  for (auto it = mm.vmas.begin(); it != mm.vmas.end() && !more; ++it) {
    const Vma& vma = it->second;
    if (vma.end <= start) continue;
    // Shared libraries and other read-only file mappings are not scanned (their pages are expected replicated).
    if (vma.file != nullptr && !vma.writable) continue;
    std::uint64_t s = std::max(start, vma.start);
    for (std::uint64_t e = s; e != vma.end; s = e) {
      e = std::min(vma.end,
                   (s + static_cast<std::uint64_t>(pages) * kPageSize + kHpageSize - 1) / kHpageSize * kHpageSize);
      const std::uint64_t n = co_await change_prot_numa(self, mm, s, e);
      updated += n;
      if (n != 0) pages -= static_cast<std::int64_t>((e - s) / kPageSize);
      virtpages -= static_cast<std::int64_t>((e - s) / kPageSize);
      start = e;
      if (pages <= 0 || virtpages <= 0) {
        more = true;
        break;
      }
    }
  }
  // mm->numa_scan_offset = start, or reset_ptenuma_scan at the end of the address space.
  mm.numa_scan_offset = more ? start : 0;
  co_await mm.mmap_lock.up_read(self);
  self.k.events().on_syscall_return(self.id);
  co_return updated;
}

}  // namespace tlbsim::kernel
