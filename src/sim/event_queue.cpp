#include "sim/event_queue.h"

#include <algorithm>
#include <stdexcept>
#include <utility>

namespace tlbsim::sim {

EventQueue::EventQueue(std::uint64_t seed) : rng_(Rng(seed).split(0x65766e74)) {}

void EventQueue::reserve(std::size_t n) {
  heap_keys_.reserve(n);
  heap_vals_.reserve(n);
  scratch_.reserve(n);
}

void EventQueue::push(SimTime at, EventPriority prio, EventKind kind, std::uint32_t target, std::uint16_t arg) {
  const std::int64_t t = at.time_since_epoch().count();
  if (t < 0 || t >= (std::int64_t{1} << 61)) throw std::out_of_range("event time out of range");
  const std::uint64_t key = static_cast<std::uint64_t>(t) * 4 + static_cast<std::uint64_t>(prio);
  const Payload p{target, arg, kind};
  ++size_;
  for (std::size_t d = depth_; d-- > 0;) {
    if (sets_[d].key == key) {  // joins the tie set being drained: it runs next
      sets_[d].items.push_back(p);
      return;
    }
  }
  heap_push(key, HeapVal{seq_++, p});
}

// Takes `first` and every other event of its key from the heap into a new tie set, in push order, then fixes its
// order by a seeded shuffle (Fisher-Yates).
void EventQueue::open_tie_set(std::uint64_t key, const HeapVal& first) {
  scratch_.clear();
  scratch_.push_back(first);
  while (!heap_keys_.empty() && heap_keys_.front() == key) {
    scratch_.push_back(heap_vals_.front());
    heap_pop();
  }
  ++tie_sets_;
  std::sort(scratch_.begin(), scratch_.end(), [](const HeapVal& a, const HeapVal& b) { return a.seq < b.seq; });
  if (depth_ == sets_.size()) sets_.emplace_back();
  TieSet& set = sets_[depth_++];
  set.key = key;
  set.items.clear();
  for (const HeapVal& v : scratch_) set.items.push_back(v.p);
  auto& items = set.items;
  for (std::size_t i = items.size(); i > 1; --i) std::swap(items[i - 1], items[rng_.below(i)]);
}

Event EventQueue::pop() {
  if (depth_ == 0 || (!heap_keys_.empty() && heap_keys_.front() < sets_[depth_ - 1].key)) {
    const std::uint64_t key = heap_keys_.front();
    const HeapVal v = heap_vals_.front();
    heap_pop();
    if (heap_keys_.empty() || heap_keys_.front() != key) {
      // Alone at its key: a tie set of one, which the shuffle would leave as it is.
      --size_;
      return Event{SimTime{Duration{static_cast<std::int64_t>(key >> 2)}}, static_cast<EventPriority>(key & 3),
                   v.p.kind, v.p.arg, v.p.target};
    }
    open_tie_set(key, v);
  }
  TieSet& set = sets_[depth_ - 1];
  const std::uint64_t key = set.key;
  const Payload p = set.items.back();
  set.items.pop_back();
  if (set.items.empty()) --depth_;
  --size_;
  return Event{SimTime{Duration{static_cast<std::int64_t>(key >> 2)}}, static_cast<EventPriority>(key & 3), p.kind,
               p.arg, p.target};
}

void EventQueue::heap_push(std::uint64_t key, const HeapVal& v) {
  std::size_t hole = heap_keys_.size();
  heap_keys_.push_back(key);
  heap_vals_.push_back(v);
  while (hole > 0) {
    const std::size_t parent = (hole - 1) / 4;
    if (heap_keys_[parent] <= key) break;
    heap_keys_[hole] = heap_keys_[parent];
    heap_vals_[hole] = heap_vals_[parent];
    hole = parent;
  }
  heap_keys_[hole] = key;
  heap_vals_[hole] = v;
}

void EventQueue::heap_pop() {
  const std::uint64_t last_key = heap_keys_.back();
  const HeapVal last = heap_vals_.back();
  heap_keys_.pop_back();
  heap_vals_.pop_back();
  const std::size_t n = heap_keys_.size();
  if (n == 0) return;
  const std::uint64_t* k = heap_keys_.data();
  std::size_t hole = 0;
  for (;;) {
    const std::size_t first = hole * 4 + 1;
    if (first >= n) break;
    std::size_t best = first;
    std::uint64_t best_key = k[first];
    if (first + 3 < n) {
      // All four children exist: choose with conditional moves rather than unpredictable branches.
      const std::uint64_t k0 = k[first], k1 = k[first + 1], k2 = k[first + 2], k3 = k[first + 3];
      const bool c01 = k1 < k0, c23 = k3 < k2;
      const std::uint64_t ka = c01 ? k1 : k0, kb = c23 ? k3 : k2;
      const bool cab = kb < ka;
      best = cab ? first + 2 + c23 : first + c01;
      best_key = cab ? kb : ka;
    } else {
      for (std::size_t c = first + 1; c < n; ++c) {
        if (k[c] < best_key) {
          best = c;
          best_key = k[c];
        }
      }
    }
    if (best_key >= last_key) break;
    heap_keys_[hole] = best_key;
    heap_vals_[hole] = heap_vals_[best];
    hole = best;
  }
  heap_keys_[hole] = last_key;
  heap_vals_[hole] = last;
}

}  // namespace tlbsim::sim
