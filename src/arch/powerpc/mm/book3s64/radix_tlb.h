// The powerpc64 (Book3S-64) radix MMU code of two eras, modeled function by function with the kernel's names:
//  * v4.14: arch/powerpc/mm/tlb-radix.c, mmu_context.c and asm/mmu_context.h, asm/tlb.h (mm_is_thread_local),
//    read in microsoft/surface-duo-oss-kernel.msm-4..14 @b2cd76cc, plus seed 001 (batched unmap flush, RFC 2017);
//  * v6.2: arch/powerpc/mm/book3s64/radix_tlb.c (flush_type_needed, mm_cpumask trimming, exit_flush_lazy_tlbs),
//    read in tdavenvidia/linux-nvidia-6.5 @16339f38 (the closest stored tree), plus seed 004 patch 5/5.
// RadixMmu holds what both eras share (PIDs, the context switch, the tlbie/tlbiel sequences, seed 001's batch);
// the flushes that differ are pure virtual here and overridden by each era's ArchMmu: RadixMmu414 in
// arch/powerpc/mm/tlb_radix.cpp (v4.14's tlb-radix.c) and RadixMmu62 in arch/powerpc/mm/book3s64/radix_tlb_v62.cpp
// (v6.2's book3s64/radix_tlb.c).
// The radix PID tags TLB entries (PerCpu::hw_tag); tlbiel invalidates this CPU's TLB only, tlbie every CPU's.
#pragma once

#include <cstdint>
#include <vector>

#include "arch/powerpc/mm/book3s64/radix_stats.h"
#include "kernel/arch_mmu.h"
#include "kernel/kernel.h"

namespace tlbsim::kernel {
class TaskStruct;
}  // namespace tlbsim::kernel

namespace tlbsim::powerpc {

using kernel::ArchTlbflushUnmapBatch;
using kernel::Cpumask;
using kernel::MmStruct;
using kernel::PerCpu;

inline constexpr std::uint32_t MMU_NO_CONTEXT = ~std::uint32_t{0};
inline constexpr std::uint64_t TLB_FLUSH_ALL = ~std::uint64_t{0};
// POWER9_TLB_SETS_RADIX: _tlbiel_pid issues one tlbiel per set.
inline constexpr std::uint32_t POWER9_TLB_SETS_RADIX = 128;
// tlb_single_page_flush_ceiling ("copied from x86") and, from v4.15, the local ceiling (POWER9_TLB_SETS_RADIX * 2).
inline constexpr std::uint64_t tlb_single_page_flush_ceiling = 33;
inline constexpr std::uint64_t tlb_local_single_page_flush_ceiling = POWER9_TLB_SETS_RADIX * 2;
// Seed 001: struct arch_tlbflush_unmap_batch's mm[] array size.
inline constexpr std::size_t MAX_BATCHED_MM = 1024;

// mm_context_t as radix uses it (arch/powerpc/include/asm/book3s/64/mmu.h): the PID (context.id; MMU_NO_CONTEXT
// until the model allocates one on first use, 0 for init_mm) and active_cpus (atomic_t), on the context's line.
struct MmContext final : kernel::ArchMmContext {
  explicit MmContext(hw::CoherenceModel& model) : active_cpus{0, model.add_line("mm.context")} {}
  std::uint32_t id = MMU_NO_CONTEXT;
  hw::Shared<int> active_cpus;
};
// mm->context.
inline MmContext& context(MmStruct& mm) { return static_cast<MmContext&>(*mm.context); }
inline const MmContext& context(const MmStruct& mm) { return static_cast<const MmContext&>(*mm.context); }

// The RIC field of tlbie/tlbiel: TLB only, page-walk cache only, or both (and the process-table cache).
enum class Ric : std::uint8_t { RIC_FLUSH_TLB, RIC_FLUSH_PWC, RIC_FLUSH_ALL };

// The code both eras share. One ArchMmu per Kernel: besides per-CPU state it holds the kernel-global PID
// allocator (mmu_context_ida).
class RadixMmu : public kernel::ArchMmu {
 public:
  kernel::Arch arch() const override { return kernel::Arch::kPowerpc; }
  // powerpc64 server kernels are built with 64 KiB base pages (CONFIG_PPC_64K_PAGES, book3s64's default).
  std::uint64_t page_size() const override { return 65536; }
  hw::FenceCosts fence_costs(const hw::Machine& m) const override;

