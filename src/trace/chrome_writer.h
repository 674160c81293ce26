// The Chrome trace-event JSON writer: the file Perfetto's UI and chrome://tracing open, one track per CPU.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <functional>
#include <string_view>
#include <string>
#include <vector>

#include "trace/event.h"

namespace tlbsim::trace {

struct ChromeTraceInfo {
  std::string title;  // the process name shown above the CPU tracks
  std::uint32_t ncpus = 0;
  std::vector<bool> cpus;  // the CPUs that get a named track (empty: all)
  std::string about;       // a line on what was run, kept in "otherData"
};

// Contract: {"traceEvents":[...],"displayTimeUnit":"ns","otherData":{...}}; pid 1 is the machine, tid the CPU;
// ts in microseconds with six decimals (exact picoseconds); spans as B/E, instants as "i", IPI arrows as s/f
// pairs with one id, counters as "C" on tid 0; thread_name/process_name metadata first.
class ChromeWriter final : public TraceWriter {
 public:
  explicit ChromeWriter(ChromeTraceInfo info);
  // Streams the file: each full megabyte goes to `sink` as it is written, so memory stays bounded however long
  // the trace; finish() then returns only the rest. Without a sink, finish() returns the whole file.
  void set_sink(std::function<void(std::string_view)> sink) { sink_ = std::move(sink); }
  void write(const TraceEvent& e) override;
  std::string finish() override;

 private:
  void open(char ph, std::uint32_t tid, sim::SimTime ts, std::string_view name, std::string_view cat);
  void put(std::string_view s) { out_.append(s.data(), s.data() + s.size()); }

  ChromeTraceInfo info_;
  std::function<void(std::string_view)> sink_;
  std::vector<std::string> chunks_;  // the file so far, in pieces of about 1 MB (without a sink)
  fmt::memory_buffer out_;           // the piece being written
  std::string notes_;
};

// A JSON string literal for `s` (quotes included), returned or appended to `out`.
std::string json_quote(std::string_view s);
void quote_into(fmt::memory_buffer& out, std::string_view s);

}  // namespace tlbsim::trace
