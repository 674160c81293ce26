// Scenario tests of the VMA lock (mm/mmap_lock.cpp): how vma_start_write waits for a fault's read hold, and how far a
// fault gets under the VMA lock alone (vma_lock_era, vmf_anon_prepare), per era.
#include <gtest/gtest.h>

#include <optional>

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

TEST(MmOps, TheVmaLockReachesFurtherInEachEra) {
  const auto era = [](const char* profile) {
    const KernelConfig c = load_kernel_profile(profile).config;
    return vma_lock_era(c.version, c.arch);
  };
  for (const char* none : {"linux-3.3", "linux-4.14-ppc", "linux-5.17", "linux-6.2-ppc"}) {
    EXPECT_FALSE(era(none).per_vma_lock) << none;
  }
  const VmaLockEra v65 = era("linux-6.5-arm64");  // arm64 from v6.4; anonymous VMAs with an anon_vma only
  EXPECT_TRUE(v65.per_vma_lock && v65.anonymous_only && v65.anon_vma_required && v65.anon_vma_test_after_lock);
  EXPECT_TRUE(v65.swap_retry && v65.access_error_falls_back);
  EXPECT_FALSE(v65.file_fault_retry || v65.anon_prepare_trylock);
  const VmaLockEra v66 = era("linux-6.6-arm64");  // file VMAs too, with their faults retried under mmap_lock
  EXPECT_TRUE(v66.per_vma_lock && v66.anon_vma_required && v66.file_fault_retry);
  EXPECT_FALSE(v66.anonymous_only || v66.swap_retry || v66.anon_prepare_trylock);
  for (const char* later : {"linux-6.13", "linux-6.15", "linux-6.18"}) {  // the anon_vma made under a trylock
    const VmaLockEra e = era(later);
    EXPECT_TRUE(e.per_vma_lock && e.anon_prepare_trylock) << later;
    EXPECT_FALSE(e.anonymous_only || e.anon_vma_required || e.swap_retry || e.file_fault_retry) << later;
    EXPECT_FALSE(e.access_error_falls_back) << later;
  }
}

sim::Task<void> hold_mmap_lock_for_write(PerCpu& self, MmStruct& mm, sim::Duration hold) {
  co_await mm.mmap_lock.down_write(self);
  co_await self.cpu.delay(hold);
  co_await mmap_write_unlock(self, mm);
}
sim::Task<void> fault_after(PerCpu& self, MmStruct& mm, std::uint64_t addr, bool write, sim::Duration wait,
                            sim::SimTime& done) {
  co_await self.cpu.delay(wait);
  co_await user_access(self, mm, addr, write);
  done = self.cpu.now();
}
sim::Task<void> map(PerCpu& self, MmStruct& mm, File* file, std::uint64_t& addr) {
  co_await testing::switch_to_mm(self, mm);
  addr = co_await sys_mmap(self, mm, 16 * kPageSize, false, file, 0);
}
sim::Task<void> touch(PerCpu& self, MmStruct& mm, std::uint64_t addr, bool write, bool zap) {
  co_await user_access(self, mm, addr, write);
  if (zap) co_await sys_madvise_dontneed(self, mm, addr, kPageSize);  // the PTE goes; a file page stays cached
}

