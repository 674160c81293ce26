// arch/arm64/include/asm/tlbflush.h and asm/tlb.h of Linux v6.5/v6.6 (read in the trees docs/model.md names,
// "arm64"): the broadcast TLB maintenance of user flushes, mmu_gather's tlb_flush, and the v6.6 batched reclaim flush
// (ARCH_WANT_BATCHED_UNMAP_TLB_FLUSH). A TLBI ...IS is outstanding until the issuing CPU's DSB ISH, which the model
// makes the moment it takes effect in every CPU's TLB (hw/invlpgb.h's queue), the latest the architecture allows.
#include "arch/arm64/mm/context.h"
#include "arch/arm64/options.h"
#include "kernel/barrier.h"
#include "mm/mmu_gather.h"
#include "mm/pte_visibility.h"
#include "trace/tracer.h"

namespace tlbsim::arm64 {

namespace {

hw::Memory& mem(PerCpu& self) { return self.k.mem(); }
const hw::TlbParams& tlbp(PerCpu& self) { return self.k.machine().tlb; }

// MAX_TLBI_OPS: PTRS_PER_PTE (4 KiB pages): from this many strides on, __flush_tlb_range flushes the whole ASID.
constexpr std::uint64_t MAX_TLBI_OPS = 512;
constexpr std::uint64_t TLB_FLUSH_ALL = ~std::uint64_t{0};

}  // namespace

// ---- The TLB maintenance instructions ----

void Arm64Mmu::dsb_ishst(PerCpu& self) {
  if (planted(self.k.config(), Mutation::flush_tlb_skips_dsb_ishst)) return;  // Mutation
  kernel::dsb(mem(self), self.cpu);
}

sim::Task<void> Arm64Mmu::tlbi_is(PerCpu& self, const hw::Invlpgb& op) {
  if (op.kind == hw::Invlpgb::Kind::kPcid) {
    ++stats.tlbi_aside1is;
  } else {
    ++(op.last_level ? stats.tlbi_vale1is : stats.tlbi_vae1is);
  }
  co_await self.cpu.delay(*tlbp(self).tlbi_is);
  cpu_state(self).tlbi.issue(op);
}

sim::Task<void> Arm64Mmu::dsb_ish(PerCpu& self) {
  Arm64CpuState& st = cpu_state(self);
  // A DSB ISH with no TLBI outstanding waits for nothing beyond a barrier's work (priced as DMB ISH by fence_costs).
  if (st.tlbi.empty()) {
    kernel::smp_mb(mem(self), self.cpu);
    kernel::dsb(mem(self), self.cpu);
    co_return;
  }
  ++stats.dsb_ish;
  co_await self.cpu.delay(*tlbp(self).dsb_ish);
  // Every TLBI this CPU issued has now completed on every CPU: no walk begun before it survives there either. The
  // invalidations take effect before the DSB's own ordering of this CPU's stores: only the dsb(ishst) before a TLBI
  // makes a PTE store visible to the walkers before the TLBI can be performed (flush_tlb_skips_dsb_ishst).
  kernel::PteVisibility* vis = self.k.frames().pte_visibility();
  st.tlbi.complete([&](auto&& apply) {
    for (std::uint32_t c = 0; c < self.k.ncpus(); ++c) {
      apply(self.k.percpu(CpuId{c}).tlb);
      if (vis != nullptr) vis->invalidated(CpuId{c});
    }
  });
  kernel::dsb(mem(self), self.cpu);
}

sim::Task<void> Arm64Mmu::local_flush_tlb_all(PerCpu& self) {
  // dsb(nshst); __tlbi(vmalle1); dsb(nsh); isb(): every entry of this CPU's TLB, every ASID.
  ++stats.local_flush_tlb_all;
  kernel::dsb(mem(self), self.cpu);
  co_await self.cpu.delay(tlbp(self).flush_all);
  self.tlb.flush_all();
  if (kernel::PteVisibility* vis = self.k.frames().pte_visibility()) vis->invalidated(self.id);
  kernel::serializing_instruction(mem(self), self.cpu);  // isb
}

// ---- asm/tlbflush.h ----

sim::Task<void> Arm64Mmu::flush_tlb_mm(PerCpu& self, MmStruct& mm) {
  const trace::TraceSpan span(self.k.tracer(), self.cpu, "flush_tlb_mm", "tlb");
  dsb_ishst(self);
  // ASID(mm): atomic64_read(&mm->context.id) & 0xffff.
  const std::uint64_t id = co_await mem(self).read(self.cpu, context(mm).id);
  co_await tlbi_is(self, hw::Invlpgb{hw::Invlpgb::Kind::kPcid, Asid{static_cast<std::uint16_t>(asids().ctxid2asid(id))},
                                     Vpn{0}, 1, 12});
  if (!planted(self.k.config(), Mutation::flush_tlb_skips_dsb_ish)) co_await dsb_ish(self);  // Mutation
}

sim::Task<void> Arm64Mmu::__flush_tlb_page_nosync(PerCpu& self, MmStruct& mm, std::uint64_t uaddr) {
  dsb_ishst(self);
  const std::uint64_t id = co_await mem(self).read(self.cpu, context(mm).id);
  hw::Invlpgb op{hw::Invlpgb::Kind::kVa, Asid{static_cast<std::uint16_t>(asids().ctxid2asid(id))},
                 kernel::vpn_of(uaddr), 1, 12};
  op.last_level = true;  // __tlbi(vale1is, addr)
  co_await tlbi_is(self, op);
}

sim::Task<void> Arm64Mmu::flush_tlb_page(PerCpu& self, MmStruct& mm, std::uint64_t addr) {
  const trace::TraceSpan span(self.k.tracer(), self.cpu, "flush_tlb_page", "tlb");
  co_await __flush_tlb_page_nosync(self, mm, addr);
  if (!planted(self.k.config(), Mutation::flush_tlb_skips_dsb_ish)) co_await dsb_ish(self);  // Mutation
}

sim::Task<void> Arm64Mmu::__flush_tlb_range(PerCpu& self, MmStruct& mm, std::uint64_t start, std::uint64_t end,
                                            std::uint8_t stride_shift, bool last_level) {
  const trace::TraceSpan span(self.k.tracer(), self.cpu, "__flush_tlb_range", "tlb");
  const std::uint64_t stride = std::uint64_t{1} << stride_shift;
  if (end == TLB_FLUSH_ALL) {
    co_await flush_tlb_mm(self, mm);
    co_return;
  }
  start &= ~(stride - 1);
  end = (end + stride - 1) & ~(stride - 1);
  // Without FEAT_TLBIRANGE (system_supports_tlb_range false): up to MAX_TLBI_OPS - 1 strides, one TLBI each.
  if (end - start >= MAX_TLBI_OPS * stride) {
    co_await flush_tlb_mm(self, mm);
    co_return;
  }
  dsb_ishst(self);
  const std::uint64_t id = co_await mem(self).read(self.cpu, context(mm).id);
  const Asid asid{static_cast<std::uint16_t>(asids().ctxid2asid(id))};
  for (std::uint64_t addr = start; addr < end; addr += stride) {
    // __tlbi_level(vale1is or vae1is, addr, tlb_level): the level hint is an optimisation the model does not need.
    hw::Invlpgb op{hw::Invlpgb::Kind::kVa, asid, kernel::vpn_of(addr), 1, stride_shift};
    op.last_level = last_level;
    co_await tlbi_is(self, op);
  }
  if (!planted(self.k.config(), Mutation::flush_tlb_skips_dsb_ish)) co_await dsb_ish(self);  // Mutation
}

// flush_tlb_range(vma, start, end) is __flush_tlb_range(vma, start, end, PAGE_SIZE, false, 0): never leaf-only, as
// it may be invalidating table entries (collapse, page-table moves). The generic callers' stride is kept (a PMD
// flush passes PMD_SHIFT).
sim::Task<void> Arm64Mmu::flush_tlb_mm_range(PerCpu& self, MmStruct& mm, std::uint64_t start, std::uint64_t end,
                                             std::uint8_t stride_shift, bool) {
  co_await __flush_tlb_range(self, mm, start, end, stride_shift, false);
}

// asm/tlb.h tlb_flush: an exiting mm (fullmm) is flushed only if page tables were freed (the walk caches), since the
// allocator never reuses its ASID without a rollover's local flush; otherwise the gathered range, leaf-only unless
// tables were freed.
sim::Task<void> Arm64Mmu::tlb_flush(PerCpu& self, kernel::MmuGather& tlb) {
  const bool last_level = !tlb.freed_tables;
  if (tlb.fullmm) {
    if (!last_level) co_await flush_tlb_mm(self, tlb.mm);
    co_return;
  }
  co_await __flush_tlb_range(self, tlb.mm, tlb.start, tlb.end, tlb.unmap_shift(), last_level);
}

// ---- The batched reclaim flush (v6.6) ----

bool Arm64Mmu::batched_unmap(const kernel::KernelConfig& cfg) const {
  return cfg.on(Option::ARCH_WANT_BATCHED_UNMAP_TLB_FLUSH);
}

// arch_tlbbatch_should_defer: false only with the ARM64_WORKAROUND_REPEAT_TLBI erratum, which no modeled part has.
sim::Task<bool> Arm64Mmu::arch_tlbbatch_should_defer(PerCpu&, MmStruct&) { co_return true; }

sim::Task<void> Arm64Mmu::arch_tlbbatch_add_mm(PerCpu& self, ArchTlbflushUnmapBatch&, MmStruct& mm,
                                               std::uint64_t uaddr) {
  co_await __flush_tlb_page_nosync(self, mm, uaddr);
}

sim::Task<void> Arm64Mmu::arch_tlbbatch_flush(PerCpu& self, ArchTlbflushUnmapBatch&) {
  const trace::TraceSpan span(self.k.tracer(), self.cpu, "arch_tlbbatch_flush", "tlb");
  co_await dsb_ish(self);
}

// As posted, a dsb(ish): it completes the TLBIs of this CPU only, not those the reclaiming CPU issued (F10). The
// option batched_pending_flush_tlb_mm is the later fix: flush_tlb_mm(mm).
sim::Task<void> Arm64Mmu::arch_flush_tlb_batched_pending(PerCpu& self, MmStruct& mm) {
  if (self.k.config().on(Option::batched_pending_flush_tlb_mm)) {
    co_await flush_tlb_mm(self, mm);
    co_return;
  }
  co_await dsb_ish(self);
}

}  // namespace tlbsim::arm64
