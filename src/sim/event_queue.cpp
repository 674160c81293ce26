#include "sim/event_queue.h"

#include <algorithm>
#include <stdexcept>
#include <utility>

namespace tlbsim::sim {

EventQueue::EventQueue(std::uint64_t seed) : rng_(Rng(seed).split(0x65766e74)) {}

void EventQueue::reserve(std::size_t n) {
  buckets_[0].reserve(n);
  run_.reserve(n);
  scratch_.reserve(n);
}

void EventQueue::push(SimTime at, EventPriority prio, EventKind kind, std::uint32_t target, std::uint16_t arg) {
  const std::int64_t t = at.time_since_epoch().count();
  if (t < 0 || t >= (std::int64_t{1} << 61)) throw std::out_of_range("event time out of range");
  const std::uint64_t key = static_cast<std::uint64_t>(t) * 4 + static_cast<std::uint64_t>(prio);
  const Payload p{target, arg, kind};
  ++size_;
  // A key at or below the cached least may lie in a radix bucket that min_key() has not yet redistributed; pop()
  // would then miss it from the tie set of its key.
  if (key <= min_cache_) min_cache_ = kNoKey;
  for (std::size_t d = depth_; d-- > 0;) {
    if (sets_[d].key == key) {  // joins the tie set being drained: it runs next
      sets_[d].items.push_back(p);
      return;
    }
  }
  const Entry e{key, seq_++, p};
  if (run_empty()) {
    run_.clear();
    run_head_ = 0;
  }
  if (run_.empty() || run_.back().key <= key) {
    run_.push_back(e);
    return;
  }
  if (key < last_) {
    early_push(e);
    return;
  }
  const std::size_t b = bucket_of(key);
  buckets_[b].push_back(e);
  occupied_ |= (std::uint64_t{1} << b) & ~std::uint64_t{1};  // bucket 0 is tracked by its own emptiness
  ++radix_size_;
}

void EventQueue::refill() {
  const auto b = static_cast<std::size_t>(std::countr_zero(occupied_ & ~std::uint64_t{1}));
  std::vector<Entry>& from = buckets_[b];
  occupied_ &= ~(std::uint64_t{1} << b);
  if (from.size() == 1) {  // the common case: the bucket's one event is the least
    last_ = from.front().key;
    buckets_[0].push_back(from.front());
    from.clear();
    return;
  }
  std::uint64_t least = from.front().key;
  for (const Entry& e : from) least = std::min(least, e.key);
  last_ = least;
  std::uint64_t filled = 0;
  for (const Entry& e : from) {
    const std::size_t to = bucket_of(e.key);  // below b: the keys share b's high bits with the least
    buckets_[to].push_back(e);
    filled |= std::uint64_t{1} << to;
  }
  from.clear();
  occupied_ |= filled & ~std::uint64_t{1};
}

std::uint64_t EventQueue::min_key() {
  // Sets being drained lie at or below last_, and no other structure holds a key being drained. The radix heap
  // holds nothing below last_, so it is consulted only when nothing else lies below last_.
  std::uint64_t k = depth_ > 0 ? sets_[depth_ - 1].key : kNoKey;
  if (!early_.empty()) k = std::min(k, early_.front().key);
  if (!run_empty()) k = std::min(k, run_[run_head_].key);
  if (radix_size_ == 0 || k < last_) return k;
  if (buckets_[0].empty()) {
    // Every key of the lowest non-empty bucket b has last_'s bits above b - 1 and bit b - 1 set: when k lies below
    // that bound, the radix heap need not be redistributed (which would raise last_ past keys still to come).
    const auto b = static_cast<unsigned>(std::countr_zero(occupied_ & ~std::uint64_t{1}));
    const std::uint64_t bound = ((last_ >> (b - 1)) | 1) << (b - 1);
    if (k < bound) return k;
    refill();
  }
  return std::min(k, last_);
}

// Takes `events` (all of key `key`) into a new tie set, in push order, then fixes its order by a seeded shuffle
// (Fisher-Yates).
void EventQueue::open_tie_set(std::uint64_t key, std::vector<Entry>& events) {
  ++tie_sets_;
  const auto by_seq = [](const Entry& a, const Entry& b) { return a.seq < b.seq; };
  if (!std::is_sorted(events.begin(), events.end(), by_seq)) std::sort(events.begin(), events.end(), by_seq);
  if (depth_ == sets_.size()) sets_.emplace_back();
  TieSet& set = sets_[depth_++];
  set.key = key;
  set.items.clear();
  for (const Entry& e : events) set.items.push_back(e.p);
  events.clear();
  auto& items = set.items;
  for (std::size_t i = items.size(); i > 1; --i) std::swap(items[i - 1], items[rng_.below(i)]);
}

Event EventQueue::pop() {
  const std::uint64_t key = min_cache_ != kNoKey ? min_cache_ : min_key();
  min_cache_ = kNoKey;
  if (depth_ == 0 || sets_[depth_ - 1].key != key) {
    // Gather the events of `key`: from the radix heap's bucket 0, the FIFO's head and the early heap.
    scratch_.clear();
    if (radix_size_ > 0 && last_ == key && !buckets_[0].empty()) {
      std::vector<Entry>& b0 = buckets_[0];
      radix_size_ -= b0.size();
      scratch_.swap(b0);
    }
    while (!run_empty() && run_[run_head_].key == key) scratch_.push_back(run_[run_head_++]);
    if (run_head_ > 4096 && run_head_ * 2 > run_.size()) {  // reclaim the consumed prefix now and then
      run_.erase(run_.begin(), run_.begin() + static_cast<std::ptrdiff_t>(run_head_));
      run_head_ = 0;
    }
    while (!early_.empty() && early_.front().key == key) {
      scratch_.push_back(early_.front());
      early_pop();
    }
    if (scratch_.size() == 1) {
      // A tie set of one, which the shuffle would leave as it is.
      const Payload single = scratch_.front().p;
      scratch_.clear();
      --size_;
      return Event{SimTime{Duration{static_cast<std::int64_t>(key >> 2)}}, static_cast<EventPriority>(key & 3),
                   single.kind, single.arg, single.target};
    }
    open_tie_set(key, scratch_);
  }
  TieSet& set = sets_[depth_ - 1];
  const Payload p = set.items.back();
  set.items.pop_back();
  if (set.items.empty()) --depth_;
  --size_;
  return Event{SimTime{Duration{static_cast<std::int64_t>(key >> 2)}}, static_cast<EventPriority>(key & 3), p.kind,
               p.arg, p.target};
}

void EventQueue::early_push(const Entry& e) {
  std::size_t hole = early_.size();
  early_.push_back(e);
  while (hole > 0) {
    const std::size_t parent = (hole - 1) / 4;
    if (early_[parent].key <= e.key) break;
    early_[hole] = early_[parent];
    hole = parent;
  }
  early_[hole] = e;
}

void EventQueue::early_pop() {
  const Entry last = early_.back();
  early_.pop_back();
  const std::size_t n = early_.size();
  if (n == 0) return;
  std::size_t hole = 0;
  for (;;) {
    const std::size_t first = hole * 4 + 1;
    if (first >= n) break;
    std::size_t best = first;
    for (std::size_t c = first + 1; c < std::min(first + 4, n); ++c) {
      if (early_[c].key < early_[best].key) best = c;
    }
    if (early_[best].key >= last.key) break;
    early_[hole] = early_[best];
    hole = best;
  }
  early_[hole] = last;
}

}  // namespace tlbsim::sim
