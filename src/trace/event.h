// Timeline trace events as the tracer hands them to its writers (Chrome JSON, ftrace text), and the writer
// interface.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "sim/time.h"

namespace tlbsim::trace {

enum class EventKind : std::uint8_t {
  kBegin,        // a span opens on `cpu`: name, cat
  kEnd,          // the innermost open span of `cpu` closes
  kInstant,      // a point event on `cpu`: name, cat, detail
  kSchedSwitch,  // sched:sched_switch: detail is the event's text after "sched_switch: "
  kIpiRaise,     // an IPI sent: detail is the target mask, reason the vector's /proc/interrupts row
  kIpiEntry,     // an interrupt handler starts (after its kBegin): reason, vector
  kIpiExit,      // an interrupt handler ends (before its kEnd): reason, vector
  kTlbFlush,     // tlb:tlb_flush: reason text and number, pages
  kFlow,         // an IPI's arrow: from cpu `from_cpu` at `from_ts` to `cpu` at `ts`, id
  kCounter,      // a counter track sample: name, series `cat`, value (not bound to a CPU)
  kNote,         // a remark on the whole trace (truncation): detail
};

// Contract: string views are valid only during TraceWriter::write; times are simulated picoseconds.
struct TraceEvent {
  EventKind kind = EventKind::kInstant;
  sim::SimTime ts{};
  std::uint32_t cpu = 0;
  // The task current on `cpu` and the CPU's state, for ftrace's TASK-PID and flag columns.
  std::string_view comm;
  std::uint32_t pid = 0;
  bool irqs_off = false;
  bool in_irq = false;
  bool synthetic = false;  // a span end or begin the tracer added at a window edge, not a model event
  std::string_view name;
  std::string_view cat;
  std::string_view detail;
  std::string_view reason;
  std::int64_t value = 0;  // pages, vector, reason number
  // Counter samples: `cat` names the first series, `detail` (when not empty) a second one.
  double number = 0;
  double number2 = 0;
  std::uint64_t id = 0;  // flow id
  std::uint32_t from_cpu = 0;
  sim::SimTime from_ts{};
};

// Contract: receives events in recording order (nondecreasing time per CPU under the timed scheduler); finish()
// returns the whole file's text once, after the last event.
class TraceWriter {
 public:
  virtual ~TraceWriter() = default;
  virtual void write(const TraceEvent& e) = 0;
  virtual std::string finish() = 0;
};

// Picoseconds as microseconds with six decimals ("12.345678"), exact and locale-free.
std::string format_us(sim::SimTime t);

}  // namespace tlbsim::trace
