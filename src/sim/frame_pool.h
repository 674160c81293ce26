// Pooled allocation of coroutine frames, so starting a modeled kernel function costs no heap allocation
// once the pool is warm.
#pragma once

#include <cstddef>

namespace tlbsim::sim {

// Per-thread free lists of coroutine frames by 64-byte size class. Frames above kMaxPooled bytes fall back to
// the global allocator. Contract: a frame is freed on the thread that allocated it (each simulation runs on
// one thread); the pool keeps freed frames for reuse until the thread exits.
class FramePool {
 public:
  static constexpr std::size_t kGranule = 64;
  static constexpr std::size_t kMaxPooled = 4096;

  static void* allocate(std::size_t size);
  static void deallocate(void* p, std::size_t size) noexcept;
  // Frames currently handed out by this thread's pool (for tests that check frames are released).
  static std::size_t live_frames() noexcept;
};

}  // namespace tlbsim::sim
