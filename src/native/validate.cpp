#include "native/validate.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <ostream>

#include "hw/machine.h"
#include "model/profile.h"
#include "native/calibrate.h"
#include "native/file_workload.h"
#include "native/host.h"
#include "native/qemu.h"
#include "native/workloads.h"
#include "sim/time.h"
#include "util/error.h"
#include "util/registry.h"
#include "workloads/file/workload_file.h"
#include "workloads/run.h"
#include "workloads/workload.h"

#if defined(__linux__)
#include <sys/utsname.h>
#endif

namespace tlbsim::native {

namespace {

constexpr std::size_t kSendIpiReason = 4;  // TLB_REMOTE_SEND_IPI: a send, not a flush
constexpr const char* kVmstatFlushes[] = {"nr_tlb_local_flush_all", "nr_tlb_local_flush_one",
                                          "nr_tlb_remote_flush_received"};

std::string running_release() {
#if defined(__linux__)
  utsname u{};
  if (uname(&u) == 0) return u.release;
#endif
  return "unknown";
}

std::optional<double> per_op(std::optional<std::uint64_t> a, std::optional<std::uint64_t> b, std::uint64_t ops) {
  if (!a || !b || ops == 0) return std::nullopt;
  return static_cast<double>(*b - *a) / static_cast<double>(ops);
}

std::optional<std::uint64_t> vmstat_flushes(const std::map<std::string, std::uint64_t>& v) {
  std::uint64_t s = 0;
  for (const char* k : kVmstatFlushes) {
    const auto it = v.find(k);
    if (it == v.end()) return std::nullopt;
    s += it->second;
  }
  return s;
}

std::optional<std::uint64_t> trace_flushes(const KernelCounters& c) {
  if (!c.tlb_flush) return std::nullopt;
  std::uint64_t s = 0;
  for (std::size_t i = 0; i < c.tlb_flush->size(); ++i) {
    if (i != kSendIpiReason) s += (*c.tlb_flush)[i];
  }
  return s;
}

Figures real_figures(const NativeRun& r, const std::string& flush_source) {
  Figures f;
  f.ops_per_sec = r.seconds > 0 ? static_cast<double>(r.ops) / r.seconds : 0;
  f.ipis_per_op = per_op(r.before.tlb_shootdowns, r.after.tlb_shootdowns, r.ops);
  f.call_ipis_per_op = per_op(r.before.call_function, r.after.call_function, r.ops);
  if (flush_source == "tracepoint") f.flushes_per_op = per_op(trace_flushes(r.before), trace_flushes(r.after), r.ops);
  if (flush_source == "vmstat") {
    auto remote = [](const KernelCounters& c) -> std::optional<std::uint64_t> {
      const auto it = c.vmstat.find("nr_tlb_remote_flush");
      return it == c.vmstat.end() ? std::nullopt : std::optional<std::uint64_t>(it->second);
    };
    f.remote_flushes_per_op = per_op(remote(r.before), remote(r.after), r.ops);
  }
  if (r.before.tlb_flush && r.after.tlb_flush && r.ops > 0) {
    f.remote_flushes_per_op =
        static_cast<double>((*r.after.tlb_flush)[kSendIpiReason] - (*r.before.tlb_flush)[kSendIpiReason]) /
        static_cast<double>(r.ops);
    for (std::size_t i = 0; i < kTlbFlushReasons.size(); ++i) {
      f.tlb_flush_per_op[kTlbFlushReasons[i]] =
          static_cast<double>((*r.after.tlb_flush)[i] - (*r.before.tlb_flush)[i]) / static_cast<double>(r.ops);
    }
  }
  if (flush_source == "vmstat")
    f.flushes_per_op = per_op(vmstat_flushes(r.before.vmstat), vmstat_flushes(r.after.vmstat), r.ops);
  return f;
}

Figures simulated_figures(const nlohmann::json& j, const std::string& flush_source) {
  Figures f;
  const auto ops = j["ops"].get<std::uint64_t>();
  const double secs = static_cast<double>(j["sim_time_ns"].get<std::int64_t>()) / 1e9;
  f.ops_per_sec = static_cast<double>(ops) / secs;
  if (ops == 0) return f;
  const auto& c = j["counters"];
  const double n = static_cast<double>(ops);
  f.ipis_per_op = c["TLB shootdowns"].get<double>() / n;
  f.call_ipis_per_op = c["Function call interrupts"].get<double>() / n;
  f.remote_flushes_per_op = c["nr_tlb_remote_flush"].get<double>() / n;
  for (const auto& [reason, v] : c["tlb:tlb_flush"].items()) f.tlb_flush_per_op[reason] = v.get<double>() / n;
  double flushes = 0;
  if (flush_source == "vmstat") {
    for (const char* k : kVmstatFlushes) flushes += c[k].get<double>();
  } else {
    for (const auto& [reason, v] : c["tlb:tlb_flush"].items()) {
      if (reason != "TLB_REMOTE_SEND_IPI") flushes += v.get<double>();
    }
  }
  f.flushes_per_op = flushes / n;
  return f;
}

bool cpu_has_hypervisor_flag() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.starts_with("flags")) return (line + " ").find(" hypervisor ") != std::string::npos;
  }
  return false;
}

}  // namespace

