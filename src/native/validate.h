// `tlbsim validate`: the native workloads on this host's kernel beside the same workloads simulated on the
// calibrated machine with the kernel profile closest to the running kernel; per workload and thread count, ops/s,
// remote-flush IPIs per op and TLB flushes per op, real and simulated, and their ratio.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "native/microbench.h"

namespace tlbsim::hw {
struct Machine;
}  // namespace tlbsim::hw

namespace tlbsim::native {

struct ValidateOptions {
  std::vector<std::string> workloads;  // native workload names
  std::vector<std::uint32_t> threads;  // thread counts
  double seconds = 1.0;                // measured wall time per native run
  std::uint32_t runs = 1;              // native runs per workload and thread count (each starts its tasks afresh)
  double warmup = 0.2;                 // wall time run before measuring
  std::string machine;                 // machine name or file; empty: calibrate this host in-process
  std::vector<std::string> machine_set;  // --set KEY=VALUE: parameters of the simulated machine replaced
  std::string kernel;                  // kernel profile; empty: the x86 profile closest to `uname -r`
  std::string sim_duration = "20ms";   // simulated time per simulated run
  BenchScale calibration{5, 0.3};      // for the in-process calibration
  std::uint32_t qemu_smp = 0;          // > 0: the real side runs in a QEMU guest with this many CPUs
};

// One side of a row. Per-op figures are absent when the host does not expose the counter.
struct Figures {
  double ops_per_sec = 0;
  std::optional<double> ipis_per_op;     // "TLB shootdowns" (TLB row of /proc/interrupts) per op
  std::optional<double> flushes_per_op;  // TLB flushes performed per op (see flush_source)
  std::optional<double>
      remote_flushes_per_op;  // remote flush requests sent per op (TLB_REMOTE_SEND_IPI, nr_tlb_remote_flush)
  std::optional<double> call_ipis_per_op;          // "Function call interrupts" (CAL row) per op
  std::map<std::string, double> tlb_flush_per_op;  // tlb:tlb_flush events per op by reason (when counted)
};

// Runs of one workload and thread count whose IPIs/op lie together: a kernel that settles into one of several
// steady states (modes) at each start shows one group per mode.
struct RunGroup {
  std::vector<std::size_t> runs;  // indices into ValidateRow::real_runs, by IPIs/op
  double ipis_lo = 0, ipis_hi = 0, ops_lo = 0, ops_hi = 0;
  std::string layouts;  // the runs' mapping layouts (NativeRun::layout), when recorded
};
// Groups runs by IPIs/op: sorted, a new group starts where the next run's IPIs/op is more than 0.1 above the
// previous run's (a gap no run-to-run noise of these counters reaches: docs/fidelity-notes.md, issue 31 part 5).
// Runs without an IPI count form one group.
std::vector<RunGroup> group_runs(const std::vector<Figures>& runs, const std::vector<std::string>& layouts);
// The index of the run of median IPIs/op (the lower middle of an even count), or of median ops/s when a run has no
// IPI count. Contract: `runs` is not empty.
std::size_t median_run(const std::vector<Figures>& runs);

struct ValidateRow {
  std::string workload;
  std::uint32_t threads = 0;
  Figures real;                           // with several runs: the run of median IPIs/op (else ops/s)
  std::vector<Figures> real_runs;         // every run, in the order run (one when --runs is 1)
  std::vector<std::string> real_layouts;  // each run's NativeRun::layout
  std::vector<RunGroup> real_groups;      // the runs grouped by IPIs/op (group_runs)
  std::optional<Figures> simulated;  // absent: the simulator has no such workload or cannot run it (see why)
  std::string simulated_missing;
};
// The table lines that list a row's runs and groups (none for a single run).
std::string runs_table(const ValidateRow& row);
// Adds the row's runs ("real_runs", "real_groups") to its JSON `x`, or, for a single run, its layout to x["real"].
void add_runs_json(nlohmann::json& x, const ValidateRow& row);
// One side's figures as JSON.
nlohmann::json figures_to_json(const Figures& f);

struct ValidateReport {
  std::string release;         // uname -r
  std::string kernel_profile;  // the simulated kernel
  std::string kernel_choice;   // why that profile
  std::string machine;         // the simulated machine's name and origin
  std::string flush_source;    // where real flushes_per_op comes from
  std::optional<double> host_busy_cpus;  // CPUs' worth of other work in the half second before the real runs
  // note_wakeups: this host's wake-ups of a thread asleep 30 us and 1 ms on another CPU, and the machine file's one
  // figure for waking a halted CPU (ipi.send + ipi.deliver_socket + the halting idle state's exit latency), in ns.
  std::optional<Spread> host_wakeup_30us, host_wakeup_1ms;
  std::optional<double> simulated_wakeup_ns;
  std::vector<ValidateRow> rows;
  std::vector<std::string> notes;
};

// The built-in x86 profile closest to `release` ("6.18.44-foo"): the newest release not newer than it, else the
// oldest, and at that release the plain profile ("linux-6.13") rather than a seed's. `why` gets one line saying so.
std::string closest_x86_profile(std::string_view release, std::string& why);

// Watches the host for half a second before the real runs and keeps what it saw in `rep.host_busy_cpus`; a host
// with more than kBusyHostCpus CPUs' worth of other work gets a note and a warning on `progress`.
inline constexpr double kBusyHostCpus = 0.25;
void note_busy_host(ValidateReport& rep, std::ostream& progress, std::uint32_t ncpus);

// Where the machine's idle CPUs halt, times this host's wake-up of a thread asleep 30 us and 1 ms on `sleeper`
// (woken from `waker`) and keeps both beside the machine's figure for waking a halted CPU. The machine has one
// figure for every halt, taken from a 1 ms sleep; a KVM host's halt polling wakes a vCPU halted briefly faster
// (docs/fidelity-notes.md, issue 31 part 9). When the 30 us wake-up and the machine's differ by more than
// kWakeupMismatch either way, a note says how much slower (or faster) the simulation wakes threads that sleep tens
// of microseconds.
inline constexpr double kWakeupMismatch = 1.25;
void note_wakeups(ValidateReport& rep, const hw::Machine& machine, std::ostream& progress, std::uint32_t waker,
                  std::uint32_t sleeper);

// Throws InputError for unknown workloads, kernels or machines and bad thread counts.
ValidateReport run_validation(const ValidateOptions& o, std::ostream& progress);

nlohmann::json to_json(const ValidateReport& r);
std::string to_table(const ValidateReport& r);

}  // namespace tlbsim::native
