// A file's page cache index: address_space->i_pages (an xarray since v4.20, the radix tree `page_tree` before),
// from page offset to the cached frame.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "sim/ids.h"

namespace tlbsim::kernel {

// Offsets map to frames through 512-slot chunks allocated on first insertion, as the xarray allocates its nodes:
// a file whose pages are all cached costs 8 bytes a page and no per-page allocation (tlb_flush1 caches 32,768
// pages per thread before it starts), and a sparse one pays only for the chunks it touches.
// Contract: offsets below 2^40; a slot holds at most one frame; lookups never allocate.
class PageCacheIndex {
 public:
  // The frame cached at `index`, or nullptr.
  const Pfn* find(std::uint64_t index) const {
    const std::uint64_t c = index >> kChunkShift;
    if (c >= chunks_.size() || !chunks_[c]) return nullptr;
    const Pfn& p = (*chunks_[c])[index & kChunkMask];
    return p == kNone ? nullptr : &p;
  }
  bool contains(std::uint64_t index) const { return find(index) != nullptr; }
  // The frame cached at `index`. Contract: one is (throws std::out_of_range otherwise).
  Pfn at(std::uint64_t index) const;
  // Caches `pfn` at `index` unless a frame is already there. Returns whether it was inserted.
  bool emplace(std::uint64_t index, Pfn pfn);
  // Drops the frame at `index`, if any.
  void erase(std::uint64_t index);
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

 private:
  static constexpr unsigned kChunkShift = 9;
  static constexpr std::uint64_t kChunkMask = (std::uint64_t{1} << kChunkShift) - 1;
  static constexpr Pfn kNone{~std::uint64_t{0}};
  using Chunk = std::array<Pfn, std::size_t{1} << kChunkShift>;
  std::vector<std::unique_ptr<Chunk>> chunks_;
  std::size_t size_ = 0;
};

}  // namespace tlbsim::kernel
