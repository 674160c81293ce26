#include "mm/mm_types.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace tlbsim::kernel {

MmStruct::MmStruct(std::uint32_t id, hw::CoherenceModel& model, std::uint32_t ncpus, FrameAllocator& frames,
                   bool is_init_mm, SpinlockKind lock_kind)
    : cpumask(model, ncpus, "mm_cpumask"),
      mm_users{1, model.add_line("mm.mm_count")},
      mm_count{1, mm_users.line},
      tlb_flush_pending{0, model.add_line("mm.tlb_flush_pending")},
      tlb_flush_batched{false, model.add_line("mm.tlb_flush_batched")},
      mmap_lock(model, "mm.mmap_lock", lock_kind),
      mm_lock_seq{0, model.add_line("mm.mm_lock_seq")},
      pgd(frames),
      id_(id),
      is_init_mm_(is_init_mm),
      model_(model),
      lock_kind_(lock_kind) {}

void MmStruct::map_process_image() {
  insert_vma(Vma{kMmapBase - kProcessImageSize, kMmapBase, false, false, nullptr, 0, nullptr});
}

const Vma* MmStruct::find_vma(std::uint64_t addr) const {
  auto it = vmas.upper_bound(addr);
  if (it == vmas.begin()) return nullptr;
  --it;
  return it->second.contains(addr) ? &it->second : nullptr;
}

const Vma* MmStruct::vma_below(std::uint64_t start) const {
  auto it = vmas.lower_bound(start);
  if (it == vmas.begin()) return nullptr;
  --it;
  return &it->second;
}

const Vma* MmStruct::vma_above(std::uint64_t end) const {
  const auto it = vmas.lower_bound(end);
  return it == vmas.end() ? nullptr : &it->second;
}

std::optional<Vpn> FileMapping::vpn_of_index(std::uint64_t index) const {
  if (index < pgoff || index - pgoff >= (end - start) / kPageSize) return std::nullopt;
  return Vpn{(start >> kPageShift) + index - pgoff};
}

namespace {

// The i_mmap entry of `mm`'s file VMA that starts at `start`.
std::vector<FileMapping>::iterator i_mmap_entry(File& f, const MmStruct* mm, std::uint64_t start) {
  const auto it = std::find_if(f.i_mmap.begin(), f.i_mmap.end(),
                               [&](const FileMapping& m) { return m.mm == mm && m.start == start; });
  if (it == f.i_mmap.end())
    throw std::logic_error(fmt::format("mm {}: file VMA at {:#x} not in i_mmap", mm->id(), start));
  return it;
}

// The file offset, in pages, of a VMA whose start moves from `from` to `to` (vma_adjust's vm_pgoff).
std::uint64_t moved_pgoff(std::uint64_t pgoff, std::uint64_t from, std::uint64_t to) {
  return to < from ? pgoff - (from - to) / kPageSize : pgoff + (to - from) / kPageSize;
}

}  // namespace

Vma& MmStruct::insert_vma(const Vma& v) {
  const Vma* below = vma_below(v.start);
  const Vma* above = vma_above(v.start);
  if (v.end <= v.start || (below != nullptr && below->end > v.start) || (above != nullptr && above->start < v.end)) {
    throw std::logic_error(
        fmt::format("mm {}: VMA [{:#x}, {:#x}) is empty or overlaps a mapped one", id_, v.start, v.end));
  }
  Vma& added = vmas.emplace(v.start, v).first->second;
  // do_mmap gives a private anonymous VMA vm_pgoff = addr >> PAGE_SHIFT; a caller that passes 0 means that.
  if (added.file == nullptr && added.pgoff == 0) added.pgoff = added.start >> kPageShift;
  added.anon_vma_seq = ++vma_seq_;
  LineId line;
  if (free_vma_lock_lines_.empty()) {
    line = model_.add_line("vma.vm_lock");
  } else {
    line = free_vma_lock_lines_.back();
    free_vma_lock_lines_.pop_back();
  }
  added.vm_lock = std::make_shared<VmaLock>(VmaLock{{0, line}});
  if (added.file != nullptr) added.file->i_mmap.push_back(FileMapping{this, added.start, added.end, added.pgoff});
  return added;
}

