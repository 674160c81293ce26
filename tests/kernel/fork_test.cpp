// Scenario tests of the mm lifecycle: exec, exit, and the last mmdrop waiting for lazy borrowers.
#include "kernel/fork.h"

#include <gtest/gtest.h>

#include "kernel/options.h"
#include "kernel/scenario.h"
#include "mm/memory.h"

namespace tlbsim::kernel {
namespace {

using testing::Scenario;

struct Family {
  explicit Family(Scenario& s) : sched(s.k), wait(s.sys.coherence(), "wait", s.k.arch().spinlock_kind()) {}
  Sched sched;
  WaitQueue wait;
  bool exited = false;
  MmStruct* child_mm = nullptr;
};

sim::Task<void> child(Sched& s, TaskStruct& t, Family& f) {
  MmStruct& mm = s.k.new_mm();
  f.child_mm = &mm;
  co_await exec_mmap(s, t, mm);
  PerCpu& pc = s.cpu_of(t);
  const std::uint64_t addr = co_await sys_mmap(pc, mm, 16 * kPageSize, false, nullptr, 0);
  for (int i = 0; i < 4; ++i) co_await user_access(pc, mm, addr + i * kPageSize, true);
  co_await exit_mm(s, t);
  f.exited = true;
  co_await s.wake_up(t, f.wait);
}

sim::Task<void> parent(Sched& s, TaskStruct& t, Family& f, CpuId child_cpu, int children) {
  for (int i = 0; i < children; ++i) {
    f.exited = false;
    co_await mmget(s.cpu_of(t), *t.mm);
    TaskStruct& c = s.create_task("child", t.mm, child_cpu, [&s, &f](TaskStruct& ct) { return child(s, ct, f); }, false);
    co_await s.wake_up_new_task(t, c);
    co_await s.wait_event(t, f.wait, [&f] { return f.exited; });
  }
  for (;;) co_await s.wait_event(t, f.wait, [] { return false; });
}

TEST(Fork, LastMmdropWaitsForTheLazyBorrowerToSwitchAway) {
  Scenario s;
  Family f(s);
  MmStruct& mm = s.k.new_mm();
  f.sched.start();
  f.sched.create_task("parent", &mm, CpuId{0}, [&](TaskStruct& t) { return parent(f.sched, t, f, CpuId{1}, 1); });
  s.sys.scheduler().run(sim::kTimeZero + sim::milliseconds(5));
  ASSERT_NE(f.child_mm, nullptr);
  MmStruct& c = *f.child_mm;
  // The child exited; cpu1's idle task borrowed its mm lazily and holds the last reference.
  EXPECT_EQ(c.mm_users.value, 0);
  EXPECT_EQ(c.mm_count.value, 1);
  EXPECT_FALSE(c.freed);
  EXPECT_EQ(f.sched.rq(CpuId{1}).idle->active_mm, &c);
  // exit_mm made cpu1 lazy before exit_mmap; the final flush (freed_tables) then reached it locally and
  // flush_tlb_func switched it to init_mm, so CR3 no longer points at the freed page tables.
  EXPECT_EQ(s.cpu(1).cr3_mm, &s.k.init_mm());
  EXPECT_TRUE(s.oracle().violations().empty());
}

TEST(Fork, TheNextUserTaskOnTheLazyCpuDropsTheLastReference) {
  Scenario s;
  Family f(s);
  MmStruct& mm = s.k.new_mm();
  f.sched.start();
  std::vector<MmStruct*> child_mms;
  f.sched.create_task("parent", &mm, CpuId{0}, [&](TaskStruct& t) { return parent(f.sched, t, f, CpuId{1}, 3); });
  s.sys.scheduler().run(sim::kTimeZero + sim::milliseconds(5));
  EXPECT_EQ(s.k.counters().mm_freed, 2u) << "the first two children's mms were freed when cpu1 next ran a user task";
  EXPECT_FALSE(f.child_mm->freed) << "the last child's mm is still borrowed by cpu1's idle task";
  EXPECT_TRUE(s.oracle().violations().empty()) << s.oracle().violations()[0].what;
}

TEST(Fork, OracleCatchesAnMmFreedWhileLoadedAndARefcountBelowZero) {
  Scenario s;
  MmStruct& mm = s.k.new_mm();
  s.cpu(0).cr3_mm = &mm;
  s.k.free_mm(mm);
  ASSERT_EQ(s.oracle().violations().size(), 1u);
  EXPECT_NE(s.oracle().violations()[0].what.find("cpu0's CR3"), std::string::npos);
  auto drop_twice = [](PerCpu& pc, MmStruct& m) -> sim::Task<void> {
    co_await mmdrop(pc, m);
    co_await mmdrop(pc, m);
  };
  MmStruct& other = s.k.new_mm();
  s.run_on(2, drop_twice(s.cpu(2), other));
  ASSERT_EQ(s.oracle().violations().size(), 2u);
  EXPECT_NE(s.oracle().violations()[1].what.find("mm_count"), std::string::npos);
}

KernelConfig shootdown_on_x86() {
  // MMU_LAZY_TLB_SHOOTDOWN is selected only by powerpc (seed 004 patch 4); forced here on the x86 code to pin what
  // the thread says about x86 (Nadav's and Andy's remarks): x86 clears a lazy CPU's mm_cpumask bit when it
  // switches it to init_mm, while the task's active_mm still names the mm, so the shootdown misses it.
  KernelConfig c;
  c.set(kernel::Option::MMU_LAZY_TLB_SHOOTDOWN, true);
  return c;
}

// A parent on cpu0 spawns one child on cpu1, which execs, touches memory and exits; runs 5 ms.
void run_one_child(Scenario& s, Family& f, MmStruct& mm) {
  f.sched.start();
  f.sched.create_task("parent", &mm, CpuId{0}, [&](TaskStruct& t) { return parent(f.sched, t, f, CpuId{1}, 1); });
  s.sys.scheduler().run(sim::kTimeZero + sim::milliseconds(5));
}

TEST(Fork, LazyTlbShootdownTakesNoMmCountReferenceForLazyUse) {
  Scenario s(shootdown_on_x86());
  Family f(s);
  MmStruct& mm = s.k.new_mm();
  run_one_child(s, f, mm);
  // The parent sleeps (cpu0's idle is lazy on mm) and the child's exit left cpu1 lazy on its mm: neither lazy use
  // holds mm_count, so the child's mm went at its last mmput.
  EXPECT_EQ(mm.mm_count.value, 1) << "only mm_users' reference";
  ASSERT_NE(f.child_mm, nullptr);
  EXPECT_TRUE(f.child_mm->freed);
  EXPECT_EQ(s.k.shoot_lazies_stats().calls, 1u);
}

TEST(Fork, LazyTlbShootdownOnX86MissesALazyCpuWhoseBitX86Cleared) {
  Scenario s(shootdown_on_x86());
  Family f(s);
  MmStruct& mm = s.k.new_mm();
  run_one_child(s, f, mm);
  // The final exit flush (freed tables) switched cpu1 to init_mm and cleared its bit; the exiting task still had
  // the mm as active_mm, cleanup_lazy_tlbs found an empty mask, and the mm was freed under it.
  EXPECT_EQ(s.k.shoot_lazies_stats().ipis, 0u);
  ASSERT_FALSE(s.oracle().violations().empty());
  EXPECT_NE(s.oracle().violations()[0].what.find("active_mm"), std::string::npos) << s.oracle().violations()[0].what;
}

TEST(Fork, DebugVmShootLaziesWarnsAboutTheLazyUserTheShootdownMissed) {
  KernelConfig c = shootdown_on_x86();
  c.set(kernel::Option::DEBUG_VM_SHOOT_LAZIES, true);
  Scenario s(c);
  Family f(s);
  MmStruct& mm = s.k.new_mm();
  run_one_child(s, f, mm);
  bool warned = false;
  for (const auto& v : s.oracle().violations()) warned |= v.what.find("do_check_lazy_tlb") != std::string::npos;
  EXPECT_TRUE(warned) << "the all-CPU check finds the exiting task still using the mm lazily";
}

}  // namespace
}  // namespace tlbsim::kernel
