// struct rw_semaphore (kernel/locking/rwsem.c), the lock behind mmap_lock, with each era's optimistic spinning and
// its sleeping slow paths.
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

#include "hw/memory.h"
#include "kernel/locking/locks.h"
#include "model/config.h"
#include "sim/task.h"

namespace tlbsim::kernel {

class PerCpu;
class TaskStruct;

// The lock word: count > 0 readers, -1 a writer, 0 free; `waiters` is RWSEM_FLAG_WAITERS's population (queued
// sleepers and writers spinning for the lock), which keeps new readers out (writer preference: a waiting writer
// blocks new readers, as RWSEM_FLAG_WAITERS with handoff does, so readers that never drain cannot starve it);
// `nonspinnable` is the owner field's RWSEM_NONSPINNABLE bit, set by a writer that gave up spinning on a
// reader-owned lock and cleared when a writer takes the lock (rwsem_set_owner overwrites the owner field), from v5.3
// also by the reader that frees the lock with waiters queued and by a waiter queued on a free lock;
// `handoff` is RWSEM_FLAG_HANDOFF (v5.3+), set for a waiter queued longer than RWSEM_WAIT_TIMEOUT: it keeps spinners,
// stealing readers and every queued writer but the first out, so the lock passes to the head of the queue.
//
// Contract: the waiter's era decides how it waits (v3.3 sleeps at once; v3.16+ writers spin while a writer owns
// the lock; v5.3+ writers also spin on a reader-owned lock, for rwsem_rspin_threshold, and a waiter queued longer
// than RWSEM_WAIT_TIMEOUT sets the handoff bit; v5.3-v5.11 readers spin while a writer owns it; from v5.12 a reader
// whose fast path failed steals a free lock ahead of queued waiters unless the handoff bit is set). A waiter sleeps
// only when it is a task that the scheduler cannot move while it sleeps (pinned to its CPU): the mm code that takes
// mmap_lock runs on one PerCpu throughout, as the kernel's would after migrate_disable. Any other waiter (no scheduler,
// the idle task, a task free to migrate) keeps spinning (docs/model.md, "S: mmap_lock").
class RwSem {
 public:
  struct State {
    int count = 0;
    int waiters = 0;
    bool nonspinnable = false;
    bool handoff = false;
  };
  RwSem(hw::CoherenceModel& model, const char* name, SpinlockKind kind);

  sim::Task<void> down_read(PerCpu& self);
  // down_read_trylock (mmap_read_trylock): one attempt, no waiting. Returns whether the lock was taken.
  sim::Task<bool> down_read_trylock(PerCpu& self);
  sim::Task<void> up_read(PerCpu& self);
  sim::Task<void> down_write(PerCpu& self);
  sim::Task<void> up_write(PerCpu& self);
  // downgrade_write: the writer becomes one reader; queued readers at the head of the wait list are woken.
  sim::Task<void> downgrade_write(PerCpu& self);
  int value() const { return v_.value.count; }
  // RWSEM_NONSPINNABLE (for tests).
  bool nonspinnable() const { return v_.value.nonspinnable; }
  // How many tasks sleep on the wait list (for tests and dumps).
  std::size_t sleepers() const { return wait_list_.size(); }
  // The task on `self` that may sleep in a lock's wait (see the contract), or nullptr.
  static TaskStruct* sleeper(PerCpu& self);

 private:
  struct Waiter {
    TaskStruct* task;
    bool writer;
    std::int64_t timeout = 0;  // waiter->timeout: jiffies when queued + RWSEM_WAIT_TIMEOUT
    bool handoff_set = false;  // waiter->handoff_set: the handoff bit is this (first) waiter's
  };
  // Who makes an attempt on the lock word.
  enum class Attempt {
    kFast,     // rwsem_read_trylock / rwsem_write_trylock: RWSEM_FLAG_WAITERS (and the handoff bit) keep it out
    kSpinner,  // rwsem_try_write_lock_unqueued: ahead of the queue, unless the handoff bit is set
    kQueued,   // a waiter on the wait list (rwsem_try_write_lock for a writer)
  };
  // One attempt to take the lock: the word's rmw. `queued_task` is the waiter's task for kQueued.
  sim::Task<bool> rwsem_trylock(PerCpu& self, bool writer, Attempt who, const TaskStruct* queued_task = nullptr);
  // rwsem_try_write_lock under wait_lock for the queued writer `t`: takes a free lock unless the handoff bit is
  // another waiter's; on a held lock, sets the handoff bit once `t` has waited past its timeout (v5.3+).
  sim::Task<bool> rwsem_try_write_lock(PerCpu& self, TaskStruct& t);
  Waiter* find_waiter(const TaskStruct& t);
  // jiffies now, and a new waiter's timeout: RWSEM_WAIT_TIMEOUT is DIV_ROUND_UP(HZ, 250) jiffies (4 ms) later.
  std::int64_t jiffies(const PerCpu& self) const;
  std::int64_t wait_timeout(const PerCpu& self) const;
  // The era's rules: the handoff bit (v5.3+) and reader lock stealing (v5.12+).
  bool has_handoff(const PerCpu& self) const;
  bool readers_steal(const PerCpu& self) const;
  // rwsem_optimistic_spin for a writer: returns true with the lock taken, false when spinning stopped.
  sim::Task<bool> optimistic_spin_write(PerCpu& self);
  // rwsem_down_{read,write}_slowpath: queue on the wait list, sleep, retry on each wake-up.
  sim::Task<void> slowpath(PerCpu& self, TaskStruct& t, bool writer);
  // rwsem_spin_on_owner for the writer holding the handoff bit: spins while a writer owner runs; true when the lock
  // is then free (OWNER_NULL: try again at once), false when it should sleep.
  sim::Task<bool> spin_on_owner_after_handoff(PerCpu& self);
  // rwsem_wake / rwsem_downgrade_wake: wake the head waiter (and, for a reader at the head, the readers queued
  // behind it) when the lock has become free, or only readers after a downgrade.
  sim::Task<void> wake(PerCpu& self, bool readers_only);

  static TaskStruct* current_task(PerCpu& self);

  hw::Shared<State> v_;
  // sem->owner's task while a writer holds the lock (nullptr: free, reader-owned, or no scheduler); kept beside the
  // word, as the kernel's owner field shares its line.
  TaskStruct* owner_ = nullptr;
  Spinlock wait_lock_;            // sem->wait_lock
  std::deque<Waiter> wait_list_;  // sem->wait_list, FIFO
  std::vector<TaskStruct*> granted_;  // readers that rwsem_mark_wake gave the lock to, not yet back from sleep
};

}  // namespace tlbsim::kernel