bool MmStruct::remove_vma(std::uint64_t start) {
  const auto it = vmas.find(start);
  if (it == vmas.end()) return false;
  if (it->second.vm_lock) {
    it->second.vm_lock->detached = true;  // vma_mark_detached
    free_vma_lock_lines_.push_back(it->second.vm_lock->count.line);
  }
  if (File* f = it->second.file) f->i_mmap.erase(i_mmap_entry(*f, this, start));
  vmas.erase(it);
  return true;
}

void MmStruct::remove_all_vmas() {
  while (!vmas.empty()) remove_vma(vmas.begin()->first);
}

Vma& MmStruct::split_vma(Vma& v, std::uint64_t addr) {
  if (addr <= v.start || addr >= v.end) {
    throw std::logic_error(fmt::format("mm {}: split of [{:#x}, {:#x}) at {:#x}", id_, v.start, v.end, addr));
  }
  Vma upper = v;
  upper.start = addr;
  upper.pgoff = v.pgoff + (addr - v.start) / kPageSize;
  upper.vm_lock = nullptr;
  if (v.file != nullptr) i_mmap_entry(*v.file, this, v.start)->end = addr;
  v.end = addr;
  return insert_vma(upper);
}

void MmStruct::resize_vma(Vma& v, std::uint64_t start, std::uint64_t end) {
  if (v.file != nullptr) {
    FileMapping& m = *i_mmap_entry(*v.file, this, v.start);
    m.pgoff = moved_pgoff(m.pgoff, v.start, start);
    m.start = start;
    m.end = end;
  }
  if (start != v.start) {
    auto node = vmas.extract(v.start);
    node.key() = start;
    Vma& moved = node.mapped();
    moved.pgoff = moved_pgoff(moved.pgoff, moved.start, start);  // an anonymous VMA's too (vma_adjust)
    node.mapped().start = start;
    vmas.insert(std::move(node));
  }
  v.end = end;
}

std::uint64_t MmStruct::get_unmapped_area(std::uint64_t len, std::uint64_t align) {
  len = (len + kPageSize - 1) / kPageSize * kPageSize;
  // unmapped_area_topdown: walk the gaps from mmap_base downwards and take the first (highest) that fits, placing the
  // mapping at the gap's top, aligned down.
  std::uint64_t gap_end = kMmapBase;
  for (auto it = vmas.lower_bound(kMmapBase); it != vmas.begin();) {
    --it;
    const Vma& v = it->second;
    if (v.end <= gap_end && gap_end - v.end >= len) {
      const std::uint64_t a = (gap_end - len) & ~(align - 1);
      if (a >= v.end) return a;
    }
    gap_end = std::min(gap_end, v.start);
  }
  const std::uint64_t a = (gap_end - len) & ~(align - 1);
  if (gap_end < kMmapMin + len || a < kMmapMin) {
    throw std::logic_error(fmt::format("mm {}: no room below mmap_base for {} bytes", id_, len));
  }
  return a;
}

hw::Shared<std::uint64_t>& MmStruct::page_waitqueue(Pfn page) {
  if (page_wait_table_.empty()) {
    for (std::size_t i = 0; i < PAGE_WAIT_TABLE_SIZE; ++i) {
      page_wait_table_.push_back(hw::Shared<std::uint64_t>{0, model_.add_line("folio_wait_table")});
    }
  }
  return page_wait_table_[page.get() % PAGE_WAIT_TABLE_SIZE];  // hash_ptr of the struct page: consecutive frames
}

Spinlock& MmStruct::page_table_lock() {
  if (!page_table_lock_) page_table_lock_ = std::make_unique<Spinlock>(model_, "mm.page_table_lock", lock_kind_);
  return *page_table_lock_;
}

RwSem& MmStruct::anon_vma_lock() {
  if (!anon_vma_lock_) anon_vma_lock_ = std::make_unique<RwSem>(model_, "anon_vma.rwsem", lock_kind_);
  return *anon_vma_lock_;
}

Spinlock& MmStruct::ptl(Vpn v) {
  auto& slot = ptls_[table_index(v)];
  if (!slot) slot = std::make_unique<Spinlock>(model_, "pte.ptl", lock_kind_);
  return *slot;
}

}  // namespace tlbsim::kernel
