#include "trace/profile.h"

#include <gtest/gtest.h>

#include <string>

#include "hw/machine.h"
#include "sim/timed_scheduler.h"
#include "trace/flame_graph.h"
#include "workloads/run.h"

namespace tlbsim::trace {
namespace {

using sim::nanoseconds;

sim::SimTime at_ns(std::int64_t ns) { return sim::kTimeZero + nanoseconds(ns); }

Profiler bare_profiler(bool idle = false) {
  return Profiler([](LineId l) { return "line" + std::to_string(l.get()); }, [idle](CpuId) { return idle; });
}

sim::Task<void> inner(sim::Cpu& cpu) { co_await cpu.delay(nanoseconds(5)); }

sim::Task<void> outer(sim::Cpu& cpu) {
  co_await inner(cpu);
  co_await cpu.delay(nanoseconds(3));
  co_await inner(cpu);
  co_await cpu.user_delay(nanoseconds(7));
}

// One CPU runs outer() to its end; the profile of the first microsecond.
Profiler profile_of_outer() {
  sim::TimedScheduler s(1, 1);
  Profiler p = bare_profiler();
  p.attach(s);
  s.cpu(CpuId{0}).start(outer(s.cpu(CpuId{0})));
  s.run(at_ns(1000));
  p.finish(s, at_ns(1000));
  return p;
}

const Profiler::Row& row(const std::vector<Profiler::Row>& rows, const std::string& f) {
  for (const Profiler::Row& r : rows) {
    if (r.function == f) return r;
  }
  throw std::runtime_error("no row " + f);
}

TEST(CpuProfile, ChargesEachStepToItsCallChain) {
  const Profiler p = profile_of_outer();
  // 5 + 3 + 5 ns in the kernel (system), then 7 ns in user mode; the task has finished by 20 ns and is charged
  // nothing after.
  EXPECT_EQ(p.total(), nanoseconds(20));
  EXPECT_EQ(p.of_class(ProfileClass::kSystem), nanoseconds(13));
  EXPECT_EQ(p.of_class(ProfileClass::kUser), nanoseconds(7));
  const auto rows = p.rows();
  EXPECT_EQ(row(rows, "outer").children, nanoseconds(20));
  EXPECT_EQ(row(rows, "outer").self, nanoseconds(10));
  EXPECT_EQ(row(rows, "inner").children, nanoseconds(10));
  EXPECT_EQ(row(rows, "inner").self, nanoseconds(10));
  EXPECT_EQ(p.folded(), "[system];outer 3000\n[system];outer;inner 10000\n[user];outer 7000\n");
}

TEST(CpuProfile, ChargesOnlyTheMeasuredWindowAndOpenIntervalsAtTheEnd) {
  sim::TimedScheduler s(1, 1);
  Profiler p = bare_profiler();
  p.attach(s);
  sim::Cpu& cpu = s.cpu(CpuId{0});
  cpu.start([](sim::Cpu& c) -> sim::Task<void> { co_await c.delay(nanoseconds(100)); }(cpu));
  s.run(at_ns(30));
  p.start(at_ns(30));
  s.run(at_ns(70));
  p.finish(s, at_ns(70));
  // The 100 ns step is still in progress at 70 ns: only 30..70 is charged.
  EXPECT_EQ(p.total(), nanoseconds(40));
}

sim::Task<void> handler_body(sim::Cpu& cpu) { co_await cpu.delay(nanoseconds(4)); }

class Handler final : public sim::IrqHandler {
 public:
  sim::Task<void> handle_irq(sim::Cpu& cpu, int) override { co_await handler_body(cpu); }
};

TEST(CpuProfile, HaltsAreIdleAndHandlersAreInterrupts) {
  sim::TimedScheduler s(1, 1);
  Profiler p = bare_profiler();
  p.attach(s);
  sim::Cpu& cpu = s.cpu(CpuId{0});
  Handler h;
  cpu.set_irq_handler(&h);
  cpu.start([](sim::Cpu& c) -> sim::Task<void> { co_await c.safe_halt(nanoseconds(0)); }(cpu));
  s.send_irq(CpuId{0}, 1, at_ns(50));
  s.run(at_ns(1000));
  p.finish(s, at_ns(1000));
  EXPECT_EQ(p.of_class(ProfileClass::kIdle), nanoseconds(50));
  EXPECT_EQ(p.of_class(ProfileClass::kIrq), nanoseconds(4));
  const auto rows = p.rows();
  EXPECT_EQ(row(rows, "halt").self, nanoseconds(50));
  EXPECT_EQ(row(rows, "handler_body").self, nanoseconds(4));
  EXPECT_EQ(row(rows, "handle_irq").children, nanoseconds(4));
}

// A whole run: every CPU's every picosecond of the measured window is charged once, and the profile is the same
// for the same inputs.
TEST(CpuProfile, AWorkloadRunChargesEveryCpuForTheWholeWindow) {
  const hw::Machine m = hw::load_machine("small-2s2c");
  workloads::RunSpec spec;
  spec.kernel = "linux-6.13";
  spec.workload = "tlb_flush2";
  spec.threads = 2;
  spec.duration = sim::microseconds(300);
  spec.profile = true;
  const workloads::RunOutput a = workloads::run_workload(m, spec);
  const workloads::RunOutput b = workloads::run_workload(m, spec);
  ASSERT_TRUE(a.profile);
  EXPECT_EQ(a.profile->total(), sim::microseconds(300) * m.cpu_count());
  sim::Duration classes{0};
  for (std::size_t c = 0; c < kProfileClasses; ++c) classes += a.profile->of_class(static_cast<ProfileClass>(c));
  EXPECT_EQ(classes, a.profile->total());
  EXPECT_EQ(a.profile->folded(), b.profile->folded());
  // The flushes of a tlb_flush2 run: the madvise's own flush, and the handler on the other CPU.
  const auto rows = a.profile->rows();
  EXPECT_GT(row(rows, "sys_madvise_dontneed").children.count(), 0);
  EXPECT_GT(row(rows, "flush_tlb_func").children.count(), 0);
  EXPECT_GT(a.profile->of_class(ProfileClass::kIrq).count(), 0);
  // The same run without the profile gives the same results.
  workloads::RunSpec plain = spec;
  plain.profile = false;
  const workloads::RunOutput c = workloads::run_workload(m, plain);
  EXPECT_FALSE(c.profile);
  EXPECT_EQ(c.events, a.events);
  EXPECT_EQ(c.json["counters"], a.json["counters"]);
}

TEST(CpuProfile, FlameGraphIsAnSvgNamingEachFrame) {
  const Profiler p = profile_of_outer();
  const std::string svg = flame_graph_svg(p, "a <title> & more");
  EXPECT_EQ(svg.rfind("<?xml", 0), 0u);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  EXPECT_NE(svg.find("a &lt;title&gt; &amp; more"), std::string::npos);
  EXPECT_NE(svg.find("<title>outer (13 ns, 65.00%)</title>"), std::string::npos);
  EXPECT_NE(svg.find("<title>inner (10 ns, 50.00%)</title>"), std::string::npos);
}

}  // namespace
}  // namespace tlbsim::trace
