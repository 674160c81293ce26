// Per-CPU TLB hardware: a set-associative translation cache tagged by address-space ID (x86 PCID, powerpc PID),
// plus a small paging-structure cache, with O(1) flushes of a tag or of everything.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

#include "hw/tlb_params.h"
#include "sim/ids.h"

namespace tlbsim::hw {

// What a TLB entry translates to. `mm_id` is not hardware state: it records which address space the walk that
// filled the entry used, so the oracle can tell a stale or foreign hit from a valid one.
struct Translation {
  Pfn pfn;
  bool writable = false;
  std::uint32_t mm_id = 0;
};

struct TlbCounters {
  std::uint64_t lookups = 0;
  std::uint64_t hits = 0;
  std::uint64_t misses = 0;
  std::uint64_t fills = 0;
  std::uint64_t speculative_fills = 0;
  std::uint64_t evictions = 0;
  std::uint64_t invlpg = 0;      // single-page invalidations (INVLPG / INVPCID single address / tlbiel va)
  std::uint64_t flush_tag = 0;   // whole-tag flushes (INVPCID single context, flushing CR3 write, tlbiel PID)
  std::uint64_t flush_all = 0;   // everything
};

// Which CPUs' TLBs hold an entry (valid or not yet overwritten) for each pfn: so that a check at a frame's reuse
// visits those few TLBs rather than every CPU's (a 1536-CPU machine made the check the whole cost of a run).
// Contract: CPUs of a pfn are kept in ascending order; the Tlbs attached keep it exact.
class PfnHolders {
 public:
  void add(std::uint64_t pfn, std::uint32_t cpu);
  void remove(std::uint64_t pfn, std::uint32_t cpu);
  // The CPUs holding `pfn` in a 4 KiB entry, ascending (empty when none).
  const std::vector<std::uint32_t>& of(std::uint64_t pfn) const;
  // The CPUs that have ever cached a 2 MiB translation, ascending: any may map a frame of it (a 2 MiB entry is not
  // indexed by each of its 512 frames).
  void add_huge(std::uint32_t cpu);
  const std::vector<std::uint32_t>& huge() const { return huge_; }

 private:
  std::unordered_map<std::uint64_t, std::vector<std::uint32_t>> by_pfn_;
  std::vector<std::uint32_t> huge_;
};

// Which CPUs' TLBs hold anything of each tag (a fill since the tag's last flush or the last flush_all): so that a
// global invalidation (POWER's tlbie) visits those few TLBs rather than every CPU's. A TLB it does not visit holds
// nothing of the tag, where an invalidation changes nothing but the TLB's counter; the counts of the broadcasts are
// kept here and each TLB's counters() adds the ones it was not visited for.
// Contract: CPUs of a tag are kept in ascending order; the Tlbs attached keep it exact.
class TagHolders {
 public:
  explicit TagHolders(std::uint32_t tag_bits = 16);
  void add(std::uint16_t tag, std::uint32_t cpu);
  void remove(std::uint16_t tag, std::uint32_t cpu);
  // The CPUs whose TLBs hold something of `tag`, ascending. Throws std::out_of_range for a tag wider than the
  // machine's tag_bits, as a TLB does.
  const std::vector<std::uint32_t>& of(Asid tag) const;
  // A single-page invalidation or a flush of a tag sent to every attached TLB.
  void count_broadcast_invlpg(std::uint64_t n = 1) { broadcast_invlpg_ += n; }
  void count_broadcast_flush_tag() { ++broadcast_flush_tag_; }
  std::uint64_t broadcast_invlpg() const { return broadcast_invlpg_; }
  std::uint64_t broadcast_flush_tag() const { return broadcast_flush_tag_; }

 private:
  std::size_t max_tags_;
  std::vector<std::vector<std::uint32_t>> by_tag_;  // grown to the largest tag seen
  std::uint64_t broadcast_invlpg_ = 0;
  std::uint64_t broadcast_flush_tag_ = 0;
};

// Pages per 2 MiB translation (a PMD's worth of 4 KiB pages).
inline constexpr std::uint64_t kHugePages = 512;

// Contract: lookup/fill/invalidate are O(ways); flush_tag/flush_all are O(1) (entries carry the generation of
// their tag and of the whole TLB at fill time and are valid only while both still match).
class Tlb {
 public:
  explicit Tlb(const TlbParams& p);
  // Keeps `holders` told which pfns this TLB (CPU `cpu`'s) holds. Contract: before the first fill.
  void attach_holders(PfnHolders* holders, std::uint32_t cpu) {
    holders_ = holders;
    cpu_ = cpu;
  }
  // Keeps `tags` told which tags this TLB holds anything of. Contract: before the first fill, after attach_holders.
  void attach_tag_holders(TagHolders* tags) { tag_holders_ = tags; }

