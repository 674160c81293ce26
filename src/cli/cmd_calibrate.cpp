// `tlbsim calibrate`: measures this host and writes a machine file for it.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <ostream>
#include <stdexcept>

#include "cli/command.h"
#include "cli/validators.h"
#include "native/calibrate.h"
#include "util/atomic_file.h"
#include "util/error.h"
#include "util/registry.h"

namespace tlbsim::cli {

namespace {

class CalibrateCommand final : public Command {
 public:
  CLI::App* define(CLI::App& parent) override {
    CLI::App* c = parent.add_subcommand("calibrate", "Measure this host and write a machine file for it");
    c->add_option("--out", out_, "Write the machine file here (atomically) instead of stdout")->check(non_empty());
    c->add_option("--name", opts_.name, "The machine's name in the file")->capture_default_str();
    c->add_option("--repetitions", opts_.scale.repetitions, "Samples per figure (spread: median, p10, p90)")
        ->capture_default_str();
    c->add_flag("--quick", quick_, "A tenth of the work per sample (a rough file in about a second)");
    return c;
  }

  int run(Streams& io) override {
    if (!out_.empty()) check_output_path(out_, "--out");  // before the work, not after it
    if (opts_.scale.repetitions < 3 || opts_.scale.repetitions > 1000) {
      throw InputError(fmt::format("--repetitions: {} is outside 3..1000", opts_.scale.repetitions));
    }
    if (opts_.name.empty() ||
        opts_.name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-_.") != std::string::npos) {
      throw InputError(
          fmt::format("--name: '{}' is not a machine name (lower-case letters, digits, '-', '_', '.')", opts_.name));
    }
    if (quick_) opts_.scale.work = 0.1;
    native::Calibration cal;
    try {
      cal = native::calibrate_host(opts_, io.err);
    } catch (const std::runtime_error& e) {
      if (dynamic_cast<const InputError*>(&e) != nullptr) throw;
      io.err << fmt::format("tlbsim: error: calibrate: {}\n", e.what());
      return 1;
    }
    if (out_.empty()) {
      io.out << cal.toml;
    } else {
      write_file_atomic(out_, cal.toml);
      io.err << fmt::format("calibrate: wrote {} (load it with --machine {})\n", out_, out_);
    }
    return 0;
  }

 private:
  std::string out_;
  native::CalibrateOptions opts_;
  bool quick_ = false;
};

TLBSIM_REGISTER(Command, CalibrateCommand, "calibrate", "measure this host and write a machine file");

}  // namespace
}  // namespace tlbsim::cli
