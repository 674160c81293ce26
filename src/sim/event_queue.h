// The pending-event set of the timed scheduler, ordered by (time, priority, seeded tie order).
#pragma once

#include <cstdint>
#include <vector>

#include "sim/rng.h"
#include "sim/time.h"

namespace tlbsim::sim {

// What an event does when it fires. Contract: the scheduler dispatches on this; there is no callback pointer.
enum class EventKind : std::uint8_t {
  kCpuStep = 0,    // target CPU's pending step completes: resume it
  kIrqArrive = 1,  // an interrupt (vector in arg) reaches target CPU
  kTimer = 2,      // timer slot `target` fires
};

// Priority among events at the same time: lower runs first. Interrupt arrivals come before steps at the same
// picosecond, so a step boundary at time t sees every interrupt that arrived at t.
enum class EventPriority : std::uint8_t { kIrq = 0, kTimer = 1, kStep = 2 };

struct Event {
  SimTime time;
  EventPriority priority;
  EventKind kind;
  std::uint16_t arg;
  std::uint32_t target;
};

// Min-queue of events by (time, priority); events with equal (time, priority) form a tie set. When pop() first
// reaches a tie set it shuffles the set with the seeded random stream, then drains it; events added to a set
// being drained run next. One seed therefore always gives one order, and different seeds give different orders
// of simultaneous events. The order must not follow CPU numbering (that would correlate with topology and bias
// which socket wins a contended line), so the drain visits CPUs in random memory order; next_target() lets the
// scheduler prefetch the next CPU's state to hide that cost.
//
// Layout: the distinct (time, priority) keys, each owning a bag of event payloads, and an open-addressing hash
// from key to bag so pushes join an existing bag in O(1). Simultaneous events, the common case when many CPUs do
// equal-cost steps, then cost O(1) each however many CPUs there are. Keys live in a 4-ary heap, except that a
// key not below the last key of the `run_` FIFO is appended there instead: when completions are pushed in time
// order (transfers of one contended line are serialized, so each ends after all earlier ones), that is O(1)
// rather than O(log n). The next key is the lesser of the heap's top and the FIFO's head.
// Contract: no allocation once capacities are reached; times are >= 0 and below 2^61 ps.
class EventQueue {
 public:
  explicit EventQueue(std::uint64_t seed = 0);

  void push(SimTime at, EventPriority prio, EventKind kind, std::uint32_t target, std::uint16_t arg = 0);
  // The time of the next event. Contract: !empty().
  SimTime top_time() const { return SimTime{Duration{static_cast<std::int64_t>(min_entry().key >> 2)}}; }
  Event pop();
  // A guess at the target of the event that pop() will return `ahead` pops from now (0 = next), or kNoTarget.
  // For prefetching only: it never changes what pop() returns.
  std::uint32_t target_ahead(std::size_t ahead) const {
    if (size_ == 0) return kNoTarget;
    const std::uint32_t b = min_entry().bag;
    const auto& bag = bags_[b];
    if (drained_[b] && bag.size() > ahead) return bag[bag.size() - 1 - ahead].target;
    // Otherwise guess from the FIFO of time-ordered keys (a hint only: the heap may hold earlier keys).
    if (run_head_ + ahead < run_.size()) {
      const auto& next = bags_[run_[run_head_ + ahead].bag];
      if (!next.empty()) return next.back().target;
    }
    return kNoTarget;
  }
  static constexpr std::uint32_t kNoTarget = 0xffffffffu;
  bool empty() const { return size_ == 0; }
  std::size_t size() const { return size_; }
  // Tie sets of two or more events ordered by the seed so far: the only choices the seed makes here. Zero means
  // that another seed would have run the same events in the same order.
  std::uint64_t tie_sets() const { return tie_sets_; }
  void reserve(std::size_t n);

 private:
  struct Payload {
    std::uint32_t target;
    std::uint16_t arg;
    EventKind kind;
  };
  struct HeapEntry {
    std::uint64_t key;  // time_ps * 4 + priority
    std::uint32_t bag;
  };
  static constexpr std::uint32_t kEmpty = 0xffffffffu;

  std::uint32_t find_or_add_bag(std::uint64_t key);
  const HeapEntry& min_entry() const {
    if (run_head_ == run_.size()) return heap_.front();
    if (heap_.empty() || run_[run_head_].key < heap_.front().key) return run_[run_head_];
    return heap_.front();
  }
  void key_push(HeapEntry e);
  void pop_min();
  void heap_push(HeapEntry e);
  void heap_pop();
  void hash_insert(std::uint64_t key, std::uint32_t bag);
  void hash_erase(std::uint64_t key);
  void grow_hash();
  std::size_t slot_of(std::uint64_t key) const { return static_cast<std::size_t>(mix64(key)) & (hash_keys_.size() - 1); }

  std::vector<HeapEntry> heap_;
  std::vector<HeapEntry> run_;  // keys in nondecreasing order, consumed from run_head_
  std::size_t run_head_ = 0;
  std::vector<std::vector<Payload>> bags_;
  std::vector<std::uint8_t> drained_;  // per bag: its order has been fixed by the first pop
  std::vector<std::uint32_t> free_bags_;
  std::vector<std::uint64_t> hash_keys_;
  std::vector<std::uint32_t> hash_bags_;
  std::size_t hash_used_ = 0;
  std::uint64_t cached_key_ = 0;  // the key of the last push, and its bag (kEmpty when none)
  std::uint32_t cached_bag_ = kEmpty;
  std::size_t size_ = 0;
  std::uint64_t tie_sets_ = 0;
  Rng rng_;
};

}  // namespace tlbsim::sim
