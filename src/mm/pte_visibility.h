// The checker's page-table entries under the POWER storage model (docs/model.md, "Memory ordering"): each 4 KiB PTE
// is a location of hw::PowerStorage, so a PTE store reaches each other CPU's hardware page walker separately, and a
// walk is a load of its CPU that may read any value visible to it since its last ordering point (a barrier, or a
// TLB invalidation that completed on it). Power ISA v3.0B, Book III 5.9.2 ("Page Table Update Synchronization
// Requirements"): ptesync makes earlier PTE stores visible to every walker, and tlbie/tlbsync end the walks begun
// before them; the modeled tlbie sequences call invalidated() for each CPU they reach.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "hw/memory.h"
#include "hw/power_memory.h"
#include "mm/pgtable.h"
#include "sim/scheduler.h"

namespace tlbsim::kernel {

// Contract: installed on the kernel's FrameAllocator by the checker when the memory model is POWER, for the life of
// one run; the writer of a PTE is the scheduler's running CPU (a write outside any CPU's action reaches every CPU).
class PowerPteVisibility final : public PteVisibility {
 public:
  // `mem` is under POWER (mem.power() is the storage); walks and stores are reported to its access observer.
  PowerPteVisibility(hw::Memory& mem, LineId line)
      : mem_(mem), storage_(*mem.power()), sched_(mem.scheduler()), line_(line) {}

  void stored(const PageTables& pt, Vpn v, const std::optional<Pte>& before, const std::optional<Pte>& after) override;
  std::optional<Pte> walk(CpuId cpu, const PageTables& pt, Vpn v, const std::optional<Pte>& now) override;
  void invalidated(CpuId cpu) override;
  void forget(const PageTables& pt) override;

  // A PTE as the replay shows it: 0 for none, else pfn << 4 | protnone << 3 | huge << 2 | writable << 1 | 1.
  static std::uint64_t shown(const std::optional<Pte>& p);

 private:
  std::uint32_t location(const PageTables& pt, Vpn v, const std::optional<Pte>& initial);
  // An entry changed by a page-table operation this model does not track (a THP's PMD, a table unlinked, relinked or
  // split) is sequentially consistent: its value reaches every walker at once.
  void catch_up(std::uint32_t loc, const std::optional<Pte>& current);

  hw::Memory& mem_;
  hw::PowerStorage& storage_;
  sim::Scheduler& sched_;
  LineId line_;
  std::map<std::pair<const PageTables*, std::uint64_t>, std::uint32_t> locs_;  // the node's address is the key
  std::vector<std::uint32_t> all_;
};

}  // namespace tlbsim::kernel
