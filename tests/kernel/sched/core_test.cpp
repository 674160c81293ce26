// Scenario tests of context switching with lazy TLB mode (kernel/sched/core.c v6.1 + x86 switch_mm_irqs_off).
#include <gtest/gtest.h>

#include "arch/x86/mm/mm_stats.h"
#include "arch/x86/mm/tlb.h"
#include "arch/x86/mm/tlb_state.h"
#include "fs/pipe.h"
#include "kernel/scenario.h"
#include "kernel/sched/sched.h"
#include "mm/memory.h"

namespace tlbsim::kernel {
namespace {

using testing::Scenario;

// A task that blocks on a pipe `rounds` times; another task on another CPU wakes it each time.
struct PingPong {
  explicit PingPong(Scenario& s)
      : sched(s.k),
        to_a(s.sys.coherence(), s.k.arch().spinlock_kind()),
        to_b(s.sys.coherence(), s.k.arch().spinlock_kind()) {}
  Sched sched;
  Pipe to_a, to_b;
};

sim::Task<void> sleeper(Sched& s, TaskStruct& t, Pipe& in, Pipe& out, int rounds) {
  for (int i = 0; i < rounds; ++i) {
    co_await pipe_read(s, t, in);
    co_await pipe_write(s, t, out);
  }
  for (;;) co_await pipe_read(s, t, in);  // then sleep for good
}

sim::Task<void> waker(Sched& s, TaskStruct& t, Pipe& out, Pipe& in, int rounds) {
  for (int i = 0; i < rounds; ++i) {
    co_await pipe_write(s, t, out);
    co_await pipe_read(s, t, in);
  }
  for (;;) co_await pipe_read(s, t, in);
}

// Keeps `t` on the CPU it was created on (sched_setaffinity to one CPU), so that wake-up placement cannot move it.
void pin(TaskStruct& t, std::uint32_t ncpus) {
  t.cpus_allowed = Cpumask(ncpus);
  t.cpus_allowed.set(t.cpu);
}

// Task a (mm `a`, CPU 0) and task b (mm `b`, CPU 2), pinned, wake each other 20 times through the pipes, each
// sleeping in between; then 1 ms of simulated time has passed.
void run_20_round_trips(Scenario& s, PingPong& p, MmStruct& a, MmStruct& b) {
  p.sched.start();
  pin(p.sched.create_task("a", &a, CpuId{0}, [&](TaskStruct& t) { return sleeper(p.sched, t, p.to_a, p.to_b, 20); }),
      s.k.ncpus());
  pin(p.sched.create_task("b", &b, CpuId{2}, [&](TaskStruct& t) { return waker(p.sched, t, p.to_a, p.to_b, 20); }),
      s.k.ncpus());
  s.sys.scheduler().run(sim::kTimeZero + sim::milliseconds(1));
}

TEST(Sched, UserToIdleToSameUserLoadsNoCr3AndFlushesNothing) {
  Scenario s;
  PingPong p(s);
  MmStruct& a = s.k.new_mm();
  MmStruct& b = s.k.new_mm();
  run_20_round_trips(s, p, a, b);
  // Each CPU loaded its task's mm once (from init_mm); the 20 trips through idle reloaded nothing.
  EXPECT_EQ(x86::mm_stats(s.k).cr3_loads[0], 1u);
  EXPECT_EQ(x86::mm_stats(s.k).cr3_loads[2], 1u);
  EXPECT_GE(p.sched.rq(CpuId{0}).nr_switches, 40u);
  EXPECT_EQ(s.cpu(0).tlb.counters().flush_tag, 1u);  // the first load's flush of a fresh ASID slot only
  EXPECT_EQ(x86::cpu_tlbstate(s.cpu(0)).loaded_mm, &a) << "idle keeps the mm loaded (lazy)";
  EXPECT_TRUE(x86::cpu_state(s.cpu(0)).is_lazy.value);
  EXPECT_TRUE(s.oracle().violations().empty());
}

TEST(Sched, IdleBorrowingAnMmHoldsAReferenceOnMmCount) {
  Scenario s;
  PingPong p(s);
  MmStruct& a = s.k.new_mm();
  MmStruct& b = s.k.new_mm();
  const std::int64_t base = a.mm_count.value;
  p.sched.start();
  pin(p.sched.create_task("a", &a, CpuId{0}, [&](TaskStruct& t) { return sleeper(p.sched, t, p.to_a, p.to_b, 3); }),
      s.k.ncpus());
  pin(p.sched.create_task("b", &b, CpuId{2}, [&](TaskStruct& t) { return waker(p.sched, t, p.to_a, p.to_b, 3); }),
      s.k.ncpus());
  s.sys.scheduler().run(sim::kTimeZero + sim::milliseconds(1));
  // Task a is asleep; cpu0's idle task borrows a's mm as active_mm and holds a reference on mm_count.
  EXPECT_EQ(p.sched.rq(CpuId{0}).curr, p.sched.rq(CpuId{0}).idle);
  EXPECT_EQ(p.sched.rq(CpuId{0}).idle->active_mm, &a);
  EXPECT_EQ(a.mm_count.value, base + 1);
  EXPECT_GT(s.sys.coherence().stats_by_name().size(), 0u);
}

sim::Task<void> unmapper(Sched& s, TaskStruct& t, MmStruct& mm, std::uint64_t& addr, Pipe& kick) {
  PerCpu& pc = s.cpu_of(t);
  addr = co_await sys_mmap(pc, mm, 4 << 20, false, nullptr, 0);
  co_await user_access(pc, mm, addr, true);
  co_await pipe_write(s, t, kick);  // let the other thread touch it and go to sleep
  co_await pc.cpu.delay(sim::microseconds(50));
  co_await sys_munmap(pc, mm, addr, 4 << 20);
  for (;;) co_await pipe_read(s, t, kick);
}

sim::Task<void> toucher(Sched& s, TaskStruct& t, MmStruct& mm, std::uint64_t& addr, Pipe& kick) {
  co_await pipe_read(s, t, kick);
  co_await user_access(s.cpu_of(t), mm, addr, false);
  for (;;) co_await pipe_read(s, t, kick);  // sleeps: its CPU goes idle, lazily keeping mm loaded
}

TEST(Sched, FreeingPageTablesSwitchesAnIdleLazyCpuToInitMm) {
  Scenario s;
  Sched sched(s.k);
  Pipe kick(s.sys.coherence(), s.k.arch().spinlock_kind());
  MmStruct& mm = s.k.new_mm();
  std::uint64_t addr = 0;
  sched.start();
  sched.create_task("unmapper", &mm, CpuId{0}, [&](TaskStruct& t) { return unmapper(sched, t, mm, addr, kick); });
  sched.create_task("toucher", &mm, CpuId{2}, [&](TaskStruct& t) { return toucher(sched, t, mm, addr, kick); });
  s.sys.scheduler().run(sim::kTimeZero + sim::milliseconds(1));
  EXPECT_EQ(s.k.counters().irq_tlb_count[2], 1u);
  EXPECT_EQ(x86::cpu_tlbstate(s.cpu(2)).loaded_mm, &s.k.init_mm());
  EXPECT_FALSE(mm.cpumask.peek().test(CpuId{2}));
  EXPECT_TRUE(s.oracle().violations().empty());
}

}  // namespace
}  // namespace tlbsim::kernel

