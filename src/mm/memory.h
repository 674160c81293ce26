// The memory-management paths the workloads need, modeled on mm/memory.c, mm/mmu_gather.c, mm/madvise.c and
// mm/mmap.c of Linux v5.15-v5.17: user accesses through the TLB, page faults, mmap, munmap and
// madvise(MADV_DONTNEED) with the mmu_gather flow that flushes before freeing.
#pragma once

#include <cstdint>
#include <stdexcept>

#include "kernel/kernel.h"

namespace tlbsim::kernel {

// do_read_fault's fault-around window in base pages: fault_around_bytes (64 KiB) >> PAGE_SHIFT, used only when it
// is above 1 (mm/memory.c, from v3.15, "mm: introduce vm_ops->map_pages()"). x86's 4 KiB pages give 16; powerpc64's
// 64 KiB pages give 1: no fault-around. None before v3.15.
std::uint64_t fault_around_pages(KernelVersion version, std::uint64_t page_size);
// CONFIG_PER_VMA_LOCK: whether page faults try the VMA's own lock before mmap_lock (x86 and arm64 from v6.4,
// powerpc from v6.5).
bool per_vma_lock(KernelVersion version, Arch arch);
// How far a fault gets under the VMA lock alone in an era: which VMAs lock_vma_under_rcu (mm/memory.c) refuses, and
// where the fault paths give up with VM_FAULT_RETRY for the arch's handler to run the fault again under mmap_lock.
struct VmaLockEra {
  bool per_vma_lock = false;
  // v6.4-v6.5: only anonymous VMAs (vma_is_anonymous: no vm_ops; shmem is not one), tested before vma_start_read.
  bool anonymous_only = false;
  // v6.4-v6.9: an anonymous VMA without an anon_vma is refused (find_mergeable_anon_vma reads unlocked neighbours);
  // tested after vma_start_read from v6.5 ("mm: lock_vma_under_rcu() must check vma->anon_vma under vma lock"),
  // before it in v6.4. v6.10 ("mm: delay the check for a NULL anon_vma") moves the test into vmf_anon_prepare.
  bool anon_vma_required = false;
  bool anon_vma_test_after_lock = false;
  // v6.4-v6.5: do_swap_page retries every non-present PTE under the VMA lock (in the model: a migration entry).
  bool swap_retry = false;
  // v6.6 (Matthew Wilcox, "Handle most file-backed faults under the VMA lock"): file VMAs are taken, but
  // do_read_fault retries after its fault-around unless that mapped the faulting page, do_cow_fault and
  // do_shared_fault retry at once, wp_page_shared retries where the file has ->page_mkwrite (shmem has none), and
  // do_wp_page retries before a copy when the VMA has no anon_vma. v6.7 (vmf_can_call_fault: files with
  // ->map_pages, which every modeled file has, call ->fault under the VMA lock) lifts all but the last, which
  // vmf_anon_prepare keeps for every fault that needs an anon_vma (vmf_anon_prepare below).
  bool file_fault_retry = false;
  // v6.10+ ("mm: optimise vmf_anon_prepare() for VMAs without an anon_vma"): vmf_anon_prepare, under the VMA lock,
  // tries mmap_lock for read to make the anon_vma and retries only when that fails; before, it retried.
  bool anon_prepare_trylock = false;
  // arm64's do_page_fault (v6.4+) sends a VMA that refuses the access (vm_flags) to the mmap_lock path, which then
  // signals; x86's do_user_addr_fault signals under the VMA lock.
  bool access_error_falls_back = false;
  // v6.17+ (Barry Song, "mm: use per_vma lock for MADV_DONTNEED"): madvise(MADV_DONTNEED) of a range inside one VMA
  // runs under that VMA's read lock (get_lock_mode: MADVISE_VMA_READ_LOCK; try_vma_read_lock), and takes mmap_lock
  // for read only when lock_vma_under_rcu fails or the range leaves the VMA.
  bool madvise_dontneed = false;
};
// lock_vma_under_rcu (mm/memory.c v6.4-v6.14, mm/mmap_lock.c v6.15+) without a fault's era checks: the VMA at `addr`,
// read-locked (vma_start_read), looked up again when it was detached meanwhile (VMA_LOCK_MISS); nullptr when there is
// none, it is write-locked, or it no longer covers `addr` (VMA_LOCK_ABORT).
sim::Task<const Vma*> lock_vma_under_rcu(PerCpu& self, MmStruct& mm, std::uint64_t addr);
VmaLockEra vma_lock_era(KernelVersion version, Arch arch);
// vma_is_anonymous (include/linux/mm.h): a private anonymous VMA, with no vm_ops (MAP_SHARED | MAP_ANONYMOUS memory
// is shmem's).
inline bool vma_is_anonymous(const Vma& vma) { return vma.file == nullptr && !vma.shared; }
// anon_vma_prepare, and from v6.7 vmf_anon_prepare (mm/memory.c; __vmf_anon_prepare with its mm/internal.h wrapper
// from v6.12): a fault that is about to map an anonymous page gives the VMA an anon_vma if it has none. Under
// mmap_lock that is done (__anon_vma_prepare). Under the VMA lock alone, which does not keep the neighbours stable
// that find_mergeable_anon_vma reads, the fault gives up (false: VM_FAULT_RETRY; the caller drops its locks), except
// from v6.10, which tries mmap_lock for read first and gives up only if the trylock fails. Before v6.10 only a
// private file VMA can get here without an anon_vma under the VMA lock (lock_vma_under_rcu refuses an anonymous one).
sim::Task<bool> vmf_anon_prepare(PerCpu& self, MmStruct& mm, const Vma& vma, bool vma_locked);
// __get_unmapped_area's alignment of a mapping without an address hint (mm/mmap.c): PMD_SIZE for an anonymous
// private mapping from v6.8 ("mm: align larger anonymous mappings on THP boundaries", efa7df3e3bb5), only when its
// length is a multiple of PMD_SIZE from v6.12 (d4148aeab412); a page otherwise.
std::uint64_t mmap_thp_align(KernelVersion version, bool anon, std::uint64_t len);
// vma_start_write (v6.4+; nothing before): with mmap_lock held for write, wait for the faults holding `vma`'s lock
// and mark the VMA write-locked until mmap_write_unlock or mmap_write_downgrade.
sim::Task<void> vma_start_write(PerCpu& self, MmStruct& mm, Vma& vma);
// vma_start_write of a VMA that no fault can see yet (v6.4+; nothing before): copy_vma write-locks its new VMA before
// vma_link makes it visible ("mm/mremap: write-lock VMA while remapping it to a new address range", Suren
// Baghdasaryan, in the v6.4 per-VMA lock series: "to prevent handling page faults during move_page_tables()"), so
// no reader holds its lock: it is marked before the first step another CPU could run between, then the lock's two
// atomics (down_write and up_write of vm_lock before v6.15, __vma_enter_locked and __vma_exit_locked from it) are
// charged on its line.
sim::Task<void> vma_start_write_unlinked(PerCpu& self, const MmStruct& mm, Vma& vma);
// vma_start_read (include/linux/mm.h v6.4-v6.14, include/linux/mmap_lock.h v6.15+): a fault's try at `lock`; false
// while an mmap_lock writer has write-locked the VMA or holds its lock.
sim::Task<bool> vma_start_read(PerCpu& self, MmStruct& mm, VmaLock& lock);
// vma_end_read: a fault drops its read lock of a VMA; from v6.15 the last reader wakes the writer waiting for it in
// vma_start_write (vma_refcount_put).
sim::Task<void> vma_end_read(PerCpu& self, MmStruct& mm, VmaLock& lock);
// mmap_write_unlock and mmap_write_downgrade (include/linux/mmap_lock.h): vma_end_write_all, then the rwsem's.
sim::Task<void> mmap_write_unlock(PerCpu& self, MmStruct& mm);
sim::Task<void> mmap_write_downgrade(PerCpu& self, MmStruct& mm);

struct MmuGather;
// zap_pte_range over [start, end) of one VMA (mm/memory.c): clears the PTEs under each table's lock (a migration
// entry too), gathers the anonymous pages into `tlb`, and flushes under the lock when the gather is full.
sim::Task<void> zap_page_range_in(PerCpu& self, MmuGather& tlb, MmStruct& mm, std::uint64_t start, std::uint64_t end);

// A user access outside every mapping: the task would get SIGSEGV.
class Sigsegv : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A user-mode load or store by the task running on `self` with `mm` loaded: a TLB lookup (checked by the
// oracle on a hit), else a page walk, else a page fault, then the access. Throws on an access outside any VMA.
sim::Task<void> user_access(PerCpu& self, MmStruct& mm, std::uint64_t addr, bool write);

// mmap(NULL, len, PROT_READ|PROT_WRITE, shared ? MAP_SHARED : MAP_PRIVATE, fd, pgoff): returns the address.
// `align` (a power of two, at least a page) places the mapping at a multiple of it: what a program gets with
// MAP_FIXED_NOREPLACE at an aligned address that get_unmapped_area's top-down search would reach (the model has
// no hint search of its own; docs/model.md).
sim::Task<std::uint64_t> sys_mmap(PerCpu& self, MmStruct& mm, std::uint64_t len, bool shared, File* file,
                                  std::uint64_t pgoff, std::uint64_t align = kPageSize);
// do_munmap (do_vmi_munmap) of [addr, addr + len) with mmap_lock held for write: splits the VMAs that straddle its
// ends, detaches those inside, zaps the range and frees its page tables through one mmu_gather. With `downgrade` it
// downgrades mmap_lock to read once the VMAs are detached and returns true: the caller then holds it for read.
sim::Task<bool> do_munmap(PerCpu& self, MmStruct& mm, std::uint64_t addr, std::uint64_t len, bool downgrade);
// munmap(addr, len) of exactly one earlier mapping.
sim::Task<void> sys_munmap(PerCpu& self, MmStruct& mm, std::uint64_t addr, std::uint64_t len);
// madvise(addr, len, MADV_DONTNEED).
sim::Task<void> sys_madvise_dontneed(PerCpu& self, MmStruct& mm, std::uint64_t addr, std::uint64_t len);

}  // namespace tlbsim::kernel
