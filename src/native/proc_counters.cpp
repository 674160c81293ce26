#include "native/proc_counters.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#if defined(__linux__)
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace tlbsim::native {

namespace {

std::string slurp(const char* path) {
  std::ifstream in(path);
  if (!in) return {};
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string_view trim_left(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  return s;
}

// Parses a leading unsigned number of `s` (after blanks) and advances past it.
std::optional<std::uint64_t> take_number(std::string_view& s) {
  s = trim_left(s);
  std::uint64_t v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || (p != s.data() + s.size() && std::isspace(static_cast<unsigned char>(*p)) == 0)) {
    return std::nullopt;
  }
  s.remove_prefix(static_cast<std::size_t>(p - s.data()));
  return v;
}

}  // namespace

std::optional<std::uint64_t> interrupt_row_total(std::string_view text, std::string_view label) {
  while (!text.empty()) {
    const std::size_t eol = text.find('\n');
    std::string_view line = trim_left(text.substr(0, eol));
    text = eol == std::string_view::npos ? std::string_view{} : text.substr(eol + 1);
    if (!line.starts_with(label) || line.substr(label.size()).substr(0, 1) != ":") continue;
    line.remove_prefix(label.size() + 1);
    std::uint64_t total = 0;
    bool any = false;
    while (auto v = take_number(line)) {
      total += *v;
      any = true;
    }
    if (any) return total;
    return std::nullopt;
  }
  return std::nullopt;
}

std::map<std::string, std::uint64_t> vmstat_tlb(std::string_view text) {
  std::map<std::string, std::uint64_t> out;
  while (!text.empty()) {
    const std::size_t eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text = eol == std::string_view::npos ? std::string_view{} : text.substr(eol + 1);
    if (!line.starts_with("nr_tlb_")) continue;
    const std::size_t sp = line.find(' ');
    if (sp == std::string_view::npos) continue;
    std::string_view rest = line.substr(sp);
    if (auto v = take_number(rest)) out[std::string(line.substr(0, sp))] = *v;
  }
  return out;
}

#if defined(__linux__)

TlbFlushTracepoint::TlbFlushTracepoint(std::uint32_t ncpus) : ncpus_(ncpus) {
  std::string id_text;
  for (const char* p :
       {"/sys/kernel/tracing/events/tlb/tlb_flush/id", "/sys/kernel/debug/tracing/events/tlb/tlb_flush/id"}) {
    id_text = slurp(p);
    if (!id_text.empty()) break;
  }
  std::string_view id_view = id_text;
  const auto id = take_number(id_view);
  if (!id) {
    why_ = "the tlb:tlb_flush tracepoint is not visible (tracefs not mounted at /sys/kernel/tracing?)";
    return;
  }
  for (std::size_t r = 0; r < kTlbFlushReasons.size() && why_.empty(); ++r) {
    const std::string filter = fmt::format("reason == {}", r);
    for (std::uint32_t cpu = 0; cpu < ncpus; ++cpu) {
      perf_event_attr a{};
      a.type = PERF_TYPE_TRACEPOINT;
      a.size = sizeof(a);
      a.config = *id;
      const long fd = syscall(SYS_perf_event_open, &a, -1, static_cast<int>(cpu), -1, PERF_FLAG_FD_CLOEXEC);
      if (fd < 0) {
        why_ = fmt::format("perf_event_open(tlb:tlb_flush, cpu {}) failed (perf_event_paranoid or privileges)", cpu);
        break;
      }
      fds_.push_back(static_cast<int>(fd));
      if (ioctl(static_cast<int>(fd), PERF_EVENT_IOC_SET_FILTER, filter.c_str()) != 0) {
        why_ = "the tlb:tlb_flush tracepoint refused a filter on its reason field";
        break;
      }
    }
  }
}

TlbFlushTracepoint::~TlbFlushTracepoint() {
  for (int fd : fds_) close(fd);
}

std::array<std::uint64_t, kTlbFlushReasons.size()> TlbFlushTracepoint::read() const {
  std::array<std::uint64_t, kTlbFlushReasons.size()> out{};
  if (!available()) return out;
  for (std::size_t i = 0; i < fds_.size(); ++i) {
    std::uint64_t v = 0;
    if (::read(fds_[i], &v, sizeof(v)) == static_cast<ssize_t>(sizeof(v))) out[i / ncpus_] += v;
  }
  return out;
}

#else

TlbFlushTracepoint::TlbFlushTracepoint(std::uint32_t ncpus) : ncpus_(ncpus), why_("not Linux") {}
TlbFlushTracepoint::~TlbFlushTracepoint() = default;
std::array<std::uint64_t, kTlbFlushReasons.size()> TlbFlushTracepoint::read() const { return {}; }

#endif

nlohmann::json to_json(const KernelCounters& c) {
  auto opt = [](const std::optional<std::uint64_t>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
  nlohmann::json j = {
      {"tlb_shootdowns", opt(c.tlb_shootdowns)}, {"call_function", opt(c.call_function)}, {"vmstat", c.vmstat}};
  j["tlb_flush"] = c.tlb_flush ? nlohmann::json(*c.tlb_flush) : nlohmann::json(nullptr);
  return j;
}

KernelCounters counters_from_json(const nlohmann::json& j) {
  KernelCounters c;
  if (j.at("tlb_shootdowns").is_number()) c.tlb_shootdowns = j["tlb_shootdowns"].get<std::uint64_t>();
  if (j.at("call_function").is_number()) c.call_function = j["call_function"].get<std::uint64_t>();
  c.vmstat = j.at("vmstat").get<std::map<std::string, std::uint64_t>>();
  if (j.at("tlb_flush").is_array())
    c.tlb_flush = j["tlb_flush"].get<std::array<std::uint64_t, kTlbFlushReasons.size()>>();
  return c;
}

KernelCounters read_kernel_counters(const TlbFlushTracepoint* trace) {
  KernelCounters c;
  const std::string irq = slurp("/proc/interrupts");
  c.tlb_shootdowns = interrupt_row_total(irq, "TLB");
  c.call_function = interrupt_row_total(irq, "CAL");
  c.vmstat = vmstat_tlb(slurp("/proc/vmstat"));
  if (trace != nullptr && trace->available()) c.tlb_flush = trace->read();
  return c;
}

std::optional<CpuTimes> cpu_times(std::string_view proc_stat) {
  std::istringstream in{std::string(proc_stat)};
  std::string label;
  if (!(in >> label) || label != "cpu") return std::nullopt;
  std::vector<std::uint64_t> f;
  for (std::uint64_t v; f.size() < 10 && in >> v;) f.push_back(v);
  if (f.size() < 4) return std::nullopt;
  // guest and guest_nice (fields 9 and 10) are already counted in user and nice.
  const std::size_t counted = std::min<std::size_t>(f.size(), 8);
  CpuTimes t;
  for (std::size_t i = 0; i < counted; ++i) t.total += f[i];
  const std::uint64_t idle = f[3] + (f.size() > 4 ? f[4] : 0);
  t.busy = t.total - idle;
  return t;
}

double busy_cpus(const CpuTimes& before, const CpuTimes& after, std::uint32_t ncpus) {
  if (after.total <= before.total || after.busy < before.busy) return 0;
  return static_cast<double>(after.busy - before.busy) / static_cast<double>(after.total - before.total) * ncpus;
}

std::optional<double> measure_busy_cpus(double seconds, std::uint32_t ncpus) {
  const auto before = cpu_times(slurp("/proc/stat"));
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  const auto after = cpu_times(slurp("/proc/stat"));
  if (!before || !after) return std::nullopt;
  return busy_cpus(*before, *after, ncpus);
}

}  // namespace tlbsim::native