std::string closest_x86_profile(std::string_view release, std::string& why) {
  kernel::KernelVersion running{0, 0};
  std::string_view r = release;
  const std::size_t dot1 = r.find('.');
  const std::size_t end = dot1 == std::string_view::npos ? r.size() : r.find_first_not_of("0123456789", dot1 + 1);
  try {
    running = kernel::KernelVersion::parse(r.substr(0, end), "uname -r");
  } catch (const InputError&) {
    running = {0, 0};
  }
  // Among x86 profiles, by version; at one version the plain release ("linux-6.13") before seed variants.
  std::string best, oldest;
  kernel::KernelVersion best_v{-1, 0}, oldest_v{1 << 30, 0};
  auto better = [](const std::string& name, const kernel::KernelVersion& v, const std::string& than,
                   const kernel::KernelVersion& than_v, bool newer) {
    if (v != than_v) return newer ? v > than_v : v < than_v;
    return name == "linux-" + v.str() && than != name;
  };
  for (const std::string& name : kernel::builtin_kernel_names()) {
    const kernel::KernelProfile p = kernel::load_kernel_profile(name);
    if (p.config.arch != kernel::Arch::kX86) continue;
    if (p.config.version <= running && better(name, p.config.version, best, best_v, true)) {
      best = name, best_v = p.config.version;
    }
    if (better(name, p.config.version, oldest, oldest_v, false)) oldest = name, oldest_v = p.config.version;
  }
  if (!best.empty()) {
    why = fmt::format("the newest x86 profile not newer than the running kernel {}", release);
    return best;
  }
  why = fmt::format("no x86 profile is as old as the running kernel {}; the oldest", release);
  return oldest;
}

namespace {

// One validation in progress: its options, the host, the planned (workload, threads) runs, their real figures and
// the report being filled.
struct Validation {
  Validation(const ValidateOptions& opts, std::ostream& out, HostTopology h)
      : o(opts), progress(out), host(std::move(h)) {}

