// struct mm_struct as far as TLB shootdown cares: the arch's context, mm_cpumask, mm_users/mm_count,
// tlb_flush_pending, mmap_lock, the VMAs and the page tables.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "hw/memory.h"
#include "kernel/arch_mmu.h"
#include "kernel/locking/locks.h"
#include "kernel/locking/rwsem.h"
#include "lib/cpumask.h"
#include "mm/page_cache.h"
#include "mm/pgtable.h"

namespace tlbsim::kernel {

class MmStruct;

// One VMA that maps a file, as mapping->i_mmap holds it (struct vm_area_struct's vm_mm, vm_start, vm_end, vm_pgoff).
struct FileMapping {
  MmStruct* mm = nullptr;
  std::uint64_t start = 0, end = 0;  // vma->vm_start, vm_end
  std::uint64_t pgoff = 0;           // vma->vm_pgoff
  // The virtual page at which this mapping maps file page `index`, if it covers it (vma_address).
  std::optional<Vpn> vpn_of_index(std::uint64_t index) const;
};

// A file's page cache (a sparse file: every page reads as zeros) and the VMAs that map it.
struct File {
  std::uint32_t id = 0;
  std::uint64_t size = 0;
  PageCacheIndex pages;  // mapping->i_pages: page offset -> frame
  // A shmem inode (mm/shmem.c; MAP_SHARED | MAP_ANONYMOUS memory, shmem_zero_setup): its pages are swap-backed, and
  // where one was swapped out its i_pages slot holds the swap entry (xa_is_value) instead: page offset -> swap slot.
  bool shmem = false;
  std::unordered_map<std::uint64_t, std::uint64_t> swap_entries;
  // mapping->i_mmap, in the order an rmap walk visits it (vma_interval_tree_foreach): a VMA linked later is visited
  // later, which is the order mremap's move relies on when it takes no rmap lock (copy_vma's need_rmap_locks).
  // Contract: kept by MmStruct's VMA operations (vma_link, unlink_file_vma, __split_vma, vma_adjust).
  std::vector<FileMapping> i_mmap;
};

// vma->vm_lock (struct vma_lock, v6.4 "mm: introduce per-VMA lock"): the lock a page fault takes instead of
// mmap_lock where the era has per-VMA locks. v6.4-v6.14, a rw_semaphore: count > 0: faults hold it for read
// (vma_start_read's down_read_trylock); -1: an mmap_lock writer holds it (vma_start_write's down_write). v6.15+
// ("mm: replace vm_lock and detached flag with a reference count"), vma->vm_refcnt: count is the readers, plus
// kVmaLockOffset while a writer waits for them to leave (__vma_enter_locked), which makes new readers fail; the
// attached VMA's own reference is left out. Shared by the VMA and any fault that found it, as RCU keeps a
// vm_area_struct alive for a fault that looked it up.
struct VmaLock {
  // VMA_LOCK_OFFSET (include/linux/mm_types.h, v6.15+): the writer's bias, above VMA_REF_LIMIT.
  static constexpr int kVmaLockOffset = 0x40000000;
  hw::Shared<int> count;
  // vma->vm_lock_seq: equal to the mm's mm_lock_seq while the VMA is write-locked (on the VMA's line, read with it).
  std::uint64_t vm_lock_seq = ~std::uint64_t{0};
  // vma->detached (vma_mark_detached; v6.15+: a zero vm_refcnt): the VMA has left the mm's tree. The kernel's RCU
  // keeps a detached VMA's memory for a lockless reader; the model keeps only this lock, so a reader that found the
  // VMA must test this before it touches the Vma again.
  bool detached = false;
};

struct Vma {
  std::uint64_t start = 0, end = 0;  // [start, end), page aligned
  bool writable = false;
  bool shared = false;      // MAP_SHARED
  File* file = nullptr;     // nullptr: anonymous
  std::uint64_t pgoff = 0;  // file offset of start, in pages
  std::shared_ptr<VmaLock> vm_lock;  // set by MmStruct::insert_vma
  bool hugepage = false;             // VM_HUGEPAGE: madvise(MADV_HUGEPAGE) asked for THPs (the "madvise" mode)
  // vma->anon_vma is set: the VMA has had an anonymous page (anon_vma_prepare, vmf_anon_prepare). A fault sets it
  // holding mmap_lock only for read (the kernel under mm->page_table_lock), hence mutable. Kept by a split and by
  // mremap's copy; a merge keeps the neighbour's.
  mutable bool anon_vma = false;
  // The order in which this VMA joined its anon_vma's interval tree among VMAs of equal vm_pgoff (an rmap walk visits
  // them by vm_pgoff, then in that order: the tree links an equal key to the right). Set by MmStruct::insert_vma.
  std::uint64_t anon_vma_seq = 0;
  bool contains(std::uint64_t a) const { return a >= start && a < end; }
};

// Contract: variables more than one CPU touches sit on modeled lines, named as kernel objects
// ("mm.tlb_gen", "mm_cpumask", "mm.mm_count", ...); everything else is plain data.
class MmStruct {
 public:
  // `lock_kind`: the spinlock algorithm of the page-table locks (ArchMmu::spinlock_kind).
  MmStruct(std::uint32_t id, hw::CoherenceModel& model, std::uint32_t ncpus, FrameAllocator& frames, bool is_init_mm,
           SpinlockKind lock_kind);

