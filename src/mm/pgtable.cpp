#include "mm/pgtable.h"

#include <stdexcept>

namespace tlbsim::kernel {

Pfn FrameAllocator::alloc(FrameUse use, std::uint16_t nid) {
  ++allocated_;
  if (!free_list_.empty()) {
    const std::uint64_t p = free_list_.back();
    free_list_.pop_back();
    use_[p] = use;
    page_[p] = PageNuma{nid, false, kNoLastNid};  // page_cpupid_reset_last
    if (p < anon_.size()) anon_[p] = AnonRmap{};  // page->mapping is NULL in a page off the free lists
    if (on_reuse_) on_reuse_(Pfn{p});
    return Pfn{p};
  }
  use_.push_back(use);
  page_.push_back(PageNuma{nid, false, kNoLastNid});
  return Pfn{use_.size() - 1};
}

Pfn FrameAllocator::alloc_huge(FrameUse use, std::uint16_t nid) {
  allocated_ += kHpagePmdNr;
  const Pfn first{use_.size()};
  use_.resize(use_.size() + kHpagePmdNr, use);
  page_.resize(page_.size() + kHpagePmdNr, PageNuma{nid, false, kNoLastNid});
  return first;
}

Pfn FrameAllocator::alloc_high(FrameUse use, std::uint16_t nid) {
  ++allocated_;
  use_.push_back(use);
  page_.push_back(PageNuma{nid, false, kNoLastNid});
  return Pfn{use_.size() - 1};
}

Pfn FrameAllocator::huge_zero_page() {
  if (!huge_zero_) huge_zero_ = alloc_huge(FrameUse::kZeroPage, 0);
  return *huge_zero_;
}

void FrameAllocator::set_anon_rmap(Pfn pfn, AnonRmap r) {
  if (pfn.get() >= anon_.size()) anon_.resize(pfn.get() + 1);
  anon_[pfn.get()] = r;
}

std::optional<AnonRmap> FrameAllocator::anon_rmap(Pfn pfn) const {
  if (pfn.get() >= anon_.size() || anon_[pfn.get()].mm == nullptr || use(pfn) != FrameUse::kAnon) return std::nullopt;
  return anon_[pfn.get()];
}

bool FrameAllocator::trylock_page(Pfn pfn) {
  if (page_[pfn.get()].locked) return false;
  page_[pfn.get()].locked = true;
  return true;
}

void FrameAllocator::pin(Pfn pfn, CpuId by) {
  auto& [count, cpu] = pins_[pfn.get()];
  ++count;
  cpu = by;
}

void FrameAllocator::unpin(Pfn pfn) {
  const auto it = pins_.find(pfn.get());
  if (it == pins_.end()) throw std::logic_error("BUG: unpinning frame " + std::to_string(pfn.get()) + ", not pinned");
  if (--it->second.first == 0) pins_.erase(it);
}

std::uint32_t FrameAllocator::pins(Pfn pfn) const {
  const auto it = pins_.find(pfn.get());
  return it == pins_.end() ? 0 : it->second.first;
}

CpuId FrameAllocator::pinned_by(Pfn pfn) const {
  const auto it = pins_.find(pfn.get());
  return it == pins_.end() ? CpuId{0} : it->second.second;
}

std::int32_t FrameAllocator::xchg_last_nid(Pfn pfn, std::int32_t nid) {
  const std::int32_t old = page_[pfn.get()].last_nid;
  page_[pfn.get()].last_nid = nid;
  return old;
}

void FrameAllocator::free(Pfn pfn) {
  if (pfn.get() >= use_.size() || use_[pfn.get()] == FrameUse::kFree || use_[pfn.get()] == FrameUse::kZeroPage) {
    throw std::logic_error("BUG: freeing frame " + std::to_string(pfn.get()) + " that is not allocated");
  }
  ++frees_;
  if (on_free_) on_free_(pfn);
  use_[pfn.get()] = FrameUse::kFree;
  free_list_.push_back(pfn.get());
}

PageTables::~PageTables() {
  if (PteVisibility* vis = frames_.pte_visibility()) vis->forget(*this);
}

std::optional<Pte> PageTables::lookup(Vpn v) const {
  auto it = tables_.find(table_index(v));
  if (it == tables_.end()) {
    if (huge_.empty()) return std::nullopt;
    const auto h = huge_.find(table_index(v));
    if (h == huge_.end()) return std::nullopt;
    if (h->second.migration) return std::nullopt;
    Pte p{Pfn{h->second.page.get() + v.get() % kPtesPerTable}, true, h->second.writable, !h->second.zero};
    p.huge = true;
    p.protnone = h->second.protnone;
    return p;
  }
  const Pte& p = it->second.ptes[v.get() % kPtesPerTable];
  if (!p.present) return std::nullopt;
  return p;
}

std::optional<Pte> PageTables::walk(CpuId cpu, Vpn v) const {
  std::optional<Pte> now = lookup(v);
  if (PteVisibility* vis = frames_.pte_visibility()) return vis->walk(cpu, *this, v, now);
  return now;
}

const PteTable* PageTables::table(Vpn v) const {
  auto it = tables_.find(table_index(v));
  return it == tables_.end() ? nullptr : &it->second;
}

void PageTables::set(Vpn v, const Pte& pte) {
  PteVisibility* vis = frames_.pte_visibility();
  const std::optional<Pte> before = vis != nullptr ? lookup(v) : std::nullopt;
  auto [it, inserted] = tables_.try_emplace(table_index(v));
  if (inserted) it->second.frame = frames_.alloc(FrameUse::kPageTable);
  Pte& slot = it->second.ptes[v.get() % kPtesPerTable];
  const bool was = slot.present || slot.migration, is = pte.present || pte.migration;
  if (!was && is) ++it->second.present;
  if (was && !is) --it->second.present;
  slot = pte;
  if (vis != nullptr) vis->stored(*this, v, before, lookup(v));
}

std::optional<Pte> PageTables::migration_entry(Vpn v) const {
  auto it = tables_.find(table_index(v));
  if (it == tables_.end()) return std::nullopt;
  const Pte& p = it->second.ptes[v.get() % kPtesPerTable];
  if (!p.migration) return std::nullopt;
  return p;
}

bool PageTables::clear_migration_entry(Vpn v) {
  auto it = tables_.find(table_index(v));
  if (it == tables_.end()) return false;
  Pte& slot = it->second.ptes[v.get() % kPtesPerTable];
  if (!slot.migration) return false;
  slot = Pte{};
  --it->second.present;
  return true;  // a walk reads no entry before or after: nothing for PteVisibility
}

std::optional<Pte> PageTables::clear(Vpn v) {
  auto it = tables_.find(table_index(v));
  if (it == tables_.end()) return std::nullopt;
  Pte& slot = it->second.ptes[v.get() % kPtesPerTable];
  if (!slot.present) return std::nullopt;
  const Pte old = slot;
  slot = Pte{};
  --it->second.present;
  if (PteVisibility* vis = frames_.pte_visibility()) vis->stored(*this, v, old, std::nullopt);
  return old;
}

std::optional<Pfn> PageTables::detach_empty_table(Vpn v) {
  auto it = tables_.find(table_index(v));
  if (it == tables_.end() || it->second.present != 0) return std::nullopt;
  const Pfn frame = it->second.frame;
  tables_.erase(it);
  return frame;
}

const HugePmd* PageTables::huge_pmd(Vpn v) const {
  if (huge_.empty()) return nullptr;
  const auto it = huge_.find(table_index(v));
  return it == huge_.end() ? nullptr : &it->second;
}

void PageTables::set_huge_pmd(Vpn v, const HugePmd& pmd) {
  if (tables_.contains(table_index(v)) || huge_.contains(table_index(v))) {
    throw std::logic_error("BUG: set_huge_pmd over a populated PMD");
  }
  huge_.emplace(table_index(v), pmd);
}

std::optional<HugePmd> PageTables::clear_huge_pmd(Vpn v) {
  const auto it = huge_.find(table_index(v));
  if (it == huge_.end()) return std::nullopt;
  const HugePmd old = it->second;
  huge_.erase(it);
  return old;
}

void PageTables::split_huge_pmd(Vpn v) {
  const auto it = huge_.find(table_index(v));
  if (it == huge_.end()) return;
  const HugePmd h = it->second;
  huge_.erase(it);
  PteTable& t = tables_[table_index(v)];
  t.frame = h.deposit;
  for (std::uint64_t i = 0; i < kPtesPerTable; ++i) {
    // __split_huge_zero_page_pmd: each PTE maps the small zero page (my_zero_pfn, pte_mkspecial), read-only.
    if (h.zero) {
      t.ptes[i] = Pte{Pfn{0}, true, false, false};
    } else if (h.migration) {
      t.ptes[i] = Pte{Pfn{h.page.get() + i}, false, h.writable, true, true};
    } else {
      t.ptes[i] = Pte{Pfn{h.page.get() + i}, true, h.writable, true};
    }
  }
  t.present = kPtesPerTable;
}

std::optional<PteTable> PageTables::unlink_table(Vpn v) {
  const auto it = tables_.find(table_index(v));
  if (it == tables_.end()) return std::nullopt;
  PteTable t = std::move(it->second);
  tables_.erase(it);
  return t;
}

void PageTables::relink_table(Vpn v, PteTable t) { tables_[table_index(v)] = std::move(t); }

}  // namespace tlbsim::kernel
