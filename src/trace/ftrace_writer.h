// The ftrace text writer: the run's tlb:tlb_flush, sched:sched_switch and IPI events as the lines of a
// /sys/kernel/tracing/trace file, so grep, awk and trace-cmd-style scripts work on them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trace/event.h"

namespace tlbsim::trace {

// Contract: a "# tracer: nop" header with the column legend, then one line per event in timestamp order (ties in
// recording order): "<comm>-<pid> [CPU] flags SECONDS.MICROS: event: fields", fields formatted as the kernel's
// TP_printk formats them. Spans, arrows and counters have no ftrace form and are skipped.
class FtraceWriter final : public TraceWriter {
 public:
  explicit FtraceWriter(std::uint32_t ncpus) : ncpus_(ncpus) {}
  void write(const TraceEvent& e) override;
  std::string finish() override;

 private:
  struct Line {
    std::int64_t ts_ps;
    std::size_t at, size;  // in text_
  };
  void add(const TraceEvent& e, std::string_view event, std::string_view fields);

  std::uint32_t ncpus_;
  std::vector<Line> lines_;
  std::string text_;  // every line, in recording order
  std::string notes_;
};

}  // namespace tlbsim::trace
