// Simulator speed on the seeds' workloads at their reproduction sizes (machine, kernel, threads as `tlbsim
// reproduce` runs them; a shorter simulated time), and on workload files against the C++ workloads they mirror
// (issue 27: a file must run within 10% of its twin). Reports simulated events per second of wall time.
#include <benchmark/benchmark.h>

#include "hw/machine.h"
#include "sim/time.h"
#include "workloads/run.h"

namespace {

void BM_Workload(benchmark::State& state, const char* machine, const char* kernel, const char* workload,
                 std::uint32_t threads, std::int64_t duration_us) {
  const tlbsim::hw::Machine m = tlbsim::hw::load_machine(machine);
  tlbsim::workloads::RunSpec spec;
  spec.kernel = kernel;
  spec.workload = workload;
  spec.threads = threads;
  spec.duration = tlbsim::sim::microseconds(duration_us);
  std::uint64_t events = 0;
  for (auto _ : state) {
    const tlbsim::workloads::RunOutput r = tlbsim::workloads::run_workload(m, spec);
    events += r.events;
    benchmark::DoNotOptimize(r.metric);
  }
  state.counters["events_per_sec"] = benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
}

// The seeds' workloads (src/report/seeds_*.cpp).
BENCHMARK_CAPTURE(BM_Workload, seed000_tlb_flush1_55, "skylake-sp-2s28c", "linux-5.17", "tlb_flush1", 55, 2000)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Workload, seed001_lru_file_mmap_read_128, "power9-2s16c-smt4", "linux-4.14-ppc",
                  "lru_file_mmap_read", 128, 10000)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Workload, seed002_hackbench_20, "milan-36c", "linux-6.13", "hackbench", 20, 2000)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Workload, seed003_idle_32, "sandybridge-ep-2s8c2t", "linux-3.3", "idle", 32, 500000)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Workload, seed004_context_switch1_768, "power8-16s192c-smt8", "linux-6.2-ppc", "context_switch1",
                  768, 2000)
    ->Unit(benchmark::kMillisecond);
// The after kernel's point is the reproduction's largest: 2 ms of the machine is about 50 M events.
BENCHMARK_CAPTURE(BM_Workload, seed004_context_switch1_768_after, "power8-16s192c-smt8", "linux-6.2-ppc-seed004",
                  "context_switch1", 768, 300)
    ->Unit(benchmark::kMillisecond);

// Workload files against their C++ twins: the same events, so events/s compares the executors.
BENCHMARK_CAPTURE(BM_Workload, cpp_tlb_flush2_28, "skylake-sp-2s28c", "linux-6.13", "tlb_flush2", 28, 5000)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Workload, file_tlb_flush2_28, "skylake-sp-2s28c", "linux-6.13", "tlb_flush2.toml", 28, 5000)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Workload, cpp_context_switch1_56, "skylake-sp-2s28c", "linux-6.13", "context_switch1", 56, 2000)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Workload, file_context_switch1_56, "skylake-sp-2s28c", "linux-6.13", "context_switch1.toml", 56,
                  2000)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Workload, cpp_mmap_storm_28, "skylake-sp-2s28c", "linux-6.13", "mmap_storm", 28, 50000)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Workload, file_mmap_storm_28, "skylake-sp-2s28c", "linux-6.13", "mmap_storm.toml", 28, 50000)
    ->Unit(benchmark::kMillisecond);

}  // namespace
