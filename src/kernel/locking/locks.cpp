// The spinlock algorithms of the modeled releases: powerpc's test-and-set arch_spin_lock (v4.14), x86's ticket
// lock (v3.3) and the queued spinlock of kernel/locking/qspinlock.c (v6.1).
#include "kernel/locking/locks.h"

#include <stdexcept>

#include "kernel/barrier.h"

namespace tlbsim::kernel {

const char* to_string(SpinlockKind k) {
  switch (k) {
    case SpinlockKind::kTestAndSet:
      return "test-and-set";
    case SpinlockKind::kTicket:
      return "ticket";
    case SpinlockKind::kQueued:
      return "queued";
  }
  return "?";
}

bool Spinlock::held() const {
  switch (kind_) {
    case SpinlockKind::kTestAndSet:
      return v_.value != 0;
    case SpinlockKind::kTicket:
      return (v_.value & 0xffffffffu) != (v_.value >> 32);
    case SpinlockKind::kQueued:
      return (v_.value & kQLocked) != 0;
  }
  return false;
}

sim::Task<void> Spinlock::lock(hw::Memory& mem, sim::Cpu& cpu) {
  switch (kind_) {
    case SpinlockKind::kTestAndSet:
      co_await lock_test_and_set(mem, cpu);
      co_return;
    case SpinlockKind::kTicket:
      co_await lock_ticket(mem, cpu);
      co_return;
    case SpinlockKind::kQueued: {
      // queued_spin_lock: the uncontended cmpxchg from 0 to locked, else the slow path with the value it saw.
      const std::uint64_t val = co_await mem.rmw(cpu, v_, try_lock_word);
      if (val != 0) co_await queued_spin_lock_slowpath(mem, cpu, val);
      co_return;
    }
  }
}

sim::Task<void> Spinlock::unlock(hw::Memory& mem, sim::Cpu& cpu) {
  // Every arch_spin_unlock is a release: x86 barrier(); powerpc PPC_RELEASE_BARRIER (lwsync) before its store.
  smp_store_release_fence(mem, cpu);
  switch (kind_) {
    case SpinlockKind::kTestAndSet:
      co_await mem.write(cpu, v_, std::uint64_t{0});
      co_return;
    case SpinlockKind::kTicket:
      // __ticket_spin_unlock: an unlocked incb of head (UNLOCK_LOCK_PREFIX is empty on x86-64).
      co_await mem.store_part(
          cpu, v_, [](std::uint64_t v) { return (v & ~std::uint64_t{0xffffffffu}) | ((v + 1) & 0xffffffffu); });
      co_return;
    case SpinlockKind::kQueued:
      // queued_spin_unlock: smp_store_release(&lock->locked, 0), a byte store.
      co_await mem.store_part(cpu, v_, [](std::uint64_t v) { return v & ~kQLocked; });
      co_return;
  }
}

sim::Task<void> Spinlock::lock_test_and_set(hw::Memory& mem, sim::Cpu& cpu) {
  for (;;) {
    const std::uint64_t seen = co_await mem.read(cpu, v_);
    if (seen != 0) {
      co_await mem.wait_for_write(cpu, v_.line);
      continue;
    }
    const std::uint64_t old = co_await mem.rmw(cpu, v_, [](std::uint64_t) { return std::uint64_t{1}; });
    if (old == 0) co_return;
  }
}

sim::Task<void> Spinlock::lock_ticket(hw::Memory& mem, sim::Cpu& cpu) {
  // __ticket_spin_lock: xadd of one to tail; the old tail is this CPU's ticket.
  const std::uint64_t old = co_await mem.rmw(cpu, v_, [](std::uint64_t v) { return v + (std::uint64_t{1} << 32); });
  const std::uint64_t ticket = old >> 32;
  std::uint64_t head = old & 0xffffffffu;
  while (head != ticket) {
    co_await mem.wait_for_write(cpu, v_.line);
    head = (co_await mem.read(cpu, v_)) & 0xffffffffu;
  }
}

sim::Task<void> Spinlock::lock_flags(hw::Memory& mem, sim::Cpu& cpu, bool irqs_were_enabled) {
  if (!irqs_were_enabled || kind_ != SpinlockKind::kTestAndSet) {
    co_await lock(mem, cpu);
    co_return;
  }
  std::uint64_t seen = co_await mem.read(cpu, v_);
  for (;;) {
    if (seen == 0) {
      const std::uint64_t old = co_await mem.rmw(cpu, v_, [](std::uint64_t) { return std::uint64_t{1}; });
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

sim::Task<bool> Spinlock::lock_irqsave(hw::Memory& mem, sim::Cpu& cpu, bool arch_spins_with_irqs_on) {
  const bool flags = !cpu.irqs_disabled();
  cpu.local_irq_disable();
  co_await lock_flags(mem, cpu, flags && arch_spins_with_irqs_on);
  co_return flags;
}

Spinlock::McsNode& Spinlock::qnode(std::uint32_t id) {
  auto& slot = qnodes_[id];
  if (!slot) {
    const LineId line = model_->add_line("qspinlock.mcs_node");
    slot = std::make_unique<McsNode>(McsNode{{0, line}, {0, line}});
  }
  return *slot;
}

// queued_spin_lock_slowpath (v6.1), without paravirt hooks.
sim::Task<void> Spinlock::queued_spin_lock_slowpath(hw::Memory& mem, sim::Cpu& cpu, std::uint64_t val) {
  // A pending -> locked hand-over in progress: wait for it (the kernel bounds this by _Q_PENDING_LOOPS, 512 on x86;
  // the hand-over is one store).
  while (val == kQPending) {
    co_await mem.wait_for_write(cpu, v_.line);
    val = co_await mem.read(cpu, v_);
  }
  if ((val & ~kQLocked) == 0) {
    // trylock || pending: queued_fetch_set_pending_acquire.
    val = co_await mem.rmw(cpu, v_, [](std::uint64_t v) { return v | kQPending; });
    if ((val & ~kQLocked) == 0) {
      // This CPU is the pending waiter: wait for the owner to go, then take the lock and clear pending in one
      // halfword store (clear_pending_set_locked).
      while ((val & kQLocked) != 0) {
        co_await mem.wait_for_write(cpu, v_.line);
        val = co_await mem.read(cpu, v_);
      }
      // smp_cond_load_acquire(&lock->locked, !VAL): the critical section's loads follow the owner's release.
      smp_load_acquire_fence(mem, cpu);
      co_await mem.store_part(cpu, v_, [](std::uint64_t v) { return (v & kQTailMask) | kQLocked; });
      co_return;
    }
    // Contention appeared: undo the pending bit if this CPU set it, and queue.
    if ((val & kQPending) == 0) co_await mem.store_part(cpu, v_, [](std::uint64_t v) { return v & ~kQPending; });
  }
  // queue: this CPU's MCS node of its current nesting level (idx = node->count++).
  std::uint32_t& count = nesting_[cpu.id().get()];
  if (count >= kMaxNesting) throw std::logic_error("qspinlock: more than 4 nested waiters on one CPU");
  const std::uint32_t id = cpu.id().get() * kMaxNesting + count++;
  co_await queue_and_lock(mem, cpu, id);
  --nesting_[cpu.id().get()];  // release: __this_cpu_dec(qnodes[0].mcs.count)
}

sim::Task<void> Spinlock::queue_and_lock(hw::Memory& mem, sim::Cpu& cpu, std::uint32_t id) {
  McsNode& node = qnode(id);
  co_await mem.write(cpu, node.locked, 0u);
  co_await mem.write(cpu, node.next, 0u);
  // queued_spin_trylock before queueing.
  if (co_await mem.read(cpu, v_) == 0) {
    const std::uint64_t old = co_await mem.rmw(cpu, v_, try_lock_word);
    if (old == 0) co_return;
  }
  const std::uint64_t tail = (std::uint64_t{id} + 1) << kQTailShift;
  std::uint64_t val = 0;
  // xchg_tail: publish this node as the queue's tail.
  const std::uint64_t old = co_await mem.rmw(cpu, v_, [tail](std::uint64_t v) { return (v & ~kQTailMask) | tail; });
  std::uint32_t next = 0;
  if ((old & kQTailMask) != 0) {
    // Link behind the previous tail and spin on this node until it hands over (arch_mcs_spin_lock_contended).
    McsNode& prev = qnode(static_cast<std::uint32_t>((old >> kQTailShift) - 1));
    co_await mem.write(cpu, prev.next, id + 1);
    for (;;) {
      const std::uint32_t handed = co_await mem.read(cpu, node.locked);
      if (handed != 0) break;
      co_await mem.wait_for_write(cpu, node.locked.line);
    }
    smp_load_acquire_fence(mem, cpu);  // arch_mcs_spin_lock_contended: smp_cond_load_acquire
    next = co_await mem.read(cpu, node.next);
  }
  // The queue head: wait until neither an owner nor a pending waiter remains (atomic_cond_read_acquire).
  for (;;) {
    val = co_await mem.read(cpu, v_);
    if ((val & kQLockedPending) == 0) break;
    co_await mem.wait_for_write(cpu, v_.line);
  }
  smp_load_acquire_fence(mem, cpu);
  if ((val & kQTailMask) == tail) {
    // Last in the queue: take the lock and clear the tail in one cmpxchg.
    const std::uint64_t seen = val;
    const std::uint64_t was = co_await mem.rmw(cpu, v_, [seen](std::uint64_t v) { return v == seen ? kQLocked : v; });
    if (was == seen) co_return;
  }
  co_await mem.store_part(cpu, v_, [](std::uint64_t v) { return v | kQLocked; });  // set_locked
  // Hand the queue head on: wait for the successor to link itself, then set its node's locked.
  while (next == 0) {
    next = co_await mem.read(cpu, node.next);
    if (next == 0) co_await mem.wait_for_write(cpu, node.next.line);
  }
  McsNode& succ = qnode(next - 1);
  smp_store_release_fence(mem, cpu);  // arch_mcs_spin_unlock_contended: smp_store_release(&next->locked, 1)
  co_await mem.write(cpu, succ.locked, 1u);
}

}  // namespace tlbsim::kernel
