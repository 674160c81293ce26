// The pending-event set of the timed scheduler, ordered by (time, priority, seeded tie order).
#pragma once

#include <array>
#include <bit>
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
// Layout: three structures, each suited to one way events arrive, and a short stack of tie sets being drained.
// * A FIFO of keys pushed in nondecreasing order (`run_`): transfers of one contended line are serialized, so
//   each completion is pushed after all earlier ones, and joins and leaves the queue in O(1).
// * A radix heap (Ahuja, Mehlhorn, Orlin and Tarjan, "Faster algorithms for the shortest path problem", JACM
//   1990) for the other events at or after `last_`, the key it gave last: an event goes to the bucket of the
//   highest bit in which its key differs from last_, so a push is O(1), and bucket 0 holds exactly the events of
//   key last_. When bucket 0 is empty and the heap must give the next event, the lowest non-empty bucket is
//   redistributed around its least key, which becomes last_. The 1,536 tick timers of a POWER8 run wait in
//   high buckets untouched.
// * A small 4-ary heap (`early_`) for keys below last_ that the FIFO cannot take: a simulation's keys only grow,
//   except for an event at the current picosecond with a lower priority (an interrupt or timer at the time of a
//   step being drained).
// A tie set is gathered from all three into the stack; its push order is restored by sequence number before the
// shuffle. A push whose key equals a set being drained joins that set. An event alone at its key is popped
// straight from where it lies.
// Contract: no allocation once capacities are reached; times are >= 0 and below 2^61 ps.
class EventQueue {
 public:
  explicit EventQueue(std::uint64_t seed = 0);

  void push(SimTime at, EventPriority prio, EventKind kind, std::uint32_t target, std::uint16_t arg = 0);
  // The time of the next event. Contract: !empty(). (Not const: it may redistribute a bucket.)
  SimTime top_time() {
    if (min_cache_ == kNoKey) min_cache_ = min_key();
    return SimTime{Duration{static_cast<std::int64_t>(min_cache_ >> 2)}};
  }
  // Whether an event at (at, prio) would be popped before every pending event: its key is below all of theirs,
  // so it would form a tie set of one. (Not const, like top_time().)
  bool precedes_all(SimTime at, EventPriority prio) {
    if (size_ == 0) return true;
    if (min_cache_ == kNoKey) min_cache_ = min_key();
    return static_cast<std::uint64_t>(at.time_since_epoch().count()) * 4 + static_cast<std::uint64_t>(prio) <
           min_cache_;
  }
  Event pop();
  // A guess at the target of the event that pop() will return `ahead` pops from now (0 = next), or kNoTarget.
  // For prefetching only: it never changes what pop() returns.
  std::uint32_t target_ahead(std::size_t ahead) const {
    if (depth_ > 0) {
      const auto& items = sets_[depth_ - 1].items;
      if (items.size() > ahead) return items[items.size() - 1 - ahead].target;
    }
    const bool fifo_first = !run_empty() && (radix_size_ == 0 || run_[run_head_].key <= last_);
    if (fifo_first) return run_head_ + ahead < run_.size() ? run_[run_head_ + ahead].p.target : kNoTarget;
    const auto& b0 = buckets_[0];
    return ahead < b0.size() ? b0[ahead].p.target : kNoTarget;
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
  struct Entry {
    std::uint64_t key;  // time_ps * 4 + priority
    std::uint64_t seq;  // push order, which fixes the order of a tie set before its shuffle
    Payload p;
  };
  struct TieSet {
    std::uint64_t key = 0;
    std::vector<Payload> items;  // drained from the back
  };
  static constexpr std::size_t kBuckets = 64;
  static constexpr std::uint64_t kNoKey = ~std::uint64_t{0};

  std::size_t bucket_of(std::uint64_t key) const {
    return key == last_ ? 0 : static_cast<std::size_t>(64 - std::countl_zero(key ^ last_));
  }
  // Redistributes the lowest non-empty bucket so that bucket 0 holds the radix heap's least key.
  // Contract: bucket 0 is empty and radix_size_ > 0.
  void refill();
  // The least key of any pending event; fills bucket 0 when the radix heap holds it.
  std::uint64_t min_key();
  // Opens a tie set of key `key` from the events in `events` (entries of that key, any order); clears it.
  void open_tie_set(std::uint64_t key, std::vector<Entry>& events);
  bool run_empty() const { return run_head_ == run_.size(); }
  void early_push(const Entry& e);
  void early_pop();

  std::array<std::vector<Entry>, kBuckets> buckets_;
  std::uint64_t occupied_ = 0;  // bit b: bucket b (b >= 1) is non-empty
  std::uint64_t last_ = 0;
  std::size_t radix_size_ = 0;
  std::vector<Entry> run_;  // keys in nondecreasing order, consumed from run_head_
  std::size_t run_head_ = 0;
  std::vector<Entry> early_;  // 4-ary heap of events keyed below last_ that run_ cannot take
  std::vector<TieSet> sets_;  // the first depth_ are being drained, in decreasing key order
  std::size_t depth_ = 0;
  std::vector<Entry> scratch_;  // the events of a tie set being opened
  std::uint64_t min_cache_ = kNoKey;  // min_key() as top_time() found it; dropped by pop and by a push below it
  std::uint64_t seq_ = 0;
  std::size_t size_ = 0;
  std::uint64_t tie_sets_ = 0;
  Rng rng_;
};

}  // namespace tlbsim::sim