// One fault on cpu0 while cpu1 holds mmap_lock for write, in a 16-page private mapping (anonymous or of a file) after
// an optional setup access: whether the fault waited for the writer, and the VMA lock's events of the fault.
struct FaultCase {
  const char* profile = nullptr;
  bool file_backed = false;
  std::optional<std::uint64_t> setup_page = std::nullopt;  // written (anonymous) or read (file) first
  bool zap_setup = false;                                  // and its PTE zapped again (MADV_DONTNEED)
  std::uint64_t page = 0;
  bool write = false;
};
struct FaultBesideAWriter {
  bool waited = false;
  VmaLockStats events;
};
FaultBesideAWriter fault_beside_a_writer(const FaultCase& c) {
  const KernelConfig cfg = load_kernel_profile(c.profile).config;
  Scenario s(cfg, Scenario::machine_for(cfg));
  MmStruct& mm = s.k.new_mm();
  File* file = c.file_backed ? &s.k.new_file(16 * kPageSize) : nullptr;
  s.oracle().set_user_context(CpuId{0}, mm.id());
  std::uint64_t addr = 0;
  s.run_on(0, map(s.cpu(0), mm, file, addr));
  if (c.setup_page) s.run_on(0, touch(s.cpu(0), mm, addr + *c.setup_page * kPageSize, !c.file_backed, c.zap_setup));
  const VmaLockStats before = s.k.counters().vma_lock;
  const sim::SimTime start = s.sys.scheduler().now();
  const sim::Duration hold = sim::microseconds(50);
  sim::SimTime done{};
  s.cpu(1).cpu.start(hold_mmap_lock_for_write(s.cpu(1), mm, hold));
  s.run_on(0, fault_after(s.cpu(0), mm, addr + c.page * kPageSize, c.write, sim::microseconds(1), done));
  EXPECT_TRUE(s.oracle().violations().empty()) << c.profile;
  const VmaLockStats& after = s.k.counters().vma_lock;
  return {done - start > hold,
          {after.success - before.success, after.abort - before.abort, after.retry - before.retry,
           after.miss - before.miss}};
}

// The first write to an anonymous VMA needs its anon_vma, which a fault under the VMA lock alone cannot make while
// the neighbours may change: v6.4-v6.9's lock_vma_under_rcu refuses such a VMA (VMA_LOCK_ABORT), v6.10+'s
// vmf_anon_prepare tries mmap_lock for read and, failing, gives up (VMA_LOCK_RETRY). Either way the fault waits for
// the writer; once the VMA has its anon_vma a fault does not. A read maps the zero page and needs none from v6.10.
TEST(MmOps, AFirstAnonymousWriteWaitsForAnMmapLockWriter) {
  for (const char* profile : {"linux-6.5-arm64", "linux-6.6-arm64", "linux-6.13", "linux-6.18"}) {
    const bool v610 = load_kernel_profile(profile).config.version >= KernelVersion{6, 10};
    const FaultBesideAWriter first = fault_beside_a_writer({.profile = profile, .write = true});
    EXPECT_TRUE(first.waited) << profile;
    EXPECT_EQ(first.events.retry, v610 ? 1U : 0U) << profile;
    EXPECT_EQ(first.events.abort, v610 ? 0U : 1U) << profile;
    const FaultBesideAWriter later =
        fault_beside_a_writer({.profile = profile, .setup_page = 0, .page = 1, .write = true});
    EXPECT_FALSE(later.waited) << profile << ": the VMA has its anon_vma";
    EXPECT_EQ(later.events.success, 1U) << profile;
    const FaultBesideAWriter read = fault_beside_a_writer({.profile = profile});
    EXPECT_EQ(read.waited, !v610) << profile << ": a read fault of a VMA without an anon_vma";
  }
  // Before v6.4 every fault takes mmap_lock.
  const FaultBesideAWriter v517 =
      fault_beside_a_writer({.profile = "linux-5.17", .setup_page = 0, .page = 1, .write = true});
  EXPECT_TRUE(v517.waited);
  EXPECT_EQ(v517.events.success + v517.events.abort + v517.events.retry, 0U);
}

