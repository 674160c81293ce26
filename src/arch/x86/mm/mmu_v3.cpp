// The x86 ArchMmu of the lazy-TLB era: Linux v3.3 (arch/x86/mm/tlb.c, arch/x86/include/asm/mmu_context.h,
// arch/x86/include/asm/tlb.h and tlbflush.h), modeled in arch/x86/mm/tlb_v3.cpp.
#include <stdexcept>

#include "arch/x86/mm/mm_stats.h"
#include "arch/x86/mm/tlb_v3.h"
#include "mm/mmu_gather.h"
#include "util/registry.h"

namespace tlbsim::x86::v3 {

namespace {

class X86LazyTlbMmu final : public X86Mmu {
 public:
  kernel::KernelVersion since() const override { return {3, 3}; }
  kernel::KernelVersion until() const override { return {3, 3}; }
  // Ticket spinlocks (arch/x86/include/asm/spinlock.h, v2.6.25-v4.1).
  kernel::SpinlockKind spinlock_kind() const override { return kernel::SpinlockKind::kTicket; }

  std::unique_ptr<kernel::ArchCpuState> alloc_cpu_state(hw::CoherenceModel& model) override {
    return std::make_unique<CpuState>(model);
  }
  // v3.3's mm_context_t holds nothing TLB shootdown reads (no ctx_id or tlb_gen before v4.x).
  std::unique_ptr<kernel::ArchMmContext> init_new_context(kernel::Kernel&, MmStruct&) override {
    return std::make_unique<kernel::ArchMmContext>();
  }
  // cpu_tlbstate = { &init_mm, 0 }; init_smp_flush (a core_initcall) once, with the first CPU.
  void init_cpu(PerCpu& self, MmStruct& init_mm) override {
    if (globals.flush_state.empty()) init_smp_flush(globals, self.k);
    cpu_tlbstate(self).active_mm = &init_mm;
    cpu_tlbstate(self).state = 0;
    self.hw_tag = 0;
  }
  sim::Task<void> switch_mm_irqs_off(PerCpu& self, MmStruct& next) override { co_await v3::switch_mm(self, next); }
  sim::Task<void> enter_lazy_tlb(PerCpu& self, MmStruct&) override { co_await v3::enter_lazy_tlb(self); }
  // drivers/idle/intel_idle.c (v3.3) intel_idle(): entered with interrupts off; leave_mm(cpu) for every state
  // with CPUIDLE_FLAG_TLB_FLUSHED, whether or not this CPU already left its mm.
  sim::Task<void> leave_mm(PerCpu& self) override {
    const bool was_off = self.cpu.irqs_disabled();
    self.cpu.local_irq_disable();
    co_await v3::leave_mm(self);
    if (!was_off) co_await self.cpu.local_irq_enable();
  }
  // flush_tlb_mm_range did not exist: v3.3's flush_tlb_range(vma, start, end) is flush_tlb_mm(vma->vm_mm).
  sim::Task<void> flush_tlb_mm_range(PerCpu& self, MmStruct& mm, std::uint64_t, std::uint64_t, std::uint8_t,
                                     bool) override {
    co_await v3::flush_tlb_mm(self, mm);
  }
  sim::Task<void> flush_tlb_page(PerCpu& self, MmStruct& mm, std::uint64_t addr) override {
    co_await v3::flush_tlb_page(self, mm, addr);
  }
  sim::Task<void> flush_tlb_mm(PerCpu& self, MmStruct& mm) override { co_await v3::flush_tlb_mm(self, mm); }
  // arch/x86/include/asm/tlb.h (v3.3): #define tlb_flush(tlb) flush_tlb_mm((tlb)->mm), whatever was gathered.
  sim::Task<void> tlb_flush(PerCpu& self, kernel::MmuGather& tlb) override { co_await v3::flush_tlb_mm(self, tlb.mm); }
  // ARCH_WANT_BATCHED_UNMAP_TLB_FLUSH arrived in v4.3: reclaim flushes page by page.
  bool batched_unmap(const kernel::KernelConfig&) const override { return false; }
  // Unreachable while batched_unmap() is false; kept safe: remember each mm and flush it whole.
  sim::Task<void> arch_tlbbatch_add_mm(PerCpu&, kernel::ArchTlbflushUnmapBatch& batch, MmStruct& mm,
                                       std::uint64_t /*uaddr*/) override {
    bool listed = false;
    for (MmStruct* m : batch.mms) listed = listed || m == &mm;
    if (!listed) batch.mms.push_back(&mm);
    co_return;
  }
  sim::Task<void> arch_tlbbatch_flush(PerCpu& self, kernel::ArchTlbflushUnmapBatch& batch) override {
    for (MmStruct* m : batch.mms) co_await v3::flush_tlb_mm(self, *m);
    batch.mms.clear();
    batch.cpumask.clear_all();
  }
  // INVALIDATE_TLB_VECTOR_START .. +NUM_INVALIDATE_TLB_VECTORS - 1: smp_invalidate_interrupt.
  sim::Task<bool> handle_arch_irq(PerCpu& self, int vector) override {
    const int sender = vector - INVALIDATE_TLB_VECTOR_START;
    if (sender < 0 || sender >= static_cast<int>(NUM_INVALIDATE_TLB_VECTORS)) co_return false;
    co_await smp_invalidate_interrupt(self, static_cast<std::uint32_t>(sender));
    co_return true;
  }

  FlushGlobals globals;
};

TLBSIM_REGISTER(kernel::ArchMmu, X86LazyTlbMmu, "x86-lazy-tlb-v3",
                "x86 lazy-TLB era: arch/x86/mm/tlb.c of v3.3 (invalidate vectors, leave_mm, no PCID)");

}  // namespace

FlushGlobals& flush_globals(PerCpu& self) {
  auto* mmu = dynamic_cast<X86LazyTlbMmu*>(&self.k.arch());
  if (mmu == nullptr) throw std::logic_error("x86 v3.3 flush code called on a kernel of another era");
  return mmu->globals;
}

}  // namespace tlbsim::x86::v3
