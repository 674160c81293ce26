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
// Layout: a 4-ary heap of the distinct (time, priority) keys, each owning a bag of event payloads, and an
// open-addressing hash from key to heap entry so pushes join an existing bag in O(1). Simultaneous events, the
// common case when many CPUs do equal-cost steps, then cost O(1) each however many CPUs there are.
// Contract: no allocation once capacities are reached; times are >= 0 and below 2^61 ps.
class EventQueue {
 public:
  explicit EventQueue(std::uint64_t seed = 0);

  void push(SimTime at, EventPriority prio, EventKind kind, std::uint32_t target, std::uint16_t arg = 0);
  // The time of the next event. Contract: !empty().
  SimTime top_time() const { return SimTime{Duration{static_cast<std::int64_t>(heap_.front().key >> 2)}}; }
  Event pop();
  // The target of the event that pop() would return `ahead` pops from now (0 = next), if it is in the tie set
  // being drained; kNoTarget otherwise. For prefetching only.
  std::uint32_t target_ahead(std::size_t ahead) const {
    if (heap_.empty()) return kNoTarget;
    const auto& bag = bags_[heap_.front().bag];
    return drained_[heap_.front().bag] && bag.size() > ahead ? bag[bag.size() - 1 - ahead].target : kNoTarget;
  }
  static constexpr std::uint32_t kNoTarget = 0xffffffffu;
  bool empty() const { return size_ == 0; }
  std::size_t size() const { return size_; }
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
  void heap_push(HeapEntry e);
  void heap_pop();
  void hash_insert(std::uint64_t key, std::uint32_t bag);
  void hash_erase(std::uint64_t key);
  void grow_hash();
  std::size_t slot_of(std::uint64_t key) const { return static_cast<std::size_t>(mix64(key)) & (hash_keys_.size() - 1); }

  std::vector<HeapEntry> heap_;
  std::vector<std::vector<Payload>> bags_;
  std::vector<std::uint8_t> drained_;  // per bag: its order has been fixed by the first pop
  std::vector<std::uint32_t> free_bags_;
  std::vector<std::uint64_t> hash_keys_;
  std::vector<std::uint32_t> hash_bags_;
  std::size_t hash_used_ = 0;
  std::uint64_t cached_key_ = 0;  // the key of the last push, and its bag (kEmpty when none)
  std::uint32_t cached_bag_ = kEmpty;
  std::size_t size_ = 0;
  Rng rng_;
};

}  // namespace tlbsim::sim
