// `tlbsim offcpu FILE`: a real kernel's off-CPU waits, read from ftrace text with a stack trace per sched_switch,
// in the table `tlbsim run --offcpu` prints for the model, so that the two can be set side by side.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <ostream>

#include "cli/command.h"
#include "cli/validators.h"
#include "trace/ftrace_offcpu.h"
#include "util/atomic_file.h"
#include "util/error.h"
#include "util/registry.h"

namespace tlbsim::cli {

namespace {

class OffCpuCommand final : public Command {
 public:
  CLI::App* define(CLI::App& parent) override {
    CLI::App* c = parent.add_subcommand(
        "offcpu", "Read a real kernel's off-CPU waits from ftrace text (sched_switch with stack traces)");
    c->add_option("file", file_,
                  "The trace: the text of /sys/kernel/tracing/trace (docs/usage.md, \"Where tasks wait\")")
        ->required();
    c->add_option("--comm", comm_, "Count only the tasks of this name (default: every task but the idle ones)");
    c->add_option("--ops", ops_, "The operations the traced run did, for the per-op column (default: none)");
    c->add_option("--format", format_, "Output format")->check(CLI::IsMember({"table", "json"}))->capture_default_str();
    c->add_option("--output", output_, "Write the result to this file (atomically) instead of stdout")
        ->check(non_empty());
    return c;
  }

  int run(Streams& io) override {
    if (!output_.empty()) check_output_path(output_, "--output");
    const trace::FtraceOffCpu r = trace::read_ftrace_offcpu(read_file(file_), file_, comm_);
    if (!comm_.empty() && r.profile.waits() == 0 && r.profile.still_out() == 0) {
      throw InputError(fmt::format("{}: no task named '{}' was switched out (--comm)", file_, comm_));
    }
    std::string text;
    if (format_ == "json") {
      nlohmann::json j = r.profile.to_json(ops_);
      j["file"] = file_;
      j["comm"] = comm_;
      j["switches"] = r.switches;
      j["stack_traces"] = r.stacks;
      // A task's comm is bytes, not always UTF-8: such bytes print as U+FFFD.
      text = j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
    } else {
      text = fmt::format("{}: {} sched_switch events, {} stack traces of the counted tasks{}\n", file_, r.switches,
                         r.stacks, comm_.empty() ? "" : fmt::format(" (--comm {})", comm_));
      text += r.profile.table(ops_, "the trace");
    }
    write_result(io, output_, text);
    return 0;
  }

 private:
  std::string file_;
  std::string comm_;
  std::uint64_t ops_ = 0;
  std::string format_ = "table";
  std::string output_;
};

}  // namespace

TLBSIM_REGISTER(Command, OffCpuCommand, "offcpu", "read a real kernel's off-CPU waits from ftrace text");

}  // namespace tlbsim::cli
