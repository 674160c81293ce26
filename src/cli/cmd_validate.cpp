// `tlbsim validate`: native benchmarks on this host's kernel beside the same workloads simulated on the calibrated
// machine with the closest kernel profile.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <ostream>
#include <sstream>
#include <stdexcept>

#include "cli/command.h"
#include "cli/validators.h"
#include "hw/machine.h"
#include "hw/machine_set.h"
#include "native/file_workload.h"
#include "native/host.h"
#include "native/validate.h"
#include "native/workloads.h"
#include "util/atomic_file.h"
#include "util/error.h"
#include "util/int_list.h"
#include "util/registry.h"
#include "workloads/file/workload_file.h"

namespace tlbsim::cli {

namespace {

// The native benchmarks `tlbsim validate` runs on the host.
class NativeListing final : public Listing {
 public:
  std::vector<std::pair<std::string, std::string>> rows() const override { return native::native_workloads(); }
};
TLBSIM_REGISTER(Listing, NativeListing, "native", "native benchmarks `tlbsim validate` runs on this host's kernel");

class ValidateCommand final : public Command {
 public:
  CLI::App* define(CLI::App& parent) override {
    CLI::App* c = parent.add_subcommand("validate", "Run native benchmarks on this host and the same in the simulator");
    workloads_opt_ = c->add_option("--workloads", workloads_, "Comma-separated native workloads (`tlbsim list native`)")
                         ->capture_default_str();
    c->add_option("--workload", files_,
                  "A workload .toml file, run natively and simulated (repeatable; replaces the default --workloads)");
    c->add_option("--threads", threads_, "Thread counts, e.g. 1,2 (default: 1 and the online CPUs)");
    c->add_option("--seconds", o_.seconds, "Measured wall time per native run")->capture_default_str();
    c->add_option("--runs", o_.runs, "Native runs per workload and thread count (the modes they settle in are shown)")
        ->capture_default_str();
    c->add_option("--machine", o_.machine, "Machine name or file (default: calibrate this host in-process)");
    c->add_option("--set", o_.machine_set,
                  "Replace a parameter of the simulated machine: KEY=VALUE, e.g. idle.HLT.exit_latency=12us "
                  "(repeatable; as `tlbsim run --set`)");
    c->add_option("--kernel", o_.kernel, "Kernel profile (default: the x86 profile closest to `uname -r`)");
    c->add_option("--sim-duration", o_.sim_duration, "Simulated time per simulated run")->capture_default_str();
    c->add_option("--format", format_, "Output format")->check(CLI::IsMember({"table", "json"}))->capture_default_str();
    c->add_option("--output", output_, "Write the result to this file (atomically) instead of stdout")->check(non_empty());
    c->add_flag("--qemu", qemu_, "Run the native side in a QEMU guest booted from /boot/vmlinuz-* (with --smp)");
    c->add_option("--smp", smp_, "CPUs of the QEMU guest");
    return c;
  }

  int run(Streams& io) override {
    if (!output_.empty()) check_output_path(output_, "--output");  // before the work, not after it
    if (qemu_ != (smp_ != 0)) throw InputError("--qemu and --smp N go together");
    if (qemu_ && smp_ > 64) throw InputError(fmt::format("--smp: {} is outside 1..64", smp_));
    o_.qemu_smp = qemu_ ? smp_ : 0;
    // The machine and its --set settings are checked before the native runs, not after them.
    (void)hw::parse_machine_settings(o_.machine_set);
    if (!o_.machine.empty()) (void)hw::load_machine(o_.machine, o_.machine_set);
    o_.workloads.clear();
    std::stringstream ws(workloads_);
    for (std::string w; std::getline(ws, w, ',');) {
      if (w.empty()) throw InputError(fmt::format("--workloads: empty name in '{}'", workloads_));
      if (!files_.empty() && workloads_opt_->count() == 0) break;  // --workload alone: only the files
      o_.workloads.push_back(w);
    }
    for (const std::string& f : files_) {
      if (!workloads::is_workload_file_name(f)) {
        throw InputError(fmt::format("--workload: '{}' is not a .toml file (native names go in --workloads)", f));
      }
      if (qemu_) throw InputError("--workload: workload files run on this host's kernel, not with --qemu");
      o_.workloads.push_back(f);
    }
    const std::uint32_t ncpus = qemu_ ? smp_ : static_cast<std::uint32_t>(native::read_host_topology().cpus.size());
    if (threads_.empty()) threads_ = ncpus > 1 ? fmt::format("1,{}", ncpus) : "1";
    o_.threads = parse_int_list(threads_, "--threads", 1, 1024);
    native::ValidateReport rep;
    try {
      rep = native::run_validation(o_, io.err);
    } catch (const std::runtime_error& e) {
      if (dynamic_cast<const InputError*>(&e) != nullptr) throw;
      io.err << fmt::format("tlbsim: error: validate: {}\n", e.what());
      return 1;
    }
    const std::string text = format_ == "json" ? native::to_json(rep).dump(2) + "\n" : native::to_table(rep);
    write_result(io, output_, text);
    return 0;
  }

 private:
  native::ValidateOptions o_;
  std::string workloads_ = "tlb_flush1,tlb_flush2,context_switch1,context_switch1_processes,mmap_storm";
  CLI::Option* workloads_opt_ = nullptr;
  std::vector<std::string> files_;
  std::string threads_;
  std::string format_ = "table";
  std::string output_;
  bool qemu_ = false;
  std::uint32_t smp_ = 0;
};

TLBSIM_REGISTER(Command, ValidateCommand, "validate", "native benchmarks on this host beside the simulator");

// The program a workload file's `spawn` executes natively (native/file_workload.h): hidden from --help, as users
// never type it.
class SpawnChildCommand final : public Command {
 public:
  CLI::App* define(CLI::App& parent) override {
    CLI::App* c = parent.add_subcommand("__spawn-child", "The child of a workload file's spawn (internal)");
    c->group("");
    c->add_option("file", file_)->required();
    c->add_option("n", n_)->required();
    return c;
  }
  int run(Streams&) override { return native::run_spawned_child(file_, n_); }

 private:
  std::string file_;
  std::size_t n_ = 0;
};

TLBSIM_REGISTER(Command, SpawnChildCommand, "__spawn-child", "the child of a workload file's spawn (internal)");

}  // namespace
}  // namespace tlbsim::cli
