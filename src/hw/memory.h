// Awaitable accesses to shared kernel variables on modeled cache lines: each access is a step that costs time
// from the coherence model and is a point where other CPUs may interleave.
#pragma once

#include <algorithm>
#include <concepts>
#include <coroutine>
#include <cstdint>
#include <memory>
#include <optional>
#include <type_traits>
#include <vector>

#include "hw/coherence.h"
#include "hw/fence.h"
#include "hw/power_memory.h"
#include "hw/store_buffer.h"
#include "sim/cpu.h"
#include "sim/scheduler.h"
#include "sim/source_site.h"

namespace tlbsim::hw {

// A kernel variable that more than one CPU touches. Several variables may share a line, as they do in the
// kernel when they are adjacent in a struct.
template <class T>
struct Shared {
  T value{};
  LineId line{};
};

// Sees every completed access, with the value read or written where it is a number: the checker's replay prints
// the interleaving in kernel terms from it. Contract: called from await_resume, after the effect.
class AccessObserver {
 public:
  virtual ~AccessObserver() = default;
  virtual void on_access(CpuId cpu, LineId line, Access kind, std::optional<std::uint64_t> old_value,
                         std::optional<std::uint64_t> new_value) = 0;
};

template <class T>
std::optional<std::uint64_t> observed_value(const T& v) {
  if constexpr (std::is_integral_v<T> || std::is_enum_v<T>) {
    return static_cast<std::uint64_t>(v);
  } else if constexpr (requires {
                         { v.shown_value() } -> std::convertible_to<std::uint64_t>;
                       }) {
    return v.shown_value();  // a value the replay shows as a number (a CPU mask's first word)
  } else {
    return std::nullopt;
  }
}

// Contract: an access's effect (the value read or written) happens when the step completes (in await_resume),
// so the order of effects is the order in which the scheduler completes steps. A write wakes the CPUs spinning
// on its line. Under x86-TSO (set_memory_model, the checker only) a plain write's effect is buffered: it happens
// when the CPU's store buffer commits it (an action of the exploring scheduler, or a fence); the CPU's own reads
// see it at once (store forwarding). Accesses through touch() to state kept elsewhere are never buffered.
class Memory {
 public:
  Memory(sim::Scheduler& sched, CoherenceModel& model) : sched_(sched), model_(model) {}

  // Sequential consistency unless set; kTso creates the store buffers (StoreBufferSource for the explorer).
  void set_memory_model(MemoryModel m) {
    memory_model_ = m;
    buffers_ = m == MemoryModel::kTso ? std::make_unique<StoreBuffers>(sched_.cpu_count()) : nullptr;
    power_ = m == MemoryModel::kPower || m == MemoryModel::kArm
                 ? std::make_unique<PowerStorage>(
                       sched_.cpu_count(), [this](LineId l) { wake_spinners(l); }, m == MemoryModel::kArm)
                 : nullptr;
  }
  MemoryModel memory_model() const { return memory_model_; }
  StoreBuffers* store_buffers() { return buffers_.get(); }
  PowerStorage* power() { return power_.get(); }
  const PowerStorage* power() const { return power_.get(); }
  // The model's own actions for the exploring scheduler (nullptr under sequential consistency).
  sim::MemoryActions* memory_actions() {
    return buffers_ ? static_cast<sim::MemoryActions*>(buffers_.get()) : static_cast<sim::MemoryActions*>(power_.get());
  }

  // A barrier at this point of the CPU's code. It takes no step: its cost (fence_costs) is carried into the CPU's
  // next step (the timed model is sequentially consistent). Under x86-TSO a full or serializing one commits the
  // CPU's buffered stores first; under POWER the storage model orders what it orders.
  void fence(sim::Cpu& cpu, Fence f) {
    if (const sim::Duration d = fence_costs_[static_cast<std::size_t>(f)]; d.count() > 0) cpu.carry(d);
    if (buffers_ != nullptr && (f == Fence::kMb || f == Fence::kPtesync || f == Fence::kSerializing)) {
      buffers_->drain(cpu.id());
    }
    if (power_ != nullptr) power_->fence(cpu.id(), f);
  }
  void set_fence_costs(const FenceCosts& c) { fence_costs_ = c; }

