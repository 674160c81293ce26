// Scenario tests of page migration (mm/migrate.cpp): one flush per page before v6.4, one per batch after, the
// page's move to a new frame, and a fault that meets a migration entry.
#include "mm/migrate.h"

#include <gtest/gtest.h>

#include "kernel/options.h"
#include "kernel/scenario.h"
#include "mm/huge_memory.h"
#include "mm/memory.h"
#include "model/profile.h"

namespace tlbsim::kernel {
namespace {

using testing::Scenario;

KernelConfig profile(const char* name, bool batch = false) {
  KernelConfig cfg = load_kernel_profile(name).config;
  if (batch) cfg.set(Option::migrate_pages_batch_flush, true);
  return cfg;
}

TEST(Migrate, TheBatchedFlushIsV6_4sOrTheOption) {
  EXPECT_FALSE(migrate_era(profile("linux-3.3")).batch_flush);
  EXPECT_FALSE(migrate_era(profile("linux-5.17")).batch_flush);
  EXPECT_TRUE(migrate_era(profile("linux-5.17", true)).batch_flush);
  EXPECT_TRUE(migrate_era(profile("linux-6.13")).batch_flush);
  EXPECT_TRUE(migrate_era(profile("linux-6.18")).batch_flush);
}

sim::Task<void> enter_and_write(PerCpu& self, MmStruct& mm, std::uint64_t addr, std::uint64_t pages) {
  self.cpu.local_irq_disable();
  co_await self.k.arch().switch_mm_irqs_off(self, mm);
  co_await self.cpu.local_irq_enable();
  for (std::uint64_t i = 0; i < pages; ++i) co_await user_access(self, mm, addr + i * kPageSize, true);
}
sim::Task<void> map_pages(PerCpu& self, MmStruct& mm, std::uint64_t pages, std::uint64_t& addr) {
  addr = co_await sys_mmap(self, mm, pages * kPageSize, false, nullptr, 0);
}
sim::Task<void> migrate(PerCpu& self, MmStruct& mm, std::uint64_t& migrated) {
  migrated = co_await sys_migrate_pages(self, mm);
}

// cpu0 and cpu1 run one mm and have both written its `pages` anonymous pages; cpu0 migrates them.
struct Migrated {
  Migrated(KernelConfig cfg, std::uint64_t n) : s(cfg), mm(s.k.new_mm()), pages(n) {
    s.oracle().set_user_context(CpuId{0}, mm.id());
    s.oracle().set_user_context(CpuId{1}, mm.id());
    s.run_on(0, map_pages(s.cpu(0), mm, n, addr));
    s.run_on(0, enter_and_write(s.cpu(0), mm, addr, n));
    s.run_on(1, enter_and_write(s.cpu(1), mm, addr, n));
  }
  std::uint64_t remote_flushes() { return s.k.counters().get(VmTlbEvent::NR_TLB_REMOTE_FLUSH); }
  Scenario s;
  MmStruct& mm;
  std::uint64_t pages;
  std::uint64_t addr = 0;
};

TEST(Migrate, EveryPageMovesToANewFrameAndTheOldOneIsFreed) {
  for (const bool batch : {false, true}) {
    Migrated t(profile("linux-5.17", batch), 4);
    std::vector<Pfn> before;
    for (std::uint64_t i = 0; i < 4; ++i) before.push_back(t.mm.pgd.lookup(vpn_of(t.addr + i * kPageSize))->pfn);
    const std::uint64_t frees = t.s.k.frames().frees();
    std::uint64_t migrated = 0;
    t.s.run_on(0, migrate(t.s.cpu(0), t.mm, migrated));
    EXPECT_EQ(migrated, 4u);
    EXPECT_EQ(t.s.k.frames().frees() - frees, 4u) << "the four old pages";
    for (std::uint64_t i = 0; i < 4; ++i) {
      const auto pte = t.mm.pgd.lookup(vpn_of(t.addr + i * kPageSize));
      ASSERT_TRUE(pte.has_value());
      EXPECT_TRUE(pte->writable && pte->anon);
      EXPECT_NE(pte->pfn, before[i]) << "page " << i;
      EXPECT_FALSE(t.mm.pgd.migration_entry(vpn_of(t.addr + i * kPageSize)).has_value());
    }
    // cpu1 may hold the new page's translation again (a page walk after the flush), never the old one's.
    const auto e = t.s.cpu(1).tlb.peek(Asid{t.s.cpu(1).hw_tag}, vpn_of(t.addr));
    EXPECT_TRUE(!e.has_value() || e->pfn != before[0]) << "cpu1 still caches the old page; batch " << batch;
    EXPECT_TRUE(t.s.oracle().violations().empty());
  }
}

TEST(Migrate, OneFlushRequestPerPageBeforeV6_4AndOnePerBatchAfter) {
  struct Case {
    const char* profile;
    bool option;
    std::uint64_t pages, requests;
  };
  // 8 pages: 8 flush_tlb_page requests before; one try_to_unmap_flush after. 600 pages: two batches (512 + 88).
  for (const Case c : {Case{"linux-5.17", false, 8, 8}, Case{"linux-5.17", true, 8, 1}, Case{"linux-6.13", false, 8, 1},
                       Case{"linux-6.13", false, 600, 2}}) {
    Migrated t(profile(c.profile, c.option), c.pages);
    const std::uint64_t before = t.remote_flushes();
    std::uint64_t migrated = 0;
    t.s.run_on(0, migrate(t.s.cpu(0), t.mm, migrated));
    EXPECT_EQ(migrated, c.pages) << c.profile;
    EXPECT_EQ(t.remote_flushes() - before, c.requests) << c.profile << (c.option ? " with the option" : "");
    EXPECT_TRUE(t.s.oracle().violations().empty()) << c.profile;
  }
}

sim::Task<void> write_every_us(PerCpu& self, MmStruct& mm, std::uint64_t addr, int times) {
  for (int i = 0; i < times; ++i) {
    co_await self.cpu.delay(sim::microseconds(1));
    co_await user_access(self, mm, addr, true);
  }
}

TEST(Migrate, AFaultOnAMigrationEntryWaitsForTheNewPage) {
  // cpu1 writes the last of 64 pages every microsecond while cpu0 migrates them as one batch (unmapped, one flush,
  // then moved in order): after the flush and until the page is moved, a write faults on its migration entry,
  // waits, and lands in the new page; no access goes through the old one once it is freed.
  Migrated t(profile("linux-6.13"), 64);
  const std::uint64_t faults = t.s.k.counters().page_faults;
  std::uint64_t migrated = 0;
  t.s.cpu(0).cpu.start(migrate(t.s.cpu(0), t.mm, migrated));
  t.s.run_on(1, write_every_us(t.s.cpu(1), t.mm, t.addr + 63 * kPageSize, 100));
  EXPECT_EQ(migrated, 64u);
  EXPECT_GE(t.s.k.counters().page_faults - faults, 1u) << "the write met the migration entry";
  EXPECT_TRUE(t.mm.pgd.lookup(vpn_of(t.addr + 63 * kPageSize)).has_value());
  EXPECT_TRUE(t.s.oracle().violations().empty());
}

sim::Task<void> migrate_timed(PerCpu& self, MmStruct& mm, sim::SimTime& done) {
  co_await sys_migrate_pages(self, mm);
  done = self.cpu.now();
}
sim::Task<void> write_lock_after(PerCpu& self, MmStruct& mm, sim::Duration wait, sim::SimTime& got) {
  co_await self.cpu.delay(wait);
  co_await mm.mmap_lock.down_write(self);
  got = self.cpu.now();
  co_await mm.mmap_lock.up_write(self);
}

TEST(Migrate, FromV6_7MmapLockIsHeldWhileQueueingOnly) {
  // cpu1 asks for mmap_lock for write just after cpu0's migrate_pages(2) of 64 pages took it for read: before v6.7 it
  // gets it when the migration is done; from v6.7 (72e315f7a750) as soon as the pages are queued.
  EXPECT_FALSE(migrate_era(profile("linux-6.2-ppc")).mmap_lock_queue_only);
  EXPECT_TRUE(migrate_era(profile("linux-6.13")).mmap_lock_queue_only);
  for (const char* kernel : {"linux-5.17", "linux-6.13"}) {
    Migrated t(profile(kernel), 64);
    sim::SimTime done, got;
    t.s.cpu(1).cpu.start(write_lock_after(t.s.cpu(1), t.mm, sim::nanoseconds(300), got));
    t.s.run_on(0, migrate_timed(t.s.cpu(0), t.mm, done));
    if (migrate_era(profile(kernel)).mmap_lock_queue_only) {
      EXPECT_LT(got, done) << kernel;
    } else {
      EXPECT_GT(got, done) << kernel;
    }
  }
}

// ---- THPs.

sim::Task<void> hugepage(PerCpu& self, MmStruct& mm, std::uint64_t addr) {
  co_await sys_madvise_hugepage(self, mm, addr, kHpagePmdSize);
}
sim::Task<void> enter_and_read(PerCpu& self, MmStruct& mm, std::uint64_t addr) {
  self.cpu.local_irq_disable();
  co_await self.k.arch().switch_mm_irqs_off(self, mm);
  co_await self.cpu.local_irq_enable();
  co_await user_access(self, mm, addr, false);
}

// cpu0 has written X, 2 MiB asked to be a THP (on node 0), and cpu1 has read it through a 2 MiB entry; a machine of
// two nodes (arm64's small built-in one has one).
struct MigratedThp {
  explicit MigratedThp(const char* kernel)
      : s(profile(kernel),
          profile(kernel).arch == Arch::kArm64 ? "kunpeng920-2s64c" : Scenario::machine_for(profile(kernel))),
        mm(s.k.new_mm()) {
    x = mm.get_unmapped_area(kHpagePmdSize, kHpagePmdSize);
    mm.insert_vma(Vma{x, x + kHpagePmdSize, true, false, nullptr, 0, nullptr});
    s.oracle().set_user_context(CpuId{0}, mm.id());
    s.oracle().set_user_context(CpuId{1}, mm.id());
    s.run_on(0, hugepage(s.cpu(0), mm, x));
    s.run_on(0, enter_and_write(s.cpu(0), mm, x, 1));
    s.run_on(1, enter_and_read(s.cpu(1), mm, x + kPageSize));
    thp = mm.pgd.huge_pmd(vpn_of(x))->page;
  }
  Scenario s;
  MmStruct& mm;
  std::uint64_t x = 0;
  Pfn thp;
};

// queue_pages_pmd: where the arch has THP migration (x86 v4.14+, powerpc v4.20+, arm64 v5.10+) the THP moves whole
// to the other node: set_pmd_migration_entry (pmdp_invalidate flushes the 2 MiB at once, batch or not),
// remove_migration_pmd maps the copy; pgmigrate_success counts its 512 pages. v4.14 powerpc has none: the THP is
// split and its 512 pages migrate one by one.
TEST(Migrate, AThpMovesWholeWhereTheArchHasThpMigrationAndIsSplitWhereNot) {
  for (const auto& [kernel, whole] :
       {std::pair{"linux-4.14-ppc", false}, std::pair{"linux-5.17", true}, std::pair{"linux-6.13", true},
        std::pair{"linux-6.2-ppc", true}, std::pair{"linux-6.6-arm64", true}}) {
    MigratedThp t(kernel);
    ASSERT_TRUE(t.s.cpu(1).tlb.peek(Asid{t.s.cpu(1).hw_tag}, vpn_of(t.x + kPageSize)).has_value()) << kernel;
    const std::uint64_t frees = t.s.k.frames().frees();
    std::uint64_t migrated = 0;
    t.s.run_on(0, migrate(t.s.cpu(0), t.mm, migrated));
    EXPECT_EQ(migrated, kHpagePmdNr) << kernel;
    const HugePmd* h = t.mm.pgd.huge_pmd(vpn_of(t.x));
    EXPECT_EQ(h != nullptr, whole) << kernel;
    if (whole && h != nullptr) {
      EXPECT_NE(h->page, t.thp) << kernel;
      EXPECT_EQ(t.s.k.frames().nid(h->page), 1) << kernel;
      EXPECT_FALSE(h->migration) << kernel;
      EXPECT_TRUE(h->writable) << kernel;
      EXPECT_EQ(t.s.k.frames().frees() - frees, kHpagePmdNr) << kernel;
    }
    for (const std::uint64_t i : {0ull, 1ull, 511ull}) {
      const auto pte = t.mm.pgd.lookup(vpn_of(t.x + i * kPageSize));
      ASSERT_TRUE(pte.has_value()) << kernel;
      EXPECT_NE(pte->pfn, Pfn{t.thp.get() + i}) << kernel;
      EXPECT_EQ(t.s.k.frames().nid(pte->pfn), 1) << kernel << " page " << i;
    }
    // (A split THP's freed frames are reused by the copies of its later pages: last in, first out.)
    if (whole) {
      EXPECT_EQ(t.s.k.frames().use(t.thp), FrameUse::kFree) << kernel;
    }
    EXPECT_FALSE(t.s.k.frames().page_locked(t.thp)) << kernel;
    EXPECT_FALSE(t.s.cpu(1).tlb.peek(Asid{t.s.cpu(1).hw_tag}, vpn_of(t.x + kPageSize)).has_value()) << kernel;
    t.s.run_on(1, enter_and_write(t.s.cpu(1), t.mm, t.x + kPageSize, 1));
    EXPECT_TRUE(t.s.oracle().violations().empty()) << kernel;
  }
}

TEST(Migrate, AFaultOnAPmdMigrationEntryWaitsForTheNewThp) {
  // cpu1 writes the THP every microsecond while cpu0 migrates it: between set_pmd_migration_entry and
  // remove_migration_pmd a write faults on the PMD migration entry and waits for the THP's unlock
  // (pmd_migration_entry_wait), then lands in the copy; no access goes through the old THP once it is freed.
  MigratedThp t("linux-6.13");
  const std::uint64_t faults = t.s.k.counters().page_faults;
  std::uint64_t migrated = 0;
  t.s.cpu(0).cpu.start(migrate(t.s.cpu(0), t.mm, migrated));
  t.s.run_on(1, write_every_us(t.s.cpu(1), t.mm, t.x + kPageSize, 100));
  EXPECT_EQ(migrated, kHpagePmdNr);
  EXPECT_GE(t.s.k.counters().page_faults - faults, 1u) << "the write met the PMD migration entry";
  EXPECT_NE(t.mm.pgd.huge_pmd(vpn_of(t.x))->page, t.thp);
  EXPECT_TRUE(t.s.oracle().violations().empty());
}

}  // namespace
}  // namespace tlbsim::kernel
