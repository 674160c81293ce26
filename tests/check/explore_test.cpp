// Exploration strategies: the bounded exhaustive search completes on a small scenario; PCT and random walk find a
// planted bug; budgets and bad parameters behave.
#include "check/explore.h"

#include <gtest/gtest.h>

#include "model/profile.h"
#include "util/error.h"

namespace tlbsim::check {
namespace {

TEST(Explore, ExhaustiveSearchOfMadviseVsAccessCompletesWithoutViolation) {
  const CheckTarget t = make_target("linux-5.17", {}, {}, "madvise_vs_access", "");
  ExploreSpec spec;
  spec.strategy = "exhaustive";
  spec.budget = 1'000'000;
  spec.preemptions = 1;
  const ExploreResult r = explore(t, spec);
  EXPECT_TRUE(r.complete);
  EXPECT_FALSE(r.found.has_value()) << r.found->what;
  EXPECT_GT(r.runs, 10u);
  // A larger bound explores strictly more schedules.
  spec.preemptions = 2;
  const ExploreResult r2 = explore(t, spec);
  EXPECT_TRUE(r2.complete);
  EXPECT_GT(r2.runs, r.runs);
}

// `budget` schedules of `scenario` on `kernel` by `strategy` run to the end and find no violation.
void expect_clean(const char* kernel, const char* scenario, const char* strategy, std::uint64_t budget,
                  hw::MemoryModel model) {
  CheckTarget t = make_target(kernel, {}, {}, scenario, "");
  t.memory_model = model;
  ExploreSpec spec;
  spec.strategy = strategy;
  spec.budget = budget;
  const ExploreResult r = explore(t, spec);
  EXPECT_EQ(r.runs, budget) << kernel;
  EXPECT_FALSE(r.found.has_value()) << kernel << ": " << r.found->what;
}

// 3,000 PCT schedules of `scenario` on `kernel` with `mutation` planted, under the arch's memory model, find a
// violation whose description contains `what`.
void expect_caught(const char* kernel, const char* mutation, const char* scenario, const char* what) {
  CheckTarget t = make_target(kernel, {}, {mutation}, scenario, "");
  t.memory_model = arch_memory_model(kernel::load_kernel_profile(kernel).config.arch);
  ExploreSpec spec;
  spec.strategy = "pct";
  spec.budget = 3000;
  const ExploreResult r = explore(t, spec);
  ASSERT_TRUE(r.found.has_value()) << kernel << " " << mutation;
  EXPECT_NE(r.found->what.find(what), std::string::npos) << r.found->what;
}

TEST(Explore, RandomSchedulesOfReclaimAgainstFaultAroundFindNothingOnEveryReclaimingKernel) {
  // Random walks that let reclaim remove a page from the cache while a fault maps it around (do_read_fault's
  // fault-around re-looks the page up after its work; until it did, these schedules read a freed hash-map node,
  // which the sanitizer preset reports).
  for (const char* kernel : {"linux-3.3", "linux-5.17", "linux-4.14-ppc", "linux-6.2-ppc"}) {
    expect_clean(kernel, "reclaim_two_mms", "random", 3000, hw::MemoryModel::kSc);
  }
}

TEST(Explore, PageoutRacingAFaultOnItsPageFindsNothingOnEveryArchitecture) {
  // PCT schedules of madvise(PAGEOUT) racing reads of its pages, under each arch's memory model as `tlbsim check`
  // explores by default. Until the read and shared faults re-checked the page cache after their work (the kernel's
  // folio lock), PCT found on every x86 profile within 200 runs a fault that mapped the page shmem_writepage had just
  // taken out of the cache and shrink_folio_list then freed.
  for (const char* kernel : {"linux-5.17", "linux-6.15", "linux-6.2-ppc", "linux-6.6-arm64"}) {
    expect_clean(kernel, "pageout_vs_access", "pct", 2000,
                 arch_memory_model(kernel::load_kernel_profile(kernel).config.arch));
  }
}

TEST(Explore, GupFastRacingACollapseNeverKeepsAPinOnTheReplacedPageInAnyEra) {
  // Each era keeps GUP-fast's pin visible to the collapse's reference count check or makes it give up: x86 by the
  // flush IPI that waits for interrupts to come back on, powerpc v4.14 by serialize_against_pte_lookup's IPI, v6.1+
  // by tlb_remove_table_sync_one where the architecture frees tables by RCU and by the PMD recheck.
  for (const char* kernel : {"linux-3.3", "linux-5.17", "linux-6.13", "linux-4.14-ppc", "linux-6.2-ppc",
                             "linux-6.5-arm64", "linux-6.6-arm64"}) {
    expect_clean(kernel, "thp_collapse_vs_gup_fast", "pct", 2000,
                 arch_memory_model(kernel::load_kernel_profile(kernel).config.arch));
  }
  // arm64's flush is a broadcast TLBI that waits for no one: without both fixes the pin follows the check.
  expect_caught("linux-6.6-arm64", "collapse_skips_gup_fast_sync", "thp_collapse_vs_gup_fast", "GUP pin");
}

TEST(Explore, MremapOntoAMappedPageFlushesItsOldPageBeforeFreeingIt) {
  // MREMAP_FIXED's do_munmap of the destination: cpu1, reading the destination, never hits its freed page; a flush
  // that returns before the IPI's handler ran (smp_call_skips_wait) lets it.
  for (const char* kernel : {"linux-3.3", "linux-5.17", "linux-6.18", "linux-6.2-ppc", "linux-6.6-arm64"}) {
    expect_clean(kernel, "mremap_fixed_vs_access", "pct", 2000,
                 arch_memory_model(kernel::load_kernel_profile(kernel).config.arch));
  }
  expect_caught("linux-5.17", "smp_call_skips_wait", "mremap_fixed_vs_access", "stale translation");
}

TEST(Explore, MremapOfAWholeThpFlushesItsOldAddressInEveryEra) {
  // move_huge_pmd: cpu1, writing the THP through its old 2 MiB entry, faults once mremap has returned, whichever era's
  // flush placement (v3.3 at the end, v4.14 after the new lock, v4.19+ under both locks; PMD stride from v6.0);
  // without the flush (mremap_flush_skipped) it writes through the old address.
  for (const char* kernel :
       {"linux-3.3", "linux-4.14-ppc", "linux-5.17", "linux-6.13", "linux-6.2-ppc", "linux-6.6-arm64"}) {
    expect_clean(kernel, "thp_mremap_vs_write", "pct", 1000,
                 arch_memory_model(kernel::load_kernel_profile(kernel).config.arch));
    expect_caught(kernel, "mremap_flush_skipped", "thp_mremap_vs_write", "stale translation");
  }
}

TEST(Explore, AWriteToTheHugeZeroPageFlushesItsPmdInEveryEra) {
  // cpu1 reads through its 2 MiB entry of the huge zero page while cpu0's write replaces the PMD. Without the PMD's
  // flush (huge_zero_wp_flush_skipped) v4.14 lets cpu1 read zeros from a page cpu0 has written; from v5.8 the copy's
  // flush_tlb_page of the written address drops the 2 MiB entry too, so this scenario cannot tell.
  for (const char* kernel :
       {"linux-3.3", "linux-4.14-ppc", "linux-5.17", "linux-6.13", "linux-6.2-ppc", "linux-6.6-arm64"}) {
    expect_clean(kernel, "thp_zero_wp_vs_read", "pct", 1000,
                 arch_memory_model(kernel::load_kernel_profile(kernel).config.arch));
  }
  expect_caught("linux-4.14-ppc", "huge_zero_wp_flush_skipped", "thp_zero_wp_vs_read", "stale translation");
}

TEST(Explore, NumaMigrationOfAThpFlushesItsOldPmdInEveryEra) {
  // A hinting fault migrates a THP while the other CPU scans it, faults on it from the THP's own node (restoring the
  // PMD it then caches), or zaps it. Without the migration's flush of the old PMD (thp_migration_flush_skipped) the
  // CPU that restored it writes the old THP while it is copied; v4.14 cannot show it: there the other fault waits
  // for the page lock and the PMD stays PROT_NONE until the copy replaces it.
  for (const char* kernel : {"linux-4.14-ppc", "linux-5.17", "linux-6.13", "linux-6.2-ppc", "linux-6.6-arm64"}) {
    for (const char* scenario :
         {"thp_numa_hinting_vs_write", "thp_numa_migrate_vs_local_fault", "thp_numa_migrate_vs_madvise"}) {
      expect_clean(kernel, scenario, "pct", 500, arch_memory_model(kernel::load_kernel_profile(kernel).config.arch));
    }
  }
  for (const char* kernel : {"linux-6.2-ppc", "linux-6.6-arm64"}) {
    expect_caught(kernel, "thp_migration_flush_skipped", "thp_numa_migrate_vs_local_fault", "stale translation");
  }
}

TEST(Explore, MigratePagesOfAThpFlushesItsOldPmdInEveryEra) {
  // migrate_pages(2) while cpu1 writes a THP through its 2 MiB entry: the THP moves whole by a PMD migration entry
  // (set_pmd_migration_entry's pmdp_invalidate flushes it at once, v6.4's batch or not), or, on v4.14 powerpc (no
  // THP migration), is split (pmdp_invalidate) and migrated page by page; without the PMD's flush
  // (thp_migration_flush_skipped) cpu1 writes the old THP while it is copied, in every era with THP migration.
  expect_clean("linux-4.14-ppc", "thp_migrate_vs_write", "pct", 20, hw::MemoryModel::kPower);
  for (const char* kernel : {"linux-5.17", "linux-6.13", "linux-6.2-ppc", "linux-6.6-arm64"}) {
    expect_clean(kernel, "thp_migrate_vs_write", "pct", 500,
                 arch_memory_model(kernel::load_kernel_profile(kernel).config.arch));
    expect_caught(kernel, "thp_migration_flush_skipped", "thp_migrate_vs_write", "stale translation");
  }
}

TEST(Explore, KcompactdMigratesFromAKernelThreadAsCompactionDoes) {
  // kcompactd's proactive pass (v5.9+) runs lazily in the mm whose pages it migrates, with no lock of that mm. It
  // must keep what compaction from a system call keeps: cpu1's mprotect and its write never meet a stale writable
  // entry, and the rmap walk's order still covers mremap's move (rmap_walk_newest_first breaks it).
  for (const char* kernel : {"linux-5.17", "linux-6.13", "linux-6.2-ppc", "linux-6.6-arm64-fixed"}) {
    expect_clean(kernel, "kcompactd_vs_mprotect", "pct", 300,
                 arch_memory_model(kernel::load_kernel_profile(kernel).config.arch));
  }
  expect_caught("linux-6.13", "rmap_walk_newest_first", "kcompactd_vs_mremap", "BUG_ON(!PageLocked)");
  EXPECT_THROW(make_target("linux-4.14-ppc", {}, {}, "kcompactd_vs_access", ""), NotApplicable);
}

TEST(Explore, MremapsNewVmaIsWriteLockedBeforeAFaultCanSeeIt) {
  // copy_vma write-locks the new VMA before vma_link (v6.4+), so a fault at the destination under the per-VMA lock
  // falls back to mmap_lock and waits for the move. When the model locked it after linking, schedule 17,785 of this
  // search let cpu1 map the zero page there and move_ptes then overwrote that PTE with no removal or flush.
  CheckTarget t = make_target("linux-6.6-arm64-fixed", {}, {}, "mremap_fixed_vs_access", "");
  t.memory_model = hw::MemoryModel::kArm;
  ExploreSpec spec;
  spec.strategy = "exhaustive";
  spec.preemptions = 2;
  spec.budget = 20000;
  const ExploreResult r = explore(t, spec);
  EXPECT_EQ(r.runs, spec.budget);
  EXPECT_FALSE(r.found.has_value()) << r.found->what;
}

TEST(Explore, EveryStrategyFindsAFlushThatSendsNoIpi) {
  const CheckTarget t = make_target("linux-5.17", {}, {"flush_sends_no_ipis"}, "madvise_vs_access", "");
  for (const char* strategy : {"random", "pct", "exhaustive"}) {
    ExploreSpec spec;
    spec.strategy = strategy;
    spec.budget = 20000;
    const ExploreResult r = explore(t, spec);
    ASSERT_TRUE(r.found.has_value()) << strategy;
    EXPECT_TRUE(r.found->violation);
  }
}

TEST(Explore, PctAndExhaustiveFindAFlushThatDoesNotWaitForItsTargets) {
  // The window (after the sender returned, before the target takes the IPI) is narrow: a random walk of 20000
  // schedules misses it; PCT and the bounded search do not.
  const CheckTarget t = make_target("linux-5.17", {}, {"smp_call_skips_wait"}, "madvise_vs_access", "");
  for (const char* strategy : {"pct", "exhaustive"}) {
    ExploreSpec spec;
    spec.strategy = strategy;
    spec.budget = 20000;
    EXPECT_TRUE(explore(t, spec).found.has_value()) << strategy;
  }
}

TEST(Explore, TheSameSeedExploresTheSameSchedules) {
  const CheckTarget t = make_target("linux-5.17", {}, {"switch_mm_reads_tlb_gen_before_cpumask"}, "switch_vs_madvise", "");
  ExploreSpec spec;
  spec.strategy = "pct";
  spec.budget = 5000;
  spec.seed = 3;
  const ExploreResult a = explore(t, spec), b = explore(t, spec);
  ASSERT_TRUE(a.found.has_value());
  EXPECT_EQ(a.found_at_run, b.found_at_run);
  EXPECT_EQ(a.found->decisions, b.found->decisions);
}

TEST(Explore, BadParametersAreInputErrors) {
  const CheckTarget t = make_target("linux-5.17", {}, {}, "madvise_vs_access", "");
  ExploreSpec spec;
  spec.strategy = "dfs";
  EXPECT_THROW(explore(t, spec), InputError);
  spec.strategy = "pct";
  spec.budget = 0;
  EXPECT_THROW(explore(t, spec), InputError);
  spec.budget = 10;
  spec.pct_depth = 0;
  EXPECT_THROW(explore(t, spec), InputError);
}

}  // namespace
}  // namespace tlbsim::check