  CoherenceModel& model() { return model_; }
  sim::Scheduler& scheduler() { return sched_; }
  // Installs (or with nullptr removes) the observer of every access; none by default.
  void set_observer(AccessObserver* o) { observer_ = o; }
  void observe(sim::Cpu& cpu, LineId line, Access kind, std::optional<std::uint64_t> old_value,
               std::optional<std::uint64_t> new_value) {
    if (observer_ != nullptr) observer_->on_access(cpu.id(), line, kind, old_value, new_value);
  }
  bool observed() const { return observer_ != nullptr; }

  struct LineAwaiter {
    Memory& mem;
    sim::Cpu& cpu;
    LineId line;
    Access kind;
    sim::SourceSite site;
    bool await_ready() const noexcept { return false; }
    void await_suspend(std::coroutine_handle<> h) {
      cpu.suspend_step(h, mem.model_.access(cpu.id(), line, kind, cpu.now()), site, line);
    }
    void await_resume() {
      if (kind == Access::kRmw) mem.locked(cpu);
      mem.observe(cpu, line, kind, std::nullopt, std::nullopt);
      if (kind != Access::kLoad) mem.wake_spinners(line);
    }
  };
  // A raw access to a line (for modeled state whose value lives elsewhere).
  LineAwaiter touch(sim::Cpu& cpu, LineId line, Access kind,
                    sim::SourceSite site = sim::SourceSite::current()) {
    return {*this, cpu, line, kind, site};
  }

  template <class T>
  struct ReadAwaiter {
    Memory& mem;
    sim::Cpu& cpu;
    const Shared<T>& var;
    sim::SourceSite site;
    Dependency addr{};            // the load's address dependency
    Dependency* value = nullptr;  // if set, gets the dependency the loaded value carries
    bool await_ready() const noexcept { return false; }
    void await_suspend(std::coroutine_handle<> h) {
      cpu.suspend_step(h, mem.model_.access(cpu.id(), var.line, Access::kLoad, cpu.now()), site, var.line);
    }
    T await_resume() const {
      if (mem.power_ != nullptr) {
        PowerStorage& p = *mem.power_;
        const std::uint32_t loc = p.location(&var, var.line, var.value, observed_value(var.value));
        const auto [lo, hi] = p.readable(cpu.id(), loc, addr.at);
        const std::size_t k = mem.sched_.choose_value(cpu.id(), hi - lo + 1);
        const std::uint32_t index = hi - static_cast<std::uint32_t>(k);
        // The load is satisfied no earlier than its address was known and the write it reads had arrived.
        if (value != nullptr) *value = Dependency{std::max(addr.at, p.arrival(cpu.id(), loc, index))};
        const T v = std::any_cast<T>(p.read(cpu.id(), loc, index));
        mem.observe(cpu, var.line, Access::kLoad, observed_value(v), std::nullopt);
        return v;
      }
      if (mem.buffers_ != nullptr) {
        if (const BufferedStore* b = mem.buffers_->newest_for(cpu.id(), &var)) {
          if (b->value.has_value()) {  // forwarded from this CPU's own store buffer
            const T v = std::any_cast<T>(b->value);
            mem.observe(cpu, var.line, Access::kLoad, observed_value(v), std::nullopt);
            return v;
          }
          mem.buffers_->drain_through(cpu.id(), &var);  // a partial store cannot be forwarded
        }
      }
      mem.observe(cpu, var.line, Access::kLoad, observed_value(var.value), std::nullopt);
      return var.value;
    }
  };
  template <class T>
  ReadAwaiter<T> read(sim::Cpu& cpu, const Shared<T>& var,
                      sim::SourceSite site = sim::SourceSite::current()) {
    return {*this, cpu, var, site};
  }
  // A load whose address came from earlier loads (`addr`); `value` gets the dependency its value carries on.
  template <class T>
  ReadAwaiter<T> read_dependent(sim::Cpu& cpu, const Shared<T>& var, Dependency addr, Dependency& value,
                                sim::SourceSite site = sim::SourceSite::current()) {
    value = Dependency{};
    return {*this, cpu, var, site, addr, &value};
  }
  // The dependency of a value the CPU has just obtained otherwise (an RMW's): now.
  Dependency dependency_now(sim::Cpu& cpu) {
    return power_ != nullptr ? Dependency{power_->clock(cpu.id())} : Dependency{};
  }

