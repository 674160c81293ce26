#include "kernel/events.h"

namespace tlbsim::kernel {

void KernelEvents::on_pte_removed(const MmStruct&, Vpn, const Pte&, CpuId, sim::SimTime) {}
void KernelEvents::on_syscall_return(CpuId) {}
void KernelEvents::on_range_synced(CpuId, const MmStruct&, std::uint64_t, std::uint64_t) {}
void KernelEvents::on_page_replaced(const MmStruct&, Vpn, Pfn, CpuId, sim::SimTime) {}
void KernelEvents::on_frame_free(Pfn, sim::SimTime) {}
void KernelEvents::on_frame_reuse(Pfn, sim::SimTime) {}
void KernelEvents::set_user_context(CpuId, std::uint32_t) {}
void KernelEvents::on_mm_free(std::uint32_t, const std::string&, sim::SimTime) {}
void KernelEvents::report_refcount(CpuId, std::uint32_t, const char*, std::int64_t, sim::SimTime) {}
void KernelEvents::report_kernel_warning(CpuId, std::uint32_t, const std::string&, sim::SimTime) {}
void KernelEvents::on_tlb_hit(CpuId, const MmStruct&, Vpn, const hw::Translation&, sim::SimTime) {}

}  // namespace tlbsim::kernel
