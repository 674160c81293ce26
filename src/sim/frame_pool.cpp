#include "sim/frame_pool.h"

#include <new>
#include <vector>

namespace tlbsim::sim {

namespace {

struct FreeNode {
  FreeNode* next;
};

constexpr std::size_t kClasses = FramePool::kMaxPooled / FramePool::kGranule;

// The per-thread cache. Chunks are owned by a vector of unique storage released at thread exit.
struct ThreadPool {
  FreeNode* heads[kClasses] = {};
  std::size_t live = 0;
  std::vector<void*> chunks;

  ~ThreadPool() {
    for (void* c : chunks) ::operator delete(c);
  }

  void refill(std::size_t cls) {
    const std::size_t frame = (cls + 1) * FramePool::kGranule;
    const std::size_t count = frame <= 512 ? 64 : 16;
    char* chunk = static_cast<char*>(::operator new(frame * count));
    chunks.push_back(chunk);
    for (std::size_t i = 0; i < count; ++i) {
      auto* node = reinterpret_cast<FreeNode*>(chunk + i * frame);
      node->next = heads[cls];
      heads[cls] = node;
    }
  }
};

ThreadPool& pool() {
  thread_local ThreadPool p;
  return p;
}

}  // namespace

// Under AddressSanitizer every frame comes from the global allocator, so a use of a destroyed frame is reported
// rather than hidden by reuse.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kPoolFrames = false;
#else
constexpr bool kPoolFrames = true;
#endif

void* FramePool::allocate(std::size_t size) {
  if (!kPoolFrames || size == 0 || size > kMaxPooled) {
    if (kPoolFrames || size == 0 || size > kMaxPooled) return ::operator new(size);
    ++pool().live;
    return ::operator new(size);
  }
  ThreadPool& p = pool();
  const std::size_t cls = (size - 1) / kGranule;
  if (p.heads[cls] == nullptr) p.refill(cls);
  FreeNode* node = p.heads[cls];
  p.heads[cls] = node->next;
  ++p.live;
  return node;
}

void FramePool::deallocate(void* ptr, std::size_t size) noexcept {
  if (ptr == nullptr) return;
  if (!kPoolFrames && size != 0 && size <= kMaxPooled) {
    --pool().live;
    ::operator delete(ptr);
    return;
  }
  if (size == 0 || size > kMaxPooled) {
    ::operator delete(ptr);
    return;
  }
  ThreadPool& p = pool();
  const std::size_t cls = (size - 1) / kGranule;
  auto* node = static_cast<FreeNode*>(ptr);
  node->next = p.heads[cls];
  p.heads[cls] = node;
  --p.live;
}

std::size_t FramePool::live_frames() noexcept { return pool().live; }

}  // namespace tlbsim::sim
