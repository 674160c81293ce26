// The ftrace text writer.
#include "trace/ftrace_writer.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>

namespace tlbsim::trace {

void FtraceWriter::add(const TraceEvent& e, std::string_view event, std::string_view fields) {
  // TASK-PID (comm at most 15 characters, as TASK_COMM_LEN keeps it), CPU#, the irqs-off / need-resched /
  // hardirq / preempt-depth / migrate-disable flags, and the timestamp in seconds with microseconds.
  const std::string_view comm = e.pid == 0 ? std::string_view("<idle>") : e.comm.substr(0, 15);
  const std::int64_t ps = e.ts.time_since_epoch().count();
  const std::string flags = fmt::format("{}.{}..", e.irqs_off ? 'd' : '.', e.in_irq ? 'h' : '.');
  const std::size_t at = text_.size();
  fmt::format_to(std::back_inserter(text_), "{:>16}-{:<7} [{:03}] {} {:>5}.{:06}: {}: {}\n", comm, e.pid, e.cpu, flags,
                 ps / 1'000'000'000'000, ps / 1'000'000 % 1'000'000, event, fields);
  lines_.push_back(Line{ps, at, text_.size() - at});
}

void FtraceWriter::write(const TraceEvent& e) {
  if (e.synthetic) return;
  switch (e.kind) {
    case EventKind::kSchedSwitch:
      add(e, "sched_switch", e.detail);
      break;
    case EventKind::kIpiRaise:
      add(e, "ipi_raise", fmt::format("target_mask={} ({})", e.detail, e.reason));
      break;
    case EventKind::kIpiEntry:
    case EventKind::kIpiExit: {
      const bool entry = e.kind == EventKind::kIpiEntry;
      if (e.name == "ipi_entry" || e.name == "ipi_exit") {
        add(e, entry ? "ipi_entry" : "ipi_exit", fmt::format("({})", e.reason));
      } else {
        add(e, entry ? "local_timer_entry" : "local_timer_exit", "vector=236");  // LOCAL_TIMER_VECTOR 0xec
      }
      break;
    }
    case EventKind::kTlbFlush:
      add(e, "tlb_flush", fmt::format("pages:{} reason:{} ({})", e.value, e.reason, e.id));
      break;
    case EventKind::kNote:
      notes_ += fmt::format("# tlbsim: {}\n", e.detail);
      break;
    default:
      break;
  }
}

std::string FtraceWriter::finish() {
  const auto earlier = [](const Line& a, const Line& b) { return a.ts_ps < b.ts_ps; };
  const bool in_order = std::is_sorted(lines_.begin(), lines_.end(), earlier);  // a timed run's usual case
  if (!in_order) std::stable_sort(lines_.begin(), lines_.end(), earlier);
  std::string out = "# tracer: nop\n#\n";
  out += fmt::format("# entries-in-buffer/entries-written: {}/{}   #P:{}\n", lines_.size(), lines_.size(), ncpus_);
  out += notes_;
  out +=
      "#\n"
      "#                                _-----=> irqs-off/BH-disabled\n"
      "#                               / _----=> need-resched\n"
      "#                              | / _---=> hardirq/softirq\n"
      "#                              || / _--=> preempt-depth\n"
      "#                              ||| / _-=> migrate-disable\n"
      "#                              |||| /     delay\n"
      "#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION\n"
      "#              | |         |   |||||     |         |\n";
  if (in_order) {
    out += text_;
  } else {
    out.reserve(out.size() + text_.size());
    for (const Line& l : lines_) out.append(text_, l.at, l.size);
  }
  lines_.clear();
  text_.clear();
  return out;
}

}  // namespace tlbsim::trace
