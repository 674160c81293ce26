// The timeline-trace options and session.
#include "cli/trace_options.h"

#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <ostream>

#include "cli/validators.h"
#include "util/atomic_file.h"
#include "util/error.h"

namespace tlbsim::cli {

void TraceOptions::define(CLI::App* c) {
  c->add_option("--trace", json_path, "Write a timeline (Chrome trace-event JSON: ui.perfetto.dev, chrome://tracing)");
  c->add_option("--ftrace", ftrace_path, "Write tlb_flush, sched_switch and IPI events as an ftrace text file");
  c->add_option("--trace-window", window, "Trace only simulated times START:END, e.g. 1ms:2ms (either may be empty)");
  c->add_option("--trace-cpus", cpus, "Trace only these CPUs, e.g. 0-7,64");
  c->add_option("--trace-max-events", max_events, "Stop recording after this many events (0: no limit)")
      ->check(non_negative_integer())
      ->capture_default_str();
}

namespace {

void check_writable(const std::string& path, const char* option) {
  const std::filesystem::path p(path);
  const std::filesystem::path dir = p.has_parent_path() ? p.parent_path() : std::filesystem::path(".");
  std::error_code ec;
  if (std::filesystem::is_directory(p, ec)) throw InputError(fmt::format("{} {}: is a directory", option, path));
  if (!std::filesystem::is_directory(dir, ec)) {
    throw InputError(fmt::format("{} {}: cannot write: directory '{}' does not exist", option, path, dir.string()));
  }
  if (::access(dir.c_str(), W_OK) != 0) {
    throw InputError(fmt::format("{} {}: cannot write: directory '{}' is not writable", option, path, dir.string()));
  }
}

}  // namespace

void TraceOptions::validate() const {
  if (!enabled() && (!window.empty() || !cpus.empty())) {
    throw InputError("--trace-window and --trace-cpus need --trace FILE.json or --ftrace FILE");
  }
  if (!json_path.empty()) check_writable(json_path, "--trace");
  if (!ftrace_path.empty()) check_writable(ftrace_path, "--ftrace");
}

TraceSession::TraceSession(const TraceOptions& o, std::uint32_t ncpus, std::string title, std::string about)
    : opts_(o), tracer_(ncpus, trace::parse_trace_filter(o.window, o.cpus, o.max_events, ncpus)) {
  if (!o.json_path.empty()) {
    trace::TraceFilter f = trace::parse_trace_filter(o.window, o.cpus, o.max_events, ncpus);
    chrome_ = std::make_unique<trace::ChromeWriter>(
        trace::ChromeTraceInfo{std::move(title), ncpus, std::move(f.cpus), std::move(about)});
    tracer_.add_writer(*chrome_);
  }
  if (!o.ftrace_path.empty()) {
    ftrace_ = std::make_unique<trace::FtraceWriter>(ncpus);
    tracer_.add_writer(*ftrace_);
  }
}

void TraceSession::write_files(std::ostream& err) {
  if (tracer_.truncated()) {
    err << fmt::format(
        "tlbsim: trace stopped after {} events (--trace-max-events); narrow it with --trace-window "
        "or --trace-cpus, or raise the limit\n",
        opts_.max_events);
  }
  if (chrome_) {
    const std::string text = chrome_->finish();
    write_file_atomic(opts_.json_path, text);
    err << fmt::format("tlbsim: trace {}: {} events, {:.1f} MB\n", opts_.json_path, tracer_.events(),
                       static_cast<double>(text.size()) / 1e6);
  }
  if (ftrace_) {
    const std::string text = ftrace_->finish();
    write_file_atomic(opts_.ftrace_path, text);
    err << fmt::format("tlbsim: ftrace {}: {:.1f} MB\n", opts_.ftrace_path, static_cast<double>(text.size()) / 1e6);
  }
}

}  // namespace tlbsim::cli
