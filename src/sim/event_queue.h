// The pending-event set of the timed scheduler: a 4-ary min-heap ordered by (time, priority, sequence).
#pragma once

#include <cstdint>
#include <vector>

#include "sim/time.h"

namespace tlbsim::sim {

// What an event does when it fires. Contract: the scheduler dispatches on this; there is no callback pointer.
enum class EventKind : std::uint8_t {
  kCpuStep,     // target CPU's pending step completes: resume it
  kIrqArrive,   // an interrupt (vector in arg) reaches target CPU
  kTimer,       // timer number target fires
};

// Priority among events at the same time: lower runs first. Interrupt arrivals come before steps at the same
// picosecond, so a step boundary at time t sees every interrupt that arrived at t.
enum class EventPriority : std::uint8_t { kIrq = 0, kTimer = 1, kStep = 2 };

struct Event {
  std::int64_t time_ps;
  std::uint64_t order;  // priority in the top 8 bits, permuted sequence number in the low 56
  std::uint32_t target;
  EventKind kind;
  std::uint16_t arg;

  SimTime time() const { return SimTime{Duration{time_ps}}; }
  EventPriority priority() const { return static_cast<EventPriority>(order >> 56); }
};

// Min-queue of events. Ties in (time, priority) are broken by the sequence number passed through a seeded
// bijection, so one seed always gives one order and different seeds give different orders of simultaneous
// events. Contract: push/pop are O(log n) with no allocation once capacity is reached.
class EventQueue {
 public:
  explicit EventQueue(std::uint64_t seed = 0);

  void push(SimTime at, EventPriority prio, EventKind kind, std::uint32_t target, std::uint16_t arg = 0);
  const Event& top() const { return heap_.front(); }
  Event pop();
  bool empty() const { return heap_.empty(); }
  std::size_t size() const { return heap_.size(); }
  void reserve(std::size_t n) { heap_.reserve(n); }
  std::uint64_t pushed() const { return seq_; }

 private:
  static bool before(const Event& a, const Event& b) {
    return a.time_ps < b.time_ps || (a.time_ps == b.time_ps && a.order < b.order);
  }
  std::uint64_t permute(std::uint64_t seq) const;

  std::vector<Event> heap_;
  std::uint64_t seq_ = 0;
  std::uint64_t key_;
};

}  // namespace tlbsim::sim
