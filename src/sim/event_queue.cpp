#include "sim/event_queue.h"

#include <algorithm>
#include <stdexcept>
#include <utility>

namespace tlbsim::sim {

EventQueue::EventQueue(std::uint64_t seed) : rng_(Rng(seed).split(0x65766e74)) {}

void EventQueue::reserve(std::size_t n) {
  buckets_[0].reserve(n);
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
  const Entry e{key, seq_++, p};
  if (key < last_) {
    early_push(e);
    return;
  }
  const std::size_t b = bucket_of(key);
  buckets_[b].push_back(e);
  occupied_ |= std::uint64_t{1} << b;
  ++radix_size_;
}

void EventQueue::refill() {
  const auto b = static_cast<std::size_t>(std::countr_zero(occupied_ & ~std::uint64_t{1}));
  std::vector<Entry>& from = buckets_[b];
  std::uint64_t least = from.front().key;
  for (const Entry& e : from) least = std::min(least, e.key);
  last_ = least;
  for (const Entry& e : from) {
    const std::size_t to = bucket_of(e.key);  // below b: the keys share b's high bits with the least
    buckets_[to].push_back(e);
    occupied_ |= std::uint64_t{1} << to;
  }
  from.clear();
  occupied_ &= ~(std::uint64_t{1} << b);
}

std::uint64_t EventQueue::min_key() {
  // Sets being drained and early events all lie at or below last_, and the radix heap holds nothing of a key
  // being drained; so the radix heap is consulted only when neither has an event.
  if (depth_ > 0 || !early_.empty()) {
    const std::uint64_t ks = depth_ > 0 ? sets_[depth_ - 1].key : kNoKey;
    const std::uint64_t ke = early_.empty() ? kNoKey : early_.front().key;
    return std::min(ks, ke);
  }
  if (buckets_[0].empty()) refill();
  return last_;
}

// Takes `events` (all of key `key`) into a new tie set, in push order, then fixes its order by a seeded shuffle
// (Fisher-Yates).
void EventQueue::open_tie_set(std::uint64_t key, std::vector<Entry>& events) {
  ++tie_sets_;
  std::sort(events.begin(), events.end(), [](const Entry& a, const Entry& b) { return a.seq < b.seq; });
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
  const std::uint64_t key = min_key();
  const bool from_set = depth_ > 0 && sets_[depth_ - 1].key == key;
  if (!from_set) {
    Payload single;
    bool alone;
    if (!early_.empty() && early_.front().key == key) {
      const Entry first = early_.front();
      early_pop();
      alone = early_.empty() || early_.front().key != key;
      if (alone) {
        single = first.p;
      } else {
        scratch_.clear();
        scratch_.push_back(first);
        while (!early_.empty() && early_.front().key == key) {
          scratch_.push_back(early_.front());
          early_pop();
        }
        open_tie_set(key, scratch_);
      }
    } else {
      std::vector<Entry>& b0 = buckets_[0];
      alone = b0.size() == 1;
      radix_size_ -= b0.size();
      if (alone) {
        single = b0.front().p;
        b0.clear();
      } else {
        open_tie_set(key, b0);
      }
    }
    if (alone) {
      // A tie set of one, which the shuffle would leave as it is.
      --size_;
      return Event{SimTime{Duration{static_cast<std::int64_t>(key >> 2)}}, static_cast<EventPriority>(key & 3),
                   single.kind, single.arg, single.target};
    }
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
