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
// which socket wins a contended line), so the drain visits CPUs in random memory order; target_ahead() lets the
// scheduler prefetch the next CPU's state to hide that cost.
//
// Layout: one 4-ary heap of pending events keyed by (time, priority) alone, each with its push sequence number;
// and a short stack of tie sets being drained. An event alone at its key is popped straight from the heap. For
// two or more, pop() opens a tie set by taking every event of the heap's least key, restores their push order by
// sequence number, shuffles them and drains them from the back. A push whose
// key equals a tie set being drained joins that set. A set being drained lies under a newer one only when the
// newer one's key is smaller (an interrupt at the same picosecond), so the stack is ordered and rarely deeper
// than one. Each event then costs one heap push and one heap pop of 24-byte entries compared on one word, and
// nothing else.
// Contract: no allocation once capacities are reached; times are >= 0 and below 2^61 ps.
class EventQueue {
 public:
  explicit EventQueue(std::uint64_t seed = 0);

  void push(SimTime at, EventPriority prio, EventKind kind, std::uint32_t target, std::uint16_t arg = 0);
  // The time of the next event. Contract: !empty().
  SimTime top_time() const { return SimTime{Duration{static_cast<std::int64_t>(min_key() >> 2)}}; }
  Event pop();
  // A guess at the target of the event that pop() will return `ahead` pops from now (0 = next), or kNoTarget.
  // For prefetching only: it never changes what pop() returns.
  std::uint32_t target_ahead(std::size_t ahead) const {
    if (depth_ > 0) {
      const auto& items = sets_[depth_ - 1].items;
      if (items.size() > ahead) return items[items.size() - 1 - ahead].target;
    }
    // Otherwise a guess from the heap's first entries (the next events lie near its root).
    return ahead < heap_vals_.size() ? heap_vals_[ahead].p.target : kNoTarget;
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
  // A heap entry is its key (time_ps * 4 + priority) in heap_keys_ and this in heap_vals_ at the same index: the
  // sift loops compare four children's keys in one cache line.
  struct HeapVal {
    std::uint64_t seq;  // push order, which fixes the order of a tie set before its shuffle
    Payload p;
  };
  struct TieSet {
    std::uint64_t key = 0;
    std::vector<Payload> items;  // drained from the back
  };

  std::uint64_t min_key() const {
    if (depth_ == 0) return heap_keys_.front();
    const std::uint64_t k = sets_[depth_ - 1].key;
    return !heap_keys_.empty() && heap_keys_.front() < k ? heap_keys_.front() : k;
  }
  // Opens the tie set of `first` (just taken from the heap) and the heap's other events of its key.
  void open_tie_set(std::uint64_t key, const HeapVal& first);
  void heap_push(std::uint64_t key, const HeapVal& v);
  void heap_pop();

  std::vector<std::uint64_t> heap_keys_;
  std::vector<HeapVal> heap_vals_;
  std::vector<TieSet> sets_;  // the first depth_ are being drained, in decreasing key order
  std::size_t depth_ = 0;
  std::vector<HeapVal> scratch_;  // the events of a tie set being opened
  std::uint64_t seq_ = 0;
  std::size_t size_ = 0;
  std::uint64_t tie_sets_ = 0;
  Rng rng_;
};

}  // namespace tlbsim::sim
