// The VMA lock and mmap_lock's write side as page faults and mmap_lock writers use them: mm/mmap_lock.c (v6.15+,
// "mm: replace vm_lock and detached flag with a reference count") and include/linux/mm.h and mmap_lock.h
// (v6.4-v6.14, the per-VMA rw_semaphore of "mm: introduce per-VMA lock"). Nothing of it exists before v6.4 on x86.
#include "kernel/barrier.h"
#include "kernel/sched/sched.h"
#include "mm/memory.h"
#include "trace/tracer.h"

namespace tlbsim::kernel {

namespace {

// vm_refcnt (v6.15+, "mm: replace vm_lock and detached flag with a reference count"): the VMA lock's era.
bool vma_refcount(KernelVersion version) { return version >= KernelVersion{6, 15}; }

}  // namespace

// vma_start_read (include/linux/mm.h v6.4-v6.14, include/linux/mmap_lock.h v6.15+): fails while an mmap_lock writer
// has write-locked the VMA (vm_lock_seq == mm_lock_seq) or holds its lock; otherwise read-locks it and checks again.
// v6.4-v6.14: down_read_trylock of vma->vm_lock. v6.15+: __refcount_inc_not_zero_limited_acquire of vm_refcnt,
// which fails while a writer's VMA_LOCK_OFFSET is in it.
sim::Task<bool> vma_start_read(PerCpu& self, MmStruct& mm, VmaLock& lock) {
  hw::Memory& m = self.k.mem();
  const std::uint64_t seq = co_await m.read(self.cpu, mm.mm_lock_seq);
  if (lock.vm_lock_seq == seq) co_return false;
  const bool refcnt = vma_refcount(self.k.config().version);
  const auto may_read = [refcnt](int c) { return refcnt ? c < VmaLock::kVmaLockOffset : c >= 0; };
  const int before = co_await m.rmw(self.cpu, lock.count, [&](int c) { return may_read(c) ? c + 1 : c; });
  if (!may_read(before)) co_return false;
  if (lock.vm_lock_seq == mm.mm_lock_seq.value) {
    co_await vma_end_read(self, mm, lock);
    co_return false;
  }
  co_return true;
}

// ARCH_SUPPORTS_PER_VMA_LOCK: x86 ("x86/mm: try VMA lock-based page fault handling first") and arm64
// ("arm64/mm: try VMA lock-based page fault handling first") in v6.4, powerpc in v6.5.
bool per_vma_lock(KernelVersion version, Arch arch) {
  if (arch == Arch::kX86 || arch == Arch::kArm64) return version >= KernelVersion{6, 4};
  if (arch == Arch::kPowerpc) return version >= KernelVersion{6, 5};
  return false;
}

// Read: v6.5 mm/memory.c (tdavenvidia/linux-nvidia-6.5 @871b1adf, checked against a patch made on the v6.5 tag);
// v6.6 mm/memory.c, mm/shmem.c and arch/arm64/mm/fault.c (Laminad/WSL2-Linux-Kernel @7ed2a119, a 6.6.36 tree whose
// fault paths match a patch made on the v6.6 tag); v6.13 mm/memory.c and mm/internal.h (6.13.7 and 6.13.2 trees);
// the v6.10 changes from Andrew Morton's "MM updates for 6.10-rc1" and Matthew Wilcox's postings.
VmaLockEra vma_lock_era(KernelVersion version, Arch arch) {
  VmaLockEra e;
  e.per_vma_lock = per_vma_lock(version, arch);
  if (!e.per_vma_lock) return e;
  e.anonymous_only = version < KernelVersion{6, 6};
  e.anon_vma_required = version < KernelVersion{6, 10};
  e.anon_vma_test_after_lock = version >= KernelVersion{6, 5};
  e.swap_retry = version < KernelVersion{6, 6};
  e.file_fault_retry = version >= KernelVersion{6, 6} && version < KernelVersion{6, 7};
  e.anon_prepare_trylock = version >= KernelVersion{6, 10};
  e.access_error_falls_back = arch == Arch::kArm64;
  e.madvise_dontneed = version >= KernelVersion{6, 17};
  return e;
}

sim::Task<const Vma*> lock_vma_under_rcu(PerCpu& self, MmStruct& mm, std::uint64_t addr) {
  VmaLockStats& stats = self.k.counters().vma_lock;
  const Vma* found = nullptr;
  for (const Vma* vma = mm.find_vma(addr); vma != nullptr && vma->contains(addr); vma = mm.find_vma(addr)) {
    const std::shared_ptr<VmaLock> lock = vma->vm_lock;  // rcu_read_lock keeps it
    if (!co_await vma_start_read(self, mm, *lock)) break;
    if (lock->detached) {
      co_await vma_end_read(self, mm, *lock);
      ++stats.miss;
      continue;
    }
    if (!vma->contains(addr)) {
      co_await vma_end_read(self, mm, *lock);
      break;
    }
    found = vma;
    break;
  }
  if (found == nullptr) ++stats.abort;
  co_return found;
}

// (One exit: GCC 12 built an earlier form, with a co_return before the first co_await and another inside a nested
// `if (!co_await ...)`, into a coroutine that crashed when destroyed.)
sim::Task<bool> vmf_anon_prepare(PerCpu& self, MmStruct& mm, const Vma& vma, bool vma_locked) {
  bool prepared = vma.anon_vma || !vma_locked;
  if (!prepared && vma_lock_era(self.k.config().version, self.k.arch().arch()).anon_prepare_trylock) {
    prepared = co_await mm.mmap_lock.down_read_trylock(self);
    if (prepared) co_await mm.mmap_lock.up_read(self);  // after __anon_vma_prepare, below
  }
  if (prepared) vma.anon_vma = true;  // __anon_vma_prepare
  co_return prepared;
}

sim::Task<void> vma_end_read(PerCpu& self, MmStruct& mm, VmaLock& lock) {
  const int before = co_await self.k.mem().rmw(self.cpu, lock.count, [](int c) { return c - 1; });
  // vma_refcount_put (v6.15+): the last reader before a waiting writer (is_vma_writer_only) wakes it, by
  // rcuwait_wake_up(&mm->vma_writer_wait).
  if (!vma_refcount(self.k.config().version) || before - 1 != VmaLock::kVmaLockOffset) co_return;
  if (TaskStruct* writer = mm.vma_writer_wait; writer != nullptr) {
    Sched& s = *self.k.sched();
    co_await s.try_to_wake_up(s.current(self.id), *writer);
  }
}

sim::Task<void> vma_start_write(PerCpu& self, MmStruct& mm, Vma& vma) {
  if (!per_vma_lock(self.k.config().version, self.k.arch().arch())) co_return;
  VmaLock& lock = *vma.vm_lock;
  const std::uint64_t seq = mm.mm_lock_seq.value;  // stable under mmap_lock held for write
  if (lock.vm_lock_seq == seq) co_return;          // __is_vma_write_locked
  hw::Memory& m = self.k.mem();
  if (!vma_refcount(self.k.config().version)) {
    for (;;) {  // down_write(&vma->vm_lock->lock): wait for the faults that hold it
      const int before = co_await m.rmw(self.cpu, lock.count, [](int c) { return c == 0 ? -1 : c; });
      if (before == 0) break;
      co_await m.wait_for_write(self.cpu, lock.count.line);
    }
    lock.vm_lock_seq = seq;
    co_await m.rmw(self.cpu, lock.count, [](int) { return 0; });  // up_write
    co_return;
  }
  // __vma_start_write (mm/mmap_lock.c, v6.15+): __vma_enter_locked adds VMA_LOCK_OFFSET, which fails new readers,
  // and waits in rcuwait_wait_event(TASK_UNINTERRUPTIBLE) until the readers have left; no spinning. A task that
  // cannot sleep here (RwSem::sleeper) waits on the line instead.
  const trace::TraceSpan span(self.k.tracer(), self.cpu, "__vma_enter_locked", "lock");
  co_await m.rmw(self.cpu, lock.count, [](int c) { return c + VmaLock::kVmaLockOffset; });
  TaskStruct* t = RwSem::sleeper(self);
  if (t != nullptr) mm.vma_writer_wait = t;  // prepare_to_rcuwait
  for (;;) {
    if (t != nullptr) t->state = TaskState::TASK_UNINTERRUPTIBLE;  // set_current_state
    const int c = co_await m.read(self.cpu, lock.count);
    if (c == VmaLock::kVmaLockOffset) break;
    if (t != nullptr) {
      co_await self.k.sched()->schedule(*t);
    } else {
      co_await m.wait_for_write(self.cpu, lock.count.line);
    }
  }
  if (t != nullptr) {
    mm.vma_writer_wait = nullptr;  // finish_rcuwait
    t->state = TaskState::TASK_RUNNING;
  }
  lock.vm_lock_seq = seq;  // WRITE_ONCE(vma->vm_lock_seq, mm_lock_seq)
  co_await m.rmw(self.cpu, lock.count, [](int c) { return c - VmaLock::kVmaLockOffset; });  // __vma_exit_locked
}

sim::Task<void> vma_start_write_unlinked(PerCpu& self, const MmStruct& mm, Vma& vma) {
  if (per_vma_lock(self.k.config().version, self.k.arch().arch())) {
    VmaLock& lock = *vma.vm_lock;
    lock.vm_lock_seq = mm.mm_lock_seq.value;
    hw::Memory& m = self.k.mem();
    co_await m.rmw(self.cpu, lock.count, [](int c) { return c; });
    co_await m.rmw(self.cpu, lock.count, [](int c) { return c; });
  }
}

namespace {

// vma_end_write_all: every VMA this writer write-locked is unlocked by one store.
sim::Task<void> vma_end_write_all(PerCpu& self, MmStruct& mm) {
  if (!per_vma_lock(self.k.config().version, self.k.arch().arch())) co_return;
  smp_store_release_fence(self.k.mem(), self.cpu);  // smp_store_release(&mm->mm_lock_seq, ...)
  co_await self.k.mem().write(self.cpu, mm.mm_lock_seq, mm.mm_lock_seq.value + 1);
}

}  // namespace

sim::Task<void> mmap_write_unlock(PerCpu& self, MmStruct& mm) {
  co_await vma_end_write_all(self, mm);
  co_await mm.mmap_lock.up_write(self);
}

sim::Task<void> mmap_write_downgrade(PerCpu& self, MmStruct& mm) {
  co_await vma_end_write_all(self, mm);
  co_await mm.mmap_lock.downgrade_write(self);
}

}  // namespace tlbsim::kernel
