// The arm64 MMU code of Linux v6.5 and v6.6, modeled function by function with the kernel's names:
//  * arch/arm64/mm/context.c: the ASID allocator with generations and rollover (asid_generation, asid_map,
//    active_asids, reserved_asids, tlb_flush_pending, cpu_asid_lock; flush_context, check_update_reserved_asid,
//    new_context, check_and_switch_context);
//  * arch/arm64/include/asm/mmu_context.h (switch_mm, __switch_mm, enter_lazy_tlb), asm/tlbflush.h (flush_tlb_mm,
//    __flush_tlb_page_nosync, flush_tlb_page, __flush_tlb_range, the v6.6 arch_tlbbatch_* and
//    arch_flush_tlb_batched_pending) and asm/tlb.h (tlb_flush).
// The trees read and why each is of the era are named in docs/model.md ("arm64"). arm64 sends no IPI to flush a
// user TLB: every flush is a broadcast TLBI to the Inner Shareable domain, completed by a DSB ISH of the issuing CPU
// (hw/invlpgb.h's queue). mm_cpumask is not used. KPTI is off (the modeled parts are not affected by Meltdown and
// have no KASLR requirement modeled), so each user flush is one TLBI, not the __tlbi_user pair.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "arch/arm64/mm/arm64_stats.h"
#include "hw/invlpgb.h"
#include "kernel/arch_mmu.h"
#include "kernel/kernel.h"
#include "kernel/locking/locks.h"

namespace tlbsim::arm64 {

using kernel::ArchTlbflushUnmapBatch;
using kernel::MmStruct;
using kernel::PerCpu;

// mm_context_t.id: the mm's context ID, generation | ASID (atomic64_t; 0 until first allocated). Pinning
// (arm64_mm_context_get, SVA) is not modeled.
struct MmContext final : kernel::ArchMmContext {
  explicit MmContext(hw::CoherenceModel& model) : id{0, model.add_line("mm.context.id")} {}
  hw::Shared<std::uint64_t> id;
};
inline MmContext& context(MmStruct& mm) { return static_cast<MmContext&>(*mm.context); }

// The per-CPU state arm64 keeps: the TLBIs this CPU issued that no DSB ISH of it has waited for yet (hardware).
struct Arm64CpuState final : kernel::ArchCpuState {
  hw::InvlpgbQueue tlbi;
};

// context.c's statics. asid_generation and each CPU's active_asids are atomics read without the lock (shared lines);
// asid_map, reserved_asids, tlb_flush_pending and cur_idx are plain data under cpu_asid_lock.
struct AsidAllocator {
  AsidAllocator(hw::CoherenceModel& model, kernel::SpinlockKind kind, std::uint32_t asid_bits, std::uint32_t ncpus);
  std::uint32_t asid_bits;
  std::uint64_t ASID_FIRST_VERSION() const { return std::uint64_t{1} << asid_bits; }
  std::uint64_t NUM_USER_ASIDS() const { return ASID_FIRST_VERSION(); }
  std::uint64_t ctxid2asid(std::uint64_t id) const { return id & (ASID_FIRST_VERSION() - 1); }
  kernel::Spinlock cpu_asid_lock;
  hw::Shared<std::uint64_t> asid_generation;
  std::vector<bool> asid_map;
  std::deque<hw::Shared<std::uint64_t>> active_asids;  // per CPU, each on its own line
  std::vector<std::uint64_t> reserved_asids;           // per CPU
  std::vector<bool> tlb_flush_pending;                 // cpumask_t
  std::uint64_t cur_idx = 1;                           // new_context's static cur_idx
};

// One ArchMmu per Kernel: it owns the ASID allocator (made at the first init_cpu, once the machine's ASID width is
// known).
class Arm64Mmu final : public kernel::ArchMmu {
 public:
  kernel::Arch arch() const override { return kernel::Arch::kArm64; }
  kernel::KernelVersion since() const override { return {6, 5}; }
  kernel::KernelVersion until() const override { return {6, 6}; }
  // arm64 selects ARCH_USE_QUEUED_SPINLOCKS (v4.19+).
  kernel::SpinlockKind spinlock_kind() const override { return kernel::SpinlockKind::kQueued; }
  hw::FenceCosts fence_costs(const hw::Machine& m) const override;
  // CONFIG_ARM64_4K_PAGES, the arm64 defconfig's page size.
  std::uint64_t page_size() const override { return 4096; }

  std::unique_ptr<kernel::ArchCpuState> alloc_cpu_state(hw::CoherenceModel&) override {
    return std::make_unique<Arm64CpuState>();
  }
  std::unique_ptr<kernel::ArchMmContext> init_new_context(kernel::Kernel& k, MmStruct&) override {
    return std::make_unique<MmContext>(k.sys().coherence());
  }
  void register_stats(kernel::Stats& s, std::uint32_t ncpus) override { stats.register_stats(s, ncpus); }
  void init_cpu(PerCpu& self, MmStruct& init_mm) override;

