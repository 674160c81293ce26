// The cache-coherence cost model: each modeled line has an owner or a set of sharers; accesses cost time by
// topology distance to the data's holders, writes invalidate sharers, and transfers of one line are serialized.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "hw/topology.h"
#include "sim/ids.h"
#include "sim/time.h"

namespace tlbsim::hw {

// Latencies of the coherence model (machine-file section [coherence]).
struct CoherenceLatencies {
  sim::Duration l1_hit;           // load/store hitting a line this CPU holds in the needed state
  sim::Duration local_rmw;        // atomic RMW on a line held exclusively
  sim::Duration smt_transfer;     // line moved between SMT siblings
  sim::Duration llc_transfer;     // between cores sharing the LLC
  sim::Duration socket_transfer;  // between LLC domains of one socket
  sim::Duration remote_transfer;  // between sockets one hop apart
  sim::Duration far_transfer;     // between sockets two hops apart
  sim::Duration memory;           // from local DRAM (line cached nowhere)

  sim::Duration transfer(Distance d) const;
};

enum class Access : std::uint8_t { kLoad, kStore, kRmw };

// Per-line counters. A transfer is any access that had to fetch the line or invalidate other copies.
struct LineStats {
  std::uint64_t loads = 0;
  std::uint64_t stores = 0;
  std::uint64_t rmws = 0;
  std::uint64_t hits = 0;
  std::uint64_t transfers = 0;
  std::uint64_t remote_transfers = 0;  // transfers that crossed a socket
  sim::Duration wait{0};               // time requests queued behind earlier transfers of the line
  sim::Duration transfer_time{0};      // time spent in transfers themselves

  LineStats& operator+=(const LineStats& o);
};

// A parked spinner, woken by the next write to the line.
struct LineWaiter {
  CpuId cpu;
  std::uint32_t gen;
};

// Contract: access() is called at the request time of each access, in nondecreasing request time per line; it
// updates the line's state at once and returns when the access completes. Transfers of one line never overlap.
class CoherenceModel {
 public:
  CoherenceModel(const Topology& topo, const CoherenceLatencies& lat);

  // Adds a line. `name` classifies it for statistics (e.g. "mm.tlb_gen"); many lines may share a name.
  LineId add_line(std::string_view name);
  std::size_t line_count() const { return lines_.size(); }
  std::string_view name(LineId line) const { return names_[cold_[line.get()].name_index]; }

  sim::SimTime access(CpuId cpu, LineId line, Access kind, sim::SimTime now);

  // Whether `cpu` currently holds a valid copy of the line.
  bool holds(CpuId cpu, LineId line) const;
  int owner(LineId line) const { return lines_[line.get()].owner; }
  std::uint32_t sharer_count(LineId line) const { return lines_[line.get()].sharer_count; }

  void add_waiter(LineId line, LineWaiter w) {
    cold_[line.get()].waiters.push_back(w);
    lines_[line.get()].has_waiters = true;
  }
  // Moves the line's waiters into `out` (cleared first).
  void take_waiters(LineId line, std::vector<LineWaiter>& out);
  bool has_waiters(LineId line) const { return lines_[line.get()].has_waiters; }

  LineStats stats(LineId line) const;
  // Statistics summed over lines of one name, in order of first registration.
  std::vector<std::pair<std::string, LineStats>> stats_by_name() const;
  // Transfers of every line so far, and those that crossed a socket (the timeline trace's counter track).
  std::uint64_t total_transfers() const { return total_transfers_; }
  std::uint64_t total_remote_transfers() const { return total_remote_transfers_; }
  const CoherenceLatencies& latencies() const { return lat_; }
  const Topology& topology() const { return topo_; }

