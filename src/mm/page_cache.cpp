#include "mm/page_cache.h"

#include <stdexcept>

namespace tlbsim::kernel {

Pfn PageCacheIndex::at(std::uint64_t index) const {
  const Pfn* p = find(index);
  if (p == nullptr) throw std::out_of_range("no page cached at that offset");
  return *p;
}

bool PageCacheIndex::emplace(std::uint64_t index, Pfn pfn) {
  if (index >> 40 != 0) throw std::out_of_range("page cache offset beyond 2^40 pages");
  const std::uint64_t c = index >> kChunkShift;
  if (c >= chunks_.size()) chunks_.resize(c + 1);
  if (!chunks_[c]) {
    chunks_[c] = std::make_unique<Chunk>();
    chunks_[c]->fill(kNone);
  }
  Pfn& slot = (*chunks_[c])[index & kChunkMask];
  if (slot != kNone) return false;
  slot = pfn;
  ++size_;
  return true;
}

void PageCacheIndex::erase(std::uint64_t index) {
  const std::uint64_t c = index >> kChunkShift;
  if (c >= chunks_.size() || !chunks_[c]) return;
  Pfn& slot = (*chunks_[c])[index & kChunkMask];
  if (slot == kNone) return;
  slot = kNone;
  --size_;
}

}  // namespace tlbsim::kernel
