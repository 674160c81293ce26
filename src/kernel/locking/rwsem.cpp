// Models kernel/locking/rwsem.c: the fast paths, rwsem_optimistic_spin (a writer's, v3.16+; on a reader-owned lock
// from v5.3, "locking/rwsem: Enable time-based spinning on reader-owned rwsem"), rwsem_down_{read,write}_slowpath,
// rwsem_wake and rwsem_downgrade_wake, as of v6.13 (read in Kingxukai/linux @0291023e), with the era differences the
// header lists. rwsem_mark_wake hands the lock to the readers it wakes; a woken writer retries it itself. A writer
// spinning on a writer owner stops when that owner leaves its CPU (it sleeps holding the lock, as a v6.15+
// vma_start_write does). The handoff bit (v5.3) and reader lock stealing (v5.12) are v6.13's: a waiter past its
// timeout sets the bit in rwsem_try_write_lock or rwsem_mark_wake, and it keeps out spinners and stealing readers.
// Simplified (docs/model.md): the osq queue of spinners is not modeled, a spinner does not stop for need_resched,
// and stealing does not also require an empty osq (rwsem_no_spinners, in the first releases that had it).
#include "kernel/locking/rwsem.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "kernel/kernel.h"
#include "kernel/sched/sched.h"
#include "trace/tracer.h"

