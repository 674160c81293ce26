// The timeline-trace options of `run` and `check --replay` (--trace, --ftrace and their filters), and the session
// that records one run and writes its files.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <memory>
#include <string>

#include "trace/chrome_writer.h"
#include "trace/ftrace_writer.h"
#include "trace/tracer.h"
#include "util/atomic_file.h"

namespace CLI {
class App;
}

namespace tlbsim::cli {

struct TraceOptions {
  std::string json_path;    // --trace FILE.json
  std::string ftrace_path;  // --ftrace FILE
  std::string window;       // --trace-window START:END
  std::string cpus;         // --trace-cpus LIST
  std::uint64_t max_events = 1'000'000;

  void define(CLI::App* c);
  bool enabled() const { return !json_path.empty() || !ftrace_path.empty(); }
  // Throws InputError when a filter option is given without a trace file, or an output's directory is missing or
  // unwritable (checked before the run, so a long run is not wasted).
  void validate() const;
};

// Contract: made before the run, handed to it as tracer(); the Chrome trace streams into a temporary file beside
// its path during the run (bounded memory; removed on failure or a terminating signal), the ftrace text is kept in
// memory (it is sorted by time at the end). write_files() after the run puts each file in place atomically, or
// throws InputError (exit status 2) when recording or writing failed (out of memory, a full disk), and notes sizes
// and truncation on `err`.
class TraceSession {
 public:
  TraceSession(const TraceOptions& o, std::uint32_t ncpus, std::string title, std::string about);
  trace::Tracer& tracer() { return tracer_; }
  void write_files(std::ostream& err);

 private:
  TraceOptions opts_;
  trace::Tracer tracer_;
  std::unique_ptr<AtomicFileWriter> json_file_;  // the Chrome trace streams into it during the run
  std::unique_ptr<trace::ChromeWriter> chrome_;
  std::unique_ptr<trace::FtraceWriter> ftrace_;
};

}  // namespace tlbsim::cli