  std::uint32_t id() const { return id_; }
  bool is_init_mm() const { return is_init_mm_; }
  bool freed = false;  // __mmdrop ran

  // mm->context (mm_context_t): the architecture's, made by ArchMmu::init_new_context (kernel/arch_mmu.h).
  std::unique_ptr<ArchMmContext> context;
  SharedCpumask cpumask;              // mm_cpumask(mm)
  hw::Shared<std::int64_t> mm_users;  // mm_users and mm_count share a line
  hw::Shared<std::int64_t> mm_count;
  hw::Shared<int> tlb_flush_pending;   // mm->tlb_flush_pending (inc/dec_tlb_flush_pending)
  hw::Shared<bool> tlb_flush_batched;  // mm->tlb_flush_batched (a reclaim flush is deferred in a batch)
  std::uint64_t numa_scan_offset = 0;  // mm->numa_scan_offset: where task_numa_work's next scan starts
  RwSem mmap_lock;
  // mm->mm_lock_seq (v6.4+): advanced by vma_end_write_all when mmap_lock's writer unlocks or downgrades, which
  // unlocks every VMA it write-locked at once.
  hw::Shared<std::uint64_t> mm_lock_seq;
  // mm->vma_writer_wait (v6.15+, an rcuwait): the task in vma_start_write waiting for a VMA's readers, woken by the
  // last reader's vma_refcount_put. One writer at a time (it holds mmap_lock for write).
  TaskStruct* vma_writer_wait = nullptr;
  PageTables pgd;
  // The VMAs by start address (the kernel's maple tree, mm->mm_mt; a sorted list before v6.1). Contract: a Vma's
  // address is stable while it is mapped (a fault holding a per-VMA lock keeps a pointer to it).
  std::map<std::uint64_t, Vma> vmas;

