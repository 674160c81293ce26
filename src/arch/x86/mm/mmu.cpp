// The x86 ArchMmu of the PCID + tlb_gen era: Linux v5.17 (arch/x86/mm/tlb.c, arch/x86/include/asm/tlb.h), with
// the v6.13 differences seed 002 needs guarded by the profile's version (see arch/x86/mm/tlb.cpp).
#include "arch/x86/mm/mm_stats.h"
#include "arch/x86/mm/tlb.h"
#include "arch/x86/mm/tlb_broadcast.h"
#include "mm/mmu_gather.h"
#include "util/registry.h"

namespace tlbsim::x86 {

namespace {

class X86TlbGenMmu final : public X86Mmu {
 public:
  kernel::KernelVersion since() const override { return {5, 17}; }
  kernel::KernelVersion until() const override { return {6, 18}; }
  // qspinlock from v4.2 ("locking/qspinlock, x86: Enable x86-64 to use queued spinlocks").
  kernel::SpinlockKind spinlock_kind() const override { return kernel::SpinlockKind::kQueued; }

  std::unique_ptr<kernel::ArchCpuState> alloc_cpu_state(hw::CoherenceModel& model) override {
    return std::make_unique<CpuState>(model);
  }
  // init_new_context: a fresh ctx_id (atomic64_inc_return(&last_mm_ctx_id); init_mm's is 1) and tlb_gen 0; with
  // seed 002's later fix, the first trim of mm_cpumask is due a second from now.
  std::unique_ptr<kernel::ArchMmContext> init_new_context(kernel::Kernel& k, MmStruct& mm) override {
    auto ctx = std::make_unique<MmContext>(mm.is_init_mm() ? 1 : ++last_mm_ctx_id_, k.sys().coherence());
    if (!mm.is_init_mm()) {
      const std::int64_t hz = std::max<std::int64_t>(k.config().HZ, 1);
      ctx->next_trim_cpumask.value = kernel::jiffies_at(k.sys().scheduler().now(), hz) + hz;
    }
    return ctx;
  }
  // initialize_tlbstate_and_flush: init_mm in ASID 0, generation 0.
  void init_cpu(PerCpu& self, MmStruct& init_mm) override {
    cpu_tlbstate(self).loaded_mm = &init_mm;
    cpu_state(self).loaded_mm_id.value = init_mm.id();
    cpu_tlbstate(self).loaded_mm_asid = 0;
    cpu_tlbstate(self).ctxs[0] = {context(init_mm).ctx_id, 0};
    self.hw_tag = self.k.machine().tlb.tag == hw::TlbTag::kNone ? 0 : kern_pcid(0);
  }
  sim::Task<void> switch_mm_irqs_off(PerCpu& self, MmStruct& next) override {
    co_await x86::switch_mm_irqs_off(self, next);
  }
  sim::Task<void> enter_lazy_tlb(PerCpu& self, MmStruct&) override { co_await x86::enter_lazy_tlb(self); }
  // destroy_context: v6.15 frees the mm's global ASID (mm_free_global_asid); the LDT is not modeled.
  sim::Task<void> destroy_context(PerCpu& self, MmStruct& mm) override { co_await x86::mm_free_global_asid(self, mm); }
  sim::Task<void> leave_mm(PerCpu& self) override { co_await x86::leave_mm(self); }
  sim::Task<void> flush_tlb_mm_range(PerCpu& self, MmStruct& mm, std::uint64_t start, std::uint64_t end,
                                     std::uint8_t stride_shift, bool freed_tables) override {
    co_await x86::flush_tlb_mm_range(self, mm, start, end, stride_shift, freed_tables);
  }
  sim::Task<void> flush_tlb_page(PerCpu& self, MmStruct& mm, std::uint64_t addr) override {
    co_await x86::flush_tlb_page(self, mm, addr);
  }
  sim::Task<void> flush_tlb_mm(PerCpu& self, MmStruct& mm) override { co_await x86::flush_tlb_mm(self, mm); }
  // arch/x86/include/asm/tlb.h tlb_flush(): the whole address space for fullmm, else the gathered range, with a
  // PAGE_SHIFT stride.
  sim::Task<void> tlb_flush(PerCpu& self, kernel::MmuGather& tlb) override {
    std::uint64_t start = 0, end = TLB_FLUSH_ALL;
    if (!tlb.fullmm && !tlb.need_flush_all) {
      start = tlb.start;
      end = tlb.end;
    }
    co_await x86::flush_tlb_mm_range(self, tlb.mm, start, end, tlb.unmap_shift(), tlb.freed_tables);
  }
  // x86 selects ARCH_WANT_BATCHED_UNMAP_TLB_FLUSH since Linux 4.3.
  bool batched_unmap(const kernel::KernelConfig&) const override { return true; }
  sim::Task<void> arch_tlbbatch_add_mm(PerCpu& self, kernel::ArchTlbflushUnmapBatch& batch, MmStruct& mm,
                                       std::uint64_t /*uaddr*/) override {
    co_await x86::arch_tlbbatch_add_mm(self, batch, mm);
  }
  sim::Task<void> arch_tlbbatch_flush(PerCpu& self, kernel::ArchTlbflushUnmapBatch& batch) override {
    co_await x86::arch_tlbbatch_flush(self, batch);
  }

 private:
  std::uint64_t last_mm_ctx_id_ = 1;  // last_mm_ctx_id: init_mm has 1; the first user mm gets 2
};

TLBSIM_REGISTER(kernel::ArchMmu, X86TlbGenMmu, "x86-tlb-gen",
                "x86 PCID + tlb_gen era: arch/x86/mm/tlb.c of v5.17, with the differences of v6.13-v6.18 by version");

}  // namespace

}  // namespace tlbsim::x86
