// Kernel locks on modeled cache lines. Waiters spin on the lock's line (see docs/model.md: until the scheduler
// model exists, a sleeping lock's waiter spins instead of sleeping).
#pragma once

#include "hw/memory.h"
#include "sim/task.h"

namespace tlbsim::kernel {

// spinlock_t: test-and-set on its line; waiters spin until the holder's release write.
class Spinlock {
 public:
  Spinlock(hw::CoherenceModel& model, const char* name) : v_{0, model.add_line(name)} {}
  sim::Task<void> lock(hw::Memory& mem, sim::Cpu& cpu) {
    for (;;) {
      const int seen = co_await mem.read(cpu, v_);
      if (seen != 0) {
        co_await mem.wait_for_write(cpu, v_.line);
        continue;
      }
      const int old = co_await mem.rmw(cpu, v_, [](int) { return 1; });
      if (old == 0) co_return;
    }
  }
  // spin_lock_irqsave where the arch spins with the caller's interrupt state restored (powerpc before v5.16,
  // arch_spin_lock_flags: a failed trylock restores `flags` while it spins on plain loads, then disables interrupts
  // again before the next trylock). Contract: called with interrupts disabled; returns with them disabled.
  sim::Task<void> lock_flags(hw::Memory& mem, sim::Cpu& cpu, bool irqs_were_enabled) {
    if (!irqs_were_enabled) {
      co_await lock(mem, cpu);
      co_return;
    }
    int seen = co_await mem.read(cpu, v_);
    for (;;) {
      if (seen == 0) {
        const int old = co_await mem.rmw(cpu, v_, [](int) { return 1; });
        if (old == 0) co_return;
      }
      co_await cpu.local_irq_enable();
      for (;;) {
        seen = co_await mem.read(cpu, v_);
        if (seen == 0) break;
        co_await mem.wait_for_write(cpu, v_.line);
      }
      cpu.local_irq_disable();
    }
  }
  // spin_lock_irqsave(lock, flags): disables interrupts and takes the lock; returns `flags`, whether interrupts were
  // enabled. `arch_spins_with_irqs_on`: KernelConfig::spin_lock_flags_enables_irqs().
  sim::Task<bool> lock_irqsave(hw::Memory& mem, sim::Cpu& cpu, bool arch_spins_with_irqs_on) {
    const bool flags = !cpu.irqs_disabled();
    cpu.local_irq_disable();
    if (flags && arch_spins_with_irqs_on) {
      co_await lock_flags(mem, cpu, true);
    } else {
      co_await lock(mem, cpu);
    }
    co_return flags;
  }
  sim::Task<void> unlock(hw::Memory& mem, sim::Cpu& cpu) { co_await mem.write(cpu, v_, 0); }
  bool held() const { return v_.value != 0; }
  LineId line() const { return v_.line; }

 private:
  hw::Shared<int> v_;
};

// rw_semaphore (mmap_lock): count > 0 readers, -1 a writer, 0 free; a waiting writer blocks new readers
// (RWSEM_FLAG_WAITERS with writer handoff), so readers that never drain cannot starve it.
class RwSem {
 public:
  struct State {
    int count = 0;
    int waiting_writers = 0;
  };
  RwSem(hw::CoherenceModel& model, const char* name) : v_{State{}, model.add_line(name)} {}

  // Waiters watch the state with plain loads and try the atomic only when it looks free (test-and-test-and-set,
  // as optimistic spinning does); see docs/model.md for why they spin rather than sleep.
  sim::Task<void> down_read(hw::Memory& mem, sim::Cpu& cpu) {
    for (;;) {
      const State seen = co_await mem.read(cpu, v_);
      if (seen.count < 0 || seen.waiting_writers > 0) {
        co_await mem.wait_for_write(cpu, v_.line);
        continue;
      }
      const State old = co_await mem.rmw(cpu, v_, [](State st) {
        if (st.count >= 0 && st.waiting_writers == 0) ++st.count;
        return st;
      });
      if (old.count >= 0 && old.waiting_writers == 0) co_return;
    }
  }
  sim::Task<void> up_read(hw::Memory& mem, sim::Cpu& cpu) {
    co_await mem.rmw(cpu, v_, [](State st) {
      --st.count;
      return st;
    });
  }
  sim::Task<void> down_write(hw::Memory& mem, sim::Cpu& cpu) {
    co_await mem.rmw(cpu, v_, [](State st) {
      ++st.waiting_writers;
      return st;
    });
    for (;;) {
      const State seen = co_await mem.read(cpu, v_);
      if (seen.count != 0) {
        co_await mem.wait_for_write(cpu, v_.line);
        continue;
      }
      const State old = co_await mem.rmw(cpu, v_, [](State st) {
        if (st.count == 0) {
          st.count = -1;
          --st.waiting_writers;
        }
        return st;
      });
      if (old.count == 0) co_return;
    }
  }
  sim::Task<void> up_write(hw::Memory& mem, sim::Cpu& cpu) {
    co_await mem.rmw(cpu, v_, [](State st) {
      st.count = 0;
      return st;
    });
  }
  // downgrade_write: the writer becomes one reader.
  sim::Task<void> downgrade_write(hw::Memory& mem, sim::Cpu& cpu) {
    co_await mem.rmw(cpu, v_, [](State st) {
      st.count = 1;
      return st;
    });
  }
  int value() const { return v_.value.count; }

 private:
  hw::Shared<State> v_;
};

}  // namespace tlbsim::kernel