  const Vma* find_vma(std::uint64_t addr) const;
  // The VMAs just below and just above [start, end) (find_vma_prev and the next one), nullptr where there is none.
  const Vma* vma_below(std::uint64_t start) const;
  const Vma* vma_above(std::uint64_t end) const;
  Vma* find_vma(std::uint64_t addr) { return const_cast<Vma*>(std::as_const(*this).find_vma(addr)); }
  Vma* vma_below(std::uint64_t start) { return const_cast<Vma*>(std::as_const(*this).vma_below(start)); }
  Vma* vma_above(std::uint64_t end) { return const_cast<Vma*>(std::as_const(*this).vma_above(end)); }
  // Inserts a VMA (vma_link); returns it.
  Vma& insert_vma(const Vma& v);
  // Removes the VMA that starts at `start` (detach_vmas_to_be_unmapped / vms_gather_munmap_vmas, and
  // unlink_file_vma); false if none.
  bool remove_vma(std::uint64_t start);
  // Removes every VMA (exit_mmap's remove_vma of each).
  void remove_all_vmas();
  // __split_vma: `v` keeps [v.start, addr) and a new VMA (its own lock) gets [addr, v.end); returns the new one.
  Vma& split_vma(Vma& v, std::uint64_t addr);
  // vma_expand / vma_merge's adjustments: `v` now spans [start, end) (re-keyed when its start moves; the Vma object
  // and its lock stay).
  void resize_vma(Vma& v, std::uint64_t start, std::uint64_t end);
  // get_unmapped_area for a mapping without an address hint, as x86-64's default top-down layout places it
  // (arch_get_unmapped_area_topdown -> vm_unmapped_area -> unmapped_area_topdown, mm/mmap.c): the highest gap below
  // mmap_base that holds `len`, its start aligned down to `align` (a power of two, at least a page; PMD_SIZE where
  // __get_unmapped_area aligns for THP: mmap_thp_align).
  std::uint64_t get_unmapped_area(std::uint64_t len, std::uint64_t align = kPageSize);
  // mm->mmap_base: the top of the mmap area. No randomization (the model has no ASLR): TASK_SIZE's 47-bit top less
  // the stack's gap, a 2 MiB-aligned address.
  static constexpr std::uint64_t kMmapBase = 0x7ff000000000;
  // Maps what lies just below mmap_base in a user process before its benchmark maps anything: the shared libraries
  // and the threads' stacks, each stack with a PROT_NONE guard page at its low end (glibc's allocate_stack), which
  // is the lowest of them. Modeled as one read-only VMA of a default 8 MiB stack (RLIMIT_STACK) and its guard page:
  // the first anonymous mapping lands right below it, in the same leaf page table, as in a real process, so that
  // unmapping it frees no page table. A bare mm (the checker's scenarios) has none.
  void map_process_image();
  static constexpr std::uint64_t kProcessImageSize = (std::uint64_t{8} << 20) + 4096;
  // mmap_min_addr's floor for the search (the model's mappings never come near it).
  static constexpr std::uint64_t kMmapMin = std::uint64_t{1} << 32;
  // The page-table lock of the leaf table covering v (split PTE locks), created on first use.
  Spinlock& ptl(Vpn v);
  // mm->page_table_lock, as pud_lock and pud_lockptr return it (include/linux/mm.h: no split PUD locks), created on
  // first use: only move_normal_pud takes it in the model.
  Spinlock& page_table_lock();
  // The wait queue of a page under migration (folio_waitqueue: one of PAGE_WAIT_TABLE_SIZE = 256 queues, hashed by
  // the page), one line each, created on first use: migrate_pages writes the page's queue when it unlocks the page
  // (folio_unlock -> folio_wake_bit), and a fault that found a migration entry waits for that write
  // (migration_entry_wait). The kernel's table is global; the model keeps one per mm.
  hw::Shared<std::uint64_t>& page_waitqueue(Pfn page);
  static constexpr std::size_t PAGE_WAIT_TABLE_SIZE = 256;
  // anon_vma->root->rwsem of the mm's anonymous memory (the model's one anon_vma per mm, AnonRmap), created on first
  // use: an rmap walk of an anonymous page holds it for read (rmap_walk_anon), mremap's copy_vma for write while it
  // links the new VMA (anon_vma_clone).
  RwSem& anon_vma_lock();

 private:
  std::uint32_t id_;
  bool is_init_mm_;
  hw::CoherenceModel& model_;
  SpinlockKind lock_kind_;
  std::unordered_map<std::uint64_t, std::unique_ptr<Spinlock>> ptls_;
  std::unique_ptr<Spinlock> page_table_lock_;
  std::unique_ptr<RwSem> anon_vma_lock_;
  std::uint64_t vma_seq_ = 0;                // the next Vma::anon_vma_seq
  std::vector<LineId> free_vma_lock_lines_;  // the lines of removed VMAs' locks, reused (vm_area_cachep's slab)
  std::vector<hw::Shared<std::uint64_t>> page_wait_table_;
};

}  // namespace tlbsim::kernel
