// Models the blocking paths of fs/pipe.c's pipe_write and pipe_read (Linux v6.1) for anonymous pipes: no O_DIRECT
// packets, no O_NONBLOCK, no poll users, and a reader and a writer that never close.
#include "fs/pipe.h"

#include <algorithm>

namespace tlbsim::kernel {

std::uint64_t Pipe::bytes() const {
  std::uint64_t n = 0;
  for (std::uint32_t i = ring.value.tail; i != ring.value.head; ++i) n += ring.value.slot(i);
  return n;
}

namespace {

// The sleep of pipe_write and pipe_read: drop the mutex, wake the other side's queue `other` if `wake_other`, wait
// as an exclusive waiter on `wq` until `ready`, then retake the mutex and re-read the ring.
sim::Task<PipeRing> pipe_sleep(Sched& s, TaskStruct& t, Pipe& p, bool wake_other, WaitQueue& other, WaitQueue& wq) {
  hw::Memory& mem = s.k.mem();
  co_await p.mutex.unlock(mem, s.cpu_of(t).cpu);
  if (wake_other) co_await s.wake_up(t, other, WF_SYNC);
  const bool writer = &wq == &p.wr_wait;
  // pipe_writable / pipe_readable (the other end never closes in the model).
  co_await s.wait_event_exclusive(t, wq,
                                  [&p, writer] { return writer ? !p.ring.value.full() : !p.ring.value.empty(); });
  co_await p.mutex.lock(mem, s.cpu_of(t).cpu);
  co_return co_await mem.read(s.cpu_of(t).cpu, p.ring);
}

}  // namespace

sim::Task<void> pipe_write(Sched& s, TaskStruct& t, Pipe& p, std::uint32_t len) {
  hw::Memory& mem = s.k.mem();
  co_await s.cpu_of(t).cpu.delay(s.k.machine().kernel.syscall);
  co_await p.mutex.lock(mem, s.cpu_of(t).cpu);  // __pipe_lock
  PipeRing seen = co_await mem.read(s.cpu_of(t).cpu, p.ring);
  bool was_empty = seen.empty();
  bool wake_next_writer = false;
  // A write smaller than a page merges into the last buffer when its page has room (PIPE_BUF_FLAG_CAN_MERGE).
  const bool merge = !was_empty && seen.slot(seen.head - 1) + len <= kPipeBufPage;
  for (;;) {
    if (merge || !seen.full()) {
      // vfs_write, the page (pipe->tmp_page or alloc_page), copy_page_from_iter and file_update_time, beyond the
      // mutex and ring modeled here (machine [kernel] pipe_write; all of it charged under the mutex).
      if (const sim::Duration c = s.k.machine().kernel.pipe_write; c > sim::Duration{0})
        co_await s.cpu_of(t).cpu.delay(c);
      co_await mem.rmw(s.cpu_of(t).cpu, p.ring, [merge, len](PipeRing r) {
        if (merge) {
          r.slot(r.head - 1) += len;
        } else {
          r.slot(r.head) = len;  // a fresh page (pipe->tmp_page or alloc_page), pipe->head = head + 1
          ++r.head;
        }
        return r;
      });
      break;
    }
    // Full: wake the readers if it was empty, and wait for a free slot.
    seen = co_await pipe_sleep(s, t, p, was_empty, p.rd_wait, p.wr_wait);
    was_empty = seen.empty();
    wake_next_writer = true;
  }
  if (p.ring.value.full()) wake_next_writer = false;
  co_await p.mutex.unlock(mem, s.cpu_of(t).cpu);
  if (was_empty) co_await s.wake_up(t, p.rd_wait, WF_SYNC);  // wake_up_interruptible_sync_poll(&pipe->rd_wait)
  if (wake_next_writer) co_await s.wake_up(t, p.wr_wait, WF_SYNC);
}

sim::Task<std::uint32_t> pipe_read(Sched& s, TaskStruct& t, Pipe& p, std::uint32_t len) {
  hw::Memory& mem = s.k.mem();
  co_await s.cpu_of(t).cpu.delay(s.k.machine().kernel.syscall);
  co_await p.mutex.lock(mem, s.cpu_of(t).cpu);
  PipeRing seen = co_await mem.read(s.cpu_of(t).cpu, p.ring);
  bool was_full = seen.full();
  bool wake_next_reader = false;
  std::uint32_t done = 0;
  for (;;) {
    if (!seen.empty()) {
      // Copy from the tail buffer; an emptied buffer is released and the tail advances.
      // vfs_read, copy_page_to_iter, the emptied buffer's release (to pipe->tmp_page) and file_accessed, beyond
      // the mutex and ring modeled here (machine [kernel] pipe_read; charged once per call, under the mutex).
      const sim::Duration c = s.k.machine().kernel.pipe_read;
      if (done == 0 && c > sim::Duration{0}) co_await s.cpu_of(t).cpu.delay(c);
      const std::uint32_t want = len - done;
      const PipeRing before = co_await mem.rmw(s.cpu_of(t).cpu, p.ring, [want](PipeRing r) {
        std::uint32_t& buf = r.slot(r.tail);
        buf -= std::min(buf, want);
        if (buf == 0) ++r.tail;
        return r;
      });
      done += std::min(before.slot(before.tail), want);
      if (done == len) break;
      seen = co_await mem.read(s.cpu_of(t).cpu, p.ring);
      if (!seen.empty()) continue;
    }
    if (done > 0) break;
    seen = co_await pipe_sleep(s, t, p, was_full, p.wr_wait, p.rd_wait);
    was_full = seen.full();
    wake_next_reader = true;
  }
  if (p.ring.value.empty()) wake_next_reader = false;
  co_await p.mutex.unlock(mem, s.cpu_of(t).cpu);
  if (was_full) co_await s.wake_up(t, p.wr_wait, WF_SYNC);
  if (wake_next_reader) co_await s.wake_up(t, p.rd_wait, WF_SYNC);
  co_return done;
}

}  // namespace tlbsim::kernel