  // The translation for (tag, vpn) if cached; refreshes its LRU position. Counts a hit or a miss.
  std::optional<Translation> lookup(Asid tag, Vpn vpn);
  // Whether (tag, vpn) is cached, without touching LRU or counters (for the oracle and tests).
  std::optional<Translation> peek(Asid tag, Vpn vpn) const;
  // Caches a translation, evicting the least recently used way of its set if needed.
  void fill(Asid tag, Vpn vpn, const Translation& t, bool speculative = false);
  // Caches a 2 MiB translation: the 512 pages from vpn's 2 MiB-aligned page onwards map `t.pfn` onwards (the
  // first page of the THP). lookup and peek of any of them then return its own frame.
  void fill_huge(Asid tag, Vpn vpn, const Translation& t);
  // Invalidates (tag, vpn), any 2 MiB entry covering vpn, and, unless `last_level` (arm64 TLBI VALE1: the leaf
  // entry only), paging-structure entries covering it. Returns whether an entry was dropped.
  bool invlpg(Asid tag, Vpn vpn, bool last_level = false);
  // The same, as one TLB reached by a broadcast its TagHolders counted (counters() then does not add it again).
  bool invlpg_broadcast(Asid tag, Vpn vpn) {
    ++broadcast_invlpg_seen_;
    return invlpg(tag, vpn);
  }
  void flush_tag(Asid tag);
  void flush_tag_broadcast(Asid tag) {
    ++broadcast_flush_tag_seen_;
    flush_tag(tag);
  }
  void flush_all();

  // Whether a valid entry under `tag` maps `pfn` (cheap when no entry was ever filled for pfn).
  bool maps_pfn(Asid tag, Pfn pfn) const;

  // The last few demand-filled addresses, which a speculative walk may revisit.
  static constexpr std::size_t kRecent = 4;
  const std::array<std::uint64_t, kRecent>& recent_vpns() const { return recent_; }

  // Paging-structure cache: which leaf page-table pages (by table id) a walk under `tag` has cached a pointer to.
  void pwc_fill(Asid tag, std::uint64_t table_id, Vpn first_vpn, Vpn end_vpn);
  bool pwc_holds(std::uint64_t table_id) const;
  bool pwc_holds_for(Asid tag, std::uint64_t table_id) const;

  // Every valid entry (for the oracle's frame-reuse check and dumps).
  template <class F>
  void for_each_valid(F&& f) const {
    for (const Entry& e : entries_) {
      if (valid(e)) f(Asid{e.tag}, Vpn{e.vpn}, e.t);
    }
    for (const Entry& e : huge_) {  // a 2 MiB entry, as its first page
      if (valid(e)) f(Asid{e.tag}, Vpn{e.vpn}, e.t);
    }
  }

  // The counts, with the broadcasts of the attached TagHolders that did not visit this TLB.
  TlbCounters counters() const {
    TlbCounters c = c_;
    if (tag_holders_ != nullptr) {
      c.invlpg += tag_holders_->broadcast_invlpg() - broadcast_invlpg_seen_;
      c.flush_tag += tag_holders_->broadcast_flush_tag() - broadcast_flush_tag_seen_;
    }
    return c;
  }
  const TlbParams& params() const { return p_; }

 private:
  struct Entry {
    std::uint64_t vpn = 0;
    Translation t;
    std::uint64_t lru = 0;
    std::uint32_t tag_gen = 0;
    std::uint32_t all_gen = 0;
    std::uint16_t tag = 0;
    bool used = false;
    std::uint32_t next_same_pfn = kNoEntry;  // the next used entry of the same pfn (a chain from pfn_head_)
  };
  static constexpr std::uint32_t kNoEntry = ~std::uint32_t{0};
  struct PwcEntry {
    std::uint64_t table_id = 0;
    std::uint64_t first_vpn = 0, end_vpn = 0;
    std::uint32_t tag_gen = 0;
    std::uint32_t all_gen = 0;
    std::uint16_t tag = 0;
    bool used = false;
  };
  static constexpr std::size_t kPwcEntries = 32;

