// `tlbsim validate --runs N`: the real side's repeated runs of one workload and thread count, and the steady states
// (modes) they settle in. A two-thread mmap_storm on a 2-vCPU guest settles, at each start, into one of several
// modes decided by where the threads' mappings land (docs/fidelity-notes.md, issue 31 part 5), so one run is a
// sample of one mode, not the figure.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>
#include <ostream>
#include <set>
#include <stdexcept>

#include "hw/machine.h"
#include "native/calibration_run.h"
#include "native/proc_counters.h"
#include "native/validate.h"

namespace tlbsim::native {

namespace {

// Runs ordered by IPIs/op (runs without a count last, by ops/s).
std::vector<std::size_t> by_ipis(const std::vector<Figures>& runs) {
  std::vector<std::size_t> order(runs.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const auto& x = runs[a].ipis_per_op;
    const auto& y = runs[b].ipis_per_op;
    if (x.has_value() != y.has_value()) return x.has_value();
    if (x && *x != *y) return *x < *y;
    return runs[a].ops_per_sec < runs[b].ops_per_sec;
  });
  return order;
}

}  // namespace

nlohmann::json figures_to_json(const Figures& f) {
  auto opt = [](const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
  return {{"ops_per_sec", f.ops_per_sec},
          {"ipis_per_op", opt(f.ipis_per_op)},
          {"flushes_per_op", opt(f.flushes_per_op)},
          {"remote_flushes_per_op", opt(f.remote_flushes_per_op)},
          {"call_ipis_per_op", opt(f.call_ipis_per_op)},
          {"tlb_flush_per_op", f.tlb_flush_per_op}};
}

std::size_t median_run(const std::vector<Figures>& runs) {
  const std::vector<std::size_t> order = by_ipis(runs);
  return order[(order.size() - 1) / 2];
}

std::vector<RunGroup> group_runs(const std::vector<Figures>& runs, const std::vector<std::string>& layouts) {
  constexpr double kGap = 0.1;
  std::vector<RunGroup> groups;
  std::optional<double> previous;
  for (std::size_t i : by_ipis(runs)) {
    const std::optional<double>& ipis = runs[i].ipis_per_op;
    const bool split =
        groups.empty() || ipis.has_value() != previous.has_value() || (ipis && previous && *ipis - *previous > kGap);
    if (split) {
      groups.emplace_back();
      groups.back().ipis_lo = ipis.value_or(0);
      groups.back().ops_lo = runs[i].ops_per_sec;
      groups.back().ops_hi = runs[i].ops_per_sec;
    }
    RunGroup& g = groups.back();
    g.runs.push_back(i);
    g.ipis_hi = ipis.value_or(0);
    g.ops_lo = std::min(g.ops_lo, runs[i].ops_per_sec);
    g.ops_hi = std::max(g.ops_hi, runs[i].ops_per_sec);
    previous = ipis;
  }
  for (RunGroup& g : groups) {
    std::set<std::string> seen;
    for (std::size_t i : g.runs) {
      if (i < layouts.size() && !layouts[i].empty()) seen.insert(layouts[i]);
    }
    for (const std::string& l : seen) g.layouts += (g.layouts.empty() ? "" : ", ") + l;
  }
  return groups;
}

std::string runs_table(const ValidateRow& row) {
  if (row.real_runs.size() < 2) return "";
  std::string t = fmt::format("    {} runs, IPI/op:", row.real_runs.size());
  for (const Figures& f : row.real_runs) t += f.ipis_per_op ? fmt::format(" {:.3f}", *f.ipis_per_op) : " -";
  t += "\n";
  for (const RunGroup& g : row.real_groups) {
    t += fmt::format("    {} run{}: IPI/op {:.3f}-{:.3f}, ops/s {:.0f}-{:.0f}{}\n", g.runs.size(),
                     g.runs.size() == 1 ? "" : "s", g.ipis_lo, g.ipis_hi, g.ops_lo, g.ops_hi,
                     g.layouts.empty() ? "" : "; mappings " + g.layouts);
  }
  return t;
}

void add_runs_json(nlohmann::json& x, const ValidateRow& row) {
  if (row.real_runs.size() > 1) {
    x["real_runs"] = nlohmann::json::array();
    for (std::size_t k = 0; k < row.real_runs.size(); ++k) {
      nlohmann::json f = figures_to_json(row.real_runs[k]);
      if (!row.real_layouts[k].empty()) f["layout"] = row.real_layouts[k];
      x["real_runs"].push_back(std::move(f));
    }
    x["real_groups"] = nlohmann::json::array();
    for (const RunGroup& g : row.real_groups) {
      x["real_groups"].push_back({{"runs", g.runs},
                                  {"ipis_per_op", {g.ipis_lo, g.ipis_hi}},
                                  {"ops_per_sec", {g.ops_lo, g.ops_hi}},
                                  {"layouts", g.layouts}});
    }
  } else if (!row.real_layouts.empty() && !row.real_layouts.front().empty()) {
    x["real"]["layout"] = row.real_layouts.front();
  }
}

void note_busy_host(ValidateReport& rep, std::ostream& progress, std::uint32_t ncpus) {
  // A busy host moves the real figures into other modes (docs/fidelity-notes.md, issue 31 part 7): an idle VM shows
  // 0.00-0.04 CPUs busy, one building tlbsim beside validate about 2.
  rep.host_busy_cpus = measure_busy_cpus(0.5, ncpus);
  if (!rep.host_busy_cpus || *rep.host_busy_cpus <= kBusyHostCpus) return;
  const std::string note = fmt::format(
      "the host was busy before the real runs: {:.2f} CPUs' worth of other work (/proc/stat, 0.5 s); real figures "
      "from a busy host may settle in other modes: run validate on an idle machine",
      *rep.host_busy_cpus);
  progress << "validate: warning: " << note << "\n" << std::flush;
  rep.notes.push_back(note);
}

void note_wakeups(ValidateReport& rep, const hw::Machine& machine, std::ostream& progress, std::uint32_t waker,
                  std::uint32_t sleeper) {
  const auto halting = std::find_if(machine.idle_states.begin(), machine.idle_states.end(),
                                    [](const hw::IdleState& st) { return !st.polls; });
  if (halting == machine.idle_states.end()) return;  // MWAIT or polling idle: a waker's write wakes the CPU
  const auto ns = [](sim::Duration d) { return std::chrono::duration<double, std::nano>(d).count(); };
  // The model's wake-up of a CPU halted 30 us: its exit scaled by the halt's length where the machine gives that.
  const double simulated = ns(machine.ipi.send) + ns(machine.ipi.deliver_socket) +
                           ns(halting->exit_latency) * halting->by_length().at(std::chrono::microseconds(30));
  progress << fmt::format("validate: timing wake-ups of a thread asleep 30 us and 1 ms on CPU {}\n", sleeper)
           << std::flush;
  // 5 repetitions of 10 wake-ups each: about 60 ms, most of it the 1 ms sleeps.
  const BenchScale scale{5, 0.5};
  try {
    // On threads of their own, as calibrate's are: the waker's pinning leaves validate's thread alone.
    rep.host_wakeup_30us = in_thread([&] { return wakeup_ns(waker, sleeper, scale, std::chrono::microseconds(30)); });
    rep.host_wakeup_1ms = in_thread([&] { return wakeup_ns(waker, sleeper, scale, std::chrono::milliseconds(1)); });
  } catch (const std::runtime_error& e) {  // the waker's CPU refused the pinning, or no pipe: the rows stand
    rep.host_wakeup_30us.reset();
    rep.notes.push_back(fmt::format("wake-ups of a halted CPU not timed: {}", e.what()));
    return;
  }
  rep.simulated_wakeup_ns = simulated;
  const double brief = rep.host_wakeup_30us->median;
  if (brief <= 0) return;
  const double ratio = simulated / brief;
  if (ratio <= kWakeupMismatch && ratio >= 1 / kWakeupMismatch) return;
  rep.notes.push_back(fmt::format(
      "a thread asleep 30 us on CPU {} woke in {:.1f} us here (p10 {:.1f}, p90 {:.1f}), one asleep 1 ms in {:.1f} us; "
      "the machine wakes a CPU halted 30 us in {:.1f} us (ipi.send + ipi.deliver_socket + the {} exit latency), so "
      "threads that sleep tens of microseconds (mmap_storm's, in mmap_lock and vma_start_write) wake {} in the "
      "simulation than here, and how often a flush finds their CPU idle depends on it; a KVM host's halt polling "
      "wakes a vCPU halted briefly faster (docs/fidelity-notes.md, issue 31 part 9)",
      sleeper, brief / 1e3, rep.host_wakeup_30us->p10 / 1e3, rep.host_wakeup_30us->p90 / 1e3,
      rep.host_wakeup_1ms->median / 1e3, simulated / 1e3, halting->name,
      ratio > 1 ? fmt::format("{:.1f}x slower", ratio) : fmt::format("{:.1f}x faster", 1 / ratio)));
}

}  // namespace tlbsim::native
