#include "native/proc_counters.h"

#include <gtest/gtest.h>

#include "native/spread.h"

namespace tlbsim::native {
namespace {

constexpr const char* kInterrupts =
    "           CPU0       CPU1       \n"
    "  0:         31          0   IO-APIC   2-edge      timer\n"
    "NMI:          0          0   Non-maskable interrupts\n"
    "CAL:      48803      39313   Function call interrupts\n"
    "TLB:         12          5   TLB shootdowns\n"
    "TRM:          0          0   Thermal event interrupts\n";

TEST(ProcCounters, SumsAnInterruptRowOverCpus) {
  EXPECT_EQ(interrupt_row_total(kInterrupts, "TLB"), 17u);
  EXPECT_EQ(interrupt_row_total(kInterrupts, "CAL"), 88116u);
  EXPECT_EQ(interrupt_row_total(kInterrupts, "NMI"), 0u);
}

TEST(ProcCounters, AbsentOrMalformedRowIsNullopt) {
  EXPECT_FALSE(interrupt_row_total(kInterrupts, "RES").has_value());
  EXPECT_FALSE(interrupt_row_total("TLB: garbage\n", "TLB").has_value());
  EXPECT_FALSE(interrupt_row_total("", "TLB").has_value());
  // "TL" must not match the "TLB" row.
  EXPECT_FALSE(interrupt_row_total(kInterrupts, "TL").has_value());
}

TEST(ProcCounters, ReadsOnlyTheTlbLinesOfVmstat) {
  const auto v = vmstat_tlb("nr_free_pages 100\nnr_tlb_remote_flush 7\nnr_tlb_local_flush_one 3\npgfault 9\n");
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v.at("nr_tlb_remote_flush"), 7u);
  EXPECT_EQ(v.at("nr_tlb_local_flush_one"), 3u);
  EXPECT_TRUE(vmstat_tlb("nr_free_pages 100\n").empty());
}

// /proc/stat's first line: user nice system idle iowait irq softirq steal guest guest_nice (guest time is already
// in user and nice).
TEST(ProcCounters, CpuTimesCountAllButIdleAndIowaitAsBusy) {
  const auto a = cpu_times("cpu  100 5 50 800 20 3 2 0 40 0\ncpu0 50 2 25 400 10 1 1 0 20 0\n");
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->total, 980u);
  EXPECT_EQ(a->busy, 160u);
  const auto b = cpu_times("cpu  150 5 50 950 20 3 2 0 40 0\n");  // 50 ticks busy, 150 idle
  ASSERT_TRUE(b.has_value());
  EXPECT_DOUBLE_EQ(busy_cpus(*a, *b, 2), 0.5);
  EXPECT_DOUBLE_EQ(busy_cpus(*a, *a, 2), 0.0);  // no tick passed
  EXPECT_FALSE(cpu_times("intr 1 2 3 4 5\n").has_value());
  EXPECT_FALSE(cpu_times("cpu  1 2 3\n").has_value());
  EXPECT_FALSE(cpu_times("").has_value());
}

TEST(ProcCounters, TracepointCountsByReasonOrSaysWhyNot) {
  TlbFlushTracepoint t(1);
  if (!t.available()) {
    EXPECT_FALSE(t.why().empty());
    GTEST_SKIP() << t.why();
  }
  const auto before = t.read();
  EXPECT_EQ(before.size(), kTlbFlushReasons.size());
}

TEST(Spread, MedianAndPercentiles) {
  const Spread s = spread_of({5, 1, 4, 2, 3, 10, 6, 7, 8, 9});
  EXPECT_EQ(s.n, 10u);
  EXPECT_DOUBLE_EQ(s.median, 5.5);
  EXPECT_DOUBLE_EQ(s.p10, 1);
  EXPECT_DOUBLE_EQ(s.p90, 9);
  EXPECT_EQ(spread_of({}).n, 0u);
  EXPECT_DOUBLE_EQ(spread_of({3}).median, 3);
}

}  // namespace
}  // namespace tlbsim::native