 private:
  // What every access reads and writes, in one cache line: the state and the counters. The rest of a line's record
  // (LineCold) is touched only by transfers, spinners and reports. Hits are not kept: every access is a hit or a
  // transfer, so hits = loads + stores + rmws - transfers.
  struct alignas(64) Line {
    std::int32_t owner = -1;  // CPU holding the line exclusively (M/E), or -1 when shared or uncached
    std::uint16_t sharer_count = 0;  // at most the CPU count, which the constructor bounds
    bool has_waiters = false;        // LineCold::waiters is not empty
    std::int64_t busy_until_ps = 0;
    // Bit w set: word w of the sharer mask may be nonzero (all bits set when the mask has over 64 words), so
    // scans and clears of a 1,536-CPU machine's 24-word mask visit the few words that hold sharers.
    std::uint64_t sharer_words_used = 0;
    std::uint64_t loads = 0;
    std::uint64_t stores = 0;
    std::uint64_t rmws = 0;
    std::uint64_t transfers = 0;
    std::uint64_t remote_transfers = 0;
  };
  static_assert(sizeof(Line) == 64);
  struct LineCold {
    sim::Duration wait{0};           // LineStats::wait
    sim::Duration transfer_time{0};  // LineStats::transfer_time
    std::uint32_t name_index = 0;
    std::vector<LineWaiter> waiters;
  };
  void count_transfer(Line& l, Distance d) {
    ++l.transfers;
    ++total_transfers_;
    if (d >= Distance::kRemote) {
      ++l.remote_transfers;
      ++total_remote_transfers_;
    }
  }

  std::uint64_t* sharers(std::uint32_t line) { return &sharer_words_[std::size_t{line} * words_]; }
  const std::uint64_t* sharers(std::uint32_t line) const { return &sharer_words_[std::size_t{line} * words_]; }
  Distance nearest_sharer(std::uint32_t line, CpuId cpu) const;
  // Whether an SMT sibling of `c` holds the line: the siblings share the core's L1D, so `c`'s load hits.
  bool sibling_holds(const Line& l, std::uint32_t line, std::uint32_t c) const;
  Distance farthest_other_sharer(std::uint32_t line, CpuId cpu) const;
  void clear_sharers(std::uint32_t line);
  // Adds `cpu` to the line's sharer mask (not to sharer_count).
  void set_sharer(Line& l, std::uint64_t* sh, std::uint32_t cpu) const {
    sh[cpu / 64] |= std::uint64_t{1} << (cpu % 64);
    l.sharer_words_used |= words_ > 64 ? ~std::uint64_t{0} : std::uint64_t{1} << (cpu / 64);
  }
  // Calls f(word index, word) for each word of the mask that may be nonzero, in ascending order, until f returns
  // true.
  template <class F>
  void for_each_sharer_word(std::uint32_t line, F&& f) const;

  struct AccessSite;  // one access's line, CPU and request time (defined in coherence.cpp)
  sim::SimTime load(const AccessSite& a);
  sim::SimTime load_miss(const AccessSite& a);
  sim::SimTime store(const AccessSite& a, bool rmw);
  sim::SimTime complete_transfer(const AccessSite& a, Distance d, sim::Duration cost, sim::Duration op);

  const Topology& topo_;
  CoherenceLatencies lat_;
  std::size_t words_;
  Distance max_distance_;
  std::uint32_t threads_per_core_;
  std::vector<std::uint32_t> siblings_;  // threads_per_core_ - 1 entries per CPU: the other threads of its core
  // The domains that enclose a CPU, nearest first: its core, its LLC, its socket and its socket group (the distances
  // kSmt, kLlc, kSocket and kRemote reach no further). Each is a CPU mask of words_ words, with bits only in words
  // [first_word, end_word), so that the nearest or farthest sharer of a line is found by a few mask tests instead of
  // a distance lookup per sharer.
  static constexpr std::size_t kDomainLevels = 4;
  struct Domain {
    std::size_t offset;  // into domain_words_
    std::uint32_t first_word, end_word;
  };
  std::vector<Domain> domains_;
  std::vector<std::uint32_t> cpu_domains_;  // kDomainLevels per CPU: indices into domains_
  std::vector<std::uint64_t> domain_words_;
  const Domain& domain(std::uint32_t cpu, std::size_t level) const {
    return domains_[cpu_domains_[std::size_t{cpu} * kDomainLevels + level]];
  }
  std::vector<Line> lines_;
  std::vector<LineCold> cold_;  // by line, as lines_
  std::vector<std::uint64_t> sharer_words_;
  std::vector<std::string> names_;
  // Looked up by string_view (a transparent hash): PerCpu and TaskStruct add lines by the thousand at start.
  struct NameHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view v) const { return std::hash<std::string_view>{}(v); }
  };
  std::unordered_map<std::string, std::uint32_t, NameHash, std::equal_to<>> name_index_;
  std::uint64_t total_transfers_ = 0;
  std::uint64_t total_remote_transfers_ = 0;
};

}  // namespace tlbsim::hw