  const ValidateOptions& o;
  std::ostream& progress;
  HostTopology host;
  sim::Duration sim_duration{0};
  std::optional<QemuSetup> qemu;
  std::vector<std::pair<std::string, std::uint32_t>> plan;
  std::vector<NativeRun> real;
  ValidateReport rep;
};

// Refuses a non-Linux host, a bad --seconds, and empty or unknown --workloads.
void check_workload_options(const ValidateOptions& o) {
  if (!native_supported())
    throw InputError("validate runs native benchmarks on the host's Linux kernel; this is not Linux");
  if (o.seconds <= 0 || o.seconds > 600) throw InputError(fmt::format("--seconds: {} is outside (0, 600]", o.seconds));
  if (o.workloads.empty() || o.threads.empty()) throw InputError("--workloads and --threads need at least one entry");
  const auto natives = native_workloads();
  for (const std::string& w : o.workloads) {
    if (workloads::is_workload_file_name(w)) {
      workloads::resolve_values(*workloads::load_workload_file(w), nullptr);  // a bad file fails before any run
      continue;
    }
    if (std::none_of(natives.begin(), natives.end(), [&](const auto& n) { return n.first == w; })) {
      std::string known;
      for (const auto& n : natives) known += (known.empty() ? "" : ", ") + n.first;
      throw InputError(fmt::format("--workloads: unknown workload '{}' (known: {})", w, known));
    }
  }
}

// Refuses a thread count beyond the CPUs of the host (or of the QEMU guest).
void check_threads(const ValidateOptions& o, const HostTopology& host) {
  const std::uint32_t cpus = o.qemu_smp > 0 ? o.qemu_smp : static_cast<std::uint32_t>(host.cpus.size());
  for (std::uint32_t t : o.threads) {
    if (t == 0 || t > cpus) {
      throw InputError(fmt::format("--threads: {} is outside 1..{} ({})", t, cpus,
                                   o.qemu_smp > 0 ? "the guest's --smp CPUs" : "this host's online CPUs"));
    }
  }
}

// --sim-duration, parsed and checked against 100us..10s.
sim::Duration parse_sim_duration(const ValidateOptions& o) {
  sim::Duration sim_duration{0};
  try {
    sim_duration = sim::parse_duration(o.sim_duration);
  } catch (const std::invalid_argument& e) {
    throw InputError(fmt::format("--sim-duration: {}", e.what()));
  }
  if (sim_duration < sim::microseconds(100) || sim_duration > sim::milliseconds(10000)) {
    throw InputError(fmt::format("--sim-duration: {} is outside 100us..10s", o.sim_duration));
  }
  return sim_duration;
}

// The QEMU setup when --qemu asks for a guest (refused when a part of it is missing), else none.
std::optional<QemuSetup> qemu_setup(const ValidateOptions& o) {
  std::optional<QemuSetup> qemu;
  if (o.qemu_smp > 0) {
    qemu = find_qemu_setup();
    if (!qemu->missing.empty()) {
      std::string what;
      for (const std::string& m : qemu->missing) what += (what.empty() ? "" : ", ") + m;
      throw InputError(fmt::format("--qemu: QEMU validation needs {}; not available", what));
    }
  }
  return qemu;
}

// The real side: every planned run on this host, or inside a QEMU guest; and where the real flush count comes from.
void run_real_side(Validation& v) {
  const ValidateOptions& o = v.o;
  ValidateReport& rep = v.rep;
  if (v.qemu) {
    v.progress << fmt::format("validate: booting {} in QEMU ({}, {} CPUs), {} runs of {:.2f} s\n", v.qemu->kernel,
                              v.qemu->kvm ? "KVM" : "TCG: software emulation, no /dev/kvm", o.qemu_smp, v.plan.size(),
                              o.seconds)
               << std::flush;
    QemuRuns q = run_in_qemu(*v.qemu, o.qemu_smp, v.plan, o.seconds);
    v.real = std::move(q.runs);
    rep.release = q.release;
    rep.notes.push_back(fmt::format("real side: Linux {} in a QEMU guest with {} CPUs ({})", q.release, o.qemu_smp,
                                    v.qemu->kvm ? "KVM" : "TCG software emulation: its ops/s say nothing of hardware"));
  } else {
    rep.release = running_release();
    note_busy_host(rep, v.progress, static_cast<std::uint32_t>(v.host.cpus.size()));
    const TlbFlushTracepoint trace(static_cast<std::uint32_t>(v.host.cpus.back().cpu + 1));
    if (!trace.available()) rep.notes.push_back("tlb:tlb_flush tracepoint not counted: " + trace.why());
    for (const auto& [w, t] : v.plan) {
      for (std::uint32_t run = 0; run < o.runs; ++run) {
        v.progress << fmt::format("validate: native {} with {} threads for {:.2f} s{}\n", w, t, o.seconds,
                                  o.runs > 1 ? fmt::format(" (run {} of {})", run + 1, o.runs) : "")
                   << std::flush;
        v.real.push_back(workloads::is_workload_file_name(w)
                             ? run_native_file_workload(w, t, o.warmup, o.seconds, v.host, &trace)
                             : run_native_workload(w, t, o.warmup, o.seconds, v.host, &trace));
      }
    }
  }
  const KernelCounters& probe = v.real.front().before;
  rep.flush_source = probe.tlb_flush ? "tracepoint" : vmstat_flushes(probe.vmstat) ? "vmstat" : "none";
  if (!probe.tlb_shootdowns) rep.notes.push_back("/proc/interrupts has no readable TLB row: real IPIs/op absent");
  if (rep.flush_source == "none") {
    rep.notes.push_back("no real flush count: no tracepoint and no nr_tlb_* in /proc/vmstat (CONFIG_DEBUG_TLBFLUSH)");
  }
}

// The simulated side's kernel profile (given, or the closest to the running kernel) and machine (given, or
// calibrated here).
hw::Machine simulated_machine(Validation& v) {
  const ValidateOptions& o = v.o;
  ValidateReport& rep = v.rep;
  rep.kernel_profile = o.kernel.empty() ? closest_x86_profile(rep.release, rep.kernel_choice) : o.kernel;
  if (!o.kernel.empty()) rep.kernel_choice = "given by --kernel";
  hw::Machine machine;
  if (o.machine.empty()) {
    CalibrateOptions co;
    co.scale = o.calibration;
    v.progress << "validate: calibrating this host (use --machine FILE to reuse a `tlbsim calibrate` file)\n";
    machine = hw::parse_machine(calibrate_host(co, v.progress).toml, "calibrated in-process", o.machine_set);
  } else {
    machine = hw::load_machine(o.machine, o.machine_set);
  }
  rep.machine = fmt::format("{} ({})", machine.name, machine.origin);
  return machine;
}

// The row of planned run `i`: its real figures, and the simulator's for the same workload and threads.
ValidateRow compare_run(Validation& v, const hw::Machine& machine, std::size_t i) {
  const auto& [w, t] = v.plan[i];
  ValidateRow row;
  row.workload = w;
  row.threads = t;
  const std::uint32_t runs = v.qemu ? 1 : v.o.runs;
  for (std::uint32_t r = 0; r < runs; ++r) {
    const NativeRun& run = v.real[i * runs + r];
    row.real_runs.push_back(real_figures(run, v.rep.flush_source));
    row.real_layouts.push_back(run.layout);
  }
  row.real_groups = group_runs(row.real_runs, row.real_layouts);
  const std::size_t shown = median_run(row.real_runs);
  row.real = row.real_runs[shown];
  if (!workloads::is_workload_file_name(w) && Registry<workloads::Workload>::find(w) == nullptr) {
    row.simulated_missing = "the simulator has no workload " + w;
    return row;
  }
  workloads::RunSpec spec;
  spec.kernel = v.rep.kernel_profile;
  spec.workload = w;
  spec.threads = t;
  spec.duration = v.sim_duration;
  spec.warmup = sim::Duration{0};  // counters and ops over the same interval
  // mmap_storm: the layout of the run the row shows (where the threads' mappings landed decides its mode).
  if (w == "mmap_storm" && row.real_layouts[shown] == "apart") spec.params.push_back("apart=1");
  v.progress << fmt::format("validate: simulated {} with {} threads for {}{}\n", w, t, v.o.sim_duration,
                            spec.params.empty() ? "" : " (--param " + spec.params.front() + ")")
             << std::flush;
  try {
    row.simulated = simulated_figures(workloads::run_workload(machine, spec).json, v.rep.flush_source);
  } catch (const InputError& e) {
    row.simulated_missing = e.what();
  }
  return row;
}

// Every planned run's row, and a note when the real TLB row missed the remote flushes of tlb_flush.
void compare_runs(Validation& v, const hw::Machine& machine) {
  bool tlb_silent = false;
  for (std::size_t i = 0; i < v.plan.size(); ++i) {
    ValidateRow row = compare_run(v, machine, i);
    const auto& [w, t] = v.plan[i];
    if (w.starts_with("tlb_flush") && t > 1 && row.real.ipis_per_op && *row.real.ipis_per_op < 0.01) tlb_silent = true;
    if (row.real_groups.size() > 1) {
      std::string modes;
      for (const RunGroup& g : row.real_groups) {
        modes += fmt::format("{}{:.3f}-{:.3f} ({} of {})", modes.empty() ? "" : ", ", g.ipis_lo, g.ipis_hi,
                             g.runs.size(), row.real_runs.size());
      }
      v.rep.notes.push_back(fmt::format(
          "{} with {} threads: the runs settle in {} modes of IPIs/op, {}; each run keeps the mode its start gave "
          "it, so compare the simulated figure with each mode, not with the median run shown in the row{}",
          w, t, row.real_groups.size(), modes,
          w == "mmap_storm" ? " (the simulation takes that run's layout: --param apart=1 where it was 'apart')" : ""));
    } else if (w == "mmap_storm" && t > 1 && row.real_runs.size() == 1) {
      const std::string& layout = row.real_layouts.front();
      v.rep.notes.push_back(fmt::format(
          "mmap_storm with {} threads settles, at each start, in one of several modes (where the threads' mappings "
          "land decides it{}); one run is one mode's sample: repeat with --runs",
          t, layout.empty() ? "" : ": layout '" + layout + "' here"));
    }
    v.rep.rows.push_back(std::move(row));
  }
  // How idle CPUs wake decides how often a flush finds the other CPUs of the mm lazy (asleep in mmap_lock or a
  // fault): say when the machine's idle loop halts (a guest without a cpuidle driver), as bare metal's MWAIT idle
  // does not.
  const bool halts = std::any_of(machine.idle_states.begin(), machine.idle_states.end(),
                                 [](const hw::IdleState& st) { return !st.polls; });
  if (halts) {
    v.rep.notes.push_back(fmt::format(
        "the machine's idle CPUs halt ({}): each wake-up of a sleeping thread is an IPI ({} to deliver here), so "
        "threads that sleep in mmap_lock or vma_start_write (v6.15+) stay idle, and lazy, longer than on bare "
        "metal, whose MWAIT or snooze idle wakes at the waker's write; a workload's IPIs/op (mmap_storm's above "
        "all) depends on it",
        v.qemu                      ? "a QEMU guest"
        : cpu_has_hypervisor_flag() ? "a guest: cpuinfo flag 'hypervisor'"
                                    : "HLT idle",
        sim::format_duration(machine.ipi.deliver_socket)));
  }
  // A guest's ICR write exits to the hypervisor (no posted-interrupt or AVIC IPI virtualization): calibrate's
  // FUTEX_WAKE probe measures it as ipi.send. Every flush IPI and every wake-up of a thread on an idle CPU costs
  // the sender that.
  if (machine.ipi.send >= sim::microseconds(1)) {
    v.rep.notes.push_back(fmt::format(
        "an IPI costs its sender {} here (ipi.send; bare-metal x2APIC sends take tens of ns): a guest's write to "
        "the local APIC's ICR exits to the hypervisor, so every flush IPI and every wake-up of a thread on an idle "
        "CPU stalls the waker that long, and multi-threaded ops/s fall further below one thread's than on bare metal",
        sim::format_duration(machine.ipi.send)));
  }
  if (tlb_silent) {
    v.rep.notes.push_back(fmt::format(
        "the TLB row did not count the remote flushes of multi-threaded tlb_flush runs{}: a paravirtual remote "
        "flush (KVM PV TLB flush for preempted vCPUs, PVM's PVM_HC_FLUSH_TLB_MULTI hypercall, Hyper-V's "
        "HvFlushVirtualAddressList) replaces the flush IPI, so real IPIs/op is not the kernel's flush count",
        !v.qemu && cpu_has_hypervisor_flag() ? " and this host runs under a hypervisor (cpuinfo flag 'hypervisor')"
                                             : ""));
  }
}

}  // namespace

