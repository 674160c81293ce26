// Scenario tests of fs/pipe.c (v6.1) as modeled: small writes merge into the last page buffer, a full ring of 16
// buffers blocks the writer, and the exclusive wait queues wake one waiter per wake-up.
#include "fs/pipe.h"

#include <gtest/gtest.h>

#include <vector>

#include "kernel/scenario.h"

namespace tlbsim::kernel {
namespace {

using testing::Scenario;

struct PipeScenario {
  PipeScenario() : sched(s.k), pipe(s.sys.coherence(), s.k.arch().spinlock_kind()) { sched.start(); }
  void run_for(sim::Duration d) { s.sys.scheduler().run(sim::kTimeZero + d); }
  Scenario s;
  Sched sched;
  Pipe pipe;
};

// Blocks for good: a read of a pipe nobody writes.
sim::Task<void> sleep_forever(Sched& s, TaskStruct& t) {
  Pipe never(s.k.sys().coherence(), s.k.arch().spinlock_kind());
  for (;;) co_await pipe_read(s, t, never, 1);
}

// Writes `n` messages of `len` bytes, counting each one written.
sim::Task<void> writer(Sched& s, TaskStruct& t, Pipe& p, int n, std::uint32_t len, int& written,
                       sim::Duration after = sim::Duration{0}) {
  if (after > sim::Duration{0}) co_await s.sleep(t, after);
  for (int i = 0; i < n; ++i) {
    co_await pipe_write(s, t, p, len);
    ++written;
  }
  co_await sleep_forever(s, t);
}

// Reads `n` messages of `len` bytes, each read() until the message is whole.
sim::Task<void> reader(Sched& s, TaskStruct& t, Pipe& p, int n, std::uint32_t len, int& read, sim::Duration after) {
  co_await s.sleep(t, after);
  for (int i = 0; i < n; ++i) {
    for (std::uint32_t done = 0; done < len;) done += co_await pipe_read(s, t, p, len - done);
    ++read;
  }
  co_await sleep_forever(s, t);
}

TEST(Pipe, SmallWritesMergeIntoOnePageBuffer) {
  PipeScenario ps;
  int written = 0;
  ps.sched.create_task("w", &ps.s.k.new_mm(), CpuId{0},
                       [&](TaskStruct& t) { return writer(ps.sched, t, ps.pipe, 41, 100, written); });
  ps.run_for(sim::milliseconds(1));
  EXPECT_EQ(written, 41);
  // 40 messages fill 4000 bytes of the first page; the 41st does not fit (4100 > 4096) and takes a second buffer.
  EXPECT_EQ(ps.pipe.ring.value.head - ps.pipe.ring.value.tail, 2u);
  EXPECT_EQ(ps.pipe.ring.value.len[0], 4000u);
  EXPECT_EQ(ps.pipe.ring.value.len[1], 100u);
  EXPECT_EQ(ps.pipe.bytes(), 4100u);
}

TEST(Pipe, AFullRingBlocksTheWriterUntilAReaderFreesABuffer) {
  PipeScenario ps;
  int written = 0, read = 0;
  // 4096-byte writes never merge with a full page: the 17th write finds 16 buffers in use and sleeps. The reader
  // starts at 1 ms.
  ps.sched.create_task("w", &ps.s.k.new_mm(), CpuId{0},
                       [&](TaskStruct& t) { return writer(ps.sched, t, ps.pipe, 20, 4096, written); });
  ps.sched.create_task("r", &ps.s.k.new_mm(), CpuId{2}, [&](TaskStruct& t) {
    return reader(ps.sched, t, ps.pipe, 20, 4096, read, sim::milliseconds(1));
  });
  ps.run_for(sim::microseconds(900));
  EXPECT_EQ(written, 16);
  EXPECT_TRUE(ps.pipe.ring.value.full());
  ASSERT_EQ(ps.pipe.wr_wait.exclusive.size(), 1u) << "the writer waits as an exclusive waiter";
  ps.run_for(sim::milliseconds(2));
  EXPECT_EQ(written, 20);
  EXPECT_EQ(read, 20);
  EXPECT_EQ(ps.pipe.bytes(), 0u);
  EXPECT_TRUE(ps.s.oracle().violations().empty());
}

TEST(Pipe, OneWakeUpWakesOneExclusiveWriter) {
  PipeScenario ps;
  int first = 0, second = 0, third = 0, read = 0;
  // One writer fills the ring; two more park on it at 0.5 ms; the reader reads one buffer at 1 ms.
  ps.sched.create_task("fill", &ps.s.k.new_mm(), CpuId{0},
                       [&](TaskStruct& t) { return writer(ps.sched, t, ps.pipe, 16, 4096, first); });
  std::vector<TaskStruct*> parked;
  for (auto [cpu, count] : {std::pair{1u, &second}, std::pair{3u, &third}}) {
    parked.push_back(&ps.sched.create_task("w", &ps.s.k.new_mm(), CpuId{cpu}, [&ps, count](TaskStruct& t) {
      return writer(ps.sched, t, ps.pipe, 1, 4096, *count, sim::microseconds(500));
    }));
  }
  ps.sched.create_task("r", &ps.s.k.new_mm(), CpuId{2}, [&](TaskStruct& t) {
    return reader(ps.sched, t, ps.pipe, 1, 4096, read, sim::milliseconds(1));
  });
  ps.run_for(sim::microseconds(900));
  EXPECT_EQ(first, 16);
  ASSERT_EQ(ps.pipe.wr_wait.exclusive.size(), 2u);
  const std::uint64_t switches = parked[0]->nvcsw + parked[1]->nvcsw;  // each slept on its timer, then on the pipe
  // pipe_read's was_full wake-up wakes one of the two, which fills the freed slot; the woken writer finds the ring
  // full again, so it does not wake the next one, which sleeps on.
  ps.run_for(sim::milliseconds(3));
  EXPECT_EQ(read, 1);
  EXPECT_EQ(second + third, 1);
  EXPECT_EQ(ps.pipe.wr_wait.exclusive.size(), 1u);
  EXPECT_TRUE(ps.pipe.ring.value.full());
  // The woken writer went on to sleep in the catch-all read; the other one was never woken, so it has not switched
  // again (a wake-all would have run it, found the ring full and put it back to sleep: one switch more).
  EXPECT_EQ(parked[0]->nvcsw + parked[1]->nvcsw, switches + 1);
}

}  // namespace
}  // namespace tlbsim::kernel
