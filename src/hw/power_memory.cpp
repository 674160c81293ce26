#include "hw/power_memory.h"

#include <algorithm>

#include "hw/memory.h"

namespace tlbsim::hw {

std::uint32_t PowerStorage::location(const void* addr, LineId line, std::any initial,
                                     std::optional<std::uint64_t> shown) {
  if (const auto it = index_.find(addr); it != index_.end()) return it->second;
  const auto loc = static_cast<std::uint32_t>(locs_.size());
  locs_.push_back(Loc{line, {Write{std::move(initial), shown, {}}}});
  index_.emplace(addr, loc);
  return loc;
}

PowerStorage::View& PowerStorage::view(CpuId c) {
  View& v = cpus_[c.get()];
  if (v.seen.size() < locs_.size()) {
    v.seen.resize(locs_.size(), 0);
    v.floor.resize(locs_.size(), 0);
    v.last.resize(locs_.size(), 0);
    if (deps_) v.arrived.resize(locs_.size(), std::vector<std::uint32_t>{0});
  }
  return v;
}

void PowerStorage::arrive(View& v, std::uint32_t loc, std::uint32_t index) {
  if (!deps_) return;
  ++v.clock;
  auto& a = v.arrived[loc];
  while (a.size() <= index) a.push_back(v.clock);  // a write passed over arrives with the one that overwrote it
}

void PowerStorage::merge(Needs& into, const Needs& from) {
  for (const auto& need : from) {
    const std::uint32_t loc = need.first;
    const auto it = std::find_if(into.begin(), into.end(), [loc](const auto& n) { return n.first == loc; });
    if (it == into.end()) {
      into.push_back(need);
    } else {
      it->second = std::max(it->second, need.second);
    }
  }
}

void PowerStorage::store(CpuId c, std::uint32_t loc, std::any value, std::optional<std::uint64_t> shown) {
  View& v = view(c);
  Loc& l = locs_[loc];
  l.co.push_back(Write{std::move(value), shown, v.needs, c});
  const auto i = static_cast<std::uint32_t>(l.co.size() - 1);
  arrive(v, loc, i);
  v.seen[loc] = v.last[loc] = i;
}

std::pair<std::uint32_t, std::uint32_t> PowerStorage::readable(CpuId c, std::uint32_t loc, std::uint32_t dep) {
  View& v = view(c);
  std::uint32_t lo = std::max(v.floor[loc], v.last[loc]);
  if (deps_ && dep > 0) {
    // What had reached the CPU by the moment the address was known: the newest write that arrived by then.
    const auto& a = v.arrived[loc];
    const auto at = static_cast<std::uint32_t>(std::upper_bound(a.begin(), a.end(), dep) - a.begin()) - 1;
    lo = std::max(lo, at);
  }
  return {lo, v.seen[loc]};
}

std::uint32_t PowerStorage::arrival(CpuId c, std::uint32_t loc, std::uint32_t index) {
  return deps_ ? view(c).arrived[loc][index] : 0;
}

const std::any& PowerStorage::read(CpuId c, std::uint32_t loc, std::uint32_t index) {
  view(c).last[loc] = index;
  return locs_[loc].co[index].value;
}

void PowerStorage::see_latest(CpuId c, std::uint32_t loc) {
  // The write the RMW reads reaches this CPU now, with what its barrier ordered before it.
  const auto latest = static_cast<std::uint32_t>(locs_[loc].co.size() - 1);
  propagate(c.get(), loc, latest);
  view(c).last[loc] = latest;
}

void PowerStorage::store_global(std::uint32_t loc, std::any value, std::optional<std::uint64_t> shown) {
  Loc& l = locs_[loc];
  l.co.push_back(Write{std::move(value), shown, {}});
  const auto i = static_cast<std::uint32_t>(l.co.size() - 1);
  for (std::uint32_t d = 0; d < cpus_.size(); ++d) {
    View& v = view(CpuId{d});
    arrive(v, loc, i);
    v.seen[loc] = v.floor[loc] = v.last[loc] = i;
  }
  wake_(l.line);
}

void PowerStorage::settle(CpuId c, std::uint32_t loc) {
  View& v = view(c);
  v.floor[loc] = std::max(v.floor[loc], v.seen[loc]);
}

bool PowerStorage::settle_line(CpuId c, LineId line) {
  View& v = view(c);
  bool newer = false;
  for (std::uint32_t l = 0; l < locs_.size(); ++l) {
    if (locs_[l].line != line || v.seen[l] <= std::max(v.floor[l], v.last[l])) continue;
    v.floor[l] = v.seen[l];
    newer = true;
  }
  return newer;
}

std::vector<std::pair<std::uint32_t, std::uint32_t>> PowerStorage::unseen(CpuId c) const {
  std::vector<std::pair<std::uint32_t, std::uint32_t>> out;
  const View& v = cpus_[c.get()];
  for (std::uint32_t l = 0; l < locs_.size(); ++l) {
    const auto newest = static_cast<std::uint32_t>(locs_[l].co.size() - 1);
    if ((l < v.seen.size() ? v.seen[l] : 0) < newest) out.emplace_back(l, newest);
  }
  return out;
}

bool PowerStorage::eligible(std::uint32_t d, const Write& w) const {
  const View& v = cpus_[d];
  return std::all_of(w.needs.begin(), w.needs.end(),
                     [&](const auto& n) { return n.first < v.seen.size() && v.seen[n.first] >= n.second; });
}

void PowerStorage::propagate_all(std::uint32_t loc, std::uint32_t index) {
  for (std::uint32_t d = 0; d < cpus_.size(); ++d) {
    View& v = view(CpuId{d});
    if (v.seen[loc] >= index) continue;
    const Needs needs = locs_[loc].co[index].needs;
    for (const auto& [l, i] : needs) propagate_all(l, i);
    arrive(v, loc, index);
    v.seen[loc] = index;
    merge(v.needs, needs);
  }
}

void PowerStorage::propagate(std::uint32_t d, std::uint32_t loc, std::uint32_t index) {
  if (mca_) {
    // Multicopy atomic: a write another CPU can see is visible to all of them.
    propagate_all(loc, index);
    return;
  }
  View& v = view(CpuId{d});
  if (v.seen[loc] >= index) return;
  // What the write's barrier ordered before it reaches d first (a sync forces the whole chain).
  const Needs needs = locs_[loc].co[index].needs;
  for (const auto& [l, i] : needs) propagate(d, l, i);
  arrive(v, loc, index);
  v.seen[loc] = index;
  // B-cumulativity: the barrier before the write has reached d too, so d's later writes follow what it ordered.
  merge(v.needs, needs);
}

void PowerStorage::fence(CpuId c, Fence f) {
  if (f == Fence::kCompiler || f == Fence::kSerializing) return;  // isync/rfid order no storage access
  View& v = view(c);
  if (f == Fence::kMb || f == Fence::kMbAtomic || f == Fence::kPtesync) {
    // sync: everything this CPU has seen reaches every CPU before it completes.
    for (std::uint32_t d = 0; d < cpus_.size(); ++d) {
      for (std::uint32_t l = 0; l < v.seen.size(); ++l) propagate(d, l, v.seen[l]);
      for (std::uint32_t l = 0; l < v.seen.size(); ++l) wake_(locs_[l].line);
    }
  }
  // ARMv8: DMB ISHLD orders the CPU's loads only; DMB ISHST its stores only (both are lwsync's halves).
  const bool loads = !mca_ || f != Fence::kWmb;
  const bool stores = !mca_ || f != Fence::kRmb;
  if (loads) v.floor = v.seen;
  if (!stores) return;
  // lwsync and sync: an ordering point for later loads, and A-cumulative for later stores.
  v.needs.clear();
  for (std::uint32_t l = 0; l < v.seen.size(); ++l) {
    if (v.seen[l] > 0) v.needs.emplace_back(l, v.seen[l]);
  }
}

void PowerStorage::enabled(std::vector<sim::Action>& out) const {
  for (std::uint32_t l = 0; l < locs_.size(); ++l) {
    for (std::uint32_t i = 1; i < locs_[l].co.size(); ++i) {
      if (mca_) {
        // One action per write that some CPU has not seen: it reaches all of them, once every CPU has seen what its
        // barrier ordered before it.
        bool unseen = false, ready = true;
        for (std::uint32_t d = 0; d < cpus_.size(); ++d) {
          const View& v = cpus_[d];
          unseen = unseen || (l < v.seen.size() ? v.seen[l] : 0) < i;
          ready = ready && eligible(d, locs_[l].co[i]);
        }
        if (unseen && ready) {
          const CpuId by = locs_[l].co[i].by;
          out.push_back(
              sim::Action{sim::Action::Kind::kPropagate, by, static_cast<int>(l), sim::SimTime{}, nullptr, i, by});
        }
        continue;
      }
      for (std::uint32_t d = 0; d < cpus_.size(); ++d) {
        const View& v = cpus_[d];
        const std::uint32_t seen = l < v.seen.size() ? v.seen[l] : 0;
        if (seen >= i || !eligible(d, locs_[l].co[i])) continue;
        out.push_back(sim::Action{sim::Action::Kind::kPropagate, CpuId{d}, static_cast<int>(l), sim::SimTime{}, nullptr,
                                  i, locs_[l].co[i].by});
      }
    }
  }
}

void PowerStorage::run(const sim::Action& a) {
  const auto loc = static_cast<std::uint32_t>(a.vector);
  propagate(a.cpu.get(), loc, a.arg);
  wake_(locs_[loc].line);
}

void PowerStorage::key(std::vector<long long>& out) const {
  for (const Loc& l : locs_) {
    out.push_back(-1);
    for (const Write& w : l.co) {
      out.push_back(w.shown ? static_cast<long long>(*w.shown) : -2);
      for (const auto& [a, b] : w.needs) out.push_back((static_cast<long long>(a) << 32) | b);
      out.push_back(-3);
    }
  }
  for (const View& v : cpus_) {
    out.push_back(-4);
    out.insert(out.end(), v.seen.begin(), v.seen.end());
    out.insert(out.end(), v.floor.begin(), v.floor.end());
    out.insert(out.end(), v.last.begin(), v.last.end());
    for (const auto& [a, b] : v.needs) out.push_back((static_cast<long long>(a) << 32) | b);
    if (!deps_) continue;
    out.push_back(v.clock);
    for (const auto& a : v.arrived) {
      out.push_back(-5);
      out.insert(out.end(), a.begin(), a.end());
    }
  }
}

}  // namespace tlbsim::hw
