// A flat operational model of POWER's storage subsystem for the checker and `tlbsim litmus` (docs/model.md,
// "Memory ordering"), after Sarkar, Sewell, Alglave, Maranget and Williams, "Understanding POWER Multiprocessors"
// (PLDI 2011), simplified:
//  - each location has a coherence order of writes, the order in which they executed;
//  - a write is visible to its own CPU at once and propagates to each other CPU separately, as an exploration action
//    (`prL.I@cpuN`: write I of location L reaches cpu N); a CPU that has seen a write sees nothing coherence-older;
//  - a load reads any write that its CPU could see at some point since its last ordering point (a barrier), and
//    nothing coherence-older than what it read or wrote there before: so unordered loads may be satisfied out of
//    order (the value is an exploration choice, `rvK@cpuN`, K = 0 the newest);
//  - lwsync (smp_rmb, smp_wmb, release, acquire) is an ordering point for loads, and A-cumulative for stores: a later
//    write of the CPU reaches a CPU only after every write the barrier's CPU had seen; sync (smp_mb) also waits
//    until all of those have reached every CPU;
//  - B-cumulativity: a write that reaches a CPU brings what its barrier ordered before it, and the CPU's later writes
//    carry that too (the barrier has reached the CPU; ISA2+lwsync+data+addr);
//  - address dependencies (litmus tests with pointers, when tracked): a load whose address came from earlier loads
//    reads nothing that had been overwritten for its CPU at the moment those could be satisfied (MP+sync+addr);
//  - an RMW reads the coherence-latest write.
// Page-table entries are locations too when the checker runs the kernel under POWER (mm/pte_visibility.h): a hardware
// page walk is a load of its CPU; ptesync is a sync; a tlbie or tlbiel settles the walks of the CPUs it reaches.
// Not modeled: stores that become visible before an earlier load is satisfied (LB), coherence orders other than the
// execution order (2+2W). Data dependencies need nothing: a store is never visible before an earlier load.
//
// The same storage in its other-multicopy-atomic mode is the checker's ARMv8 model (Pulte, Flur, Deacon, French,
// Sarkar and Sewell, "Simplifying ARM Concurrency: Multicopy-atomic Axiomatic and Operational Models for ARMv8",
// POPL 2018): a write is visible to its own CPU at once and reaches every other CPU in one step (`prL.I@cpuN` names
// the writer), so no CPU can see it while another still cannot (IRIW is forbidden with any load ordering). Barriers:
// DMB ISH (smp_mb) is sync; DMB ISHLD (smp_rmb) is an ordering point for later loads only; DMB ISHST (smp_wmb) orders
// later stores after everything the CPU has seen, and not its loads; release and acquire are lwsync as on POWER (the
// RCsc order of an STLR before a later LDAR is not modeled: weaker than the hardware, so it can only add behaviours).
// DSB ISH and DSB ISHST are sync (kPtesync): they wait for the CPU's accesses to complete.
#pragma once

#include <any>
#include <cstdint>
#include <functional>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "hw/coherence.h"
#include "sim/exploring_scheduler.h"
#include "sim/ids.h"

namespace tlbsim::hw {

enum class Fence : std::uint8_t;

class PowerStorage final : public sim::MemoryActions {
 public:
  // `wake` wakes the CPUs spinning on a line when a write reaches them.
  // `multicopy_atomic`: the ARMv8 mode (a write reaches every other CPU at once).
  PowerStorage(std::size_t cpus, std::function<void(LineId)> wake, bool multicopy_atomic = false)
      : cpus_(cpus), wake_(std::move(wake)), mca_(multicopy_atomic) {}

  // The location at `addr`; the first access registers it with the variable's current value as its initial write.
  std::uint32_t location(const void* addr, LineId line, std::any initial, std::optional<std::uint64_t> shown);
  void store(CpuId c, std::uint32_t loc, std::any value, std::optional<std::uint64_t> shown);
  // The writes a load of `loc` may read: indices [lo, hi] into the coherence order.
  // `dep`: for a load with an address dependency, the moment (CPU c's clock) from which it may be satisfied.
  std::pair<std::uint32_t, std::uint32_t> readable(CpuId c, std::uint32_t loc, std::uint32_t dep = 0);
  const std::any& read(CpuId c, std::uint32_t loc, std::uint32_t index);

