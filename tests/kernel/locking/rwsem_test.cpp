// Scenario tests of the rw_semaphore (src/kernel/locking/rwsem.cpp): each era's optimistic spinning, the sleeping
// slow paths and their wake-ups, on the small test machine with the scheduler.
#include "kernel/locking/rwsem.h"

#include <gtest/gtest.h>

#include "kernel/scenario.h"
#include "kernel/sched/sched.h"
#include "model/profile.h"

namespace tlbsim::kernel {
namespace {

using testing::Scenario;

sim::Task<void> hold_for_read(Sched& s, TaskStruct& t, RwSem& sem, sim::Duration hold, sim::SimTime& released) {
  PerCpu& pc = s.cpu_of(t);
  co_await sem.down_read(pc);
  co_await pc.cpu.delay(hold);
  released = pc.cpu.now();
  co_await sem.up_read(pc);
}

sim::Task<void> take(Sched& s, TaskStruct& t, RwSem& sem, bool writer, sim::Duration after, sim::SimTime& acquired) {
  PerCpu& pc = s.cpu_of(t);
  co_await pc.cpu.delay(after);
  if (writer) {
    co_await sem.down_write(pc);
    acquired = pc.cpu.now();
    co_await pc.cpu.delay(sim::microseconds(5));
    co_await sem.up_write(pc);
  } else {
    co_await sem.down_read(pc);
    acquired = pc.cpu.now();
    co_await sem.up_read(pc);
  }
}

void pin(TaskStruct& t, std::uint32_t ncpus) {
  t.cpus_allowed = Cpumask(ncpus);
  t.cpus_allowed.set(t.cpu);
}

// A reader on CPU 0 that holds the lock 100 us, and a writer on CPU 2 that comes 1 us later, both pinned.
struct ReaderThenWriter {
  explicit ReaderThenWriter(const char* profile)
      : s(load_kernel_profile(profile).config),
        sched(s.k, false),
        sem(s.sys.coherence(), "test.rwsem", s.k.arch().spinlock_kind()) {
    sched.start();
    pin(sched.create_task(
            "reader", nullptr, CpuId{0},
            [this](TaskStruct& t) { return hold_for_read(sched, t, sem, sim::microseconds(100), released); }),
        s.k.ncpus());
    w = &sched.create_task("writer", nullptr, CpuId{2},
                           [this](TaskStruct& t) { return take(sched, t, sem, true, sim::microseconds(1), acquired); });
    pin(*w, s.k.ncpus());
  }
  Scenario s;
  Sched sched;
  RwSem sem;
  sim::SimTime released{}, acquired{};
  TaskStruct* w = nullptr;
};

TEST(Rwsem, AWriterSpinsOnAReaderOwnedLockForItsEraThenSleepsUntilTheReaderLeaves) {
  // The reader holds the lock 100 us; the writer comes 1 us later. v3.3 has no optimistic spinning and sleeps at
  // once; v5.17 and v6.13 spin on the reader-owned lock for rwsem_rspin_threshold, (20 + 1 reader) / 2 = 10.5 us,
  // then sleep. The up_read that frees the lock wakes the writer.
  for (const auto& [profile, spin_us] :
       {std::pair{"linux-3.3", 0.0}, std::pair{"linux-5.17", 10.5}, std::pair{"linux-6.13", 10.5}}) {
    ReaderThenWriter rw(profile);
    auto& [s, sched, sem, released, acquired, wp] = rw;
    TaskStruct& w = *wp;
    s.sys.scheduler().run(sim::kTimeZero + sim::milliseconds(1));
    EXPECT_GE(acquired, released) << profile;
    EXPECT_EQ(w.nvcsw, 2u) << profile << ": it slept once (and switched away once more when it ended)";
    // The writer's CPU idled from the end of its spin to the wake-up.
    const double idle_us = static_cast<double>(sched.rq(CpuId{2}).last_idle.count()) / 1e6;
    EXPECT_NEAR(idle_us, 100.0 - 1.0 - spin_us, 2.0) << profile;
    EXPECT_EQ(sem.value(), 0) << profile;
  }
}

TEST(Rwsem, TheReaderThatFreesTheLockWithWaitersLetsWritersSpinAgainFromV53) {
  // As above: the writer gives up spinning on the reader-owned lock after 10.5 us and marks it RWSEM_NONSPINNABLE,
  // so later writers sleep at once. From v5.3 the up_read that frees the lock with the writer queued clears the bit
  // (__up_read's clear_nonspinnable), before the woken writer has run; v3.3 never spins, so never sets it.
  for (const auto& [profile, spins] :
       {std::pair{"linux-3.3", false}, std::pair{"linux-5.17", true}, std::pair{"linux-6.13", true}}) {
    ReaderThenWriter rw(profile);
    auto& [s, sched, sem, released, acquired, w] = rw;
    s.sys.scheduler().run(sim::kTimeZero + sim::microseconds(50));
    EXPECT_EQ(sem.nonspinnable(), spins) << profile << ": the writer's spin timed out";
    EXPECT_EQ(sem.sleepers(), 1u) << profile;
    // Up to just after the reader's release (the scheduler runs in 50 ns steps until the reader has released).
    for (sim::SimTime t = sim::kTimeZero + sim::microseconds(50);
         released == sim::SimTime{} && t < sim::kTimeZero + sim::microseconds(300); t += sim::nanoseconds(50)) {
      s.sys.scheduler().run(t);
    }
    ASSERT_GT(released, sim::kTimeZero) << profile;
    s.sys.scheduler().run(released + sim::nanoseconds(500));  // up_read's atomic, not yet the writer's wake-up
    EXPECT_EQ(acquired, sim::SimTime{}) << profile << ": the woken writer has not run yet";
    EXPECT_FALSE(sem.nonspinnable()) << profile << ": the reader's release cleared it";
    s.sys.scheduler().run(sim::kTimeZero + sim::milliseconds(1));
    EXPECT_GE(acquired, released) << profile;
  }
}

TEST(Rwsem, AWaiterThatMayMigrateSpinsInsteadOfSleeping) {
  // The model's mm code runs on one CPU throughout, so only a task pinned to its CPU sleeps in the lock.
  Scenario s(load_kernel_profile("linux-6.13").config);
  Sched sched(s.k, false);
  RwSem sem(s.sys.coherence(), "test.rwsem", s.k.arch().spinlock_kind());
  sched.start();
  sim::SimTime released{}, acquired{};
  pin(sched.create_task("reader", nullptr, CpuId{0},
                        [&](TaskStruct& t) { return hold_for_read(sched, t, sem, sim::microseconds(100), released); }),
      s.k.ncpus());
  TaskStruct& w = sched.create_task("writer", nullptr, CpuId{2}, [&](TaskStruct& t) {
    return take(sched, t, sem, true, sim::microseconds(1), acquired);
  });
  s.sys.scheduler().run(sim::kTimeZero + sim::milliseconds(1));
  EXPECT_GE(acquired, released);
  EXPECT_EQ(w.nvcsw, 1u);  // only its exit's switch
}

TEST(Rwsem, AReaderQueuesBehindASleepingWriterWhileReadersOwnTheLock) {
  // rwsem_down_read_slowpath: with readers owning the lock and a writer asleep in the queue, a new reader does not
  // steal the lock but queues behind the writer, so a stream of readers cannot starve it.
  Scenario s(load_kernel_profile("linux-6.13").config);
  Sched sched(s.k, false);
  RwSem sem(s.sys.coherence(), "test.rwsem", s.k.arch().spinlock_kind());
  sched.start();
  sim::SimTime released{}, writer_in{}, reader_in{};
  pin(sched.create_task("reader", nullptr, CpuId{0},
                        [&](TaskStruct& t) { return hold_for_read(sched, t, sem, sim::microseconds(100), released); }),
      s.k.ncpus());
  pin(sched.create_task("writer", nullptr, CpuId{1},
                        [&](TaskStruct& t) { return take(sched, t, sem, true, sim::microseconds(1), writer_in); }),
      s.k.ncpus());
  pin(sched.create_task("reader2", nullptr, CpuId{2},
                        [&](TaskStruct& t) { return take(sched, t, sem, false, sim::microseconds(30), reader_in); }),
      s.k.ncpus());
  s.sys.scheduler().run(sim::kTimeZero + sim::milliseconds(1));
  EXPECT_GE(writer_in, released);
  EXPECT_GT(reader_in, writer_in);
  EXPECT_EQ(sem.value(), 0);
}

// Takes the lock for write, holds it `hold`, and releases it; `after_release` is the lock's count just after.
sim::Task<void> write_then_release(Sched& s, TaskStruct& t, RwSem& sem, sim::Duration hold, int& after_release) {
  PerCpu& pc = s.cpu_of(t);
  co_await sem.down_write(pc);
  co_await pc.cpu.delay(hold);
  co_await sem.up_write(pc);
  after_release = sem.value();
}

TEST(Rwsem, TheReadersAReleaseWakesAlreadyHoldTheLock) {
  // rwsem_mark_wake grants the lock to the readers it wakes (the count's reader bias is added on their behalf) before
  // any of them runs, so a writer arriving between the release and the wake-ups finds the lock reader-owned.
  Scenario s(load_kernel_profile("linux-6.13").config);
  Sched sched(s.k, false);
  RwSem sem(s.sys.coherence(), "test.rwsem", s.k.arch().spinlock_kind());
  sched.start();
  int after_release = -2;
  sim::SimTime reader_in{};
  pin(sched.create_task(
          "writer", nullptr, CpuId{0},
          [&](TaskStruct& t) { return write_then_release(sched, t, sem, sim::microseconds(20), after_release); }),
      s.k.ncpus());
  pin(sched.create_task("reader", nullptr, CpuId{1},
                        [&](TaskStruct& t) { return take(sched, t, sem, false, sim::microseconds(1), reader_in); }),
      s.k.ncpus());
  s.sys.scheduler().run(sim::kTimeZero + sim::milliseconds(1));
  EXPECT_EQ(after_release, 1) << "the sleeping reader holds the lock once the writer's release has woken it";
  EXPECT_GT(reader_in, sim::kTimeZero + sim::microseconds(20));
  EXPECT_EQ(sem.value(), 0);
  EXPECT_EQ(sem.sleepers(), 0u);
}

// Takes `outer` for write, then sleeps on `inner` (which another task holds for write) while holding it.
sim::Task<void> sleep_holding(Sched& s, TaskStruct& t, RwSem& outer, RwSem& inner, sim::SimTime& released) {
  PerCpu& pc = s.cpu_of(t);
  co_await outer.down_write(pc);
  co_await pc.cpu.delay(sim::microseconds(2));
  co_await inner.down_read(pc);
  co_await inner.up_read(pc);
  released = pc.cpu.now();
  co_await outer.up_write(pc);
}

TEST(Rwsem, AWriterStopsSpinningWhenTheOwnerSleepsHoldingTheLock) {
  // rwsem_spin_on_owner spins only while the writer that owns the lock is on its CPU (owner_on_cpu): once the owner
  // sleeps holding the lock (as a v6.15+ vma_start_write does under mmap_lock), the spinner goes to sleep too, and
  // its CPU idles until the owner's release wakes it.
  Scenario s(load_kernel_profile("linux-6.13").config);
  Sched sched(s.k, false);
  RwSem outer(s.sys.coherence(), "test.outer", s.k.arch().spinlock_kind());
  RwSem inner(s.sys.coherence(), "test.inner", s.k.arch().spinlock_kind());
  sched.start();
  sim::SimTime released{}, acquired{}, unused{};
  int after = 0;
  pin(sched.create_task(
          "inner_holder", nullptr, CpuId{2},
          [&](TaskStruct& t) { return write_then_release(sched, t, inner, sim::microseconds(100), after); }),
      s.k.ncpus());
  pin(sched.create_task("owner", nullptr, CpuId{0},
                        [&](TaskStruct& t) { return sleep_holding(sched, t, outer, inner, released); }),
      s.k.ncpus());
  TaskStruct& w = sched.create_task("writer", nullptr, CpuId{1}, [&](TaskStruct& t) {
    return take(sched, t, outer, true, sim::microseconds(1), acquired);
  });
  pin(w, s.k.ncpus());
  s.sys.scheduler().run(sim::kTimeZero + sim::milliseconds(1));
  (void)unused;
  EXPECT_GE(acquired, released);
  EXPECT_GE(w.nvcsw, 2u) << "the writer slept (and switched away once more when it ended)";
  // It spun from 1 us until the owner slept (about 2 us in), then idled until about 100 us.
  const double idle_us = static_cast<double>(sched.rq(CpuId{1}).last_idle.count()) / 1e6;
  EXPECT_GT(idle_us, 80.0);
  EXPECT_EQ(outer.value(), 0);
}

// Takes the lock for read `rounds` times: each holds it `hold`, then leaves it free for `gap`.
sim::Task<void> read_stream(Sched& s, TaskStruct& t, RwSem& sem, int rounds, sim::Duration hold, sim::Duration gap) {
  PerCpu& pc = s.cpu_of(t);
  for (int i = 0; i < rounds; ++i) {
    co_await sem.down_read(pc);
    co_await pc.cpu.delay(hold);
    co_await sem.up_read(pc);
    co_await pc.cpu.delay(gap);
  }
}

TEST(Rwsem, AStreamOfReadersStarvesAQueuedWriterUntilTheHandoffTimeoutFromV512) {
  // One reader takes the lock for 15 us and leaves it free for 0.2 us, over and over; a writer asks for it at 1 us,
  // spins out its 10.5 us on the reader-owned lock (v5.3+) and sleeps. Before v5.12 a reader whose fast path fails on
  // the queued writer (RWSEM_FLAG_WAITERS) queues behind it, so the writer has the lock at the reader's first release.
  // From v5.12 that reader steals the free lock ahead of the queue (rwsem_down_read_slowpath), and the writer, woken at
  // each release, finds it taken again, until it has waited past RWSEM_WAIT_TIMEOUT (DIV_ROUND_UP(HZ, 250) jiffies: one
  // jiffy at these profiles' HZ = 250, and time_after needs the jiffy after it, so 4-8 ms): then it sets the handoff
  // bit, which stops the stealing.
  for (const auto& [profile, min_us, max_us] :
       {std::tuple{"linux-3.3", 15.0, 30.0}, std::tuple{"linux-5.17", 4000.0, 8100.0},
        std::tuple{"linux-6.13", 4000.0, 8100.0}}) {
    Scenario s(load_kernel_profile(profile).config);
    Sched sched(s.k, false);
    RwSem sem(s.sys.coherence(), "test.rwsem", s.k.arch().spinlock_kind());
    sched.start();
    sim::SimTime acquired{};
    pin(sched.create_task("reader", nullptr, CpuId{0},
                          [&](TaskStruct& t) {
                            return read_stream(sched, t, sem, 600, sim::microseconds(15), sim::nanoseconds(200));
                          }),
        s.k.ncpus());
    pin(sched.create_task("writer", nullptr, CpuId{2},
                          [&](TaskStruct& t) { return take(sched, t, sem, true, sim::microseconds(1), acquired); }),
        s.k.ncpus());
    s.sys.scheduler().run(sim::kTimeZero + sim::milliseconds(10));
    const double us = static_cast<double>((acquired - sim::kTimeZero).count()) / 1e6;
    EXPECT_GE(us, min_us) << profile;
    EXPECT_LE(us, max_us) << profile;
    EXPECT_EQ(sem.value(), 0) << profile;
    EXPECT_EQ(sem.sleepers(), 0u) << profile;
  }
}

}  // namespace
}  // namespace tlbsim::kernel
