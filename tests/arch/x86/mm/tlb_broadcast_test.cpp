// v6.15's broadcast invalidation (arch/x86/mm/tlb_broadcast.cpp) on the AMD Milan model, which has INVLPGB.
#include "arch/x86/mm/tlb_broadcast.h"

#include <gtest/gtest.h>

#include "hw/machine.h"
#include "workloads/run.h"

namespace tlbsim::x86 {
namespace {

workloads::RunOutput tlb_flush2(const char* kernel, std::uint32_t threads) {
  workloads::RunSpec spec;
  spec.kernel = kernel;
  spec.workload = "tlb_flush2";
  spec.threads = threads;
  spec.warmup = sim::milliseconds(132);  // 32 jiffies at HZ 250: some task's pid matches jiffies in its low 5 bits
  spec.duration = sim::milliseconds(1);
  return workloads::run_workload(hw::load_machine("milan-36c"), spec);
}

std::uint64_t stat(const workloads::RunOutput& r, const char* name) {
  const auto& c = r.json["counters"];
  return c.contains("invlpgb") ? c["invlpgb"][name].get<std::uint64_t>() : 0;
}

// An mm running on 8 CPUs gets a global ASID at an IPI flush; once every CPU is on it, its flushes are INVLPGBs and
// no flush IPI is sent.
TEST(TlbBroadcast, AnMmOnMoreThanThreeCpusIsFlushedByInvlpgbNotIpis) {
  const workloads::RunOutput r = tlb_flush2("linux-6.15", 8);
  EXPECT_EQ(r.violations, 0u) << r.json["violations"].dump(2);
  EXPECT_GT(stat(r, "invlpgb"), 0u) << r.json["counters"].dump(2);
  // One INVLPGB (a page) and one TLBSYNC per flush; a flush may straddle the window's edge.
  EXPECT_NEAR(static_cast<double>(stat(r, "invlpgb")), static_cast<double>(stat(r, "tlbsync")), 1.0);
  EXPECT_EQ(r.json["counters"]["TLB shootdowns"].get<std::uint64_t>(), 0u);
  EXPECT_EQ(r.json["counters"]["nr_tlb_remote_flush"].get<std::uint64_t>(), 0u);
}

// Three CPUs are not enough (mm_active_cpus_exceeds(mm, 3)); a kernel without CONFIG_BROADCAST_TLB_FLUSH, and a
// machine without INVLPGB, never broadcast.
TEST(TlbBroadcast, ThreeCpusOrNoInvlpgbKeepTheIpis) {
  for (const auto& [kernel, threads] : {std::pair{"linux-6.15", 3u}, std::pair{"linux-6.15-no-invlpgb", 8u}}) {
    const workloads::RunOutput r = tlb_flush2(kernel, threads);
    EXPECT_EQ(r.violations, 0u) << kernel;
    EXPECT_EQ(stat(r, "invlpgb"), 0u) << kernel << " " << threads;
    EXPECT_GT(r.json["counters"]["TLB shootdowns"].get<std::uint64_t>(), 0u) << kernel << " " << threads;
  }
  workloads::RunSpec spec;
  spec.kernel = "linux-6.15";
  spec.workload = "tlb_flush2";
  spec.threads = 4;
  spec.warmup = sim::milliseconds(132);
  spec.duration = sim::milliseconds(1);
  const workloads::RunOutput small = workloads::run_workload(hw::load_machine("small-2s2c"), spec);
  EXPECT_EQ(stat(small, "invlpgb"), 0u);
}

}  // namespace
}  // namespace tlbsim::x86
