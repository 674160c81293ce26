#include "mm/pte_visibility.h"

#include <any>

namespace tlbsim::kernel {

std::uint64_t PowerPteVisibility::shown(const std::optional<Pte>& p) {
  if (!p) return 0;
  return (p->pfn.get() << 4) | (p->protnone ? 8u : 0u) | (p->huge ? 4u : 0u) | (p->writable ? 2u : 0u) | 1u;
}

std::uint32_t PowerPteVisibility::location(const PageTables& pt, Vpn v, const std::optional<Pte>& initial) {
  auto [it, inserted] = locs_.try_emplace({&pt, v.get()}, 0);
  if (inserted) {
    // The map node is stable: its address names the location in the storage.
    it->second = storage_.location(&*it, line_, initial, shown(initial));
    all_.push_back(it->second);
  }
  return it->second;
}

void PowerPteVisibility::catch_up(std::uint32_t loc, const std::optional<Pte>& current) {
  if (shown(std::any_cast<const std::optional<Pte>&>(storage_.newest(loc))) != shown(current))
    storage_.store_global(loc, current, shown(current));
}

void PowerPteVisibility::stored(const PageTables& pt, Vpn v, const std::optional<Pte>& before,
                                const std::optional<Pte>& after) {
  const std::uint32_t loc = location(pt, v, before);
  catch_up(loc, before);
  if (const std::optional<CpuId> cpu = sched_.running_cpu()) {
    storage_.store(*cpu, loc, after, shown(after));
    if (mem_.observed()) mem_.observe(sched_.cpu(*cpu), line_, hw::Access::kStore, shown(before), shown(after));
  } else {
    storage_.store_global(loc, after, shown(after));
  }
}

std::optional<Pte> PowerPteVisibility::walk(CpuId cpu, const PageTables& pt, Vpn v, const std::optional<Pte>& now) {
  const auto it = locs_.find({&pt, v.get()});
  if (it == locs_.end()) return now;  // never stored since the storage began: every CPU reads the current entry
  catch_up(it->second, now);
  const auto [lo, hi] = storage_.readable(cpu, it->second);
  const std::size_t k = sched_.choose_value(cpu, hi - lo + 1);
  std::optional<Pte> seen =
      std::any_cast<std::optional<Pte>>(storage_.read(cpu, it->second, hi - static_cast<std::uint32_t>(k)));
  if (mem_.observed()) mem_.observe(sched_.cpu(cpu), line_, hw::Access::kLoad, shown(seen), std::nullopt);
  return seen;
}

void PowerPteVisibility::invalidated(CpuId cpu) {
  for (const std::uint32_t loc : all_) storage_.settle(cpu, loc);
}

void PowerPteVisibility::forget(const PageTables& pt) {
  locs_.erase(locs_.lower_bound({&pt, 0}), locs_.upper_bound({&pt, ~std::uint64_t{0}}));
}

}  // namespace tlbsim::kernel