namespace tlbsim::kernel {
namespace {

sim::Task<void> hog(Sched& s, TaskStruct& t) {
  for (;;) co_await s.cpu_of(t).cpu.delay(sim::microseconds(1));
}
sim::Task<void> note_cpu(Sched& s, TaskStruct& t, std::uint32_t& ran_on, WaitQueue& never) {
  ran_on = s.cpu_of(t).id.get();
  co_await s.wait_event(t, never, [] { return false; });
}
sim::Task<void> spawn(Sched& s, TaskStruct& t, TaskStruct& child) {
  co_await s.wake_up_new_task(t, child);
  for (;;) co_await s.cpu_of(t).cpu.delay(sim::microseconds(1));
}

void placement(bool pinned, std::uint32_t expect_cpu, bool expect_ran) {
  Scenario s;
  Sched sched(s.k);
  MmStruct& mm = s.k.new_mm();
  sched.start();
  sched.create_task("hog", &mm, CpuId{0}, [&](TaskStruct& t) { return hog(sched, t); });
  std::uint32_t ran_on = 99;
  WaitQueue never(s.sys.coherence(), "never", s.k.arch().spinlock_kind());
  TaskStruct& child = sched.create_task(
      "child", &mm, CpuId{0}, [&](TaskStruct& t) { return note_cpu(sched, t, ran_on, never); }, false);
  if (pinned) {
    child.cpus_allowed = Cpumask(s.k.ncpus());
    child.cpus_allowed.set(CpuId{0});
  }
  sched.create_task("waker", &mm, CpuId{2}, [&](TaskStruct& t) { return spawn(sched, t, child); });
  s.sys.scheduler().run(sim::kTimeZero + sim::microseconds(20));
  EXPECT_EQ(child.cpu.get(), expect_cpu);
  EXPECT_EQ(ran_on != 99, expect_ran);
}

TEST(Sched, WakeUpPicksAnIdleCpuOfTheSameLlcWhenThePreviousOneIsBusy) { placement(false, 1, true); }
TEST(Sched, WakeUpRespectsAffinity) { placement(true, 0, false); }

}  // namespace
}  // namespace tlbsim::kernel