  sim::Task<void> switch_mm_irqs_off(PerCpu& self, MmStruct& next) override;
  sim::Task<void> enter_lazy_tlb(PerCpu& self, MmStruct& mm) override;
  sim::Task<void> leave_mm(PerCpu& self) override;
  // __switch_to: dsb(ish), so that the TLBIs a task issued complete before it can run on another CPU.
  bool has_switch_to() const override { return true; }
  sim::Task<void> switch_to(PerCpu& self) override;

  sim::Task<void> flush_tlb_mm_range(PerCpu& self, MmStruct& mm, std::uint64_t start, std::uint64_t end,
                                     std::uint8_t stride_shift, bool freed_tables) override;
  sim::Task<void> flush_tlb_page(PerCpu& self, MmStruct& mm, std::uint64_t addr) override;
  sim::Task<void> flush_tlb_mm(PerCpu& self, MmStruct& mm) override;
  sim::Task<void> tlb_flush(PerCpu& self, kernel::MmuGather& tlb) override;
  // arm64 does not select MMU_GATHER_MERGE_VMAS (v6.5, v6.6): the generic tlb_end_vma flushes each VMA's range.
  bool mmu_gather_merge_vmas() const override { return false; }

  bool batched_unmap(const kernel::KernelConfig& cfg) const override;
  sim::Task<bool> arch_tlbbatch_should_defer(PerCpu& self, MmStruct& mm) override;
  // v6.6 arch_tlbbatch_add_pending(batch, mm, uaddr).
  sim::Task<void> arch_tlbbatch_add_mm(PerCpu& self, ArchTlbflushUnmapBatch& batch, MmStruct& mm,
                                       std::uint64_t uaddr) override;
  sim::Task<void> arch_tlbbatch_flush(PerCpu& self, ArchTlbflushUnmapBatch& batch) override;
  sim::Task<void> arch_flush_tlb_batched_pending(PerCpu& self, MmStruct& mm) override;

  // ---- context.c ----
  // check_and_switch_context(mm): the fast path (the mm's generation is current and this CPU's active_asids is not
  // zero: a relaxed cmpxchg), else the slow path under cpu_asid_lock (new_context, the pending local flush).
  sim::Task<void> check_and_switch_context(PerCpu& self, MmStruct& mm);
  // Contract for the three below: cpu_asid_lock held.
  sim::Task<void> flush_context(PerCpu& self);
  bool check_update_reserved_asid(std::uint64_t asid, std::uint64_t newasid);
  sim::Task<std::uint64_t> new_context(PerCpu& self, MmStruct& mm);
  // cpu_do_switch_mm: TTBR1 (the ASID: TCR_EL1.A1 is set) and TTBR0 written, with the isb()s.
  sim::Task<void> cpu_switch_mm(PerCpu& self, MmStruct& mm, std::uint64_t asid);
  AsidAllocator& asids() { return *asids_; }

  // ---- The TLB maintenance of asm/tlbflush.h ----
  // dsb(ishst): the page-table stores complete before the TLBIs that follow.
  void dsb_ishst(PerCpu& self);
  // __tlbi(<op>is, ...): a TLBI broadcast to the Inner Shareable domain, outstanding until this CPU's next DSB ISH.
  sim::Task<void> tlbi_is(PerCpu& self, const hw::Invlpgb& op);
  // dsb(ish): every TLBI this CPU issued has completed on every CPU.
  sim::Task<void> dsb_ish(PerCpu& self);
  // local_flush_tlb_all: TLBI VMALLE1 (this CPU, every ASID) between dsb(nshst) and dsb(nsh); isb.
  sim::Task<void> local_flush_tlb_all(PerCpu& self);
  sim::Task<void> __flush_tlb_page_nosync(PerCpu& self, MmStruct& mm, std::uint64_t uaddr);
  // __flush_tlb_range(vma, start, end, stride, last_level, tlb_level) without range TLBIs (no modeled part has
  // FEAT_TLBIRANGE): one TLBI per stride up to MAX_TLBI_OPS, beyond that flush_tlb_mm.
  sim::Task<void> __flush_tlb_range(PerCpu& self, MmStruct& mm, std::uint64_t start, std::uint64_t end,
                                    std::uint8_t stride_shift, bool last_level);

  Arm64Stats stats;

 private:
  std::unique_ptr<AsidAllocator> asids_;
};

inline Arm64CpuState& cpu_state(PerCpu& self) { return static_cast<Arm64CpuState&>(*self.arch_state); }
inline Arm64Mmu& arm64_mmu(PerCpu& self) { return static_cast<Arm64Mmu&>(self.k.arch()); }

}  // namespace tlbsim::arm64