// A read fault of a private file mapping: v6.5 takes no file VMA under its lock (VMA_LOCK_ABORT). v6.6 does, runs
// the fault-around, and gives up unless that mapped the faulting page (VMA_LOCK_RETRY: the fault runs again under
// mmap_lock); a page in the page cache is mapped by the fault-around. v6.7+ call ->fault under the VMA lock.
TEST(MmOps, AFileReadFaultRetriesUnderMmapLockInV66UnlessFaultAroundMapsIt) {
  struct Case {
    const char* profile;
    bool uncached_waits, cached_waits;
    std::uint64_t uncached_abort, uncached_retry;
  };
  for (const Case& c : {Case{"linux-6.5-arm64", true, true, 1, 0}, Case{"linux-6.6-arm64", true, false, 0, 1},
                        Case{"linux-6.13", false, false, 0, 0}}) {
    const FaultBesideAWriter uncached = fault_beside_a_writer({.profile = c.profile, .file_backed = true});
    EXPECT_EQ(uncached.waited, c.uncached_waits) << c.profile;
    EXPECT_EQ(uncached.events.abort, c.uncached_abort) << c.profile;
    EXPECT_EQ(uncached.events.retry, c.uncached_retry) << c.profile;
    // Page 0 read and zapped before: in the page cache, not mapped.
    const FaultBesideAWriter cached =
        fault_beside_a_writer({.profile = c.profile, .file_backed = true, .setup_page = 0, .zap_setup = true});
    EXPECT_EQ(cached.waited, c.cached_waits) << c.profile;
    EXPECT_EQ(cached.events.retry, 0U) << c.profile;
  }
}

// A write to an unmapped page of a private file mapping (do_cow_fault): v6.6 gives up under the VMA lock at once;
// v6.13 makes the anon_vma under a trylock of mmap_lock, which fails beside the writer, so it gives up too.
TEST(MmOps, AFileCowFaultGivesUpUnderTheVmaLockWithoutAnAnonVma) {
  for (const char* profile : {"linux-6.6-arm64", "linux-6.13"}) {
    const FaultBesideAWriter cow = fault_beside_a_writer({.profile = profile, .file_backed = true, .write = true});
    EXPECT_TRUE(cow.waited) << profile;
    EXPECT_EQ(cow.events.retry, 1U) << profile;
  }
}

sim::Task<void> madvise_after(PerCpu& self, MmStruct& mm, std::uint64_t addr, sim::Duration wait, sim::SimTime& done) {
  co_await self.cpu.delay(wait);
  co_await sys_madvise_dontneed(self, mm, addr, kPageSize);
  done = self.cpu.now();
}

// madvise(MADV_DONTNEED) of a written page on cpu0 while cpu1 holds mmap_lock for write 50 us: up to v6.16 the
// madvise takes mmap_lock for read and waits for the writer; from v6.17 it takes the VMA's read lock alone
// (MADVISE_VMA_READ_LOCK), which a writer that has not write-locked this VMA leaves free, and zaps at once.
TEST(MmOps, MadviseDontneedRunsUnderTheVmaLockFromV617) {
  for (const auto& [profile, waits] :
       {std::pair{"linux-5.17", true}, std::pair{"linux-6.13", true}, std::pair{"linux-6.18", false}}) {
    const KernelConfig cfg = load_kernel_profile(profile).config;
    EXPECT_EQ(vma_lock_era(cfg.version, cfg.arch).madvise_dontneed, !waits) << profile;
    Scenario s(cfg, Scenario::machine_for(cfg));
    MmStruct& mm = s.k.new_mm();
    s.oracle().set_user_context(CpuId{0}, mm.id());
    std::uint64_t addr = 0;
    s.run_on(0, map(s.cpu(0), mm, nullptr, addr));
    s.run_on(0, touch(s.cpu(0), mm, addr, true, false));
    const VmaLockStats before = s.k.counters().vma_lock;
    const sim::SimTime start = s.sys.scheduler().now();
    const sim::Duration hold = sim::microseconds(50);
    sim::SimTime done{};
    s.cpu(1).cpu.start(hold_mmap_lock_for_write(s.cpu(1), mm, hold));
    s.run_on(0, madvise_after(s.cpu(0), mm, addr, sim::microseconds(1), done));
    EXPECT_EQ(done - start > hold, waits) << profile;
    EXPECT_FALSE(mm.pgd.lookup(Vpn{addr / kPageSize}).has_value()) << profile << ": the page was zapped";
    EXPECT_EQ(s.k.counters().vma_lock.abort, before.abort) << profile;
    EXPECT_TRUE(s.oracle().violations().empty()) << profile;
  }
}

}  // namespace
}  // namespace tlbsim::kernel