namespace tlbsim::kernel {
namespace {

sim::Task<void> slow_waker(Sched& s, TaskStruct& t, Pipe& out, Pipe& in, int rounds) {
  for (int i = 0; i < rounds; ++i) {
    co_await s.cpu_of(t).cpu.delay(sim::milliseconds(1));  // long enough for the partner's CPU to sleep deeply
    co_await pipe_write(s, t, out);
    co_await pipe_read(s, t, in);
  }
  for (;;) co_await pipe_read(s, t, in);
}

sim::Task<void> busy_forever(Sched& s, TaskStruct& t) {
  for (;;) co_await s.cpu_of(t).cpu.delay(sim::microseconds(5));
}

// Wakes `target` (running all along) ten times, counting the runqueue-lock and pi_lock RMWs of the wake-ups.
sim::Task<void> wake_running(Sched& s, TaskStruct& t, TaskStruct& target, hw::CoherenceModel& m, std::uint64_t& rq_rmws,
                             std::uint64_t& pi_rmws) {
  const auto count = [&m](const char* name) {
    for (const auto& [n, st] : m.stats_by_name()) {
      if (n == name) return st.rmws;
    }
    return std::uint64_t{0};
  };
  co_await s.cpu_of(t).cpu.delay(sim::microseconds(20));
  const std::uint64_t rq0 = count("rq.lock"), pi0 = count("task_struct.pi_lock");
  for (int i = 0; i < 10; ++i) co_await s.try_to_wake_up(t, target);
  rq_rmws = count("rq.lock") - rq0;
  pi_rmws = count("task_struct.pi_lock") - pi0;
  for (;;) co_await s.cpu_of(t).cpu.delay(sim::microseconds(5));
}

TEST(Sched, WakingARunningTaskTakesItsPiLockButNoRunqueueLock) {
  // try_to_wake_up (v6.1): under p->pi_lock, ttwu_state_match finds p TASK_RUNNING and returns.
  Scenario s;
  Sched sched(s.k, false);
  sched.start();
  TaskStruct& busy =
      sched.create_task("busy", &s.k.new_mm(), CpuId{0}, [&](TaskStruct& t) { return busy_forever(sched, t); });
  std::uint64_t rq_rmws = 99, pi_rmws = 0;
  sched.create_task("waker", &s.k.new_mm(), CpuId{2},
                    [&](TaskStruct& t) { return wake_running(sched, t, busy, s.sys.coherence(), rq_rmws, pi_rmws); });
  s.sys.scheduler().run(sim::kTimeZero + sim::microseconds(200));
  EXPECT_EQ(rq_rmws, 0u);
  EXPECT_EQ(pi_rmws, 10u);
  EXPECT_EQ(sched.rq(CpuId{0}).curr, &busy);
}

TEST(Sched, SyncWakeUpsPullAPipePingPongIntoOneLlc) {
  // small-2s2c: LLCs {0,1,4,5} and {2,3,6,7}. a (cpu0) and b (cpu2) wake each other through pipes: WF_SYNC
  // wake-ups whose waker is alone on its CPU, so wake_affine picks the waker's CPU and select_idle_sibling an idle
  // CPU of its LLC; the pair ends up sharing one LLC.
  Scenario s;
  PingPong p(s);
  p.sched.start();
  TaskStruct& a = p.sched.create_task("a", &s.k.new_mm(), CpuId{0},
                                      [&](TaskStruct& t) { return sleeper(p.sched, t, p.to_a, p.to_b, 5); });
  TaskStruct& b = p.sched.create_task("b", &s.k.new_mm(), CpuId{2},
                                      [&](TaskStruct& t) { return waker(p.sched, t, p.to_a, p.to_b, 5); });
  const hw::Topology& topo = s.sys.topology();
  ASSERT_NE(topo.llc_of(a.cpu), topo.llc_of(b.cpu));
  s.sys.scheduler().run(sim::kTimeZero + sim::milliseconds(1));
  EXPECT_EQ(topo.llc_of(a.cpu), topo.llc_of(b.cpu)) << "a on cpu" << a.cpu.get() << ", b on cpu" << b.cpu.get();
  EXPECT_NE(a.cpu, b.cpu) << "each was placed on an idle CPU, not stacked on its busy waker";
}

TEST(Sched, DeepIdleLeavesTheMmAndTheTaskReloadsCr3OnReturn) {
  Scenario s;  // small-2s2c: Skylake-SP idle states, C6 flushes the TLB
  PingPong p(s);
  MmStruct& a = s.k.new_mm();
  MmStruct& b = s.k.new_mm();
  p.sched.start();
  TaskStruct& ta =
      p.sched.create_task("a", &a, CpuId{0}, [&](TaskStruct& t) { return sleeper(p.sched, t, p.to_a, p.to_b, 4); });
  TaskStruct& tb =
      p.sched.create_task("b", &b, CpuId{2}, [&](TaskStruct& t) { return slow_waker(p.sched, t, p.to_a, p.to_b, 4); });
  // Pinned: the pipe's WF_SYNC wake-ups would otherwise pull a to b's LLC (wake_affine).
  ta.cpus_allowed = Cpumask(s.k.ncpus());
  ta.cpus_allowed.set(CpuId{0});
  tb.cpus_allowed = Cpumask(s.k.ncpus());
  tb.cpus_allowed.set(CpuId{2});
  s.sys.scheduler().run(sim::kTimeZero + sim::milliseconds(10));
  const auto& usage = s.k.sched()->stats.idle_state_usage;
  ASSERT_EQ(usage.size(), 4u);  // polling, C1, C1E, C6
  EXPECT_GT(usage[3], 0u) << "after a 1 ms idle period the governor picks C6";
  // Every C6 entry ran leave_mm: CR3 to init_mm and the CPU out of mm_cpumask; the task's return reloads CR3.
  EXPECT_GT(x86::mm_stats(s.k).cr3_to_init_mm, 0u);
  EXPECT_GT(x86::mm_stats(s.k).cr3_loads[0], 2u);
  EXPECT_TRUE(s.oracle().violations().empty());
}

}  // namespace
}  // namespace tlbsim::kernel

