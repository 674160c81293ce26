// Simulator speed: simulated events per second of wall time on the contention workload, by CPU count.
#include <benchmark/benchmark.h>

#include "hw/machine.h"
#include "sim/time.h"
#include "workloads/contention.h"

namespace {

void run(benchmark::State& state, const char* machine, const char* pattern) {
  const tlbsim::hw::Machine m = tlbsim::hw::load_machine(machine);
  const auto cpus = static_cast<std::uint32_t>(state.range(0));
  // Simulated time scaled so each run has ~2M events whatever the CPU count.
  const tlbsim::sim::Duration duration = tlbsim::sim::nanoseconds(std::max<std::int64_t>(200, 4000000 / cpus));
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

void BM_SharedRmw(benchmark::State& s) { run(s, "power8-16s192c-smt8", "shared-rmw"); }
void BM_PrivateRmw(benchmark::State& s) { run(s, "power8-16s192c-smt8", "private-rmw"); }
void BM_SharedRead(benchmark::State& s) { run(s, "power8-16s192c-smt8", "shared-read"); }

}  // namespace

BENCHMARK(BM_SharedRmw)->Arg(8)->Arg(64)->Arg(512)->Arg(1536)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_PrivateRmw)->Arg(8)->Arg(64)->Arg(512)->Arg(1536)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_SharedRead)->Arg(8)->Arg(64)->Arg(512)->Arg(1536)->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
