// A pipe as context_switch1, the kernel build and hackbench use it (fs/pipe.c of v6.1): a ring of page buffers
// under the pipe mutex, with exclusive reader and writer wait queues. Small writes merge into the last buffer.
#pragma once

#include <array>
#include <cstdint>

#include "kernel/sched/sched.h"

namespace tlbsim::kernel {

// PIPE_DEF_BUFFERS (include/linux/pipe_fs_i.h): a new pipe's ring has 16 slots (pipe->max_usage).
inline constexpr std::uint32_t PIPE_DEF_BUFFERS = 16;
// PAGE_SIZE on x86-64 (and the model's page on every arch): one pipe buffer's page.
inline constexpr std::uint32_t kPipeBufPage = 4096;

// pipe->head, pipe->tail and the length of each slot's pipe_buffer (bufs[i & mask].len).
struct PipeRing {
  std::uint32_t head = 0;
  std::uint32_t tail = 0;
  std::array<std::uint32_t, PIPE_DEF_BUFFERS> len{};

  bool empty() const { return head == tail; }                    // pipe_empty
  bool full() const { return head - tail >= PIPE_DEF_BUFFERS; }  // pipe_full with max_usage = 16
  std::uint32_t& slot(std::uint32_t i) { return len[i % PIPE_DEF_BUFFERS]; }
  std::uint32_t slot(std::uint32_t i) const { return len[i % PIPE_DEF_BUFFERS]; }
};

struct Pipe {
  Pipe(hw::CoherenceModel& model, SpinlockKind kind)
      : mutex(model, "pipe.mutex", kind),
        rd_wait(model, "pipe.rd_wait", kind),
        wr_wait(model, "pipe.wr_wait", kind),
        ring{PipeRing{}, model.add_line("pipe.buf")} {}
  std::uint64_t bytes() const;  // bytes in the pipe
  Spinlock mutex;               // pipe->mutex (see docs/model.md: sleeping locks spin in the model)
  WaitQueue rd_wait;
  WaitQueue wr_wait;
  hw::Shared<PipeRing> ring;
};

// pipe_write of `len` bytes (1 .. 4096): merged into the last buffer when it has room, else a new buffer,
// sleeping while the ring is full; wakes the readers if the pipe was empty.
sim::Task<void> pipe_write(Sched& s, TaskStruct& t, Pipe& p, std::uint32_t len);
// pipe_read of up to `len` bytes: sleeps while the pipe is empty, returns what it read (a short read when the pipe
// empties first); wakes a writer if the pipe was full.
sim::Task<std::uint32_t> pipe_read(Sched& s, TaskStruct& t, Pipe& p, std::uint32_t len);

// write(fd, &c, 1) and read(fd, &c, 1), as will-it-scale's context_switch1 and the kernel build's cc1 | as use.
inline sim::Task<void> pipe_write(Sched& s, TaskStruct& t, Pipe& p) { co_await pipe_write(s, t, p, 1); }
inline sim::Task<void> pipe_read(Sched& s, TaskStruct& t, Pipe& p) { co_await pipe_read(s, t, p, 1); }

}  // namespace tlbsim::kernel
