#include "sim/event_queue.h"

#include "sim/rng.h"

namespace tlbsim::sim {

namespace {
constexpr std::uint64_t kMask56 = (std::uint64_t{1} << 56) - 1;
}

EventQueue::EventQueue(std::uint64_t seed) : key_(mix64(seed) & kMask56) { heap_.reserve(64); }

// A bijection on 56-bit integers (xor-shifts and odd multipliers modulo 2^56), so permuted sequence numbers
// stay unique and the order is total.
std::uint64_t EventQueue::permute(std::uint64_t seq) const {
  std::uint64_t x = (seq ^ key_) & kMask56;
  x ^= x >> 29;
  x = (x * 0xbf58476d1ce4e5b9ULL) & kMask56;
  x ^= x >> 32;
  x = (x * 0x94d049bb133111ebULL) & kMask56;
  x ^= x >> 29;
  return x;
}

void EventQueue::push(SimTime at, EventPriority prio, EventKind kind, std::uint32_t target, std::uint16_t arg) {
  Event ev{at.time_since_epoch().count(), (static_cast<std::uint64_t>(prio) << 56) | permute(seq_++), target, kind,
           arg};
  std::size_t hole = heap_.size();
  heap_.push_back(ev);
  while (hole > 0) {
    std::size_t parent = (hole - 1) / 4;
    if (!before(ev, heap_[parent])) break;
    heap_[hole] = heap_[parent];
    hole = parent;
  }
  heap_[hole] = ev;
}

Event EventQueue::pop() {
  Event result = heap_.front();
  Event last = heap_.back();
  heap_.pop_back();
  const std::size_t n = heap_.size();
  if (n == 0) return result;
  std::size_t hole = 0;
  for (;;) {
    std::size_t first = hole * 4 + 1;
    if (first >= n) break;
    std::size_t best = first;
    std::size_t end = first + 4 < n ? first + 4 : n;
    for (std::size_t c = first + 1; c < end; ++c) {
      if (before(heap_[c], heap_[best])) best = c;
    }
    if (!before(heap_[best], last)) break;
    heap_[hole] = heap_[best];
    hole = best;
  }
  heap_[hole] = last;
  return result;
}

}  // namespace tlbsim::sim
