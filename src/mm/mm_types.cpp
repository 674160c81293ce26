#include "mm/mm_types.h"

namespace tlbsim::kernel {

MmStruct::MmStruct(std::uint32_t id, hw::CoherenceModel& model, std::uint32_t ncpus, FrameAllocator& frames,
                   bool is_init_mm, SpinlockKind lock_kind)
    : cpumask(model, ncpus, "mm_cpumask"),
      mm_users{1, model.add_line("mm.mm_count")},
      mm_count{1, mm_users.line},
      tlb_flush_pending{0, model.add_line("mm.tlb_flush_pending")},
      tlb_flush_batched{false, model.add_line("mm.tlb_flush_batched")},
      mmap_lock(model, "mm.mmap_lock"),
      pgd(frames),
      id_(id),
      is_init_mm_(is_init_mm),
      model_(model),
      lock_kind_(lock_kind) {}

const Vma* MmStruct::find_vma(std::uint64_t addr) const {
  for (const Vma& v : vmas) {
    if (v.contains(addr)) return &v;
  }
  return nullptr;
}

std::uint64_t MmStruct::get_unmapped_area(std::uint64_t len) {
  const std::uint64_t a = next_addr_;
  // Keep mappings 2 MiB aligned and apart, so they never share a page-table page.
  next_addr_ += (len + (kPtesPerTable * kPageSize) * 2 - 1) / (kPtesPerTable * kPageSize) * (kPtesPerTable * kPageSize);
  return a;
}

Spinlock& MmStruct::ptl(Vpn v) {
  auto& slot = ptls_[table_index(v)];
  if (!slot) slot = std::make_unique<Spinlock>(model_, "pte.ptl", lock_kind_);
  return *slot;
}

}  // namespace tlbsim::kernel
