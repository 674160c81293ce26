// The Chrome trace-event JSON writer.
#include "trace/chrome_writer.h"

#include <fmt/format.h>

namespace tlbsim::trace {

std::string json_quote(std::string_view s) {
  std::string out = "\"";
  for (const char ch : s) {
    const auto u = static_cast<unsigned char>(ch);
    if (ch == '"' || ch == '\\') {
      out += '\\';
      out += ch;
    } else if (u < 0x20) {
      out += fmt::format("\\u{:04x}", u);
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

ChromeWriter::ChromeWriter(ChromeTraceInfo info) : info_(std::move(info)) {
  out_ = "{\"traceEvents\":[\n";
  out_ += fmt::format(R"({{"ph":"M","pid":1,"tid":0,"ts":0,"name":"process_name","args":{{"name":{}}}}})",
                      json_quote(info_.title));
  for (std::uint32_t c = 0; c < info_.ncpus; ++c) {
    if (!info_.cpus.empty() && (c >= info_.cpus.size() || !info_.cpus[c])) continue;
    out_ += fmt::format(
        ",\n{{\"ph\":\"M\",\"pid\":1,\"tid\":{},\"ts\":0,\"name\":\"thread_name\",\"args\":{{\"name\":"
        "\"CPU {}\"}}}}",
        c, c);
    out_ += fmt::format(
        ",\n{{\"ph\":\"M\",\"pid\":1,\"tid\":{},\"ts\":0,\"name\":\"thread_sort_index\",\"args\":{{"
        "\"sort_index\":{}}}}}",
        c, c);
  }
}

void ChromeWriter::open(char ph, std::uint32_t tid, sim::SimTime ts, std::string_view name, std::string_view cat) {
  out_ += fmt::format(",\n{{\"ph\":\"{}\",\"pid\":1,\"tid\":{},\"ts\":{},\"name\":{},\"cat\":{}", ph, tid,
                      format_us(ts), json_quote(name), json_quote(cat));
}

void ChromeWriter::write(const TraceEvent& e) {
  switch (e.kind) {
    case EventKind::kBegin:
      open('B', e.cpu, e.ts, e.name, e.cat);
      out_ += "}";
      break;
    case EventKind::kEnd:
      open('E', e.cpu, e.ts, e.name, e.cat);
      out_ += "}";
      break;
    case EventKind::kInstant:
      open('i', e.cpu, e.ts, e.name, e.cat);
      out_ += fmt::format(",\"s\":\"t\",\"args\":{{\"detail\":{}}}}}", json_quote(e.detail));
      break;
    case EventKind::kSchedSwitch:
      open('i', e.cpu, e.ts, "sched_switch", "sched");
      out_ += fmt::format(",\"s\":\"t\",\"args\":{{\"event\":{}}}}}", json_quote(e.detail));
      break;
    case EventKind::kIpiRaise:
      open('i', e.cpu, e.ts, fmt::format("IPI sent ({})", e.reason), "ipi");
      out_ +=
          fmt::format(",\"s\":\"t\",\"args\":{{\"target_mask\":{},\"vector\":{}}}}}", json_quote(e.detail), e.value);
      break;
    case EventKind::kIpiEntry:
      if (e.name != "ipi_entry") break;  // a local timer interrupt: its span is enough
      open('i', e.cpu, e.ts, fmt::format("IPI received ({})", e.reason), "ipi");
      out_ += fmt::format(",\"s\":\"t\",\"args\":{{\"vector\":{}}}}}", e.value);
      break;
    case EventKind::kIpiExit:
      break;
    case EventKind::kTlbFlush:
      open('i', e.cpu, e.ts, fmt::format("tlb_flush: {}", e.reason), "tlb");
      out_ += fmt::format(",\"s\":\"t\",\"args\":{{\"pages\":{},\"reason\":{}}}}}", e.value, e.id);
      break;
    case EventKind::kFlow:
      open('s', e.from_cpu, e.from_ts, "IPI", "ipi");
      out_ += fmt::format(",\"id\":{}}}", e.id);
      open('f', e.cpu, e.ts, "IPI", "ipi");
      out_ += fmt::format(",\"id\":{},\"bp\":\"e\"}}", e.id);
      break;
    case EventKind::kCounter:
      out_ += fmt::format(",\n{{\"ph\":\"C\",\"pid\":1,\"tid\":0,\"ts\":{},\"name\":{},\"args\":{{{}:{}",
                          format_us(e.ts), json_quote(e.name), json_quote(e.cat), e.number);
      if (!e.detail.empty()) out_ += fmt::format(",{}:{}", json_quote(e.detail), e.number2);
      out_ += "}}";
      break;
    case EventKind::kNote:
      out_ += fmt::format(",\n{{\"ph\":\"i\",\"s\":\"g\",\"pid\":1,\"tid\":0,\"ts\":{},\"name\":{}}}", format_us(e.ts),
                          json_quote(e.detail));
      notes_ += (notes_.empty() ? "" : "; ") + std::string(e.detail);
      break;
  }
}

std::string ChromeWriter::finish() {
  std::string out = std::move(out_);
  out += fmt::format("\n],\n\"displayTimeUnit\":\"ns\",\n\"otherData\":{{\"generator\":\"tlbsim\",\"run\":{}",
                     json_quote(info_.about));
  if (!notes_.empty()) out += fmt::format(",\"note\":{}", json_quote(notes_));
  out += "}}\n";
  return out;
}

}  // namespace tlbsim::trace
