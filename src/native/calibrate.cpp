#include "native/calibrate.h"

#include <fmt/format.h>

#include <chrono>
#include <ctime>
#include <fstream>
#include <map>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <thread>

#include "hw/machine.h"
#include "native/calibrate_sched.h"
#include "native/calibration_run.h"
#include "native/microbench_sched.h"

#if defined(__linux__)
#include <unistd.h>
#endif

namespace tlbsim::native {

namespace {

const char* class_name(hw::Distance d) {
  switch (d) {
    case hw::Distance::kSmt:
      return "SMT siblings";
    case hw::Distance::kLlc:
      return "same LLC";
    case hw::Distance::kSocket:
      return "same socket, other LLC";
    default:
      return "other socket";
  }
}

using CpuPair = std::optional<std::pair<std::uint32_t, std::uint32_t>>;

// The CPU pairs the transfer measurements used: the nearest pair on one socket and a pair on two sockets.
struct TransferPairs {
  CpuPair near_pair, remote_pair;
};

// /proc/loadavg's three load averages, or "unknown".
std::string load_average() {
  std::string load = "unknown";
  if (std::ifstream in("/proc/loadavg"); in) {
    std::string a, b, c;
    if (in >> a >> b >> c) load = a + " " + b + " " + c;
  }
  return load;
}

// Coherence: line transfers per distance class, atomics, DRAM.
TransferPairs measure_coherence(CalibrationRun& r) {
  const BenchScale& s = r.o.scale;
  const std::map<hw::Distance, const char*> transfer_key = {{hw::Distance::kSmt, "coherence.smt_transfer"},
                                                            {hw::Distance::kLlc, "coherence.llc_transfer"},
                                                            {hw::Distance::kSocket, "coherence.socket_transfer"},
                                                            {hw::Distance::kRemote, "coherence.remote_transfer"}};
  TransferPairs pairs;
  for (const auto& [d, key] : transfer_key) {
    const auto pair = find_pair(r.cal.host, d);
    if (!pair) continue;
    if (!pairs.near_pair && d != hw::Distance::kRemote) pairs.near_pair = pair;
    if (d == hw::Distance::kRemote) pairs.remote_pair = pair;
    const Spread sp =
        r.note(fmt::format("line transfer CPU {} <-> CPU {} ({})", pair->first, pair->second, class_name(d)),
               in_thread([&] { return line_transfer_ns(pair->first, pair->second, s); }));
    r.fields.measure(key, sp.median,
                     r.from(sp, fmt::format("CPUs {} and {} ({}) ping-pong one cache line, half the round trip",
                                            pair->first, pair->second, class_name(d))));
  }
  const Spread rmw = r.note("atomic fetch-add, one CPU", in_thread([&] { return atomic_rmw_ns({r.cpu0}, s); }));
  r.fields.measure("coherence.local_rmw", rmw.median, r.from(rmw, "lock xadd on a private line in a loop"));
  if (r.cal.host.cpus.size() > 1) {
    std::vector<std::uint32_t> all;
    for (const HostCpu& c : r.cal.host.cpus) all.push_back(c.cpu);
    r.note(fmt::format("atomic fetch-add, {} CPUs on one line (per op)", all.size()),
           in_thread([&] { return atomic_rmw_ns(all, s); }));
  }
  const Spread mem = r.note("dependent DRAM load (64 MiB pointer chase)", memory_load_ns(s));
  r.fields.measure("coherence.memory", mem.median,
                   r.from(mem, "random pointer chase through 64 MiB, one load per line"));
  return pairs;
}

// Kernel entry, faults, page clearing and copying.
void measure_kernel_costs(CalibrationRun& r) {
  const BenchScale& s = r.o.scale;
  const Spread sys = r.note("syscall(SYS_getppid) round trip", in_thread([&] { return syscall_ns(s); }));
  r.fields.measure("kernel.syscall", sys.median, r.from(sys, "syscall(SYS_getppid) in a loop"));
  const Spread rf =
      r.note("read fault of an anonymous page (zero page)", in_thread([&] { return page_fault_ns(false, s); }));
  const Spread wf =
      r.note("write fault of an anonymous page (alloc + clear)", in_thread([&] { return page_fault_ns(true, s); }));
  const Spread zero = r.note("memset of a cache-warm 4 KiB page", page_op_ns(false, s));
  const Spread copy = r.note("memcpy of a cache-warm 4 KiB page", page_op_ns(true, s));
  r.fields.measure("kernel.page_zero", zero.median, r.from(zero, "memset of a cache-warm 4 KiB buffer"));
  r.fields.measure("kernel.page_copy", copy.median, r.from(copy, "memcpy of a cache-warm 4 KiB buffer"));
  const double pte = r.fields.ns("kernel.pte_update");
  if (rf.median > pte) {
    r.fields.measure("kernel.page_fault", rf.median - pte,
                     r.from(rf, fmt::format("first read of an anonymous page (maps the zero page), less the default "
                                            "pte_update {:.0f} ns; figure is the whole read fault",
                                            pte)));
  }
  // Measured only when the difference stands out of the faults' own spread.
  const double alloc = wf.median - rf.median - zero.median;
  if (alloc > 0.1 * (wf.p90 - wf.p10) && alloc > 0.1 * (rf.p90 - rf.p10)) {
    r.fields.measure("kernel.page_alloc", alloc,
                     r.from(wf, fmt::format("write fault (alloc + clear) less read fault {:.1f} less memset {:.1f}; "
                                            "figure is the whole write fault",
                                            rf.median, zero.median)));
  }
}

// The local half of the TLB shootdown round trips: madvise(MADV_DONTNEED) of one page with no remote CPU in the mm.
// Returns the populated madvise's spread, which the remote round trips are measured against.
Spread measure_local_flush(CalibrationRun& r) {
  const BenchScale& s = r.o.scale;
  const std::uint32_t cpu0 = r.cpu0;
  const Spread empty = r.note(fmt::format("madvise(DONTNEED) 1 untouched page on CPU {} (no zap)", cpu0),
                              in_thread([&] { return madvise_dontneed_ns(cpu0, std::nullopt, s, false); }));
  const Spread local = r.note(fmt::format("madvise(DONTNEED) 1 page on CPU {}, no other thread", cpu0),
                              in_thread([&] { return madvise_dontneed_ns(cpu0, std::nullopt, s); }));
  // Zapping one PTE and flushing it locally: the populated madvise less the untouched one, less the PTE and
  // page-freeing work the model charges apart. The model charges a flush of a gather that cleared PTEs as invlpg
  // (one page) or as a whole-context flush (after concurrent gathers): both get it.
  const double pte = r.fields.ns("kernel.pte_update");
  const double local_flush = local.median - empty.median - pte - r.fields.ns("kernel.page_alloc");
  if (local_flush > r.fields.ns("tlb.invlpg")) {
    const std::string how = fmt::format(
        "madvise(MADV_DONTNEED) of one written page with no other CPU in the mm ({:.1f} ns) less the same on an "
        "untouched page ({:.1f} ns, no zap, no flush), less pte_update {:.0f} and page_alloc {:.1f}: the local "
        "zap-and-flush cost beyond the modeled PTE work, an upper bound on the flush; figure is the populated madvise",
        local.median, empty.median, pte, r.fields.ns("kernel.page_alloc"));
    r.fields.measure("tlb.invlpg", local_flush, r.from(local, how));
    for (const char* k : {"tlb.flush_tag", "tlb.flush_all"}) {
      if (local_flush > r.fields.ns(k))
        r.fields.measure(k, local_flush, r.from(local, how + " (taken for a full flush too)"));
    }
  }
  return local;
}

// The sender's cost of an IPI (ipi.send), before the round trips that are measured less it: a tgkill() of a thread
// running on another CPU, whose signal has a handler (kick_process sends a reschedule IPI), less the same with the
// signal blocked (queued, no IPI). Under a hypervisor without posted interrupts the ICR write exits to it, and that
// exit is what this measures. A FUTEX_WAKE of a thread asleep on another, idle CPU (try_to_wake_up queues it on
// that CPU's wake list and sends the IPI) less the same wake on the waker's own CPU is noted beside it: in a KVM
// guest it also pays the host's wake-up of the halted vCPU, and its repetitions fall in two modes (2026-12-07:
// 5.5 and 12.0 us on one guest), so it is not taken for the field.
void measure_ipi_send(CalibrationRun& r, const std::pair<std::uint32_t, std::uint32_t>& pair) {
  const BenchScale& s = r.o.scale;
  const auto same = in_thread([&] { return wake_call_ns(pair.first, pair.first, s); });
  const auto other = in_thread([&] { return wake_call_ns(pair.first, pair.second, s); });
  if (same && other) {
    r.note(fmt::format("FUTEX_WAKE of a thread asleep on the waker's CPU {}", pair.first), *same);
    r.note(fmt::format("FUTEX_WAKE of a thread asleep on idle CPU {}", pair.second), *other);
  }
  const auto quiet = in_thread([&] { return kick_ns(pair.first, pair.second, true, s); });
  const auto kick = in_thread([&] { return kick_ns(pair.first, pair.second, false, s); });
  if (!quiet || !kick) return;
  r.note(fmt::format("tgkill() of a thread running on CPU {}, signal blocked (no IPI)", pair.second), *quiet);
  r.note(fmt::format("tgkill() of a thread running on CPU {}, with a handler (IPI)", pair.second), *kick);
  const double send = kick->median - quiet->median;
  if (send <= r.fields.ns("ipi.send") || send < 0.1 * (kick->p90 - kick->p10) || send < 0.1 * (quiet->p90 - quiet->p10))
    return;
  r.fields.measure("ipi.send", send,
                   r.from(*kick, fmt::format("the sender's tgkill() of a thread running on CPU {} with a handler "
                                             "({:.1f} ns; kick_process sends a reschedule IPI) less the same with the "
                                             "signal blocked ({:.1f} ns, no IPI); figure is the tgkill with the IPI",
                                             pair.second, kick->median, quiet->median)));
}

// The remote TLB shootdown round trips (madvise with a thread of the mm spinning on another CPU, near and remote)
// and the membarrier IPI round trips.
void measure_remote_shootdowns(CalibrationRun& r, const TransferPairs& pairs, const Spread& local) {
  const BenchScale& s = r.o.scale;
  if (pairs.near_pair) measure_ipi_send(r, *pairs.near_pair);
  const std::vector<std::pair<const char*, CpuPair>> ipi_pairs = {{"ipi.deliver_socket", pairs.near_pair},
                                                                  {"ipi.deliver_remote", pairs.remote_pair}};
  for (const auto& [key, pair] : ipi_pairs) {
    if (!pair) continue;
    const Spread remote =
        r.note(fmt::format("madvise(DONTNEED) 1 page on CPU {}, thread spinning on CPU {}", pair->first, pair->second),
               in_thread([&, p = *pair] { return madvise_dontneed_ns(p.first, p.second, s); }));
    const double transfer =
        r.fields.ns(key == std::string("ipi.deliver_socket") ? "coherence.llc_transfer" : "coherence.remote_transfer");
    const double extra = remote.median - local.median;
    r.note("  remote shootdown round trip: the difference of the two medians", {extra, extra, extra, 1});
    const double other =
        r.fields.ns("ipi.send") + r.fields.ns("ipi.handler_entry") + r.fields.ns("tlb.invlpg") + 3 * transfer;
    const double deliver = std::max(transfer, extra - other);
    r.fields.measure(key, deliver,
                     r.from(remote, fmt::format("remote shootdown round trip = madvise(MADV_DONTNEED) of one page with "
                                                "a thread of the mm spinning on CPU {} ({:.1f} ns) less the same alone "
                                                "({:.1f} ns) = {:.1f} ns, less send, handler_entry, invlpg and 3 line "
                                                "transfers ({:.1f} ns){}; figure is the madvise with the remote CPU",
                                                pair->second, remote.median, local.median, extra, other,
                                                deliver == transfer ? ", clamped to one line transfer" : "")));
    if (auto mb = in_thread([&, p = *pair] { return membarrier_ns(p.first, p.second, s); })) {
      r.note(fmt::format("membarrier(PRIVATE_EXPEDITED), thread on CPU {} (IPI round trip)", pair->second), *mb);
    }
    if (key == std::string("ipi.deliver_socket")) {
      Spread single, long_halt, short_halt;
      r.wakeup =
          r.note(fmt::format("wake-up of a thread asleep 1 ms on CPU {} (pipe write to read's return)", pair->second),
                 in_thread([&, p = *pair] {
                   return wakeup_ns(p.first, p.second, s, std::chrono::milliseconds(1), &single, &long_halt);
                 }));
      if (single.n >= 10) r.single_wakeup = r.note("  the same, single wake-ups (n: wake-ups)", single);
      if (long_halt.n >= 10) r.long_halt = r.note("  how long its CPU had halted (n: wake-ups)", long_halt);
      // A vCPU halted for tens of microseconds wakes faster than one halted 1 ms (a KVM host's halt polling, and
      // its own idle states): the HLT state's exit_latency_short.
      r.short_wakeup =
          r.note(fmt::format("wake-up of a thread asleep 30 us on CPU {} (pipe write to read's return)", pair->second),
                 in_thread([&, p = *pair] {
                   return wakeup_ns(p.first, p.second, s, std::chrono::microseconds(30), nullptr, &short_halt);
                 }));
      if (short_halt.n >= 10) r.short_halt = r.note("  how long its CPU had halted (n: wake-ups)", short_halt);
      // Briefer still: mmap_storm's real waits last about 20 us each (issue 31, part 13), and a vCPU halted a few
      // microseconds wakes faster again (the HLT state's exit_latency_brief).
      Spread brief_halt;
      r.brief_wakeup =
          r.note(fmt::format("wake-up of a thread 5 us after it blocked on CPU {} (waker spinning)", pair->second),
                 in_thread([&, p = *pair] {
                   return brief_wakeup_ns(p.first, p.second, s, std::chrono::microseconds(5), &brief_halt);
                 }));
      if (brief_halt.n >= 10) r.brief_halt = r.note("  how long its CPU had halted (n: wake-ups)", brief_halt);
    }
  }
  if (auto mb = in_thread([&] { return membarrier_ns(r.cpu0, std::nullopt, s); })) {
    r.note("membarrier(PRIVATE_EXPEDITED), no other thread", *mb);
  }
}

// The machine file's leading comments: the host, its load, and every figure measured.
std::string file_header(const CalibrationRun& r, const std::string& load_at_start) {
  const Calibration& cal = r.cal;
  std::string f;
  f += fmt::format("# Machine file written by `tlbsim calibrate` on {} at {}.\n", r.info.hostname, utc_now());
  f += fmt::format("# Host: {}, {} Linux {}, {} online CPUs.\n", r.info.cpu_model, r.info.machine, r.info.release,
                   cal.host.cpus.size());
  for (const std::string& n : cal.host.notes) f += fmt::format("# Topology: {}.\n", n);
  f += fmt::format(
      "# Load average (1, 5, 15 min) when calibration started: {}; other runnable tasks share the CPUs the\n"
      "# benchmarks are pinned to and widen the spreads.\n",
      load_at_start);
  f += fmt::format("# Measured here (median, p10/p90 {}):\n", r.reps);
  for (const auto& m : cal.figures) f += fmt::format("#   {:<62} {}\n", m.what, describe(m.spread));
  f += fmt::format(
      "# Fields marked DEFAULT cannot be measured from user space (or this host lacks the CPU pair)\n"
      "# and keep the figure of the built-in machine {} with its source.\n\n",
      cal.base_machine);
  return f;
}

// The file's [machine], [topology], [coherence] and [ipi] tables.
std::string file_hardware_tables(const CalibrationRun& r) {
  const Calibration& cal = r.cal;
  const Fields& fields = r.fields;
  const hw::TopologyParams& t = cal.host.params;
  std::string f = fmt::format(
      "[machine]\nname = {}\ndescription = {}\narch = \"{}\"\nseeds = []\n\n", toml_quote(r.o.name),
      toml_quote(fmt::format("Calibrated from {} ({}, {} CPUs, Linux {}) by tlbsim calibrate, {}", r.info.hostname,
                             r.info.cpu_model, cal.host.cpus.size(), r.info.release, utc_now())),
      r.ppc ? "powerpc64" : "x86_64");
  f += fmt::format(
      "[topology]\n# From {}/cpu*/topology and cache/index*.\nsockets = {}\ncores_per_socket = {}\n"
      "threads_per_core = {}\ncores_per_llc = {}\nsockets_per_group = {}\ncpu_numbering = \"{}\"\n\n",
      "/sys/devices/system/cpu", t.sockets, t.cores_per_socket, t.threads_per_core, t.cores_per_llc,
      t.sockets_per_group, t.numbering == hw::CpuNumbering::kSmtLast ? "smt-last" : "smt-consecutive");
  f += "[coherence]\n" + fields.line("coherence.l1_hit") + fields.line("coherence.local_rmw");
  if (t.threads_per_core > 1) f += fields.line("coherence.smt_transfer");
  f += fields.line("coherence.llc_transfer");
  if (t.cores_per_llc < t.cores_per_socket) f += fields.line("coherence.socket_transfer");
  if (t.sockets > 1) f += fields.line("coherence.remote_transfer");
  f += fields.line("coherence.memory") + "\n";
  f += fmt::format(
      "[ipi]\n# DEFAULT: the APIC destination mode is not visible from user space; {}'s value\n"
      "cluster_size = {}\n",
      cal.base_machine, r.base.ipi.cluster_size);
  f += fields.line("ipi.send") + fields.line("ipi.deliver_socket");
  if (t.sockets > 1) f += fields.line("ipi.deliver_remote");
  f += fields.line("ipi.handler_entry") + fields.line("ipi.handler_exit") + "\n";
  return f;
}

// The idle loop: /sys/devices/system/cpu/cpuidle/current_driver. Without a cpuidle driver ("none", or no cpuidle
// directory, as in a KVM guest without ACPI _CST or haltpoll) x86's default_idle halts with TIF_POLLING_NRFLAG
// clear, so every wake-up of an idle CPU is an IPI: written as one non-polling HLT state. So is a KVM guest's
// cpuidle-haltpoll driver whose poll window (/sys/module/haltpoll/parameters/guest_halt_poll_ns) is 0: the haltpoll
// governor then never grows its poll limit and always picks the halting state. Any other driver's states are not
// read (the modeled idle loop then polls).
std::string idle_states(const CalibrationRun& r) {
  std::string driver, halt_poll_ns;
  if (std::ifstream in("/sys/devices/system/cpu/cpuidle/current_driver"); in) std::getline(in, driver);
  if (std::ifstream in("/sys/module/haltpoll/parameters/guest_halt_poll_ns"); in) std::getline(in, halt_poll_ns);
  if (driver == "haltpoll" && halt_poll_ns == "0") driver = "haltpoll with guest_halt_poll_ns = 0 (never polls)";
  if (r.ppc || (!driver.empty() && driver != "none" && !driver.starts_with("haltpoll with"))) {
    return fmt::format(
        "\n# No [[idle.states]]: the states of cpuidle driver '{}' are not read; the modeled idle loop "
        "polls.\n",
        driver.empty() ? "?" : driver);
  }
  // The halted CPU's exit: the measured wake-up less the reschedule IPI's send and delivery (ipi.send,
  // ipi.deliver_socket), which the model charges apart; the pipe and scheduler work of the wake-up, which the model
  // also charges, is left in.
  std::string exit =
      "{ ns = 1000.0, source = \"ESTIMATE: the C1 (HLT) exit latency the kernel assumes when no firmware "
      "table gives one (ACPI C1 worst-case latency 1 us); the wake-up's interrupt delivery is charged "
      "apart (ipi.deliver_socket)\" }";
  // With single wake-ups timed, the state's exit latency is their median and its percentiles their p10 and p90,
  // each less the same send and delivery: each halt's exit is then drawn from that spread (hw::IdleState).
  if (r.wakeup && r.fields.ns("ipi.deliver_socket") > 0) {
    const double deliver = r.fields.ns("ipi.deliver_socket");
    const double send = r.fields.ns("ipi.send");
    const Spread& w = r.single_wakeup ? *r.single_wakeup : *r.wakeup;
    const double e = std::max(1.0, w.median - send - deliver);
    const std::string what = r.single_wakeup ? "single wake-ups of a thread asleep 1 ms on another CPU, median"
                                             : "wake-up of a thread asleep 1 ms on another CPU";
    const auto from = [&](const std::string& how) { return r.single_wakeup ? r.from_samples(w, how) : r.from(w, how); };
    exit = fmt::format(
        "{{ ns = {:.1f}, source = \"{}\" }}", e,
        from(fmt::format("{} ({:.1f} ns) less ipi.send ({:.1f} ns) and ipi.deliver_socket ({:.1f} ns){}; figure "
                         "is the whole wake-up",
                         what, w.median, send, deliver, e == 1.0 ? ", clamped to 1 ns" : "")));
    if (r.single_wakeup) {
      const double lo = std::min(e, std::max(1.0, w.p10 - send - deliver)), hi = std::max(e, w.p90 - send - deliver);
      const auto pct = [&](const char* name, double v, double raw) {
        return fmt::format(
            "\nexit_latency_{} = {{ ns = {:.1f}, source = \"{}\" }}", name, v,
            r.from_samples(w, fmt::format("the {} of single wake-ups of a thread asleep 1 ms on another CPU "
                                          "({:.1f} ns) less ipi.send and ipi.deliver_socket",
                                          name, raw)));
      };
      exit += pct("p10", lo, w.p10) + pct("p90", hi, w.p90);
    }
  }
  // The exit after a short halt: the wake-up of a thread asleep 30 us, less the same send and delivery. A vCPU
  // halted briefly wakes faster than one halted 1 ms (the host's halt polling, and its own idle states): each halt's
  // exit is then scaled by its length between the two (hw::IdleState::exit_latency_short).
  if (r.wakeup && r.short_wakeup && r.long_halt && r.short_halt && r.short_halt->median < r.long_halt->median &&
      r.fields.ns("ipi.deliver_socket") > 0) {
    const double deliver = r.fields.ns("ipi.deliver_socket");
    const double send = r.fields.ns("ipi.send");
    const Spread& w = *r.short_wakeup;
    const double e = std::max(1.0, w.median - send - deliver);
    const auto halt = [&](const Spread& h, const char* which) {
      return fmt::format("{{ ns = {:.1f}, source = \"{}\" }}", h.median,
                         r.from_samples(h, fmt::format("how long the sleeper's CPU had halted when each of the {} "
                                                       "wake-ups began (its block in read() to the write)",
                                                       which)));
    };
    exit += fmt::format(
        "\nshort_halt = {}\nexit_latency_short = {{ ns = {:.1f}, source = \"{}\" }}\nlong_halt = {}",
        halt(*r.short_halt, "30 us"), e,
        r.from(w, fmt::format("wake-up of a thread asleep 30 us on another CPU ({:.1f} ns) less ipi.send ({:.1f} ns) "
                              "and ipi.deliver_socket ({:.1f} ns){}; figure is the whole wake-up",
                              w.median, send, deliver, e == 1.0 ? ", clamped to 1 ns" : "")),
        halt(*r.long_halt, "1 ms"));
    if (r.brief_wakeup && r.brief_halt && r.brief_halt->median < r.short_halt->median) {
      const Spread& b = *r.brief_wakeup;
      const double eb = std::max(1.0, b.median - send - deliver);
      exit += fmt::format(
          "\nbrief_halt = {}\nexit_latency_brief = {{ ns = {:.1f}, source = \"{}\" }}", halt(*r.brief_halt, "5 us"), eb,
          r.from(b, fmt::format("wake-up of a thread 5 us after it blocked on another CPU ({:.1f} ns) less ipi.send "
                                "and ipi.deliver_socket{}; figure is the whole wake-up",
                                b.median, eb == 1.0 ? ", clamped to 1 ns" : "")));
    }
  }
  return fmt::format(
      "\n# cpuidle driver: {}. x86 default_idle halts with TIF_POLLING_NRFLAG clear, so a wake-up of an idle CPU\n"
      "# is a reschedule IPI (delivered as ipi.deliver_socket).\n"
      "[[idle.states]]\nname = \"HLT\"\nexit_latency = {}\n"
      "target_residency = {{ ns = 1.0, source = \"default_idle has no residency target: it halts whenever the CPU has "
      "nothing to run\" }}\nflushes_tlb = false\npolls = false\n",
      driver.empty() ? "none (no /sys/devices/system/cpu/cpuidle/current_driver)" : driver, exit);
}

// The file's [kernel] and [tlb] tables and its closing note.
std::string file_kernel_tables(const CalibrationRun& r) {
  const Fields& fields = r.fields;
  const bool ppc = r.ppc;
  std::string f = "[kernel]\n";
  for (const char* k :
       {"syscall", "page_fault", "page_alloc", "page_copy", "page_zero", "pte_update", "memcg_charge", "lru_update",
        "rmap_update", "fault_around_page", "fault_around_skip", "mmap_region", "munmap_vmas", "unix_sendmsg",
        "unix_recvmsg", "context_switch", "try_to_wake_up", "pipe_write", "pipe_read"}) {
    f += fields.line(std::string("kernel.") + k);
  }
  const bool tag_none = !ppc && !r.info.pcid;
  f += fmt::format("\n[tlb]\n# DEFAULT: TLB geometry is not visible from user space; {}'s\nentries = {}\nways = {}\n",
                   r.cal.base_machine, r.base.tlb.entries, r.base.tlb.ways);
  f += fmt::format("tag = \"{}\"  # /proc/cpuinfo flags: {}\ntag_bits = {}\n",
                   ppc        ? "pid"
                   : tag_none ? "none"
                              : "pcid",
                   ppc           ? "powerpc"
                   : r.info.pcid ? "pcid present"
                                 : "no pcid",
                   tag_none ? 0 : r.base.tlb.tag_bits);
  for (const char* k : {"page_walk", "invlpg", "flush_tag", "flush_all", "cr3_write", "cr3_write_flush"}) {
    f += fields.line(std::string("tlb.") + k);
  }
  if (ppc) f += fields.line("tlb.tlbie");
  f += idle_states(r);
  if (r.step_spread) {
    const Spread& sp = *r.step_spread;
    f += fmt::format(
        "\n# How much one kernel operation's duration varies between executions; every modeled step and wake-up\n"
        "# is drawn within -+ step_spread of its cost (docs/calibration.md, \"Step spread\").\n[timing]\n"
        "step_spread = {{ value = {:.3f}, source = \"MEASURED on {} ({}) by tlbsim calibrate, {}: write faults of "
        "anonymous pages, each timed alone; (p90 - p10) / (1.6 x median) of the single faults, the spread of a uniform "
        "draw with the same 10th-90th percentile range; median {:.3f}, p10 {:.3f}, p90 {:.3f} {}{}\" }}\n",
        std::min(sp.median, 0.5), r.info.hostname, r.info.cpu_model, utc_now(), sp.median, sp.p10, sp.p90, r.reps,
        sp.median > 0.5 ? ", clamped to 0.5" : "");
  }
  return f;
}

}  // namespace

std::string toml_quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

Calibration calibrate_host(const CalibrateOptions& o, std::ostream& progress) {
  if (!native_supported()) throw std::runtime_error("calibrate measures the host's Linux kernel; this is not Linux");
  Calibration cal;
  const std::string load_at_start = load_average();
  cal.host = read_host_topology();
  const HostInfo info = host_info();
  const bool ppc = info.machine.starts_with("ppc64");
  cal.base_machine = ppc ? "power9-2s16c-smt4" : "small-2s2c";
  const hw::Machine base = hw::load_machine(cal.base_machine);
  Fields fields(base);
  const std::string reps = fmt::format("over {} repetitions", o.scale.repetitions);
  CalibrationRun r{o,
                   progress,
                   cal,
                   info,
                   base,
                   fields,
                   ppc,
                   reps,
                   cal.host.cpus.front().cpu,
                   std::nullopt,
                   std::nullopt,
                   std::nullopt,
                   std::nullopt,
                   std::nullopt,
                   std::nullopt,
                   std::nullopt,
                   std::nullopt};
  const TransferPairs pairs = measure_coherence(r);
  measure_kernel_costs(r);
  r.step_spread = in_thread([&] { return fault_step_spread(o.scale); });
  progress << fmt::format("calibrate: {:<58} {:.3f} (p10 {:.3f}, p90 {:.3f}, n {})\n",
                          "step spread of single write faults", r.step_spread->median, r.step_spread->p10,
                          r.step_spread->p90, r.step_spread->n)
           << std::flush;
  measure_scheduler_costs(r);
  // TLB shootdown round trips: madvise(MADV_DONTNEED) of one page with and without a remote CPU in the mm.
  const Spread local = measure_local_flush(r);
  measure_remote_shootdowns(r, pairs, local);
  cal.toml = file_header(r, load_at_start);
  cal.toml += file_hardware_tables(r);
  cal.toml += file_kernel_tables(r);
  // The file must load as a machine file (it is parsed here so that a bad file is never written).
  hw::parse_machine(cal.toml, "calibrated");
  return cal;
}

}  // namespace tlbsim::native
