// Simulator speed: simulated events per second of wall time on the contention workload, by CPU count.
#include <benchmark/benchmark.h>

#include "hw/machine.h"
#include "sim/time.h"
#include "workloads/contention.h"

namespace {

// Runs the pattern for a simulated time chosen to give about two million events at any CPU count: per-CPU
// patterns make cpus events per `op_ns`; a shared line's transfers are serialized, one per `op_ns` in total.
void run(benchmark::State& state, const char* machine, const char* pattern, double op_ns, bool serialized) {
  const tlbsim::hw::Machine m = tlbsim::hw::load_machine(machine);
  const auto cpus = static_cast<std::uint32_t>(state.range(0));
  const double sim_ns = 2e6 * op_ns / (serialized ? 1.0 : static_cast<double>(cpus));
  const tlbsim::sim::Duration duration = tlbsim::sim::nanoseconds(static_cast<std::int64_t>(sim_ns));
  std::uint64_t events = 0;
  for (auto _ : state) {
    auto p = tlbsim::workloads::run_contention(m, pattern, cpus, duration, 1);
    events += p.events;
    benchmark::DoNotOptimize(p.ops);
  }
  state.counters["events_per_sec"] = benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
  state.counters["time_per_event"] =
      benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

// POWER8 model: local_rmw and l1_hit set the per-CPU op time; shared-rmw ops are remote transfers (~200-700 ns).
void BM_SharedRmw(benchmark::State& s) { run(s, "power8-16s192c-smt8", "shared-rmw", 300, true); }
void BM_PrivateRmw(benchmark::State& s) { run(s, "power8-16s192c-smt8", "private-rmw", 7, false); }
void BM_SharedRead(benchmark::State& s) { run(s, "power8-16s192c-smt8", "shared-read", 1.5, false); }

}  // namespace

BENCHMARK(BM_SharedRmw)->Arg(8)->Arg(64)->Arg(512)->Arg(1536)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_PrivateRmw)->Arg(8)->Arg(64)->Arg(512)->Arg(1536)->Unit(benchmark::kMillisecond);
// Not 1536: there the 1536 serialized cold misses of the first reads outlast a two-million-event run.
BENCHMARK(BM_SharedRead)->Arg(8)->Arg(64)->Arg(512)->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
