// --param NAME=VALUE (workloads/workload_args.h): parsed, range-checked, and a name the workload never reads is an
// error that lists the workload's parameters; each workload that has parameters reads them.
#include "workloads/workload_args.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "hw/machine.h"
#include "util/error.h"
#include "workloads/run.h"

namespace tlbsim::workloads {
namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(WorkloadArgs, ReadsAGivenValueOrTheDefaultWithinItsRange) {
  WorkloadArgs a("w", {"fds=4"});
  EXPECT_EQ(a.integer("fds", 20, 1, 256, "senders"), 4u);
  EXPECT_EQ(a.integer("other", 7, 1, 9, "not given"), 7u);
  a.finish();
  EXPECT_EQ(a.given().at("fds"), "4");
}

TEST(WorkloadArgs, BadItemsValuesAndNamesAreInputErrorsThatSayWhere) {
  EXPECT_EQ(error_of([] { WorkloadArgs("w", {"fds"}); }), "--param fds: expected NAME=VALUE");
  EXPECT_EQ(error_of([] { WorkloadArgs("w", {"=3"}); }), "--param =3: expected NAME=VALUE");
  EXPECT_EQ(error_of([] { WorkloadArgs("w", {"a=1", "a=2"}); }), "--param a=2: 'a' is given twice");
  for (const char* bad : {"fds=0", "fds=257", "fds=x", "fds=4x", "fds=-1"}) {
    WorkloadArgs a("w", {bad});
    const std::string e = error_of([&] { a.integer("fds", 20, 1, 256, "senders"); });
    EXPECT_NE(e.find("workload w: fds must be an integer in 1..256"), std::string::npos) << bad << ": " << e;
  }
  WorkloadArgs misspelt("w", {"fd=4"});
  misspelt.integer("fds", 20, 1, 256, "senders");
  EXPECT_EQ(error_of([&] { misspelt.finish(); }),
            "--param fd=4: workload w has no parameter 'fd' (it has: fds (senders; 1..256, default 20))");
}

RunOutput run(const char* machine, const char* kernel, const char* workload, std::uint32_t threads, std::int64_t us,
              std::vector<std::string> params) {
  RunSpec spec;
  spec.kernel = kernel;
  spec.workload = workload;
  spec.threads = threads;
  spec.duration = sim::microseconds(us);
  spec.params = std::move(params);
  return run_workload(hw::load_machine(machine), spec);
}

TEST(WorkloadArgs, HackbenchFdsSetsTheTasksPerGroup) {
  const RunOutput two = run("milan-36c", "linux-6.13", "hackbench", 1, 300, {"fds=2"});
  const RunOutput twenty = run("milan-36c", "linux-6.13", "hackbench", 1, 300, {});
  EXPECT_EQ(two.json["params"]["fds"], "2");
  EXPECT_FALSE(twenty.json.contains("params"));
  // One group: 2 senders and 2 receivers move far fewer messages than hackbench's default 20 and 20.
  EXPECT_GT(two.metric, 0);
  EXPECT_LT(two.metric * 2, twenty.metric);
}

TEST(WorkloadArgs, IdleWakeupRateScalesTheWakeups) {
  const auto rate = [](std::vector<std::string> params) {
    return run("sandybridge-ep-2s8c2t", "linux-3.3", "idle", 32, 100000, std::move(params)).metric;
  };
  EXPECT_DOUBLE_EQ(rate({"wakeups_per_s=40"}), 2 * rate({}));
}

TEST(WorkloadArgs, LruFileSizeBoundsWhatEachReaderCanRead) {
  // Four readers, each with a file of 300 pages of which about 256 were read before the run: each has little left.
  const RunOutput small = run("power9-2s16c-smt4", "linux-4.14-ppc", "lru_file_mmap_read", 4, 2000, {"file_pages=300"});
  const RunOutput big = run("power9-2s16c-smt4", "linux-4.14-ppc", "lru_file_mmap_read", 4, 2000, {});
  EXPECT_LE(small.json["ops"].get<std::uint64_t>(), 4u * 300u);
  EXPECT_GT(big.json["ops"].get<std::uint64_t>(), small.json["ops"].get<std::uint64_t>());
  EXPECT_NE(error_of([] {
              run("power9-2s16c-smt4", "linux-4.14-ppc", "lru_file_mmap_read", 4, 100, {"memory_pages=8"});
            }).find("memory_pages must be an integer in 128..65536"),
            std::string::npos);
}

}  // namespace
}  // namespace tlbsim::workloads
