// The mutation suite at CI's reduced budget: every registered mutation is caught by a scenario that names it, with
// a minimal counterexample that replays; and the unmutated profiles pass the scenarios that catch them.
#include "check/mutation_suite.h"

#include <gtest/gtest.h>

#include <set>

#include "check/run.h"
#include "model/options.h"

namespace tlbsim::check {
namespace {

TEST(MutationSuite, AtLeastTwelveMutationsCoveringEveryArea) {
  std::set<std::string> areas;
  for (const kernel::MutationInfo& i : kernel::all_mutations()) areas.insert(std::string(i.area));
  EXPECT_GE(kernel::all_mutations().size(), 12u);
  EXPECT_EQ(areas,
            (std::set<std::string>{"asid", "barrier", "batching", "cpumask", "generation", "ipi", "lazy_mm", "mprotect",
                                   "numa", "migration", "mremap", "powerpc", "rollover", "thp", "tlbi", "tlbsync"}));
}

TEST(MutationSuite, EveryMutationIsCaughtAndItsMinimalCounterexampleReplays) {
  ExploreSpec spec;
  spec.strategy = "pct";
  spec.budget = 3000;
  const auto rows = run_mutation_suite({"all"}, spec);
  for (const MutationRow& r : rows) {
    EXPECT_TRUE(r.caught) << r.mutation << " missed on " << r.scenario;
    EXPECT_TRUE(r.replays) << r.mutation;
  }
  const std::string table = render_mutation_table(rows);
  EXPECT_NE(table.find(std::to_string(rows.size()) + " of " + std::to_string(rows.size()) + " mutations caught"),
            std::string::npos)
      << table;
}

// A barrier mutation needs the hardware's reordering: caught under the arch's memory model, missed under sequential
// consistency with the same budget; the suite says which model it used.
TEST(MutationSuite, BarrierMutationsAreCaughtUnderTheArchsModelOnly) {
  ExploreSpec spec;
  spec.strategy = "pct";
  spec.budget = 3000;
  std::vector<std::string> barrier;
  for (const kernel::MutationInfo& i : kernel::all_mutations()) {
    if (i.area == "barrier") barrier.emplace_back(i.name);
  }
  ASSERT_FALSE(barrier.empty());
  std::set<std::string> models;
  for (const MutationRow& r : run_mutation_suite(barrier, spec)) {
    EXPECT_TRUE(r.caught) << r.mutation;
    const kernel::KernelConfig cfg = make_target(r.kernel, {}, {}, r.scenario, "").config;
    EXPECT_EQ(r.memory_model, hw::to_string(arch_memory_model(cfg.arch))) << r.mutation;
    EXPECT_NE(r.memory_model, "sc") << r.mutation;
    models.insert(r.memory_model);
  }
  // On each architecture's model.
  EXPECT_EQ(models, (std::set<std::string>{"tso", "power", "arm"}));
  EXPECT_GE(barrier.size(), 6u);
  const auto sc = run_mutation_suite(barrier, spec, hw::MemoryModel::kSc);
  for (const MutationRow& r : sc) EXPECT_FALSE(r.caught) << r.mutation << " caught under sc";
  EXPECT_NE(render_mutation_table(sc).find(" sc "), std::string::npos);
}

// Under --memory-model sc the suite gives the verdicts of before the memory models: every mutation but the barrier
// ones caught, with a counterexample that replays.
TEST(MutationSuite, UnderScEveryMutationButTheBarrierOnesIsCaughtAsBefore) {
  ExploreSpec spec;
  spec.strategy = "pct";
  spec.budget = 3000;
  std::vector<std::string> others;
  for (const kernel::MutationInfo& i : kernel::all_mutations()) {
    if (i.area != "barrier") others.emplace_back(i.name);
  }
  for (const MutationRow& r : run_mutation_suite(others, spec, hw::MemoryModel::kSc)) {
    EXPECT_TRUE(r.caught) << r.mutation;
    EXPECT_TRUE(r.replays) << r.mutation;
    EXPECT_EQ(r.memory_model, "sc");
  }
}

TEST(MutationSuite, TheUnmutatedKernelsPassTheScenariosThatCatchTheMutations) {
  ExploreSpec spec;
  spec.strategy = "pct";
  spec.budget = 300;
  for (const kernel::MutationInfo& info : kernel::all_mutations()) {
    const std::string scenario(info.scenarios.substr(0, info.scenarios.find(',')));
    CheckTarget t = make_target(std::string(info.kernel), {}, {}, scenario, "");
    t.memory_model = arch_memory_model(t.config.arch);
    const ExploreResult r = explore(t, spec);
    EXPECT_FALSE(r.found.has_value()) << info.name << ": " << info.kernel << " on " << scenario << ": "
                                      << r.found->what;
  }
}

}  // namespace
}  // namespace tlbsim::check
