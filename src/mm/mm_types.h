// struct mm_struct as far as TLB shootdown cares: the arch's context, mm_cpumask, mm_users/mm_count,
// tlb_flush_pending, mmap_lock, the VMAs and the page tables.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "hw/memory.h"
#include "kernel/arch_mmu.h"
#include "kernel/locking/locks.h"
#include "lib/cpumask.h"
#include "mm/pgtable.h"

namespace tlbsim::kernel {

// A file's page cache (a sparse file: every page reads as zeros).
struct File {
  std::uint32_t id = 0;
  std::uint64_t size = 0;
  std::unordered_map<std::uint64_t, Pfn> pages;  // page offset -> frame
};

struct Vma {
  std::uint64_t start = 0, end = 0;  // [start, end), page aligned
  bool writable = false;
  bool shared = false;      // MAP_SHARED
  File* file = nullptr;     // nullptr: anonymous
  std::uint64_t pgoff = 0;  // file offset of start, in pages
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
  RwSem mmap_lock;
  PageTables pgd;
  std::vector<Vma> vmas;

  const Vma* find_vma(std::uint64_t addr) const;
  // get_unmapped_area: a fresh range above the previous ones.
  std::uint64_t get_unmapped_area(std::uint64_t len);
  // The page-table lock of the leaf table covering v (split PTE locks), created on first use.
  Spinlock& ptl(Vpn v);

 private:
  std::uint32_t id_;
  bool is_init_mm_;
  hw::CoherenceModel& model_;
  SpinlockKind lock_kind_;
  std::uint64_t next_addr_ = std::uint64_t{1} << 32;
  std::unordered_map<std::uint64_t, std::unique_ptr<Spinlock>> ptls_;
};

}  // namespace tlbsim::kernel
