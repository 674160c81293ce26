#include "hw/tlb.h"

#include <algorithm>
#include <stdexcept>
#include <utility>

namespace tlbsim::hw {

Tlb::Tlb(const TlbParams& p)
    : p_(p),
      sets_(p.entries / p.ways),
      set_base_(p.ways == 0 ? 0 : p.entries / p.ways, kNoEntry),
      max_tags_(std::size_t{1} << std::min<std::uint32_t>(p.tag_bits, 16)),
      pwc_(kPwcEntries) {
  if (p.ways == 0 || p.entries % p.ways != 0) throw std::invalid_argument("TLB ways must divide entries");
  huge_ways_ = p.huge_ways != 0 ? p.huge_ways : p.ways;
  const std::size_t huge_entries = p.huge_entries != 0 ? p.huge_entries : p.entries;
  if (huge_entries % huge_ways_ != 0) throw std::invalid_argument("TLB huge_ways must divide huge_entries");
  huge_sets_ = huge_entries / huge_ways_;
}

std::size_t Tlb::huge_set_base(Vpn vpn) const { return (vpn.get() / kHugePages) % huge_sets_ * huge_ways_; }

Tlb::Entry* Tlb::huge_entry(std::uint16_t t, Vpn vpn) {
  if (huge_.empty()) return nullptr;
  const std::uint64_t first = vpn.get() - vpn.get() % kHugePages;
  const std::size_t base = huge_set_base(vpn);
  for (std::size_t w = 0; w < huge_ways_; ++w) {
    Entry& e = huge_[base + w];
    if (e.vpn == first && e.tag == t && valid(e)) return &e;
  }
  return nullptr;
}

const Tlb::Entry* Tlb::huge_entry(std::uint16_t t, Vpn vpn) const { return const_cast<Tlb*>(this)->huge_entry(t, vpn); }

void Tlb::fill_huge(Asid tag, Vpn vpn, const Translation& tr) {
  const std::uint16_t t = tag_index(tag);
  note_fill(t);
  if (huge_.empty()) {
    huge_.resize(huge_sets_ * huge_ways_);
    if (holders_ != nullptr) holders_->add_huge(cpu_);
  }
  const std::uint64_t first = vpn.get() - vpn.get() % kHugePages;
  const std::size_t base = huge_set_base(vpn);
  Entry* victim = &huge_[base];
  for (std::size_t w = 0; w < huge_ways_; ++w) {
    Entry& e = huge_[base + w];
    if ((e.vpn == first && e.tag == t && valid(e)) || !valid(e)) {
      victim = &e;
      break;
    }
    if (e.lru < victim->lru) victim = &e;
  }
  if (valid(*victim) && !(victim->vpn == first && victim->tag == t)) ++c_.evictions;
  *victim = Entry{first, tr, ++clock_, tag_gen_[t], all_gen_, t, true};
  ++c_.fills;
  recent_[recent_next_] = vpn.get();
  recent_next_ = (recent_next_ + 1) % kRecent;
}

std::uint32_t Tlb::set_base_for_fill(Vpn vpn) {
  std::uint32_t& base = set_base_[set_index(vpn)];
  if (base == kNoEntry) {
    base = static_cast<std::uint32_t>(entries_.size());
    entries_.resize(entries_.size() + p_.ways);
  }
  return base;
}

std::uint16_t Tlb::tag_index(Asid tag) const {
  if (tag.get() >= max_tags_) throw std::out_of_range("TLB tag wider than the machine's tag_bits");
  // Generations of tags never used are 1; the table grows to the largest tag seen (a 16-bit PID space would
  // otherwise cost 256 KiB per TLB, per run of the checker).
  if (tag.get() >= tag_gen_.size()) {
    tag_gen_.resize(tag.get() + 1u, 1);
    tag_fills_.resize(tag.get() + 1u, 0);
  }
  return tag.get();
}

std::optional<Translation> Tlb::lookup(Asid tag, Vpn vpn) {
  ++c_.lookups;
  const std::uint16_t t = tag_index(tag);
  const std::uint32_t base = set_base(vpn);
  for (std::size_t w = 0; base != kNoEntry && w < p_.ways; ++w) {
    Entry& e = entries_[base + w];
    if (e.vpn == vpn.get() && e.tag == t && valid(e)) {
      e.lru = ++clock_;
      ++c_.hits;
      return e.t;
    }
  }
  if (Entry* h = huge_entry(t, vpn)) {
    h->lru = ++clock_;
    ++c_.hits;
    return page_of(*h, vpn);
  }
  ++c_.misses;
  return std::nullopt;
}

std::optional<Translation> Tlb::peek(Asid tag, Vpn vpn) const {
  const std::uint16_t t = tag_index(tag);
  const std::uint32_t base = set_base(vpn);
  for (std::size_t w = 0; base != kNoEntry && w < p_.ways; ++w) {
    const Entry& e = entries_[base + w];
    if (e.vpn == vpn.get() && e.tag == t && valid(e)) return e.t;
  }
  if (const Entry* h = huge_entry(t, vpn)) return page_of(*h, vpn);
  return std::nullopt;
}

void Tlb::fill(Asid tag, Vpn vpn, const Translation& tr, bool speculative) {
  const std::uint16_t t = tag_index(tag);
  note_fill(t);
  const std::uint32_t base = set_base_for_fill(vpn);
  Entry* victim = &entries_[base];
  for (std::size_t w = 0; w < p_.ways; ++w) {
    Entry& e = entries_[base + w];
    if (e.vpn == vpn.get() && e.tag == t && valid(e)) {
      victim = &e;  // refresh in place
      break;
    }
    if (!valid(e)) {
      victim = &e;
      break;
    }
    if (e.lru < victim->lru) victim = &e;
  }
  if (valid(*victim) && !(victim->vpn == vpn.get() && victim->tag == t)) ++c_.evictions;
  if (victim->used) drop_ref(*victim);
  *victim = Entry{vpn.get(), tr, ++clock_, tag_gen_[t], all_gen_, t, true};
  add_ref(*victim);
  ++c_.fills;
  if (speculative) {
    ++c_.speculative_fills;
  } else {
    recent_[recent_next_] = vpn.get();
    recent_next_ = (recent_next_ + 1) % kRecent;
  }
}

bool Tlb::invlpg(Asid tag, Vpn vpn, bool last_level) {
  ++c_.invlpg;
  const std::uint16_t t = tag_index(tag);
  if (tag_fills_[t] == 0) return false;  // nothing of this tag is cached
  bool dropped = false;
  const std::uint32_t base = set_base(vpn);
  for (std::size_t w = 0; base != kNoEntry && w < p_.ways; ++w) {
    Entry& e = entries_[base + w];
    if (e.vpn == vpn.get() && e.tag == t && valid(e)) {
      drop_ref(e);
      e.used = false;
      dropped = true;
    }
  }
  if (Entry* h = huge_entry(t, vpn)) {  // INVLPG drops the entry of any page size that maps the address
    h->used = false;
    dropped = true;
  }
  // INVLPG also drops paging-structure-cache entries used to translate the address (arm64's last-level TLBIs do not).
  if (last_level) return dropped;
  for (PwcEntry& p : pwc_) {
    if (valid(p) && p.tag == t && vpn.get() >= p.first_vpn && vpn.get() < p.end_vpn) p.used = false;
  }
  return dropped;
}

void Tlb::flush_tag(Asid tag) {
  ++c_.flush_tag;
  const std::uint16_t t = tag_index(tag);
  ++tag_gen_[t];
  if (tag_fills_[t] != 0 && tag_holders_ != nullptr) tag_holders_->remove(t, cpu_);
  tag_fills_[t] = 0;
}

void Tlb::flush_all() {
  ++c_.flush_all;
  ++all_gen_;
  if (tag_holders_ != nullptr) {
    for (std::size_t t = 0; t < tag_fills_.size(); ++t) {
      if (tag_fills_[t] != 0) tag_holders_->remove(static_cast<std::uint16_t>(t), cpu_);
    }
  }
  std::fill(tag_fills_.begin(), tag_fills_.end(), 0);
}

void Tlb::pwc_fill(Asid tag, std::uint64_t table_id, Vpn first_vpn, Vpn end_vpn) {
  const std::uint16_t t = tag_index(tag);
  for (PwcEntry& p : pwc_) {
    if (valid(p) && p.tag == t && p.table_id == table_id) return;
  }
  note_fill(t);
  pwc_[pwc_next_] = PwcEntry{table_id, first_vpn.get(), end_vpn.get(), tag_gen_[t], all_gen_, t, true};
  pwc_next_ = (pwc_next_ + 1) % kPwcEntries;
}

bool Tlb::pwc_holds(std::uint64_t table_id) const {
  for (const PwcEntry& p : pwc_) {
    if (valid(p) && p.table_id == table_id) return true;
  }
  return false;
}

}  // namespace tlbsim::hw

