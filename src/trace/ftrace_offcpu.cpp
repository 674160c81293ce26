#include "trace/ftrace_offcpu.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <iterator>
#include <optional>
#include <utility>

#include "util/error.h"

namespace tlbsim::trace {

namespace {

// The kernel functions whose frames stand for a span of the model's timeline, under the span's name where the two
// differ: the model's syscall spans are named for the syscall and begin at its entry (a kernel may tail-call past
// __x64_sys_*, leaving vm_mmap_pgoff or __vm_munmap the outermost frame), its fault span covers the arch's fault
// handler (do_user_addr_fault is often inlined into exc_page_fault), and __vma_enter_locked is inlined into
// __vma_start_write in the kernels that have it. Repeats collapse into one frame.
constexpr std::pair<std::string_view, std::string_view> kModelFrames[] = {
    {"__x64_sys_mmap", "sys_mmap"},
    {"ksys_mmap_pgoff", "sys_mmap"},
    {"vm_mmap_pgoff", "sys_mmap"},
    {"__x64_sys_munmap", "sys_munmap"},
    {"__vm_munmap", "sys_munmap"},
    {"__x64_sys_madvise", "sys_madvise"},
    {"do_madvise", "sys_madvise"},
    {"exc_page_fault", "handle_mm_fault"},
    {"do_user_addr_fault", "handle_mm_fault"},
    {"handle_mm_fault", "handle_mm_fault"},
    {"__vma_start_write", "__vma_enter_locked"},
    {"__vma_enter_locked", "__vma_enter_locked"},
    {"rwsem_down_read_slowpath", "rwsem_down_read_slowpath"},
    {"rwsem_down_write_slowpath", "rwsem_down_write_slowpath"},
    {"rwsem_optimistic_spin", "rwsem_optimistic_spin"},
    {"flush_tlb_mm_range", "flush_tlb_mm_range"},
    {"smp_call_function_many_cond", "smp_call_function_many_cond"},
    {"switch_mm_irqs_off", "switch_mm_irqs_off"},
    {"exit_mmap", "exit_mmap"},
    {"tlb_finish_mmu", "tlb_finish_mmu"},
};

// The scheduler's and the tracer's own frames, above the function that waited.
bool scheduler_frame(std::string_view f) {
  return f.starts_with("trace_") || f.starts_with("__traceiter_") || f.starts_with("schedule") || f == "__schedule" ||
         f.starts_with("preempt_schedule") || f == "io_schedule" || f.starts_with("perf_trace_") ||
         f == "stack_trace_save";
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// "926.539828" (seconds, any number of decimals up to picoseconds) as a time.
std::optional<sim::SimTime> parse_timestamp(std::string_view s) {
  const std::size_t dot = s.find('.');
  const std::string_view whole = s.substr(0, dot);
  std::string_view frac = dot == std::string_view::npos ? std::string_view{} : s.substr(dot + 1);
  if (whole.empty() || whole.size() > 9 || frac.size() > 12) return std::nullopt;
  std::int64_t sec = 0, f = 0;
  if (std::from_chars(whole.data(), whole.data() + whole.size(), sec).ptr != whole.data() + whole.size()) {
    return std::nullopt;
  }
  if (!frac.empty() && std::from_chars(frac.data(), frac.data() + frac.size(), f).ptr != frac.data() + frac.size()) {
    return std::nullopt;
  }
  for (std::size_t i = frac.size(); i < 12; ++i) f *= 10;
  return sim::kTimeZero + sim::Duration{sec * 1'000'000'000'000 + f};
}

std::optional<std::uint32_t> parse_pid(std::string_view s) {
  std::uint32_t v = 0;
  if (s.empty() || std::from_chars(s.data(), s.data() + s.size(), v).ptr != s.data() + s.size()) return std::nullopt;
  return v;
}

// One switch, as read.
struct Switch {
  sim::SimTime ts;
  std::string prev_comm, prev_state;
  std::uint32_t prev_pid = 0, next_pid = 0;
  std::vector<std::string> stack;  // innermost first; empty until its stack trace is read
  bool counted = false;            // prev is a task the reader counts
};

// The fields of a sched_switch payload; a message naming the missing one on failure.
Switch parse_switch(std::string_view payload, sim::SimTime ts, const std::string& where) {
  const auto field = [&](std::string_view key, std::string_view next) {
    const std::size_t a = payload.find(key);
    if (a == std::string_view::npos) throw InputError(fmt::format("{}: sched_switch without '{}'", where, key));
    const std::size_t from = a + key.size();
    const std::size_t b = next.empty() ? payload.find(' ', from) : payload.find(next, from);
    return payload.substr(from, b == std::string_view::npos ? std::string_view::npos : b - from);
  };
  Switch s;
  s.ts = ts;
  s.prev_comm = std::string(field("prev_comm=", " prev_pid="));
  const auto prev_pid = parse_pid(field("prev_pid=", ""));
  const auto next_pid = parse_pid(field("next_pid=", ""));
  s.prev_state = std::string(field("prev_state=", ""));
  if (!prev_pid || !next_pid) throw InputError(fmt::format("{}: sched_switch with a pid that is not a number", where));
  s.prev_pid = *prev_pid;
  s.next_pid = *next_pid;
  return s;
}

// The pid of an event line's "comm-pid [cpu]" prefix (a "(tgid)" column may follow the pid).
std::optional<std::uint32_t> task_pid(std::string_view line) {
  std::size_t end = line.find(" [");
  if (end == std::string_view::npos) return std::nullopt;
  std::string_view prefix = trim(line.substr(0, end));
  if (!prefix.empty() && prefix.back() == ')') {
    const std::size_t open = prefix.rfind('(');
    if (open == std::string_view::npos) return std::nullopt;
    prefix = trim(prefix.substr(0, open));
  }
  const std::size_t dash = prefix.rfind('-');
  if (dash == std::string_view::npos) return std::nullopt;
  return parse_pid(prefix.substr(dash + 1));
}

}  // namespace

std::vector<std::string> model_frames(const std::vector<std::string>& innermost_first) {
  std::vector<std::string> out;
  for (auto it = innermost_first.rbegin(); it != innermost_first.rend(); ++it) {
    const auto m =
        std::find_if(std::begin(kModelFrames), std::end(kModelFrames), [&](const auto& p) { return p.first == *it; });
    if (m == std::end(kModelFrames)) continue;
    if (out.empty() || out.back() != m->second) out.emplace_back(m->second);
  }
  if (!out.empty()) return out;
  if (innermost_first.empty()) return {"(no stack trace)"};
  for (const std::string& f : innermost_first) {
    if (!scheduler_frame(f)) return {f};
  }
  return {innermost_first.back()};
}

FtraceOffCpu read_ftrace_offcpu(std::string_view text, const std::string& origin, const std::string& comm) {
  std::vector<Switch> switches;
  std::vector<std::string>* stack = nullptr;  // the stack trace being read
  std::size_t line_no = 0;
  FtraceOffCpu out;
  while (!text.empty()) {
    const std::size_t nl = text.find('\n');
    const std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    ++line_no;
    if (line.starts_with(" => ")) {
      if (stack != nullptr) {
        std::string_view f = trim(line.substr(4));
        f = f.substr(0, f.find('+'));  // "func+0x11d/0x150"
        if (f.empty()) throw InputError(fmt::format("{}:{}: a stack frame without a name", origin, line_no));
        stack->emplace_back(f);
      }
      continue;
    }
    stack = nullptr;
    if (line.empty() || line.front() == '#') continue;
    const std::string where = fmt::format("{}:{}", origin, line_no);
    const std::size_t colon = line.find(": ");  // the end of the timestamp
    if (colon == std::string_view::npos) continue;
    const std::size_t space = line.rfind(' ', colon);
    const std::string_view event = line.substr(colon + 2);
    const bool is_switch = event.starts_with("sched_switch: ");
    const bool is_stack = event.starts_with("<stack trace>");
    if (!is_switch && !is_stack) continue;
    const auto ts = parse_timestamp(line.substr(space == std::string_view::npos ? 0 : space + 1,
                                                colon - (space == std::string_view::npos ? 0 : space + 1)));
    if (!ts) throw InputError(fmt::format("{}: no timestamp (seconds, as '926.539828') before '{}'", where, event));
    if (is_switch) {
      Switch s = parse_switch(event.substr(14), *ts, where);
      if (!switches.empty() && s.ts < switches.back().ts) {
        throw InputError(
            fmt::format("{}: sched_switch earlier than the one before it (the file is not in time order)", where));
      }
      s.counted = s.prev_pid != 0 && (comm.empty() || s.prev_comm == comm);
      switches.push_back(std::move(s));
      continue;
    }
    // A stack trace belongs to the latest switch-out of its task that has none yet (the trigger runs on that CPU
    // right after the event; other CPUs' events may come between).
    const auto pid = task_pid(line);
    if (!pid) throw InputError(fmt::format("{}: a stack trace without a 'comm-pid [cpu]' prefix", where));
    for (std::size_t i = switches.size(), seen = 0; i-- > 0 && seen < 64; ++seen) {
      Switch& s = switches[i];
      if (s.prev_pid != *pid) continue;
      if (s.stack.empty()) {
        stack = &s.stack;
        if (s.counted) ++out.stacks;
      }
      break;
    }
  }
  if (switches.empty()) {
    throw InputError(fmt::format(
        "{}: no sched_switch events (enable events/sched/sched_switch, with the stacktrace trigger; docs/usage.md, "
        "\"Where tasks wait\")",
        origin));
  }
  out.switches = switches.size();
  out.profile.start(switches.front().ts);
  for (Switch& s : switches) {
    if (s.counted) out.profile.switch_out(s.prev_comm, s.prev_pid, s.prev_state, model_frames(s.stack), s.ts);
    if (s.next_pid != 0) out.profile.switch_in(s.next_pid, s.ts);
  }
  return out;
}

}  // namespace tlbsim::trace
