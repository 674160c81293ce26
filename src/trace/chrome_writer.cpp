// The Chrome trace-event JSON writer.
#include "trace/chrome_writer.h"

#include <fmt/format.h>

namespace tlbsim::trace {

void quote_into(fmt::memory_buffer& out, std::string_view s) {
  out.push_back('"');
  for (const char ch : s) {
    const auto u = static_cast<unsigned char>(ch);
    if (ch == '"' || ch == '\\') {
      out.push_back('\\');
      out.push_back(ch);
    } else if (u < 0x20) {
      fmt::format_to(fmt::appender(out), "\\u{:04x}", u);
    } else {
      out.push_back(ch);
    }
  }
  out.push_back('"');
}

std::string json_quote(std::string_view s) {
  fmt::memory_buffer out;
  quote_into(out, s);
  return fmt::to_string(out);
}

ChromeWriter::ChromeWriter(ChromeTraceInfo info) : info_(std::move(info)) {
  put("{\"traceEvents\":[\n");
  fmt::format_to(fmt::appender(out_),
                 R"({{"ph":"M","pid":1,"tid":0,"ts":0,"name":"process_name","args":{{"name":{}}}}})",
                 json_quote(info_.title));
  for (std::uint32_t c = 0; c < info_.ncpus; ++c) {
    if (!info_.cpus.empty() && (c >= info_.cpus.size() || !info_.cpus[c])) continue;
    fmt::format_to(fmt::appender(out_),
                   ",\n{{\"ph\":\"M\",\"pid\":1,\"tid\":{},\"ts\":0,\"name\":\"thread_name\",\"args\":{{\"name\":"
                   "\"CPU {}\"}}}}",
                   c, c);
    fmt::format_to(fmt::appender(out_),
                   ",\n{{\"ph\":\"M\",\"pid\":1,\"tid\":{},\"ts\":0,\"name\":\"thread_sort_index\",\"args\":{{"
                   "\"sort_index\":{}}}}}",
                   c, c);
  }
}

void ChromeWriter::open(char ph, std::uint32_t tid, sim::SimTime ts, std::string_view name, std::string_view cat) {
  // The hot path of a big trace: formatted straight into the buffer.
  const std::int64_t ps = ts.time_since_epoch().count();
  fmt::format_to(fmt::appender(out_), ",\n{{\"ph\":\"{}\",\"pid\":1,\"tid\":{},\"ts\":{}.{:06},\"name\":", ph, tid,
                 ps / 1'000'000, ps % 1'000'000);
  quote_into(out_, name);
  put(",\"cat\":");
  quote_into(out_, cat);
}

void ChromeWriter::write(const TraceEvent& e) {
  // Full megabytes move to the chunk list, so the buffer never grows (and copies) past that.
  if (out_.size() >= (std::size_t{1} << 20)) {
    if (sink_) sink_(std::string_view(out_.data(), out_.size()));
    else chunks_.push_back(fmt::to_string(out_));
    out_.clear();
  }
  switch (e.kind) {
    case EventKind::kBegin:
      open('B', e.cpu, e.ts, e.name, e.cat);
      put("}");
      break;
    case EventKind::kEnd:
      open('E', e.cpu, e.ts, e.name, e.cat);
      put("}");
      break;
    case EventKind::kInstant:
      open('i', e.cpu, e.ts, e.name, e.cat);
      fmt::format_to(fmt::appender(out_), ",\"s\":\"t\",\"args\":{{\"detail\":{}}}}}", json_quote(e.detail));
      break;
    case EventKind::kSchedSwitch:
      open('i', e.cpu, e.ts, "sched_switch", "sched");
      fmt::format_to(fmt::appender(out_), ",\"s\":\"t\",\"args\":{{\"event\":{}}}}}", json_quote(e.detail));
      break;
    case EventKind::kIpiRaise:
      open('i', e.cpu, e.ts, fmt::format("IPI sent ({})", e.reason), "ipi");
      fmt::format_to(fmt::appender(out_), ",\"s\":\"t\",\"args\":{{\"target_mask\":{},\"vector\":{}}}}}",
                     json_quote(e.detail), e.value);
      break;
    case EventKind::kIpiEntry:
      if (e.name != "ipi_entry") break;  // a local timer interrupt: its span is enough
      open('i', e.cpu, e.ts, fmt::format("IPI received ({})", e.reason), "ipi");
      fmt::format_to(fmt::appender(out_), ",\"s\":\"t\",\"args\":{{\"vector\":{}}}}}", e.value);
      break;
    case EventKind::kIpiExit:
      break;
    case EventKind::kTlbFlush:
      open('i', e.cpu, e.ts, fmt::format("tlb_flush: {}", e.reason), "tlb");
      fmt::format_to(fmt::appender(out_), ",\"s\":\"t\",\"args\":{{\"pages\":{},\"reason\":{}}}}}", e.value, e.id);
      break;
    case EventKind::kFlow:
      open('s', e.from_cpu, e.from_ts, "IPI", "ipi");
      fmt::format_to(fmt::appender(out_), ",\"id\":{}}}", e.id);
      open('f', e.cpu, e.ts, "IPI", "ipi");
      fmt::format_to(fmt::appender(out_), ",\"id\":{},\"bp\":\"e\"}}", e.id);
      break;
    case EventKind::kCounter:
      fmt::format_to(fmt::appender(out_),
                     ",\n{{\"ph\":\"C\",\"pid\":1,\"tid\":0,\"ts\":{},\"name\":{},\"args\":{{{}:{}", format_us(e.ts),
                     json_quote(e.name), json_quote(e.cat), e.number);
      if (!e.detail.empty()) fmt::format_to(fmt::appender(out_), ",{}:{}", json_quote(e.detail), e.number2);
      put("}}");
      break;
    case EventKind::kNote:
      fmt::format_to(fmt::appender(out_), ",\n{{\"ph\":\"i\",\"s\":\"g\",\"pid\":1,\"tid\":0,\"ts\":{},\"name\":{}}}",
                     format_us(e.ts), json_quote(e.detail));
      notes_ += (notes_.empty() ? "" : "; ") + std::string(e.detail);
      break;
  }
}

std::string ChromeWriter::finish() {
  std::size_t size = out_.size() + 256 + info_.about.size() + notes_.size();
  for (const std::string& c : chunks_) size += c.size();
  std::string out;
  out.reserve(size);
  for (std::string& c : chunks_) {
    out += c;
    std::string().swap(c);
  }
  chunks_.clear();
  out.append(out_.data(), out_.size());
  out_ = fmt::memory_buffer();
  out += fmt::format("\n],\n\"displayTimeUnit\":\"ns\",\n\"otherData\":{{\"generator\":\"tlbsim\",\"run\":{}",
                     json_quote(info_.about));
  if (!notes_.empty()) out += fmt::format(",\"note\":{}", json_quote(notes_));
  out += "}}\n";
  return out;
}

}  // namespace tlbsim::trace