ValidateReport run_validation(const ValidateOptions& o, std::ostream& progress) {
  check_workload_options(o);
  Validation v{o, progress, read_host_topology()};
  check_threads(o, v.host);
  v.sim_duration = parse_sim_duration(o);
  if (!o.kernel.empty()) kernel::load_kernel_profile(o.kernel);  // unknown profile: InputError before measuring
  if (o.runs == 0 || o.runs > 100) throw InputError(fmt::format("--runs: {} is outside 1..100", o.runs));
  if (o.runs > 1 && o.qemu_smp > 0) throw InputError("--runs: repeated runs are the host's, not a QEMU guest's");
  v.qemu = qemu_setup(o);
  for (const std::string& w : o.workloads) {
    for (std::uint32_t t : o.threads) v.plan.emplace_back(w, t);
  }
  run_real_side(v);
  const hw::Machine machine = simulated_machine(v);
  compare_runs(v, machine);
  if (!v.qemu && v.host.cpus.size() >= 2)
    note_wakeups(v.rep, machine, v.progress, v.host.cpus[0].cpu, v.host.cpus[1].cpu);
  return std::move(v.rep);
}

namespace {

std::string cell(const std::optional<double>& v, const char* f = "{:.3f}") {
  return v ? fmt::format(fmt::runtime(f), *v) : "-";
}

std::string ratio(const std::optional<double>& real, const std::optional<double>& sim) {
  if (!real || !sim || *real < 1e-3) return "-";  // a ratio to (almost) nothing says nothing
  return fmt::format("{:.2f}", *sim / *real);
}

}  // namespace