namespace tlbsim::hw {

bool Tlb::pwc_holds_for(Asid tag, std::uint64_t table_id) const {
  for (const PwcEntry& p : pwc_) {
    if (valid(p) && p.tag == tag.get() && p.table_id == table_id) return true;
  }
  return false;
}

}  // namespace tlbsim::hw

namespace tlbsim::hw {

void Tlb::add_ref(Entry& e) {
  const auto index = static_cast<std::uint32_t>(&e - entries_.data());
  const auto [it, inserted] = pfn_head_.try_emplace(e.t.pfn.get(), index);
  e.next_same_pfn = inserted ? kNoEntry : std::exchange(it->second, index);
  if (inserted && holders_ != nullptr) holders_->add(e.t.pfn.get(), cpu_);
}

void Tlb::drop_ref(const Entry& e) {
  const auto index = static_cast<std::uint32_t>(&e - entries_.data());
  const auto it = pfn_head_.find(e.t.pfn.get());
  if (it == pfn_head_.end()) return;
  if (it->second == index) {
    if (e.next_same_pfn != kNoEntry) {
      it->second = e.next_same_pfn;
    } else {
      pfn_head_.erase(it);
      if (holders_ != nullptr) holders_->remove(e.t.pfn.get(), cpu_);
    }
    return;
  }
  for (std::uint32_t i = it->second; i != kNoEntry; i = entries_[i].next_same_pfn) {
    if (entries_[i].next_same_pfn == index) {
      entries_[i].next_same_pfn = e.next_same_pfn;
      return;
    }
  }
}

void PfnHolders::add(std::uint64_t pfn, std::uint32_t cpu) {
  std::vector<std::uint32_t>& cpus = by_pfn_[pfn];
  cpus.insert(std::lower_bound(cpus.begin(), cpus.end(), cpu), cpu);
}

void PfnHolders::remove(std::uint64_t pfn, std::uint32_t cpu) {
  const auto it = by_pfn_.find(pfn);
  if (it == by_pfn_.end()) return;
  std::vector<std::uint32_t>& cpus = it->second;
  const auto at = std::lower_bound(cpus.begin(), cpus.end(), cpu);
  if (at != cpus.end() && *at == cpu) cpus.erase(at);
  if (cpus.empty()) by_pfn_.erase(it);
}

TagHolders::TagHolders(std::uint32_t tag_bits) : max_tags_(std::size_t{1} << std::min<std::uint32_t>(tag_bits, 16)) {}

void TagHolders::add(std::uint16_t tag, std::uint32_t cpu) {
  if (tag >= by_tag_.size()) by_tag_.resize(tag + std::size_t{1});
  std::vector<std::uint32_t>& cpus = by_tag_[tag];
  cpus.insert(std::lower_bound(cpus.begin(), cpus.end(), cpu), cpu);
}

void TagHolders::remove(std::uint16_t tag, std::uint32_t cpu) {
  if (tag >= by_tag_.size()) return;
  std::vector<std::uint32_t>& cpus = by_tag_[tag];
  const auto at = std::lower_bound(cpus.begin(), cpus.end(), cpu);
  if (at != cpus.end() && *at == cpu) cpus.erase(at);
}

const std::vector<std::uint32_t>& TagHolders::of(Asid tag) const {
  static const std::vector<std::uint32_t> kNone;
  if (tag.get() >= max_tags_) throw std::out_of_range("TLB tag wider than the machine's tag_bits");
  return tag.get() < by_tag_.size() ? by_tag_[tag.get()] : kNone;
}

void PfnHolders::add_huge(std::uint32_t cpu) {
  if (!std::binary_search(huge_.begin(), huge_.end(), cpu))
    huge_.insert(std::lower_bound(huge_.begin(), huge_.end(), cpu), cpu);
}

const std::vector<std::uint32_t>& PfnHolders::of(std::uint64_t pfn) const {
  static const std::vector<std::uint32_t> kNone;
  const auto it = by_pfn_.find(pfn);
  return it == by_pfn_.end() ? kNone : it->second;
}

bool Tlb::maps_pfn(Asid tag, Pfn pfn) const {
  for (const Entry& e : huge_) {
    if (valid(e) && e.tag == tag.get() && pfn.get() >= e.t.pfn.get() && pfn.get() < e.t.pfn.get() + kHugePages) {
      return true;
    }
  }
  const auto it = pfn_head_.find(pfn.get());
  if (it == pfn_head_.end()) return false;
  for (std::uint32_t i = it->second; i != kNoEntry; i = entries_[i].next_same_pfn) {
    const Entry& e = entries_[i];
    if (valid(e) && e.tag == tag.get()) return true;
  }
  return false;
}

}  // namespace tlbsim::hw
