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
      const int old = co_await mem.rmw(cpu, v_, [](int) { return 1; });
      if (old == 0) co_return;
      for (;;) {
        co_await mem.wait_for_write(cpu, v_.line);
        const int now = co_await mem.read(cpu, v_);
        if (now == 0) break;
      }
    }
  }
  sim::Task<void> unlock(hw::Memory& mem, sim::Cpu& cpu) { co_await mem.write(cpu, v_, 0); }
  bool held() const { return v_.value != 0; }

 private:
  hw::Shared<int> v_;
};

// rw_semaphore (mmap_lock): count > 0 readers, -1 a writer, 0 free.
class RwSem {
 public:
  RwSem(hw::CoherenceModel& model, const char* name) : v_{0, model.add_line(name)} {}
  sim::Task<void> down_read(hw::Memory& mem, sim::Cpu& cpu) {
    for (;;) {
      const int old = co_await mem.rmw(cpu, v_, [](int v) { return v >= 0 ? v + 1 : v; });
      if (old >= 0) co_return;
      co_await wait_change(mem, cpu, old);
    }
  }
  sim::Task<void> up_read(hw::Memory& mem, sim::Cpu& cpu) {
    co_await mem.rmw(cpu, v_, [](int v) { return v - 1; });
  }
  sim::Task<void> down_write(hw::Memory& mem, sim::Cpu& cpu) {
    for (;;) {
      const int old = co_await mem.rmw(cpu, v_, [](int v) { return v == 0 ? -1 : v; });
      if (old == 0) co_return;
      co_await wait_change(mem, cpu, old);
    }
  }
  sim::Task<void> up_write(hw::Memory& mem, sim::Cpu& cpu) { co_await mem.write(cpu, v_, 0); }
  // downgrade_write: the writer becomes one reader.
  sim::Task<void> downgrade_write(hw::Memory& mem, sim::Cpu& cpu) { co_await mem.write(cpu, v_, 1); }
  int value() const { return v_.value; }

 private:
  sim::Task<void> wait_change(hw::Memory& mem, sim::Cpu& cpu, int seen) {
    for (;;) {
      co_await mem.wait_for_write(cpu, v_.line);
      const int now = co_await mem.read(cpu, v_);
      if (now != seen) co_return;
    }
  }
  hw::Shared<int> v_;
};

}  // namespace tlbsim::kernel
