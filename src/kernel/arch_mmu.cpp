#include "kernel/arch_mmu.h"

#include <fmt/format.h>

#include "kernel/kernel.h"
#include "util/registry.h"

namespace tlbsim::kernel {

sim::Task<bool> ArchMmu::arch_tlbbatch_should_defer(PerCpu& self, MmStruct& mm) {
  // Generic should_defer_flush (mm/rmap.c): defer when a CPU other than this one is in mm_cpumask.
  const Cpumask mask = co_await mm.cpumask.read(self.k.mem(), self.cpu);
  co_return mask.any_but(self.id) < mask.size();
}

sim::Task<bool> ArchMmu::handle_arch_irq(PerCpu&, int) { co_return false; }

sim::Task<void> ArchMmu::destroy_context(PerCpu&, MmStruct&) { co_return; }

sim::Task<void> ArchMmu::switch_to(PerCpu&) { co_return; }

sim::Task<void> ArchMmu::arch_flush_tlb_batched_pending(PerCpu& self, MmStruct& mm) { co_await flush_tlb_mm(self, mm); }

std::unique_ptr<ArchMmu> find_arch_mmu(Arch arch, KernelVersion version) {
  for (const auto& e : Registry<ArchMmu>::list()) {
    auto a = e.make();
    if (a->arch() == arch && a->since() <= version && version <= a->until()) return a;
  }
  return nullptr;
}

std::string modeled_arch_eras() {
  std::string out;
  for (const auto& e : Registry<ArchMmu>::list()) {
    auto a = e.make();
    const std::string rel = a->since() == a->until() ? a->since().str()
                                                     : fmt::format("{}..{}", a->since().str(), a->until().str());
    out += fmt::format("{}{} {}", out.empty() ? "" : ", ", to_string(a->arch()), rel);
  }
  return out;
}

}  // namespace tlbsim::kernel
