#include "check/scenario.h"

#include "mm/memory.h"

namespace tlbsim::check {

sim::Task<bool> user_touch(kernel::PerCpu& self, kernel::MmStruct& mm, std::uint64_t addr, bool write) {
  bool segv = false;
  try {
    co_await kernel::user_access(self, mm, addr, write);
  } catch (const kernel::Sigsegv&) {
    segv = true;
  }
  co_return !segv;
}

sim::Task<void> touch_n(kernel::PerCpu& self, kernel::MmStruct& mm, std::uint64_t addr, int n, bool write) {
  for (int i = 0; i < n; ++i) {
    const bool mapped = co_await user_touch(self, mm, addr, write);
    if (!mapped) co_return;
  }
}

sim::Task<void> switch_to(kernel::PerCpu& self, kernel::MmStruct& mm) {
  self.k.events().set_user_context(self.id, 0);
  self.cpu.local_irq_disable();
  co_await self.k.arch().switch_mm_irqs_off(self, mm);
  co_await self.cpu.local_irq_enable();
  self.k.events().set_user_context(self.id, mm.id());
}

sim::Task<void> switch_to_kthread(kernel::PerCpu& self, kernel::MmStruct& mm) {
  self.k.events().set_user_context(self.id, 0);
  self.cpu.local_irq_disable();
  co_await self.k.arch().enter_lazy_tlb(self, mm);
  co_await self.cpu.local_irq_enable();
}

}  // namespace tlbsim::check
