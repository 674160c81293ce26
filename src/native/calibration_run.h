// The state a calibration carries from one measurement to the next (internal to src/native/calibrate*.cpp): the
// host, the machine whose figures fill what is not measured, the fields measured so far, and how a figure is noted
// and sourced.
#pragma once

#include <fmt/format.h>

#include <exception>
#include <map>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <thread>

#include "hw/machine.h"
#include "native/calibrate.h"
#include "native/spread.h"

namespace tlbsim::native {

// Runs `f` on a thread of its own, so that the pinning it does leaves the caller's affinity alone.
template <class F>
auto in_thread(F f) -> decltype(f()) {
  std::optional<decltype(f())> out;
  std::exception_ptr error;
  std::thread t([&] {
    try {
      out.emplace(f());
    } catch (...) {
      error = std::current_exception();
    }
  });
  t.join();
  if (error) std::rethrow_exception(error);
  return std::move(*out);
}

struct HostInfo {
  std::string machine = "unknown", release = "unknown", hostname = "host", cpu_model = "unknown CPU";
  bool pcid = false;
};

// uname and /proc/cpuinfo.
HostInfo host_info();

// The current time as "YYYY-MM-DD HH:MM UTC".
std::string utc_now();

struct Field {
  double ns = 0;
  std::string source;
  bool measured = false;
};

// The machine file's latency fields: the base machine's defaults, overridden by what was measured.
class Fields {
 public:
  explicit Fields(const hw::Machine& base) : base_(base.name) {
    for (const auto& r : base.latencies) f_[r.key] = {r.ns, r.source, false};
  }
  void measure(const std::string& key, double ns, std::string source) { f_[key] = {ns, std::move(source), true}; }
  double ns(const std::string& key) const { return at(key).ns; }
  bool measured(const std::string& key) const { return at(key).measured; }
  std::string line(const std::string& key) const {
    const Field& f = at(key);
    const std::string name = key.substr(key.find('.') + 1);
    if (f.measured) return fmt::format("{} = {{ ns = {:.1f}, source = {} }}\n", name, f.ns, toml_quote(f.source));
    return fmt::format(
        "# DEFAULT: not measured on this host; the {} figure, with its source\n"
        "{} = {{ ns = {:.1f}, source = {} }}\n",
        base_, name, f.ns, toml_quote("DEFAULT (not measured on this host; from builtin " + base_ + "): " + f.source));
  }

 private:
  const Field& at(const std::string& key) const {
    if (auto it = f_.find(key); it != f_.end()) return it->second;
    // A class of transfer the base machine lacks: the nearest class it has.
    for (const char* k : {"coherence.llc_transfer", "coherence.remote_transfer", "ipi.deliver_socket"}) {
      if (key.starts_with(std::string(k).substr(0, 4)) && f_.count(k) != 0) return f_.at(k);
    }
    throw std::logic_error("calibrate: no default for " + key);
  }
  std::string base_;
  std::map<std::string, Field> f_;
};

// One calibration in progress: the host, the machine it starts from, the fields measured so far, and how a figure
// is noted and sourced.
struct CalibrationRun {
  const CalibrateOptions& o;
  std::ostream& progress;
  Calibration& cal;
  const HostInfo& info;
  const hw::Machine& base;
  Fields& fields;
  bool ppc;
  std::string reps;  // "over N repetitions"
  std::uint32_t cpu0;
  std::optional<Spread> wakeup;  // the wake-up of a thread asleep on another CPU of the package (wakeup_ns)
  std::optional<Spread> step_spread;  // fault_step_spread: a fraction, not ns
  std::optional<Spread> short_wakeup;  // the same wake-up after 30 us asleep
  std::optional<Spread> brief_wakeup;  // the same wake-up 5 us after the sleeper blocked (brief_wakeup_ns)
  // How long the sleeper's CPU had halted at each write of the 1 ms, 30 us and brief probes.
  std::optional<Spread> long_halt, short_halt, brief_halt;
  std::optional<Spread> single_wakeup;  // every single wake-up of `wakeup`'s repetitions (n: how many)

  // Records a figure for the file's header and prints it.
  Spread note(const std::string& what, const Spread& sp) {
    cal.figures.push_back({what, sp});
    progress << fmt::format("calibrate: {:<58} {}\n", what, describe(sp)) << std::flush;
    return sp;
  }
  // The source of a measured field: where, when and how it was measured, and its spread.
  std::string from(const Spread& sp, const std::string& how) const {
    return fmt::format("MEASURED on {} ({}) by tlbsim calibrate, {}: {}; median {:.1f} ns, p10 {:.1f}, p90 {:.1f} {}",
                       info.hostname, info.cpu_model, utc_now(), how, sp.median, sp.p10, sp.p90, reps);
  }
  // The same for a spread of single samples, not of repetitions.
  std::string from_samples(const Spread& sp, const std::string& how) const {
    return fmt::format(
        "MEASURED on {} ({}) by tlbsim calibrate, {}: {}; median {:.1f} ns, p10 {:.1f}, p90 {:.1f} of {} "
        "samples",
        info.hostname, info.cpu_model, utc_now(), how, sp.median, sp.p10, sp.p90, sp.n);
  }
};

}  // namespace tlbsim::native