namespace tlbsim::kernel {
namespace {

sim::Task<void> napper(Sched& s, TaskStruct& t, sim::SimTime& woke) {
  co_await s.sleep(t, sim::microseconds(100));
  woke = s.cpu_of(t).cpu.now();
  co_await s.sleep(t, sim::milliseconds(100));
}

TEST(Sched, SleepIsWokenByTheLocalTimerInterrupt) {
  Scenario s;
  Sched sched(s.k);
  MmStruct& mm = s.k.new_mm();
  sched.start();
  sim::SimTime woke{};
  sched.create_task("napper", &mm, CpuId{1}, [&](TaskStruct& t) { return napper(sched, t, woke); });
  s.sys.scheduler().run(sim::kTimeZero + sim::milliseconds(1));
  EXPECT_GE(woke, sim::kTimeZero + sim::microseconds(100));
  EXPECT_LT(woke, sim::kTimeZero + sim::microseconds(150));  // timer interrupt, C-state exit, switch back
  EXPECT_EQ(s.k.counters().irq_timer_count, 1u);
}

}  // namespace
}  // namespace tlbsim::kernel

namespace tlbsim::kernel {
namespace {

// Sleeps on `wq` until woken, records when it ran, and sleeps for good.
sim::Task<void> wakee_body(Sched& s, TaskStruct& t, WaitQueue& wq, bool& go, sim::SimTime& ran_at) {
  co_await s.wait_event(t, wq, [&go] { return go; });
  ran_at = s.cpu_of(t).cpu.now();
  co_await s.wait_event(t, wq, [] { return false; });
}

// Wakes the sleeper (its own CPU's only other task) as a system call would, then returns to user mode with or
// without the exit_to_user_mode check, and records when it got past that point.
sim::Task<void> waker_body(Sched& s, TaskStruct& t, WaitQueue& wq, bool& go, bool check, sim::SimTime& past_at) {
  co_await s.cpu_of(t).cpu.delay(sim::microseconds(5));
  go = true;
  co_await s.wake_up(t, wq);
  if (check) co_await s.exit_to_user_mode(t);
  past_at = s.cpu_of(t).cpu.now();
  for (;;) co_await s.cpu_of(t).cpu.delay(sim::microseconds(1));
}

// Returns (when the waker got past its return to user mode, when the wakee first ran).
std::pair<sim::SimTime, sim::SimTime> wake_on_one_cpu(bool check) {
  Scenario s;
  Sched sched(s.k);
  sched.start();
  WaitQueue wq(s.sys.coherence(), "wq", s.k.arch().spinlock_kind());
  bool go = false;
  sim::SimTime past_at{}, ran_at{};
  TaskStruct& wakee = sched.create_task("wakee", &s.k.new_mm(), CpuId{0},
                                        [&](TaskStruct& t) { return wakee_body(sched, t, wq, go, ran_at); });
  wakee.cpus_allowed = Cpumask(s.k.ncpus());
  wakee.cpus_allowed.set(CpuId{0});
  sched.create_task("waker", &s.k.new_mm(), CpuId{0},
                    [&](TaskStruct& t) { return waker_body(sched, t, wq, go, check, past_at); });
  s.sys.scheduler().run(sim::kTimeZero + sim::microseconds(200));
  return {past_at, ran_at};
}

TEST(Sched, AWokenSleeperPreemptsItsWakerWhereTheSystemCallReturnsToUserMode) {
  // try_to_wake_up sets TIF_NEED_RESCHED on the waker's CPU (a slept task preempts); exit_to_user_mode_loop acts
  // on it, so the wakee runs before the waker's next user instruction.
  const auto [past, ran] = wake_on_one_cpu(true);
  ASSERT_NE(ran, sim::SimTime{});
  EXPECT_LT(ran, past);
  // Without that check the waker runs on (this model has no other preemption point in a busy loop).
  const auto [past_unchecked, ran_unchecked] = wake_on_one_cpu(false);
  EXPECT_NE(past_unchecked, sim::SimTime{});
  EXPECT_TRUE(ran_unchecked == sim::SimTime{} || past_unchecked < ran_unchecked);
}

// Two tasks on CPUs 0 and 2 wake each other 20 times through pipes; each sleeps in between, so its CPU idles.
std::uint64_t resched_ipis_of_ping_pong(hw::Machine m) {
  Scenario s(std::move(m), KernelConfig{});
  PingPong p(s);
  MmStruct& a = s.k.new_mm();
  MmStruct& b = s.k.new_mm();
  run_20_round_trips(s, p, a, b);
  return s.k.counters().irq_resched_count;
}

TEST(Sched, AnIdleCpuThatHaltsIsWokenByARescheduleIpi) {
  // An idle state that polls (MWAIT, snooze) is woken by the waker's write of TIF_NEED_RESCHED; in HLT (x86
  // default_idle) TIF_POLLING_NRFLAG is clear, so resched_curr sends a reschedule IPI (smp_send_reschedule).
  hw::Machine polling = hw::load_machine("small-2s2c");
  polling.idle_states.clear();
  EXPECT_EQ(resched_ipis_of_ping_pong(polling), 0u);
  hw::Machine halting = hw::load_machine("small-2s2c");
  halting.idle_states = {hw::IdleState{"HLT", sim::microseconds(1), sim::nanoseconds(1), false, false}};
  EXPECT_GE(resched_ipis_of_ping_pong(halting), 20u);
}

}  // namespace
}  // namespace tlbsim::kernel