  // Address dependencies. Once tracked, each CPU counts the writes that reach it (its clock) and remembers when each
  // did; the state key includes both. Contract: called before the first access, or never (the kernel model's
  // accesses carry no dependencies).
  void track_dependencies() { deps_ = true; }
  // CPU c's clock now (0 when dependencies are not tracked).
  std::uint32_t clock(CpuId c) { return deps_ ? view(c).clock : 0; }
  // When write `index` of `loc` reached CPU c (0 when dependencies are not tracked). Contract: it has.
  std::uint32_t arrival(CpuId c, std::uint32_t loc, std::uint32_t index);
  // An RMW sees the coherence-latest write; its store follows.
  void see_latest(CpuId c, std::uint32_t loc);
  // A write made outside any CPU's action (a scenario's set-up): every CPU sees it at once.
  void store_global(std::uint32_t loc, std::any value, std::optional<std::uint64_t> shown);
  // CPU c's later loads of `loc` read nothing older than what has reached c (a TLB invalidation that completes on c
  // ends every page walk begun before it).
  void settle(CpuId c, std::uint32_t loc);
  // A spin loop about to wait on `line`: if a value of it newer than CPU c last read has reached c, c's next loads
  // of it read the newest (a spinning load is eventually satisfied by what has propagated) and it need not wait.
  bool settle_line(CpuId c, LineId line);
  void fence(CpuId c, Fence f);

  void enabled(std::vector<sim::Action>& out) const override;
  void run(const sim::Action& a) override;
  // The whole state, for a stateful search.
  void key(std::vector<long long>& out) const;
  // For the replay: the value of write `index` of `loc` as a number, if it is one.
  std::optional<std::uint64_t> shown(std::uint32_t loc, std::uint32_t index) const {
    return locs_[loc].co[index].shown;
  }
  LineId line(std::uint32_t loc) const { return locs_[loc].line; }
  // The coherence-latest write of `loc`.
  const std::any& newest(std::uint32_t loc) const { return locs_[loc].co.back().value; }
  // For the replay: the newest write of each location that has not reached CPU c yet, as (location, index).
  std::vector<std::pair<std::uint32_t, std::uint32_t>> unseen(CpuId c) const;

 private:
  using Needs = std::vector<std::pair<std::uint32_t, std::uint32_t>>;  // (location, index) a target must have seen
  struct Write {
    std::any value;
    std::optional<std::uint64_t> shown;
    Needs needs;
    CpuId by{};  // the writer (the initial value: cpu0)
  };
  struct Loc {
    LineId line;
    std::vector<Write> co;
  };
  struct View {
    std::vector<std::uint32_t> seen, floor, last;  // per location
    Needs needs;  // what the CPU's next writes must be preceded by: its last barrier's, and those that reached it
    std::uint32_t clock = 0;                          // writes that have reached the CPU (tracked dependencies)
    std::vector<std::vector<std::uint32_t>> arrived;  // per location and write, the clock when it reached the CPU
  };
  View& view(CpuId c);
  bool eligible(std::uint32_t d, const Write& w) const;
  void propagate(std::uint32_t d, std::uint32_t loc, std::uint32_t index);
  // Multicopy-atomic mode: the write reaches every CPU (and what its barrier ordered first).
  void propagate_all(std::uint32_t loc, std::uint32_t index);
  void arrive(View& v, std::uint32_t loc, std::uint32_t index);
  static void merge(Needs& into, const Needs& from);

  std::vector<Loc> locs_;
  std::unordered_map<const void*, std::uint32_t> index_;
  std::vector<View> cpus_;
  std::function<void(LineId)> wake_;
  bool deps_ = false;
  bool mca_ = false;
};

}  // namespace tlbsim::hw