  template <class T>
  struct WriteAwaiter {
    Memory& mem;
    sim::Cpu& cpu;
    Shared<T>& var;
    T value;
    sim::SourceSite site;
    bool await_ready() const noexcept { return false; }
    void await_suspend(std::coroutine_handle<> h) {
      cpu.suspend_step(h, mem.model_.access(cpu.id(), var.line, Access::kStore, cpu.now()), site, var.line);
    }
    void await_resume() {
      if (mem.power_ != nullptr) {
        const std::uint32_t loc = mem.power_->location(&var, var.line, var.value, observed_value(var.value));
        mem.power_->store(cpu.id(), loc, value, observed_value(value));
        mem.commit(cpu.id(), var, value);
        return;
      }
      if (mem.buffers_ != nullptr) {
        Shared<T>* v = &var;
        Memory* m = &mem;
        const CpuId id = cpu.id();
        const T val = value;
        mem.buffers_->push(
            id, BufferedStore{v, v->line, val, [m, v, id, val] { m->commit(id, *v, val); }, observed_value(val)});
        return;
      }
      mem.commit(cpu.id(), var, value);
    }
  };
  template <class T>
  WriteAwaiter<T> write(sim::Cpu& cpu, Shared<T>& var, T value,
                        sim::SourceSite site = sim::SourceSite::current()) {
    return {*this, cpu, var, value, site};
  }

  // An atomic read-modify-write: returns the old value and stores f(old). `kind` is kRmw, or kStore for a plain
  // store to part of the variable's word (store_part).
  template <class T, class F>
  struct RmwAwaiter {
    Memory& mem;
    sim::Cpu& cpu;
    Shared<T>& var;
    F f;
    sim::SourceSite site;
    Access kind = Access::kRmw;
    bool relaxed = false;  // POWER: no sync around it (an _relaxed atomic); x86 has only LOCK'd ones
    bool await_ready() const noexcept { return false; }
    void await_suspend(std::coroutine_handle<> h) {
      sim::SimTime done = mem.model_.access(cpu.id(), var.line, kind, cpu.now());
      // A fully ordered RMW's own barriers (powerpc: a sync before and after; x86: none beyond the LOCK).
      if (kind == Access::kRmw && !relaxed) done += 2 * mem.fence_costs_[static_cast<std::size_t>(Fence::kMbAtomic)];
      cpu.suspend_step(h, done, site, var.line);
    }
    T await_resume() {
      if (mem.power_ != nullptr) {
        PowerStorage& p = *mem.power_;
        const bool ordered = kind == Access::kRmw && !relaxed;
        if (ordered) p.fence(cpu.id(), Fence::kMbAtomic);
        const std::uint32_t loc = p.location(&var, var.line, var.value, observed_value(var.value));
        if (kind == Access::kRmw) p.see_latest(cpu.id(), loc);
        const T old = var.value;
        const T nv = f(old);
        // An RMW that leaves the value as it was writes nothing (a failed cmpxchg or lock attempt; an xchg of the
        // same value is simplified the same way), so that a spinning RMW does not grow the coherence order.
        bool unchanged = false;
        if constexpr (std::equality_comparable<T>) unchanged = nv == old;
        if (!unchanged) p.store(cpu.id(), loc, nv, observed_value(nv));
        var.value = nv;
        mem.observe(cpu, var.line, kind, observed_value(old), observed_value(nv));
        mem.wake_spinners(var.line);
        if (ordered) p.fence(cpu.id(), Fence::kMbAtomic);
        return old;
      }
      if (kind == Access::kRmw) mem.locked(cpu);
      if (mem.buffers_ != nullptr && kind == Access::kStore) {
        // A plain partial store: buffered like any store; the bytes it keeps are read when it commits.
        mem.buffers_->drain_through(cpu.id(), &var);
        const T old = var.value;
        Shared<T>* v = &var;
        Memory* m = &mem;
        const CpuId id = cpu.id();
        mem.buffers_->push(
            id, BufferedStore{v, v->line, {}, [m, v, id, g = f] { m->commit(id, *v, g(v->value)); }, std::nullopt});
        return old;
      }
      T old = var.value;
      var.value = f(old);
      mem.observe(cpu, var.line, kind, observed_value(old), observed_value(var.value));
      mem.wake_spinners(var.line);
      return old;
    }
  };
  template <class T, class F>
  RmwAwaiter<T, F> rmw(sim::Cpu& cpu, Shared<T>& var, F f,
                       sim::SourceSite site = sim::SourceSite::current()) {
    return {*this, cpu, var, std::move(f), site};
  }
  // An atomic RMW without the full barriers of the kernel's value-returning atomics (the _relaxed forms): the same
  // LOCK'd instruction on x86; no sync around it on POWER.
  template <class T, class F>
  RmwAwaiter<T, F> rmw_relaxed(sim::Cpu& cpu, Shared<T>& var, F f, sim::SourceSite site = sim::SourceSite::current()) {
    return {*this, cpu, var, std::move(f), site, Access::kRmw, true};
  }
  // A plain store to some bytes of `var` (a byte or halfword store such as qspinlock's unlock): f(old) keeps the
  // bytes the store does not write. It costs a store, not an atomic; returns the old value.
  template <class T, class F>
  RmwAwaiter<T, F> store_part(sim::Cpu& cpu, Shared<T>& var, F f,
                              sim::SourceSite site = sim::SourceSite::current()) {
    return {*this, cpu, var, std::move(f), site, Access::kStore};
  }

