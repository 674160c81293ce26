// The oracle: an always-on check, independent of the protocol code, that no CPU uses a translation after the
// kernel believed it gone, and no page-table page is freed while a CPU's paging-structure cache still points
// into it with that address space loaded.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <tuple>
#include <vector>

#include "hw/tlb.h"
#include "kernel/events.h"
#include "mm/pgtable.h"
#include "sim/time.h"

namespace tlbsim::kernel {
class Kernel;
class MmStruct;
}

namespace tlbsim::check {

struct Violation {
  sim::SimTime at;
  CpuId cpu;
  std::uint32_t mm = 0;
  Vpn vpn;
  std::string what;
};

// Contract: a subscriber to the kernel's events (kernel/events.h): the kernel model reports removals (PTE clears and
// changes), syscall returns, frame frees, CR3 loads and every user access that hits the TLB; the oracle never reads
// protocol state (tlb_gen, mm_cpumask, lazy flags). A removal is complete when the syscall that made it returned or its
// frame was freed; a TLB hit on a translation whose removal is complete is a violation.
class Oracle final : public kernel::KernelEvents {
 public:
  // An oracle for `k`'s CPUs and frames, subscribed to its events until it is destroyed. Contract: it lives from
  // before the run to after it, and is destroyed before `k` (declare it after the kernel).
  static std::unique_ptr<Oracle> attach(kernel::Kernel& k);
  ~Oracle() override;
  Oracle(const Oracle&) = delete;
  Oracle& operator=(const Oracle&) = delete;

  // `tlbs[cpu]` is each CPU's TLB; `loaded_tag(cpu)` the address-space tag its CR3 holds now (or -1 for none).
  Oracle(const kernel::FrameAllocator& frames, const hw::PfnHolders& holders, std::vector<const hw::Tlb*> tlbs,
         std::function<int(CpuId)> loaded_tag);

  // A PTE of `mm` for `v` that mapped `old` was cleared or replaced by `by`.
  void on_pte_removed(const kernel::MmStruct& mm, Vpn v, const kernel::Pte& old, CpuId by, sim::SimTime now) override;
  // The system call or fault running on `cpu` returned: every removal it made is complete.
  void on_syscall_return(CpuId cpu) override;
  void on_range_synced(CpuId cpu, const kernel::MmStruct& mm, std::uint64_t start, std::uint64_t end) override;
  // A frame is being freed: removals that mapped it are complete; a page-table frame must not be cached in the
  // paging-structure cache of a CPU that has its address space loaded.
  void on_page_replaced(const kernel::MmStruct& mm, Vpn v, Pfn page, CpuId by, sim::SimTime now) override;
  void on_frame_free(Pfn pfn, sim::SimTime now) override;
  // A freed frame is being allocated again: no CPU running a user context may still map it in its TLB under the
  // address space it has loaded.
  void on_frame_reuse(Pfn pfn, sim::SimTime now) override;
  // The task running on `cpu` is a user task of mm `mm_id` (0: a kernel thread or idle). Reported by whoever
  // switches tasks (the workload's thread start, the scheduler), never by the TLB code.
  void set_user_context(CpuId cpu, std::uint32_t mm_id) override { user_mm_[cpu.get()] = mm_id; }
  // __mmdrop freed mm `mm_id`; `users` names any CPU whose CR3 or task whose active_mm still uses it.
  void on_mm_free(std::uint32_t mm_id, const std::string& users, sim::SimTime now) override;
  // A reference count went below zero.
  void report_refcount(CpuId cpu, std::uint32_t mm_id, const char* counter, std::int64_t value,
                       sim::SimTime now) override;
  // A WARN_ON in the modeled kernel fired: the kernel's own check of one of its invariants failed.
  void report_kernel_warning(CpuId cpu, std::uint32_t mm_id, const std::string& what, sim::SimTime now) override;
  // A user access by `cpu` with `mm` loaded hit TLB entry `t` for `v`.
  void on_tlb_hit(CpuId cpu, const kernel::MmStruct& mm, Vpn v, const hw::Translation& t, sim::SimTime now) override;

  const std::vector<Violation>& violations() const { return violations_; }
  std::uint64_t checks() const { return checks_; }
  nlohmann::json to_json() const;

 private:
  struct Removal {
    std::uint32_t mm;
    std::uint64_t vpn;
    std::uint64_t pfn;
    CpuId by;
    sim::SimTime at;
  };
  void report(sim::SimTime at, CpuId cpu, std::uint32_t mm, Vpn vpn, std::string what);
  std::string describe_last_removal(std::uint32_t mm, Vpn v, Pfn pfn) const;

  kernel::Kernel* kernel_ = nullptr;  // the kernel it is subscribed to (attach), not owned
  const kernel::FrameAllocator& frames_;
  const hw::PfnHolders& holders_;
  std::vector<const hw::Tlb*> tlbs_;
  std::function<int(CpuId)> loaded_tag_;
  // In-flight removals, at most one per (old pfn, mm, vpn): a list per old pfn, its nodes in one pool, so that
  // freeing a frame drops its removals at once and an mremap of 1 GiB keeps 262,144 of them in flight at O(1) each
  // with no allocation (an ordered map's inserts and erases were 80% of such a run's profile).
  using RemovalKey = std::tuple<std::uint64_t, std::uint32_t, std::uint64_t>;
  static constexpr std::uint32_t kNone = ~std::uint32_t{0};
  struct InFlight {
    Removal r;
    std::uint32_t next = kNone;  // the next node of the same pfn's list, or of the free list
    bool live = false;
  };
  std::vector<InFlight> pool_;
  std::vector<std::uint32_t> head_by_pfn_;  // pfn -> its list's first node, kNone when it has none
  std::uint32_t free_ = kNone;
  // The node of `key`'s removal, or kNone; `prev` gets the node before it in its pfn's list (kNone: the head).
  std::uint32_t find_in_flight(const RemovalKey& key, std::uint32_t* prev = nullptr) const;
  void erase_in_flight(std::uint64_t pfn, std::uint32_t node, std::uint32_t prev);
  std::vector<std::vector<RemovalKey>> by_cpu_;
  std::deque<Removal> history_;  // recent removals, for reports
  std::vector<std::uint32_t> user_mm_;  // per CPU: the mm of the running user task, 0 for none
  std::vector<Violation> violations_;
  std::uint64_t checks_ = 0;
};

}  // namespace tlbsim::check
