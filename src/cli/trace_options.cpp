// The timeline-trace options and session.
#include "cli/trace_options.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <ostream>

#include "cli/validators.h"
#include "util/atomic_file.h"
#include "util/error.h"

namespace tlbsim::cli {

void TraceOptions::define(CLI::App* c) {
  c->add_option("--trace", json_path, "Write a timeline (Chrome trace-event JSON: ui.perfetto.dev, chrome://tracing)")
      ->check(non_empty());
  c->add_option("--ftrace", ftrace_path, "Write tlb_flush, sched_switch and IPI events as an ftrace text file")
      ->check(non_empty());
  c->add_option("--trace-window", window, "Trace only simulated times START:END, e.g. 1ms:2ms (either may be empty)");
  c->add_option("--trace-cpus", cpus, "Trace only these CPUs, e.g. 0-7,64");
  c->add_option("--trace-max-events", max_events, "Stop recording after this many events (0: no limit)")
      ->check(non_negative_integer())
      ->capture_default_str();
}


void TraceOptions::validate() const {
  if (!enabled() && (!window.empty() || !cpus.empty())) {
    throw InputError("--trace-window and --trace-cpus need --trace FILE.json or --ftrace FILE");
  }
  if (!json_path.empty()) check_output_path(json_path, "--trace");
  if (!ftrace_path.empty()) check_output_path(ftrace_path, "--ftrace");
}

TraceSession::TraceSession(const TraceOptions& o, std::uint32_t ncpus, std::string title, std::string about)
    : opts_(o), tracer_(ncpus, trace::parse_trace_filter(o.window, o.cpus, o.max_events, ncpus)) {
  if (!o.json_path.empty()) {
    trace::TraceFilter f = trace::parse_trace_filter(o.window, o.cpus, o.max_events, ncpus);
    json_file_ = std::make_unique<AtomicFileWriter>(o.json_path);
    chrome_ = std::make_unique<trace::ChromeWriter>(
        trace::ChromeTraceInfo{std::move(title), ncpus, std::move(f.cpus), std::move(about)});
    chrome_->set_sink([file = json_file_.get()](std::string_view bytes) { file->write(bytes); });
    tracer_.add_writer(*chrome_);
  }
  if (!o.ftrace_path.empty()) {
    ftrace_ = std::make_unique<trace::FtraceWriter>(ncpus);
    tracer_.add_writer(*ftrace_);
  }
}

void TraceSession::write_files(std::ostream& err) {
  if (const std::exception_ptr failure = tracer_.failure()) {
    // The ftrace text is the one kept in memory (the Chrome file streams): name it when it was asked for.
    const char* option = ftrace_ ? "--ftrace" : "--trace";
    try {
      std::rethrow_exception(failure);
    } catch (const std::bad_alloc&) {
      throw InputError(fmt::format(
          "{}: the trace did not fit in memory after {} events; narrow it with --trace-window or --trace-cpus, "
          "or lower --trace-max-events",
          option, tracer_.events()));
    } catch (const InputError& e) {
      throw InputError(fmt::format("{}: {}", option, e.what()));
    }
  }
  if (tracer_.truncated()) {
    err << fmt::format(
        "tlbsim: trace stopped after {} events (--trace-max-events); narrow it with --trace-window "
        "or --trace-cpus, or raise the limit\n",
        opts_.max_events);
  }
  if (chrome_) {
    json_file_->write(chrome_->finish());
    json_file_->commit();
    err << fmt::format("tlbsim: trace {}: {} events, {:.1f} MB\n", opts_.json_path, tracer_.events(),
                       static_cast<double>(json_file_->bytes_written()) / 1e6);
  }
  if (ftrace_) {
    const std::string text = ftrace_->finish();
    write_file_atomic(opts_.ftrace_path, text);
    err << fmt::format("tlbsim: ftrace {}: {:.1f} MB\n", opts_.ftrace_path, static_cast<double>(text.size()) / 1e6);
  }
}

}  // namespace tlbsim::cli