namespace tlbsim::kernel {

RwSem::RwSem(hw::CoherenceModel& model, const char* name, SpinlockKind kind)
    : v_{State{}, model.add_line(name)}, wait_lock_(model, "rwsem.wait_lock", kind) {}

TaskStruct* RwSem::sleeper(PerCpu& self) {
  Sched* s = self.k.sched();
  if (s == nullptr) return nullptr;
  TaskStruct& t = s->current(self.id);
  if (t.is_idle || t.cpus_allowed.size() == 0 || t.cpus_allowed.weight() != 1 || !t.cpus_allowed.test(self.id)) {
    return nullptr;
  }
  return &t;
}

TaskStruct* RwSem::current_task(PerCpu& self) {
  Sched* s = self.k.sched();
  return s == nullptr ? nullptr : &s->current(self.id);
}

sim::Task<bool> RwSem::rwsem_trylock(PerCpu& self, bool writer, Attempt who, const TaskStruct* queued_task) {
  // A queued reader takes the lock only with no writer queued ahead of it: rwsem_down_read_slowpath queues a
  // reader behind a sleeping writer when readers own the lock (no lock stealing then), and rwsem_mark_wake hands
  // the lock to the readers at the head of the queue only.
  bool writer_ahead = false;
  if (who == Attempt::kQueued && !writer) {
    for (const Waiter& w : wait_list_) {
      if (w.task == queued_task) break;
      writer_ahead = writer_ahead || w.writer;
    }
  }
  const auto may_take = [writer, who, writer_ahead](const State& st) {
    if (who == Attempt::kFast && (st.waiters > 0 || st.handoff)) return false;
    if (who == Attempt::kSpinner && st.handoff) return false;
    return writer ? st.count == 0 : st.count >= 0 && !writer_ahead;
  };
  const State old = co_await self.k.mem().rmw(self.cpu, v_, [&](State st) {
    if (may_take(st)) {
      if (writer) {
        st.count = -1;
        st.nonspinnable = false;  // rwsem_set_owner
      } else {
        ++st.count;
      }
    }
    return st;
  });
  if (writer && may_take(old)) owner_ = current_task(self);  // rwsem_set_owner
  co_return may_take(old);
}

RwSem::Waiter* RwSem::find_waiter(const TaskStruct& t) {
  for (Waiter& w : wait_list_) {
    if (w.task == &t) return &w;
  }
  return nullptr;
}

std::int64_t RwSem::jiffies(const PerCpu& self) const { return jiffies_at(self.cpu.now(), self.k.config().HZ); }

std::int64_t RwSem::wait_timeout(const PerCpu& self) const {
  const std::int64_t hz = std::max<std::int64_t>(self.k.config().HZ, 1);
  return jiffies(self) + (hz + 249) / 250;  // RWSEM_WAIT_TIMEOUT: DIV_ROUND_UP(HZ, 250)
}

bool RwSem::has_handoff(const PerCpu& self) const {
  // "locking/rwsem: Implement lock handoff to prevent lock starvation" (4f23dbc1e657, v5.3).
  return self.k.config().version >= KernelVersion{5, 3};
}

bool RwSem::readers_steal(const PerCpu& self) const {
  // "locking/rwsem: Enable reader optimistic lock stealing" (1a728dff855a), of the series that also removed reader
  // optimistic spinning; the model dates both to v5.12 (no profile lies between v5.10 and v5.17).
  return self.k.config().version >= KernelVersion{5, 12};
}

sim::Task<bool> RwSem::rwsem_try_write_lock(PerCpu& self, TaskStruct& t) {
  Waiter* me = find_waiter(t);
  Waiter& first = wait_list_.front();
  const bool me_first = &first == me;
  // A waiter (first or not) may set the handoff bit once it has waited past its timeout: time_after(jiffies,
  // waiter->timeout). The bit then belongs to the first waiter (first->handoff_set).
  const bool timed_out = has_handoff(self) && me != nullptr && jiffies(self) > me->timeout;
  const bool yields = first.handoff_set && !me_first;  // honor the first waiter's handoff
  const State old = co_await self.k.mem().rmw(self.cpu, v_, [&](State st) {
    if (st.handoff && yields) return st;
    if (st.count != 0) {
      if (!st.handoff && timed_out) st.handoff = true;
      return st;
    }
    st.count = -1;
    st.nonspinnable = false;  // rwsem_set_owner
    st.handoff = false;
    return st;
  });
  if (old.handoff && yields) co_return false;
  if (old.count != 0) {
    if (!old.handoff && timed_out) first.handoff_set = true;
    co_return false;
  }
  owner_ = current_task(self);
  co_return true;
}

sim::Task<bool> RwSem::optimistic_spin_write(PerCpu& self) {
  const trace::TraceSpan span(self.k.tracer(), self.cpu, "rwsem_optimistic_spin", "lock");
  hw::Memory& mem = self.k.mem();
  const bool spins_on_readers = self.k.config().version >= KernelVersion{5, 3};
  std::optional<sim::SimTime> rspin_threshold;
  for (;;) {
    const State seen = co_await mem.read(self.cpu, v_);
    if (seen.count == 0) {
      // rwsem_try_write_lock_unqueued: a spinner may take a free lock ahead of queued waiters, unless the handoff
      // bit reserves it for the first of them: then it spins on (OWNER_NULL) until that waiter has it.
      if (seen.handoff) {
        co_await mem.wait_for_write(self.cpu, v_.line);
        continue;
      }
      if (co_await rwsem_trylock(self, true, Attempt::kSpinner)) co_return true;
      continue;
    }
    if (seen.count < 0) {
      // rwsem_spin_on_owner: a writer owns it; spin while that owner runs (owner_on_cpu), until the owner field
      // changes. An owner that is not on its CPU (it sleeps holding the lock) ends the spin (OWNER_NONSPINNABLE),
      // and the writer goes to sleep.
      rspin_threshold.reset();
      TaskStruct* owner = owner_;
      if (owner == nullptr) {
        co_await mem.wait_for_write(self.cpu, v_.line);
        continue;
      }
      if (!co_await mem.read(self.cpu, owner->on_cpu)) co_return false;
      co_await mem.wait_for_write_either(self.cpu, v_.line, owner->on_cpu.line);
      continue;
    }
    // Reader-owned. Before v5.3, rwsem_can_spin_on_owner gives up at once; from v5.3 the writer spins for
    // rwsem_rspin_threshold, (20 + readers) / 2 us with readers capped at 30, unless an earlier writer already gave
    // up (RWSEM_NONSPINNABLE); past it, it marks the lock nonspinnable and goes to sleep.
    if (!spins_on_readers || seen.nonspinnable) co_return false;
    if (!rspin_threshold) {
      rspin_threshold = self.cpu.now() + sim::nanoseconds(500) * (20 + std::min(seen.count, 30));
    }
    if (self.cpu.now() >= *rspin_threshold) {
      co_await mem.rmw(self.cpu, v_, [](State st) {
        if (st.count > 0) st.nonspinnable = true;  // rwsem_set_nonspinnable: only while readers own it
        return st;
      });
      co_return false;
    }
    co_await mem.wait_for_write_until(self.cpu, v_.line, *rspin_threshold);
  }
}

sim::Task<void> RwSem::slowpath(PerCpu& self, TaskStruct& t, bool writer) {
  const trace::TraceSpan span(self.k.tracer(), self.cpu,
                              writer ? "rwsem_down_write_slowpath" : "rwsem_down_read_slowpath", "lock");
  hw::Memory& mem = self.k.mem();
  Sched& s = *self.k.sched();
  co_await wait_lock_.lock(mem, self.cpu);
  // Queued on a lock that nobody holds, a waiter clears RWSEM_NONSPINNABLE so that writers spin again: a reader
  // from v5.3 (clear_wr_nonspinnable, then clear_nonspinnable), a writer queued behind others from v5.19
  // (rwsem_cond_wake_waiter, "locking/rwsem: Conditionally wake waiters in reader/writer slowpaths").
  const KernelVersion v = self.k.config().version;
  const bool clears = writer ? !wait_list_.empty() && v >= KernelVersion{5, 19} : v >= KernelVersion{5, 3};
  wait_list_.push_back(Waiter{&t, writer, wait_timeout(self)});
  co_await mem.rmw(self.cpu, v_, [clears](State st) {
    ++st.waiters;  // RWSEM_FLAG_WAITERS
    if (clears && st.count == 0) st.nonspinnable = false;
    return st;
  });
  // The wait loop: try, and sleep in TASK_UNINTERRUPTIBLE until a release wakes this task. A reader may find that
  // the waker has already granted it the lock (rwsem_mark_wake took it off the list: waiter.task == NULL).
  for (;;) {
    if (!writer && std::erase(granted_, &t) > 0) {
      t.state = TaskState::TASK_RUNNING;
      co_await wait_lock_.unlock(mem, self.cpu);
      co_return;
    }
    if (writer ? co_await rwsem_try_write_lock(self, t) : co_await rwsem_trylock(self, false, Attempt::kQueued, &t)) {
      break;
    }
    co_await wait_lock_.unlock(mem, self.cpu);
    // A writer that holds the handoff bit spins on a writer owner that runs (rwsem_spin_on_owner) and, when the
    // lock is then free (OWNER_NULL), tries again without sleeping.
    const Waiter* me = writer ? find_waiter(t) : nullptr;
    if (me != nullptr && me->handoff_set && co_await spin_on_owner_after_handoff(self)) {
      co_await wait_lock_.lock(mem, self.cpu);
      continue;
    }
    t.state = TaskState::TASK_UNINTERRUPTIBLE;
    co_await s.schedule(t);
    co_await wait_lock_.lock(mem, self.cpu);
  }
  t.state = TaskState::TASK_RUNNING;
  std::erase_if(wait_list_, [&t](const Waiter& w) { return w.task == &t; });
  co_await mem.rmw(self.cpu, v_, [this](State st) {
    --st.waiters;
    if (wait_list_.empty()) st.handoff = false;  // rwsem_del_waiter of the last waiter
    return st;
  });
  co_await wait_lock_.unlock(mem, self.cpu);
}

sim::Task<bool> RwSem::spin_on_owner_after_handoff(PerCpu& self) {
  hw::Memory& mem = self.k.mem();
  for (;;) {
    const State seen = co_await mem.read(self.cpu, v_);
    if (seen.count == 0) co_return true;  // OWNER_NULL
    TaskStruct* owner = owner_;
    if (seen.count > 0 || seen.nonspinnable || owner == nullptr) co_return false;  // OWNER_READER, NONSPINNABLE
    if (!co_await mem.read(self.cpu, owner->on_cpu)) co_return false;              // !owner_on_cpu
    co_await mem.wait_for_write_either(self.cpu, v_.line, owner->on_cpu.line);
  }
}

sim::Task<void> RwSem::wake(PerCpu& self, bool readers_only) {
  // The release saw RWSEM_FLAG_WAITERS: the wait list is read under wait_lock (rwsem_wake).
  if (wait_list_.empty()) co_return;
  hw::Memory& mem = self.k.mem();
  Sched& s = *self.k.sched();
  co_await wait_lock_.lock(mem, self.cpu);
  std::vector<TaskStruct*> woken;
  if (!wait_list_.empty()) {
    if (wait_list_.front().writer) {
      if (!readers_only) woken.push_back(wait_list_.front().task);  // RWSEM_WAKE_ANY: the writer at the head
    } else {
      // rwsem_mark_wake: the readers of the queue are granted the lock here, on their behalf (the count's reader
      // bias is added for each and each is taken off the list), unless a writer took the lock in the meantime
      // (RWSEM_WAKE_ANY only; after a downgrade the lock is this CPU's, reader-owned). From v5.3 ("locking/rwsem:
      // Wake up almost all readers in wait queue", d3681e269fff) every reader of the queue, past queued writers;
      // before, the readers at its head, up to the first writer.
      const bool all_readers = self.k.config().version >= KernelVersion{5, 3};
      std::size_t end = 0;
      while (end < wait_list_.size() && (all_readers || !wait_list_[end].writer)) ++end;
      for (std::size_t i = 0; i < end; ++i) {
        if (!wait_list_[i].writer) woken.push_back(wait_list_[i].task);
      }
      const int n = static_cast<int>(woken.size());
      // A writer holds the lock: the head reader that has waited past its timeout sets the handoff bit (v5.3+).
      Waiter& head = wait_list_.front();
      const bool timed_out = has_handoff(self) && jiffies(self) > head.timeout;
      const State old = co_await mem.rmw(self.cpu, v_, [n, timed_out](State st) {
        if (st.count >= 0) {
          st.count += n;
          st.waiters -= n;
          st.handoff = false;  // a reader was woken: writers need no longer be forced to give way
        } else if (timed_out) {
          st.handoff = true;
        }
        return st;
      });
      if (old.count < 0 && timed_out) head.handoff_set = true;
      if (old.count >= 0) {
        std::erase_if(wait_list_, [&woken](const Waiter& w) {
          return std::find(woken.begin(), woken.end(), w.task) != woken.end();
        });
        granted_.insert(granted_.end(), woken.begin(), woken.end());
      } else {
        woken.clear();
      }
    }
  }
  co_await wait_lock_.unlock(mem, self.cpu);
  TaskStruct& waker = s.current(self.id);
  for (TaskStruct* t : woken) co_await s.try_to_wake_up(waker, *t);  // wake_up_q
}

sim::Task<bool> RwSem::down_read_trylock(PerCpu& self) {
  const bool taken = co_await rwsem_trylock(self, false, Attempt::kFast);
  co_return taken;
}

sim::Task<void> RwSem::down_read(PerCpu& self) {
  hw::Memory& mem = self.k.mem();
  TaskStruct* t = sleeper(self);
  if (t == nullptr) {
    // A waiter that cannot sleep: test-and-test-and-set on the word while a writer holds or waits for it.
    for (;;) {
      const State seen = co_await mem.read(self.cpu, v_);
      if (seen.count < 0 || seen.waiters > 0) {
        co_await mem.wait_for_write(self.cpu, v_.line);
        continue;
      }
      if (co_await rwsem_trylock(self, false, Attempt::kFast)) co_return;
    }
  }
  const KernelVersion v = self.k.config().version;
  const bool readers_spin = v >= KernelVersion{5, 3} && v < KernelVersion{5, 12};
  for (;;) {
    if (co_await rwsem_trylock(self, false, Attempt::kFast)) co_return;  // rwsem_read_trylock
    if (!readers_spin) break;
    // v5.3-v5.11: a reader spins while a writer owns the lock (its optimistic spin), then tries again.
    const State seen = co_await mem.read(self.cpu, v_);
    if (seen.count >= 0) break;
    co_await mem.wait_for_write(self.cpu, v_.line);
  }
  if (readers_steal(self)) {
    // rwsem_down_read_slowpath's entry: unless other readers own the lock (then it queues, so that a stream of
    // readers cannot starve a sleeping writer), a reader steals a lock that no writer holds and no handoff reserves,
    // ahead of the queue; the first such reader wakes the readers queued (rwsem_mark_wake, RWSEM_WAKE_READ_OWNED).
    const State old = co_await mem.rmw(self.cpu, v_, [](State st) {
      if (st.count == 0 && !st.handoff) ++st.count;
      return st;
    });
    if (old.count == 0 && !old.handoff) {
      if (old.waiters > 0) co_await wake(self, true);
      co_return;
    }
  }
  co_await slowpath(self, *t, false);
}

sim::Task<void> RwSem::up_read(PerCpu& self) {
  // __up_read: the reader that frees the lock with waiters queued clears RWSEM_NONSPINNABLE (v5.3+), so that the
  // next writer spins on the next reader phase again.
  const bool clears = self.k.config().version >= KernelVersion{5, 3};
  const State old = co_await self.k.mem().rmw(self.cpu, v_, [clears](State st) {
    --st.count;
    if (clears && st.count == 0 && st.waiters > 0) st.nonspinnable = false;
    return st;
  });
  if (old.count == 1) co_await wake(self, false);
}

sim::Task<void> RwSem::down_write(PerCpu& self) {
  TaskStruct* t = sleeper(self);
  if (t == nullptr) {
    // A waiter that cannot sleep: counted in `waiters` from the start, so that new readers stay out, it spins on
    // the word until the lock is free and takes it.
    hw::Memory& mem = self.k.mem();
    co_await mem.rmw(self.cpu, v_, [](State st) {
      ++st.waiters;
      return st;
    });
    for (;;) {
      const State seen = co_await mem.read(self.cpu, v_);
      if (seen.count != 0) {
        co_await mem.wait_for_write(self.cpu, v_.line);
        continue;
      }
      const State old = co_await mem.rmw(self.cpu, v_, [](State st) {
        if (st.count == 0) {
          st.count = -1;
          st.nonspinnable = false;
          --st.waiters;
        }
        return st;
      });
      if (old.count == 0) {
        owner_ = current_task(self);
        co_return;
      }
    }
  }
  if (co_await rwsem_trylock(self, true, Attempt::kFast)) co_return;  // rwsem_write_trylock
  if (self.k.config().version >= KernelVersion{3, 16} && co_await optimistic_spin_write(self)) co_return;
  co_await slowpath(self, *t, true);
}

sim::Task<void> RwSem::up_write(PerCpu& self) {
  owner_ = nullptr;  // rwsem_clear_owner
  co_await self.k.mem().rmw(self.cpu, v_, [](State st) {
    st.count = 0;
    return st;
  });
  co_await wake(self, false);
}

sim::Task<void> RwSem::downgrade_write(PerCpu& self) {
  owner_ = nullptr;  // __rwsem_set_reader_owned: reader-owned from here
  co_await self.k.mem().rmw(self.cpu, v_, [](State st) {
    st.count = 1;
    return st;
  });
  co_await wake(self, true);
}

}  // namespace tlbsim::kernel