  struct SpinAwaiter {
    Memory& mem;
    sim::Cpu& cpu;
    LineId line;
    sim::SourceSite site;
    bool idle = false;
    sim::Duration wake_latency{0};
    // A second line whose write also ends the spin (a loop that reads two variables); a stale entry left on the
    // line that did not end it finds a newer park generation and has no effect.
    std::optional<LineId> also{};
    // Under POWER a newer value already visible to this CPU ends the spin at once (PowerStorage::settle_line).
    bool await_ready() noexcept {
      if (mem.power_ == nullptr) return false;
      const bool a = mem.power_->settle_line(cpu.id(), line);
      const bool b = also && mem.power_->settle_line(cpu.id(), *also);
      return a || b;
    }
    void await_suspend(std::coroutine_handle<> h) {
      const std::uint32_t gen = cpu.park(h, line, site, idle, wake_latency);
      mem.model_.add_waiter(line, LineWaiter{cpu.id(), gen});
      if (also) mem.model_.add_waiter(*also, LineWaiter{cpu.id(), gen});
    }
    void await_resume() const noexcept {}
  };
  // Spins on a line this CPU holds until another CPU writes it (or, with interrupts enabled, an interrupt
  // arrives). Model code re-reads the variable afterwards, as a cpu_relax() loop does.
  SpinAwaiter wait_for_write(sim::Cpu& cpu, LineId line,
                             sim::SourceSite site = sim::SourceSite::current()) {
    return {*this, cpu, line, site, false, sim::Duration{0}};
  }
  // wait_for_write on two lines at once: a spin loop that reads two variables (rwsem_spin_on_owner reads the lock's
  // owner field and the owner's on_cpu); a write to either ends it. The caller re-reads both.
  SpinAwaiter wait_for_write_either(sim::Cpu& cpu, LineId a, LineId b,
                                    sim::SourceSite site = sim::SourceSite::current()) {
    return {*this, cpu, a, site, false, sim::Duration{0}, b};
  }
  // An idle CPU monitoring a flag for work (mwait on x86, snooze on POWER): the same wait, but quiescent, and
  // the CPU resumes `exit_latency` after the write or interrupt that wakes it.
  SpinAwaiter idle_poll(sim::Cpu& cpu, LineId line, sim::Duration exit_latency = sim::Duration{0},
                        sim::SourceSite site = sim::SourceSite::current()) {
    return {*this, cpu, line, site, true, exit_latency};
  }

