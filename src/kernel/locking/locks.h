// Kernel spinlocks on modeled cache lines: waiters spin on the lock's line. The sleeping rw_semaphore is in
// kernel/locking/rwsem.h.
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>

#include "hw/memory.h"
#include "model/config.h"
#include "sim/task.h"

namespace tlbsim::kernel {

const char* to_string(SpinlockKind k);

// spinlock_t on its modeled line, with the algorithm `kind`. Waiters spin until a write to the line they watch.
class Spinlock {
 public:
  Spinlock(hw::CoherenceModel& model, const char* name, SpinlockKind kind) : model_(&model), kind_(kind) {
    v_ = {0, model.add_line(name)};
  }
  sim::Task<void> lock(hw::Memory& mem, sim::Cpu& cpu);
  // spin_lock_irqsave where the arch spins with the caller's interrupt state restored (powerpc before v5.16,
  // arch_spin_lock_flags: a failed trylock restores `flags` while it spins on plain loads, then disables interrupts
  // again before the next trylock). Contract: called with interrupts disabled; returns with them disabled.
  sim::Task<void> lock_flags(hw::Memory& mem, sim::Cpu& cpu, bool irqs_were_enabled);
  // spin_lock_irqsave(lock, flags): disables interrupts and takes the lock; returns `flags`, whether interrupts were
  // enabled. `arch_spins_with_irqs_on`: ArchMmu::spin_lock_flags_enables_irqs() (a test-and-set lock only: the
  // generic queued lock's arch_spin_lock_flags ignores the flags).
  sim::Task<bool> lock_irqsave(hw::Memory& mem, sim::Cpu& cpu, bool arch_spins_with_irqs_on);
  sim::Task<void> unlock(hw::Memory& mem, sim::Cpu& cpu);
  bool held() const;
  LineId line() const { return v_.line; }
  SpinlockKind kind() const { return kind_; }

 private:
  // The lock word of each kind: test-and-set 0 or 1; ticket `head | tail << 32`; queued `locked | pending << 8 |
  // tail << 16`, where tail is 1 + the last queued CPU's node (CPU x kMaxNesting + nesting level).
  static constexpr std::uint64_t kQLocked = 1, kQPending = std::uint64_t{1} << 8, kQTailShift = 16;
  static constexpr std::uint64_t kQLockedPending = kQLocked | kQPending;
  static constexpr std::uint64_t kQTailMask = ~((std::uint64_t{1} << kQTailShift) - 1);
  // queued_spin_trylock's cmpxchg(0 -> locked) as a word update: a busy lock keeps its value.
  static std::uint64_t try_lock_word(std::uint64_t v) { return v == 0 ? kQLocked : v; }

  // struct mcs_spinlock: `locked` is set by the predecessor's hand-off, `next` is the successor's node id + 1.
  struct McsNode {
    hw::Shared<std::uint32_t> locked;
    hw::Shared<std::uint32_t> next;
  };
  sim::Task<void> lock_test_and_set(hw::Memory& mem, sim::Cpu& cpu);
  sim::Task<void> lock_ticket(hw::Memory& mem, sim::Cpu& cpu);
  sim::Task<void> queued_spin_lock_slowpath(hw::Memory& mem, sim::Cpu& cpu, std::uint64_t val);
  sim::Task<void> queue_and_lock(hw::Memory& mem, sim::Cpu& cpu, std::uint32_t id);  // the `queue:` part
  // The kernel's qnodes[] are per CPU, one per nesting level (task, softirq, hardirq, NMI), so that an interrupt
  // handler can queue while its CPU's task context waits; here they are per lock and CPU, made on first use.
  static constexpr std::uint32_t kMaxNesting = 4;
  McsNode& qnode(std::uint32_t id);

  hw::CoherenceModel* model_;
  SpinlockKind kind_;
  hw::Shared<std::uint64_t> v_;
  std::unordered_map<std::uint32_t, std::unique_ptr<McsNode>> qnodes_;  // by node id
  std::unordered_map<std::uint32_t, std::uint32_t> nesting_;            // by CPU: qnodes in use (node->count)
};

}  // namespace tlbsim::kernel