nlohmann::json to_json(const ValidateReport& r) {
  nlohmann::json j;
  j["release"] = r.release;
  j["kernel_profile"] = r.kernel_profile;
  j["kernel_choice"] = r.kernel_choice;
  j["machine"] = r.machine;
  j["flush_source"] = r.flush_source;
  j["host_busy_cpus"] = r.host_busy_cpus ? nlohmann::json(*r.host_busy_cpus) : nlohmann::json(nullptr);
  const auto spread = [](const std::optional<Spread>& x) {
    return x ? nlohmann::json{{"median", x->median}, {"p10", x->p10}, {"p90", x->p90}} : nlohmann::json(nullptr);
  };
  j["wakeup_ns"] = {
      {"host_asleep_30us", spread(r.host_wakeup_30us)},
      {"host_asleep_1ms", spread(r.host_wakeup_1ms)},
      {"simulated", r.simulated_wakeup_ns ? nlohmann::json(*r.simulated_wakeup_ns) : nlohmann::json(nullptr)}};
  j["rows"] = nlohmann::json::array();
  for (const ValidateRow& row : r.rows) {
    nlohmann::json x = {{"workload", row.workload}, {"threads", row.threads}, {"real", figures_to_json(row.real)}};
    add_runs_json(x, row);
    x["simulated"] = row.simulated ? figures_to_json(*row.simulated) : nlohmann::json(nullptr);
    if (!row.simulated) x["simulated_missing"] = row.simulated_missing;
    j["rows"].push_back(std::move(x));
  }
  j["notes"] = r.notes;
  return j;
}