  // powerpc keeps no per-CPU TLB state beyond PerCpu's PIDR (hw_tag) and the v6.2 trim clock.
  std::unique_ptr<kernel::ArchCpuState> alloc_cpu_state(hw::CoherenceModel&) override {
    return std::make_unique<kernel::ArchCpuState>();
  }
  std::unique_ptr<kernel::ArchMmContext> init_new_context(kernel::Kernel& k, MmStruct&) override {
    return std::make_unique<MmContext>(k.sys().coherence());
  }
  void init_cpu(PerCpu& self, MmStruct& init_mm) override;
  sim::Task<void> switch_mm_irqs_off(PerCpu& self, MmStruct& next) override;
  sim::Task<void> enter_lazy_tlb(PerCpu& self, MmStruct& mm) override;
  sim::Task<void> leave_mm(PerCpu& self) override;
  sim::Task<void> flush_tlb_page(PerCpu& self, MmStruct& mm, std::uint64_t addr) override;
  sim::Task<void> flush_tlb_mm(PerCpu& self, MmStruct& mm) override;
  sim::Task<void> tlb_flush(PerCpu& self, kernel::MmuGather& tlb) override;
  bool batched_unmap(const kernel::KernelConfig& cfg) const override;
  bool broadcasts_tlb_invalidations() const override { return true; }
  sim::Task<bool> arch_tlbbatch_should_defer(PerCpu& self, MmStruct& mm) override;
  sim::Task<void> arch_tlbbatch_add_mm(PerCpu& self, ArchTlbflushUnmapBatch& batch, MmStruct& mm,
                                       std::uint64_t uaddr) override;
  sim::Task<void> arch_tlbbatch_flush(PerCpu& self, ArchTlbflushUnmapBatch& batch) override;

  // radix__init_new_context's PID allocation: the lowest free PID from mmu_base_pid (1) up; destroy_context frees
  // it at __mmdrop. The model allocates on the mm's first switch_mm (no TLB entry can carry the PID before).
  std::uint32_t alloc_pid(MmStruct& mm);
  // radix__switch_mmu_context: mtspr PIDR; isync.
  sim::Task<void> radix__switch_mmu_context(PerCpu& self, MmStruct& next);
  // mm_is_thread_local (v4.14 BOOK3S_64): active_cpus <= 1 and this CPU in mm_cpumask.
  sim::Task<bool> mm_is_thread_local(PerCpu& self, MmStruct& mm);

  // The invalidation sequences (the cost model; see docs/model.md).
  sim::Task<void> _tlbiel_pid(PerCpu& self, std::uint32_t pid, Ric ric);
  sim::Task<void> _tlbiel_va(PerCpu& self, std::uint64_t va, std::uint32_t pid);
  sim::Task<void> _tlbie_pid(PerCpu& self, std::uint32_t pid, Ric ric);
  sim::Task<void> _tlbie_va(PerCpu& self, std::uint64_t va, std::uint32_t pid);
  // v4.15+ __tlbie_va_range + one tlbsync, and __tlbiel_va_range + one ptesync; one invalidation per page of
  // 1 << page_shift bytes (PAGE_SHIFT, or PMD_SHIFT for MMU_PAGE_2M).
  sim::Task<void> _tlbie_va_range(PerCpu& self, std::uint64_t start, std::uint64_t end, std::uint32_t pid,
                                  std::uint8_t page_shift = kernel::kPageShift);
  sim::Task<void> _tlbiel_va_range(PerCpu& self, std::uint64_t start, std::uint64_t end, std::uint32_t pid,
                                   std::uint8_t page_shift = kernel::kPageShift);
  // flush_tlb_300(POWER9_TLB_SETS_RADIX, TLB_INVAL_SCOPE_LPID): every entry of the partition on this CPU.
  sim::Task<void> flush_tlb_power9_lpid(PerCpu& self);

  // radix__local_flush_tlb_mm: a tlbiel of the whole PID, TLB only (seed 001's IPI handler calls it).
  sim::Task<void> radix__local_flush_tlb_mm(PerCpu& self, MmStruct& mm);

  // The era's flushes (flush_tlb_mm, flush_tlb_page and tlb_flush call them; flush_tlb_mm_range is the era's too).
  virtual sim::Task<void> radix__flush_tlb_mm(PerCpu& self, MmStruct& mm) = 0;
  virtual sim::Task<void> radix__flush_tlb_page_psize(PerCpu& self, MmStruct& mm, std::uint64_t va) = 0;
  virtual sim::Task<void> radix__tlb_flush(PerCpu& self, kernel::MmuGather& tlb) = 0;

  void register_stats(kernel::Stats& s, std::uint32_t ncpus) override { stats.register_stats(s, ncpus); }
  RadixStats stats;

 private:
  std::vector<MmStruct*> pids_;  // pids_[pid]: the mm holding it (index 0: init_mm)
};

// current (the scheduler's rq->curr; null without a scheduler) and current->mm of the task running on `self`.
// Without a scheduler (scripted scenarios) the CPU runs a user thread of whatever mm it has loaded.
kernel::TaskStruct* current_task(PerCpu& self);
MmStruct* current_mm(PerCpu& self);

}  // namespace tlbsim::powerpc