  // wait_for_write, but the CPU also stops spinning at `deadline` (a spin loop that reads the clock, such as
  // rwsem_optimistic_spin's sched_clock() test every 16 loops). The caller re-reads the clock and the variable.
  struct TimedSpinAwaiter {
    Memory& mem;
    sim::Cpu& cpu;
    LineId line;
    sim::SimTime deadline;
    sim::SourceSite site;
    bool await_ready() noexcept { return mem.power_ != nullptr && mem.power_->settle_line(cpu.id(), line); }
    void await_suspend(std::coroutine_handle<> h) {
      const std::uint32_t gen = cpu.park(h, line, site, false, sim::Duration{0});
      mem.model_.add_waiter(line, LineWaiter{cpu.id(), gen});
      mem.arm_spin_deadline(cpu, gen, deadline);
    }
    void await_resume() const noexcept {}
  };
  TimedSpinAwaiter wait_for_write_until(sim::Cpu& cpu, LineId line, sim::SimTime deadline,
                                        sim::SourceSite site = sim::SourceSite::current()) {
    return {*this, cpu, line, deadline, site};
  }

  // A LOCK'd instruction waits for the CPU's store buffer to drain before it executes (x86-TSO).
  void locked(sim::Cpu& cpu) {
    if (buffers_ != nullptr) buffers_->drain(cpu.id());
    if (power_ != nullptr) power_->fence(cpu.id(), Fence::kMbAtomic);
  }

  // A store's effect on memory: now under sequential consistency, at its commit under x86-TSO.
  template <class T>
  void commit(CpuId cpu, Shared<T>& var, T value) {
    const std::optional<std::uint64_t> old = observer_ ? observed_value(var.value) : std::nullopt;
    var.value = value;
    if (observer_ != nullptr) observer_->on_access(cpu, var.line, Access::kStore, old, observed_value(var.value));
    wake_spinners(var.line);
  }

  void wake_spinners(LineId line) {
    if (!model_.has_waiters(line)) return;
    model_.take_waiters(line, scratch_);
    for (const LineWaiter& w : scratch_) sched_.cpu(w.cpu).wake_parked(w.gen);
  }

 private:
  // The timers of wait_for_write_until: each CPU's latest deadline wakes that CPU's park of that generation (a park
  // that a write ended earlier has a new generation, so a late timer finds nothing to wake).
  class SpinDeadlines final : public sim::TimerHandler {
   public:
    explicit SpinDeadlines(sim::Scheduler& s) : sched_(s), gen_(s.cpu_count(), 0) {}
    void arm(sim::Cpu& cpu, std::uint32_t gen, sim::SimTime at) {
      gen_[cpu.id().get()] = gen;
      sched_.add_timer(at, *this, cpu.id().get());
    }
    void on_timer(std::uint32_t cpu) override { sched_.cpu(CpuId{cpu}).wake_parked(gen_[cpu]); }

   private:
    sim::Scheduler& sched_;
    std::vector<std::uint32_t> gen_;
  };
  void arm_spin_deadline(sim::Cpu& cpu, std::uint32_t gen, sim::SimTime at) {
    if (!deadlines_) deadlines_ = std::make_unique<SpinDeadlines>(sched_);
    deadlines_->arm(cpu, gen, at);
  }

  sim::Scheduler& sched_;
  CoherenceModel& model_;
  std::unique_ptr<SpinDeadlines> deadlines_;
  AccessObserver* observer_ = nullptr;
  std::vector<LineWaiter> scratch_;
  MemoryModel memory_model_ = MemoryModel::kSc;
  std::unique_ptr<StoreBuffers> buffers_;
  std::unique_ptr<PowerStorage> power_;
  FenceCosts fence_costs_{};
};

}  // namespace tlbsim::hw
