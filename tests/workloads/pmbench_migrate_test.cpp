// pmbench_migrate (7e12beb8ca2a's test): migratepages moving pmbench's memory, with one flush per page before v6.4
// and one per batch of 512 after.
#include <gtest/gtest.h>

#include "hw/machine.h"
#include "util/error.h"
#include "workloads/run.h"

namespace tlbsim::workloads {
namespace {

RunOutput run(const char* kernel, bool batch, std::uint32_t threads = 1) {
  RunSpec spec;
  spec.kernel = kernel;
  if (batch) spec.options = {"migrate_pages_batch_flush=on"};
  spec.workload = "pmbench_migrate";
  spec.params = {"pages=2048"};
  spec.threads = threads;
  spec.duration = sim::milliseconds(2);
  spec.seed = 3;
  return run_workload(hw::load_machine("small-2s2c"), spec);
}

TEST(PmbenchMigrate, BatchingFlushesOncePer512PagesAndMigratesFaster) {
  const RunOutput before = run("linux-5.17", false), after = run("linux-5.17", true);
  const double pb = before.json["ops"].get<double>(), pa = after.json["ops"].get<double>();
  ASSERT_GT(pb, 100);
  ASSERT_GT(pa, 100);
  // Every page's flush_tlb_page IPIs pmbench's CPU before; one full flush per batch after.
  EXPECT_NEAR(before.json["counters"]["TLB shootdowns"].get<double>() / pb, 1.0, 0.05);
  EXPECT_LT(after.json["counters"]["TLB shootdowns"].get<double>() / pa, 0.01);
  EXPECT_GT(after.metric, 1.5 * before.metric);
  EXPECT_EQ(before.violations, 0u);
  EXPECT_EQ(after.violations, 0u);
  // linux-6.13 has the change by release: the same flush count as the option.
  const RunOutput v613 = run("linux-6.13", false);
  EXPECT_LT(v613.json["counters"]["TLB shootdowns"].get<double>() / v613.json["ops"].get<double>(), 0.01);
}

TEST(PmbenchMigrate, MigratepagesNeedsACoreOfItsOwn) {
  EXPECT_THROW(run("linux-5.17", false, 4), InputError) << "small-2s2c has 4 cores: at most 3 pmbench threads";
}

}  // namespace
}  // namespace tlbsim::workloads