  // Links a used entry into its pfn's chain / unlinks it.
  void add_ref(Entry& e);
  void drop_ref(const Entry& e);
  bool valid(const Entry& e) const { return e.used && e.all_gen == all_gen_ && e.tag_gen == tag_gen_[e.tag]; }
  bool valid(const PwcEntry& e) const { return e.used && e.all_gen == all_gen_ && e.tag_gen == tag_gen_[e.tag]; }
  std::size_t set_index(Vpn vpn) const { return static_cast<std::size_t>(vpn.get() % sets_); }
  // The 2 MiB entry of (t, vpn), or nullptr: none was ever filled, or none matches.
  Entry* huge_entry(std::uint16_t t, Vpn vpn);
  const Entry* huge_entry(std::uint16_t t, Vpn vpn) const;
  // The first way of the 2 MiB set that vpn's 2 MiB page maps to.
  std::size_t huge_set_base(Vpn vpn) const;
  static Translation page_of(const Entry& e, Vpn vpn) {
    Translation t = e.t;
    t.pfn = Pfn{e.t.pfn.get() + (vpn.get() - e.vpn)};
    return t;
  }
  // The first entry of `vpn`'s set, or kNoEntry while the set has never been filled (all its ways invalid).
  std::uint32_t set_base(Vpn vpn) const { return set_base_[set_index(vpn)]; }
  // The set's entries, allocated at its first fill.
  std::uint32_t set_base_for_fill(Vpn vpn);
  std::uint16_t tag_index(Asid tag) const;
  // A fill under tag index t: counted, and t's holders told at the first since its flush.
  void note_fill(std::uint16_t t) {
    if (tag_fills_[t]++ == 0 && tag_holders_ != nullptr) tag_holders_->add(t, cpu_);
  }

  TlbParams p_;
  std::size_t sets_;
  // The entries of the sets filled so far, `ways` per set in order of first fill; set_base_ gives each set's
  // first entry. A set is allocated when first filled: a 1,536-CPU machine's TLBs would otherwise take 170 MB
  // that workloads touching a few pages per CPU never use, and the run would spend its start page-faulting.
  std::vector<Entry> entries_;
  std::vector<std::uint32_t> set_base_;
  std::size_t max_tags_;
  mutable std::vector<std::uint32_t> tag_gen_;  // by tag, grown on first use
  // By tag: fills (TLB and paging-structure cache) since the tag's last flush or the last flush_all, an upper
  // bound on its valid entries. Zero lets invlpg skip its scans: a global tlbie reaches every CPU's TLB, and most
  // hold nothing of the PID (seed 001's 128 processes: the scans were 31% of the run).
  mutable std::vector<std::uint32_t> tag_fills_;
  std::uint32_t all_gen_ = 1;
  std::uint64_t clock_ = 0;
  std::vector<PwcEntry> pwc_;
  // 2 MiB entries: huge_sets_ sets of huge_ways_ ways, indexed by the 2 MiB page number; allocated at the first
  // fill (most runs map no THP). Each entry's vpn is its first page.
  std::vector<Entry> huge_;
  std::size_t huge_sets_ = 0, huge_ways_ = 0;
  // The entries filled and not overwritten, by pfn: the first of a chain through Entry::next_same_pfn, so that
  // maps_pfn (the oracle's check at every frame reuse) visits a pfn's few entries, not the whole TLB.
  std::unordered_map<std::uint64_t, std::uint32_t> pfn_head_;
  PfnHolders* holders_ = nullptr;
  TagHolders* tag_holders_ = nullptr;
  std::uint64_t broadcast_invlpg_seen_ = 0;
  std::uint64_t broadcast_flush_tag_seen_ = 0;
  std::uint32_t cpu_ = 0;
  std::array<std::uint64_t, kRecent> recent_{};
  std::size_t recent_next_ = 0;
  std::size_t pwc_next_ = 0;
  TlbCounters c_;
};

}  // namespace tlbsim::hw
