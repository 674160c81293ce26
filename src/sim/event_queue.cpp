#include "sim/event_queue.h"

#include <utility>
#include <stdexcept>

namespace tlbsim::sim {

EventQueue::EventQueue(std::uint64_t seed) : rng_(Rng(seed).split(0x65766e74)) {
  hash_keys_.assign(64, 0);
  hash_bags_.assign(64, kEmpty);
}

void EventQueue::reserve(std::size_t n) {
  heap_.reserve(n);
  while (hash_keys_.size() < 4 * n) grow_hash();
}

void EventQueue::push(SimTime at, EventPriority prio, EventKind kind, std::uint32_t target, std::uint16_t arg) {
  const std::int64_t t = at.time_since_epoch().count();
  if (t < 0 || t >= (std::int64_t{1} << 61)) throw std::out_of_range("event time out of range");
  const std::uint64_t key = static_cast<std::uint64_t>(t) * 4 + static_cast<std::uint64_t>(prio);
  bags_[find_or_add_bag(key)].push_back(Payload{target, arg, kind});
  ++size_;
}

Event EventQueue::pop() {
  const HeapEntry top = min_entry();
  std::vector<Payload>& bag = bags_[top.bag];
  if (!drained_[top.bag]) {
    // First pop from this tie set: fix its order by a seeded shuffle (Fisher-Yates), then drain it from the back.
    drained_[top.bag] = 1;
    if (bag.size() > 1) ++tie_sets_;
    for (std::size_t i = bag.size(); i > 1; --i) std::swap(bag[i - 1], bag[rng_.below(i)]);
  }
  const Payload p = bag.back();
  bag.pop_back();
  --size_;
  if (bag.empty()) {
    pop_min();
    hash_erase(top.key);
    free_bags_.push_back(top.bag);
    drained_[top.bag] = 0;
    if (cached_bag_ == top.bag) cached_bag_ = kEmpty;
  }
  return Event{SimTime{Duration{static_cast<std::int64_t>(top.key >> 2)}}, static_cast<EventPriority>(top.key & 3),
               p.kind, p.arg, p.target};
}

std::uint32_t EventQueue::find_or_add_bag(std::uint64_t key) {
  if (key == cached_key_ && cached_bag_ != kEmpty) return cached_bag_;  // runs of pushes to one tie set
  cached_key_ = key;
  const std::size_t mask = hash_keys_.size() - 1;
  for (std::size_t i = slot_of(key);; i = (i + 1) & mask) {
    if (hash_bags_[i] == kEmpty) break;
    if (hash_keys_[i] == key) return cached_bag_ = hash_bags_[i];
  }
  std::uint32_t bag;
  if (!free_bags_.empty()) {
    bag = free_bags_.back();
    free_bags_.pop_back();
  } else {
    bag = static_cast<std::uint32_t>(bags_.size());
    bags_.emplace_back();
    drained_.push_back(0);
  }
  hash_insert(key, bag);
  key_push({key, bag});
  return cached_bag_ = bag;
}

void EventQueue::hash_insert(std::uint64_t key, std::uint32_t bag) {
  if (4 * (hash_used_ + 1) > 3 * hash_keys_.size()) grow_hash();
  const std::size_t mask = hash_keys_.size() - 1;
  std::size_t i = slot_of(key);
  while (hash_bags_[i] != kEmpty) i = (i + 1) & mask;
  hash_keys_[i] = key;
  hash_bags_[i] = bag;
  ++hash_used_;
}

// Linear-probing deletion by backward shift, so no tombstones accumulate.
void EventQueue::hash_erase(std::uint64_t key) {
  const std::size_t mask = hash_keys_.size() - 1;
  std::size_t i = slot_of(key);
  while (hash_keys_[i] != key || hash_bags_[i] == kEmpty) i = (i + 1) & mask;
  std::size_t hole = i;
  for (std::size_t j = (hole + 1) & mask; hash_bags_[j] != kEmpty; j = (j + 1) & mask) {
    const std::size_t home = slot_of(hash_keys_[j]);
    // Move j into the hole if its home slot is not cyclically within (hole, j].
    const bool stays = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
    if (!stays) {
      hash_keys_[hole] = hash_keys_[j];
      hash_bags_[hole] = hash_bags_[j];
      hole = j;
    }
  }
  hash_bags_[hole] = kEmpty;
  --hash_used_;
}

void EventQueue::grow_hash() {
  std::vector<std::uint64_t> keys(hash_keys_.size() * 2, 0);
  std::vector<std::uint32_t> bags(hash_keys_.size() * 2, kEmpty);
  keys.swap(hash_keys_);
  bags.swap(hash_bags_);
  const std::size_t mask = hash_keys_.size() - 1;
  for (std::size_t j = 0; j < keys.size(); ++j) {
    if (bags[j] == kEmpty) continue;
    std::size_t i = slot_of(keys[j]);
    while (hash_bags_[i] != kEmpty) i = (i + 1) & mask;
    hash_keys_[i] = keys[j];
    hash_bags_[i] = bags[j];
  }
}

void EventQueue::key_push(HeapEntry e) {
  if (run_head_ == run_.size()) {
    run_.clear();
    run_head_ = 0;
  }
  if (run_.empty() || run_.back().key <= e.key) {
    run_.push_back(e);
  } else {
    heap_push(e);
  }
}

void EventQueue::pop_min() {
  if (run_head_ < run_.size() && (heap_.empty() || run_[run_head_].key < heap_.front().key)) {
    ++run_head_;
    if (run_head_ > 4096 && run_head_ * 2 > run_.size()) {  // reclaim the consumed prefix now and then
      run_.erase(run_.begin(), run_.begin() + static_cast<std::ptrdiff_t>(run_head_));
      run_head_ = 0;
    }
  } else {
    heap_pop();
  }
}

void EventQueue::heap_push(HeapEntry e) {
  std::size_t hole = heap_.size();
  heap_.push_back(e);
  while (hole > 0) {
    const std::size_t parent = (hole - 1) / 4;
    if (heap_[parent].key <= e.key) break;
    heap_[hole] = heap_[parent];
    hole = parent;
  }
  heap_[hole] = e;
}

void EventQueue::heap_pop() {
  const HeapEntry last = heap_.back();
  heap_.pop_back();
  const std::size_t n = heap_.size();
  if (n == 0) return;
  std::size_t hole = 0;
  for (;;) {
    const std::size_t first = hole * 4 + 1;
    if (first >= n) break;
    std::size_t best = first;
    std::uint64_t best_key = heap_[first].key;
    if (first + 3 < n) {
      // All four children exist: choose with conditional moves rather than unpredictable branches.
      const std::uint64_t k0 = heap_[first].key, k1 = heap_[first + 1].key;
      const std::uint64_t k2 = heap_[first + 2].key, k3 = heap_[first + 3].key;
      const bool c01 = k1 < k0, c23 = k3 < k2;
      const std::uint64_t ka = c01 ? k1 : k0, kb = c23 ? k3 : k2;
      const bool cab = kb < ka;
      best = cab ? first + 2 + c23 : first + c01;
      best_key = cab ? kb : ka;
    } else {
      for (std::size_t c = first + 1; c < n; ++c) {
        if (heap_[c].key < best_key) {
          best = c;
          best_key = heap_[c].key;
        }
      }
    }
    if (best_key >= last.key) break;
    heap_[hole] = heap_[best];
    hole = best;
  }
  heap_[hole] = last;
}

}  // namespace tlbsim::sim
