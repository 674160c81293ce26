// Scenario tests of the VMA lock (mm/mmap_lock.cpp): how vma_start_write waits for a fault's read hold, per era.
#include <gtest/gtest.h>

#include "kernel/scenario.h"
#include "kernel/sched/sched.h"
#include "mm/memory.h"
#include "model/profile.h"

namespace tlbsim::kernel {
namespace {

using testing::Scenario;

// A fault's read hold of a VMA's lock (what vma_start_read takes), for `hold`, dropped by vma_end_read.
sim::Task<void> hold_vma_for_read(Sched& s, TaskStruct& t, MmStruct& mm, Vma& vma, sim::Duration hold,
                                  sim::SimTime& released) {
  PerCpu& pc = s.cpu_of(t);
  co_await pc.k.mem().rmw(pc.cpu, vma.vm_lock->count, [](int c) { return c + 1; });
  co_await pc.cpu.delay(hold);
  released = pc.cpu.now();
  co_await vma_end_read(pc, mm, *vma.vm_lock);
}

// mmap_write_lock, vma_start_write on `vma` (recording when it returns), mmap_write_unlock.
sim::Task<void> write_lock_vma(Sched& s, TaskStruct& t, MmStruct& mm, Vma& vma, sim::SimTime& locked) {
  PerCpu& pc = s.cpu_of(t);
  co_await pc.cpu.delay(sim::microseconds(1));
  co_await mm.mmap_lock.down_write(pc);
  co_await vma_start_write(pc, mm, vma);
  locked = pc.cpu.now();
  co_await mmap_write_unlock(pc, mm);
}

TEST(MmOps, VmaStartWriteSleepsUntilTheFaultLeavesFromV615) {
  // v6.4-v6.14: vma_start_write is down_write of the VMA's rw_semaphore, which the model has spin on the lock's line
  // while the fault's short read hold lasts (here 30 us; docs/model.md). From v6.15 (vm_refcnt) it adds VMA_LOCK_OFFSET
  // and sleeps in rcuwait_wait_event until the last reader's vma_refcount_put wakes it: its CPU idles meanwhile.
  for (const auto& [profile, sleeps] : {std::pair{"linux-6.13", false}, std::pair{"linux-6.18", true}}) {
    Scenario s(load_kernel_profile(profile).config);
    Sched sched(s.k, false);
    MmStruct& mm = s.k.new_mm();
    Vma v;
    v.start = 0x10000000;
    v.end = 0x10010000;
    v.writable = true;
    Vma& vma = mm.insert_vma(v);
    sched.start();
    sim::SimTime released{}, locked{};
    TaskStruct& r = sched.create_task("fault", nullptr, CpuId{0}, [&](TaskStruct& t) {
      return hold_vma_for_read(sched, t, mm, vma, sim::microseconds(30), released);
    });
    TaskStruct& w = sched.create_task("writer", nullptr, CpuId{1},
                                      [&](TaskStruct& t) { return write_lock_vma(sched, t, mm, vma, locked); });
    for (TaskStruct* t : {&r, &w}) {
      t->cpus_allowed = Cpumask(s.k.ncpus());
      t->cpus_allowed.set(t->cpu);
    }
    s.sys.scheduler().run(sim::kTimeZero + sim::milliseconds(1));
    EXPECT_GE(locked, released) << profile;
    EXPECT_EQ(vma.vm_lock->count.value, 0) << profile;
    EXPECT_EQ(mm.vma_writer_wait, nullptr) << profile;
    const double idle_us = static_cast<double>(sched.rq(CpuId{1}).last_idle.count()) / 1e6;
    if (sleeps) {
      EXPECT_GT(idle_us, 20.0) << profile << ": the writer slept while the fault held the VMA";
    } else {
      EXPECT_LT(idle_us, 5.0) << profile << ": the writer spun";
    }
  }
}

}  // namespace
}  // namespace tlbsim::kernel