std::string to_table(const ValidateReport& r) {
  std::string t = fmt::format("real: Linux {}; simulated: kernel {} ({}) on machine {}\n", r.release, r.kernel_profile,
                              r.kernel_choice, r.machine);
  t += fmt::format(
      "IPI/op: 'TLB shootdowns' (/proc/interrupts) per op; rfl/op: remote flush requests per op "
      "(TLB_REMOTE_SEND_IPI or nr_tlb_remote_flush); fl/op: TLB flushes per op (real from {})\n\n",
      r.flush_source == "tracepoint" ? "the tlb:tlb_flush tracepoint, all reasons but TLB_REMOTE_SEND_IPI"
      : r.flush_source == "vmstat"   ? "/proc/vmstat nr_tlb_local_flush_* + nr_tlb_remote_flush_received"
                                     : "nowhere: not available");
  std::size_t width = 26;  // a workload file's path may be longer than the built-in names
  for (const ValidateRow& row : r.rows) width = std::max(width, row.workload.size());
  const std::string row_format =
      "{:<" + std::to_string(width) +
      "} {:>3} | {:>9} {:>9} {:>5} | {:>6} {:>6} {:>5} | {:>6} {:>6} {:>5} | {:>6} {:>6} {:>5}\n";
  t += fmt::format(fmt::runtime(row_format), "workload", "thr", "ops/s", "sim", "ratio", "IPI/op", "sim", "ratio",
                   "rfl/op", "sim", "ratio", "fl/op", "sim", "ratio");
  for (const ValidateRow& row : r.rows) {
    const Figures& a = row.real;
    const Figures b = row.simulated.value_or(Figures{});
    const bool s = row.simulated.has_value();
    auto sim_cell = [&](const std::optional<double>& v) { return s ? cell(v) : std::string("-"); };
    t += fmt::format(fmt::runtime(row_format), row.workload, row.threads, fmt::format("{:.0f}", a.ops_per_sec),
                     s ? fmt::format("{:.0f}", b.ops_per_sec) : "-", s ? ratio(a.ops_per_sec, b.ops_per_sec) : "-",
                     cell(a.ipis_per_op), sim_cell(b.ipis_per_op), s ? ratio(a.ipis_per_op, b.ipis_per_op) : "-",
                     cell(a.remote_flushes_per_op), sim_cell(b.remote_flushes_per_op),
                     s ? ratio(a.remote_flushes_per_op, b.remote_flushes_per_op) : "-", cell(a.flushes_per_op),
                     sim_cell(b.flushes_per_op), s ? ratio(a.flushes_per_op, b.flushes_per_op) : "-");
    if (!s) t += fmt::format("{:<{}}       simulated: none ({})\n", "", width, row.simulated_missing);
    t += runs_table(row);
  }
  for (const std::string& n : r.notes) t += "note: " + n + "\n";
  return t;
}

}  // namespace tlbsim::native
