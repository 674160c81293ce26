#include "hw/coherence.h"

#include <algorithm>
#include <bit>
#include <limits>
#include <stdexcept>

namespace tlbsim::hw {

sim::Duration CoherenceLatencies::transfer(Distance d) const {
  switch (d) {
    case Distance::kSame: return l1_hit;
    case Distance::kSmt: return smt_transfer;
    case Distance::kLlc: return llc_transfer;
    case Distance::kSocket: return socket_transfer;
    case Distance::kRemote: return remote_transfer;
    case Distance::kFar: return far_transfer;
  }
  return far_transfer;
}

LineStats& LineStats::operator+=(const LineStats& o) {
  loads += o.loads;
  stores += o.stores;
  rmws += o.rmws;
  hits += o.hits;
  transfers += o.transfers;
  remote_transfers += o.remote_transfers;
  wait += o.wait;
  transfer_time += o.transfer_time;
  return *this;
}

CoherenceModel::CoherenceModel(const Topology& topo, const CoherenceLatencies& lat)
    : topo_(topo), lat_(lat), words_((topo.cpu_count() + 63) / 64) {
  const auto& p = topo.params();
  if (p.sockets_per_group < p.sockets) max_distance_ = Distance::kFar;
  else if (p.sockets > 1) max_distance_ = Distance::kRemote;
  else if (p.cores_per_llc < p.cores_per_socket) max_distance_ = Distance::kSocket;
  else if (p.cores_per_socket > 1) max_distance_ = Distance::kLlc;
  else max_distance_ = Distance::kSmt;
  threads_per_core_ = p.threads_per_core;
  const std::uint32_t n = topo.cpu_count();
  if (n > std::numeric_limits<std::uint16_t>::max()) {  // Line::sharer_count
    throw std::invalid_argument("coherence model: " + std::to_string(n) + " CPUs; at most 65535 are modeled");
  }
  // A kernel adds about a dozen lines per CPU at boot (runqueue, csd queue, arch state, tasks): reserving them
  // spares a 1,536-CPU boot from copying the growing arrays (reserved pages cost nothing until touched).
  lines_.reserve(std::size_t{16} * n);
  cold_.reserve(std::size_t{16} * n);
  sharer_words_.reserve(std::size_t{16} * n * words_);
  siblings_.reserve(std::size_t{n} * (threads_per_core_ - 1));
  for (std::uint32_t c = 0; c < n; ++c) {
    const CpuId cpu{c};
    const std::uint32_t core_in_socket = topo.core_of(cpu) % p.cores_per_socket;
    for (std::uint32_t t = 0; t < threads_per_core_; ++t) {
      if (t != topo.thread_of(cpu)) siblings_.push_back(topo.cpu_at(topo.socket_of(cpu), core_in_socket, t).get());
    }
  }
  // The enclosing domains: per level, domain ids are dense (global core, LLC, socket and group indices).
  cpu_domains_.assign(std::size_t{n} * kDomainLevels, 0);
  for (std::size_t level = 0; level < kDomainLevels; ++level) {
    const auto id_of = [&](CpuId cpu) -> std::uint32_t {
      switch (level) {
        case 0:
          return topo.core_of(cpu);
        case 1:
          return topo.llc_of(cpu);
        case 2:
          return topo.socket_of(cpu);
        default:
          return topo.group_of(cpu);
      }
    };
    const std::size_t base = domains_.size();
    for (std::uint32_t c = 0; c < n; ++c) {
      const std::size_t d = base + id_of(CpuId{c});
      while (domains_.size() <= d) {
        domains_.push_back(Domain{domain_words_.size(), static_cast<std::uint32_t>(words_), 0});
        domain_words_.resize(domain_words_.size() + words_, 0);
      }
      Domain& dom = domains_[d];
      domain_words_[dom.offset + c / 64] |= std::uint64_t{1} << (c % 64);
      dom.first_word = std::min(dom.first_word, c / 64);
      dom.end_word = std::max(dom.end_word, c / 64 + 1);
      cpu_domains_[std::size_t{c} * kDomainLevels + level] = static_cast<std::uint32_t>(d);
    }
  }
}

bool CoherenceModel::sibling_holds(const Line& l, std::uint32_t line, std::uint32_t c) const {
  const std::uint64_t* sh = sharers(line);
  const std::size_t k = threads_per_core_ - 1;
  for (std::size_t i = std::size_t{c} * k; i < std::size_t{c} * k + k; ++i) {
    const std::uint32_t s = siblings_[i];
    if (l.owner >= 0 ? static_cast<std::uint32_t>(l.owner) == s : ((sh[s / 64] >> (s % 64)) & 1) != 0) return true;
  }
  return false;
}

LineId CoherenceModel::add_line(std::string_view name) {
  auto it = name_index_.find(name);
  if (it == name_index_.end()) {
    it = name_index_.emplace(std::string(name), static_cast<std::uint32_t>(names_.size())).first;
    names_.emplace_back(name);
  }
  lines_.emplace_back();
  cold_.emplace_back().name_index = it->second;
  sharer_words_.resize(sharer_words_.size() + words_, 0);
  return LineId{static_cast<std::uint32_t>(lines_.size() - 1)};
}

bool CoherenceModel::holds(CpuId cpu, LineId line) const {
  const Line& l = lines_[line.get()];
  if (l.owner >= 0) return static_cast<std::uint32_t>(l.owner) == cpu.get();
  return (sharers(line.get())[cpu.get() / 64] >> (cpu.get() % 64)) & 1;
}

template <class F>
void CoherenceModel::for_each_sharer_word(std::uint32_t line, F&& f) const {
  const std::uint64_t* w = sharers(line);
  const std::uint64_t used = lines_[line].sharer_words_used;
  if (words_ > 64) {
    for (std::size_t i = 0; i < words_; ++i) {
      if (w[i] != 0 && f(i, w[i])) return;
    }
    return;
  }
  for (std::uint64_t m = used; m != 0; m &= m - 1) {
    const auto i = static_cast<std::size_t>(std::countr_zero(m));
    if (w[i] != 0 && f(i, w[i])) return;
  }
}

// The distance of the nearest sharer: the innermost enclosing domain that holds one (topo_.distance's classes).
Distance CoherenceModel::nearest_sharer(std::uint32_t line, CpuId cpu) const {
  static constexpr Distance kAtLevel[kDomainLevels] = {Distance::kSmt, Distance::kLlc, Distance::kSocket,
                                                       Distance::kRemote};
  const std::uint64_t* sh = sharers(line);
  const std::uint32_t c = cpu.get();
  if ((sh[c / 64] >> (c % 64)) & 1) return Distance::kSame;
  for (std::size_t level = 0; level < kDomainLevels; ++level) {
    const Domain& d = domain(c, level);
    const std::uint64_t* m = &domain_words_[d.offset];
    for (std::uint32_t w = d.first_word; w < d.end_word; ++w) {
      if ((sh[w] & m[w]) != 0) return kAtLevel[level];
    }
  }
  return Distance::kFar;  // a sharer outside the group, or none
}

// The distance of the farthest sharer: the innermost enclosing domain that holds them all (kSame for none, or only
// `cpu` itself).
Distance CoherenceModel::farthest_other_sharer(std::uint32_t line, CpuId cpu) const {
  static constexpr Distance kBeyond[kDomainLevels] = {Distance::kLlc, Distance::kSocket, Distance::kRemote,
                                                      Distance::kFar};
  const std::uint32_t c = cpu.get();
  for (std::size_t level = kDomainLevels; level-- > 0;) {
    if (kBeyond[level] > max_distance_) continue;  // the machine has no CPU that far
    const std::uint64_t* m = &domain_words_[domain(c, level).offset];
    bool outside = false;
    for_each_sharer_word(line, [&](std::size_t i, std::uint64_t bits) { return outside = (bits & ~m[i]) != 0; });
    if (outside) return kBeyond[level];
  }
  const std::uint64_t self = std::uint64_t{1} << (c % 64);
  bool other = false;
  for_each_sharer_word(
      line, [&](std::size_t i, std::uint64_t bits) { return other = (i == c / 64 ? bits & ~self : bits) != 0; });
  return other ? Distance::kSmt : Distance::kSame;
}

void CoherenceModel::clear_sharers(std::uint32_t line) {
  std::uint64_t* w = sharers(line);
  Line& l = lines_[line];
  if (words_ > 64) {
    std::fill(w, w + words_, 0);
  } else {
    for (std::uint64_t m = l.sharer_words_used; m != 0; m &= m - 1) w[std::countr_zero(m)] = 0;
  }
  l.sharer_words_used = 0;
  l.sharer_count = 0;
}

// One access: the line, the accessing CPU and its bit in the line's sharer mask, and the request time.
struct CoherenceModel::AccessSite {
  CpuId cpu;
  std::uint32_t id;  // the line's index
  std::uint32_t c;   // cpu.get()
  Line& l;
  std::uint64_t* sh;  // the line's sharer mask
  std::uint64_t bit;  // `c`'s bit in its word of `sh`
  sim::SimTime now;
};

// Ends an access that transfers the line: it starts once the line's previous transfer is done, takes `cost` and then
// `op`, and is counted in the line's statistics and the model's totals.
inline sim::SimTime CoherenceModel::complete_transfer(const AccessSite& a, Distance d, sim::Duration cost,
                                                      sim::Duration op) {
  const std::int64_t start = std::max(a.now.time_since_epoch().count(), a.l.busy_until_ps);
  const std::int64_t done = start + cost.count() + op.count();
  a.l.busy_until_ps = done;
  count_transfer(a.l, d);
  LineCold& cold = cold_[a.id];
  cold.wait += sim::Duration{start - a.now.time_since_epoch().count()};
  cold.transfer_time += cost;
  return sim::SimTime{sim::Duration{done}};
}

// A load that misses the core: the line comes from its owner (which keeps a shared copy), a sharer, or memory.
inline sim::SimTime CoherenceModel::load_miss(const AccessSite& a) {
  Line& l = a.l;
  Distance d;
  sim::Duration cost;
  if (l.owner >= 0) {
    d = topo_.distance(a.cpu, CpuId{static_cast<std::uint32_t>(l.owner)});
    cost = lat_.transfer(d);
    // The owner keeps a shared copy (M -> S).
    set_sharer(l, a.sh, static_cast<std::uint32_t>(l.owner));
    l.sharer_count = 1;
    l.owner = -1;
  } else if (l.sharer_count > 0) {
    // A clean shared copy: the LLC / directory serves concurrent read misses of it in a pipeline, so this
    // read neither waits for nor delays other reads; it still waits for a transfer that is changing the line.
    d = nearest_sharer(a.id, a.cpu);
    cost = lat_.transfer(d);
    set_sharer(l, a.sh, a.c);
    ++l.sharer_count;
    count_transfer(l, d);
    cold_[a.id].transfer_time += cost;
    return sim::SimTime{sim::Duration{std::max(a.now.time_since_epoch().count(), l.busy_until_ps) + cost.count()}};
  } else {
    d = Distance::kSame;
    cost = lat_.memory;
  }
  set_sharer(l, a.sh, a.c);
  ++l.sharer_count;
  return complete_transfer(a, d, cost, sim::Duration{0});
}

// A load: hits when this CPU or an SMT sibling (the same L1D) holds the line, else misses.
inline sim::SimTime CoherenceModel::load(const AccessSite& a) {
  Line& l = a.l;
  ++l.loads;
  const bool held = l.owner >= 0 ? static_cast<std::uint32_t>(l.owner) == a.c : (a.sh[a.c / 64] & a.bit) != 0;
  if (held) return a.now + lat_.l1_hit;
  if (threads_per_core_ > 1 && sibling_holds(l, a.id, a.c)) {
    // The core's L1D holds the line for a sibling (or will once a transfer to it completes). An owner keeps M; a
    // shared copy gains this CPU as a sharer.
    if (l.owner < 0) {
      set_sharer(l, a.sh, a.c);
      ++l.sharer_count;
    }
    return sim::SimTime{
        sim::Duration{std::max(a.now.time_since_epoch().count(), l.busy_until_ps) + lat_.l1_hit.count()}};
  }
  return load_miss(a);
}

// A store or read-modify-write: hits when this CPU owns the line, else takes it exclusively from its owner, its
// sharers (invalidating them) or memory.
inline sim::SimTime CoherenceModel::store(const AccessSite& a, bool rmw) {
  Line& l = a.l;
  if (rmw)
    ++l.rmws;
  else
    ++l.stores;
  const sim::Duration op = rmw ? lat_.local_rmw : lat_.l1_hit;
  if (l.owner >= 0 && static_cast<std::uint32_t>(l.owner) == a.c) return a.now + op;
  Distance d;
  sim::Duration cost;
  if (l.owner >= 0) {
    d = topo_.distance(a.cpu, CpuId{static_cast<std::uint32_t>(l.owner)});
    cost = lat_.transfer(d);
  } else if (l.sharer_count > 0) {
    const bool self_shares = (a.sh[a.c / 64] & a.bit) != 0;
    if (self_shares && l.sharer_count == 1) {
      // Upgrade of the only copy (S -> M): a request to the LLC / directory, no data transfer.
      d = Distance::kLlc;
      cost = lat_.llc_transfer;
    } else {
      d = farthest_other_sharer(a.id, a.cpu);
      cost = lat_.transfer(d);  // invalidations go out in parallel; the farthest acknowledgement decides
    }
    clear_sharers(a.id);
  } else {
    d = Distance::kSame;
    cost = lat_.memory;
  }
  l.owner = static_cast<std::int32_t>(a.c);
  return complete_transfer(a, d, cost, op);
}

sim::SimTime CoherenceModel::access(CpuId cpu, LineId line_id, Access kind, sim::SimTime now) {
  const std::uint32_t id = line_id.get();
  const std::uint32_t c = cpu.get();
  const AccessSite a{cpu, id, c, lines_[id], sharers(id), std::uint64_t{1} << (c % 64), now};
  if (kind == Access::kLoad) return load(a);
  return store(a, kind == Access::kRmw);
}

void CoherenceModel::take_waiters(LineId line, std::vector<LineWaiter>& out) {
  out.clear();
  out.swap(cold_[line.get()].waiters);
  lines_[line.get()].has_waiters = false;
}

LineStats CoherenceModel::stats(LineId line) const {
  const Line& l = lines_[line.get()];
  const LineCold& c = cold_[line.get()];
  LineStats st;
  st.loads = l.loads;
  st.stores = l.stores;
  st.rmws = l.rmws;
  st.hits = l.loads + l.stores + l.rmws - l.transfers;  // every access is a hit or a transfer
  st.transfers = l.transfers;
  st.remote_transfers = l.remote_transfers;
  st.wait = c.wait;
  st.transfer_time = c.transfer_time;
  return st;
}

std::vector<std::pair<std::string, LineStats>> CoherenceModel::stats_by_name() const {
  std::vector<std::pair<std::string, LineStats>> out(names_.size());
  for (std::size_t i = 0; i < names_.size(); ++i) out[i].first = names_[i];
  for (std::size_t i = 0; i < lines_.size(); ++i)
    out[cold_[i].name_index].second += stats(LineId{static_cast<std::uint32_t>(i)});
  return out;
}

}  // namespace tlbsim::hw
