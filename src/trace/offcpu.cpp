#include "trace/offcpu.h"

#include <fmt/format.h>

#include <algorithm>

namespace tlbsim::trace {

void OffCpuProfile::switch_out(std::string_view comm, std::uint32_t pid, std::string_view state,
                               std::vector<std::string> stack, sim::SimTime now) {
  if (pid == 0) return;  // the idle task
  out_[pid] = Out{std::string(comm), std::string(state), std::move(stack), now};
}

void OffCpuProfile::switch_in(std::uint32_t pid, sim::SimTime now) {
  const auto it = out_.find(pid);
  if (it == out_.end()) return;
  Out o = std::move(it->second);
  out_.erase(it);
  if (now < start_) return;  // ended before the measured window
  Row& r = rows_[Key{o.comm, o.state, o.stack}];
  if (r.waits.empty()) {
    r.comm = std::move(o.comm);
    r.state = std::move(o.state);
    r.stack = std::move(o.stack);
  }
  r.waits.push_back(now - o.since);
  r.total += now - o.since;
}

std::vector<const OffCpuProfile::Row*> OffCpuProfile::rows() const {
  std::vector<const Row*> v;
  v.reserve(rows_.size());
  for (const auto& [key, row] : rows_) v.push_back(&row);
  // A stable sort over the map's key order: ties stay in key order.
  std::stable_sort(v.begin(), v.end(), [](const Row* a, const Row* b) {
    if (a->total != b->total) return a->total > b->total;
    return a->waits.size() > b->waits.size();
  });
  return v;
}

std::uint64_t OffCpuProfile::waits() const {
  std::uint64_t n = 0;
  for (const auto& [key, row] : rows_) n += row.waits.size();
  return n;
}

namespace {

std::string joined(const std::vector<std::string>& stack, std::string_view sep) {
  if (stack.empty()) return "(no function the timeline names)";
  std::string s;
  for (const std::string& f : stack) s += (s.empty() ? "" : std::string(sep)) + f;
  return s;
}

// The p-th percentile (0..100) of `v`, nearest rank.
sim::Duration percentile(std::vector<sim::Duration> v, int p) {
  std::sort(v.begin(), v.end());
  const std::size_t i = std::min(v.size() - 1, v.size() * static_cast<std::size_t>(p) / 100);
  return v[i];
}

double us(sim::Duration d) { return static_cast<double>(d.count()) / 1e6; }

}  // namespace

std::string OffCpuProfile::table(std::uint64_t ops, std::string_view window) const {
  std::string t = fmt::format(
      "off-CPU: {} waits that ended in {}, by what the task was in when switched out "
      "(docs/usage.md, \"Where tasks wait\")\n",
      waits(), window);
  t += fmt::format("  {:>7} {:>8} {:>9} {:>9} {:>9} {:>10}  {:<5} {}\n", "waits", "per op", "mean us", "p50 us",
                   "p90 us", "total ms", "state", "task: functions (outermost first)");
  for (const Row* r : rows()) {
    const auto n = r->waits.size();
    const std::string per_op = ops == 0 ? "-" : fmt::format("{:.3f}", static_cast<double>(n) / ops);
    t += fmt::format("  {:>7} {:>8} {:>9.1f} {:>9.1f} {:>9.1f} {:>10.3f}  {:<5} {}: {}\n", n, per_op,
                     us(r->total) / static_cast<double>(n), us(percentile(r->waits, 50)), us(percentile(r->waits, 90)),
                     us(r->total) / 1000, r->state, r->comm, joined(r->stack, " > "));
  }
  if (!out_.empty()) t += fmt::format("  ({} tasks were still switched out at the end: not counted)\n", out_.size());
  return t;
}

nlohmann::json OffCpuProfile::to_json(std::uint64_t ops) const {
  nlohmann::json out = nlohmann::json::array();
  for (const Row* r : rows()) {
    const auto n = r->waits.size();
    nlohmann::json j{{"comm", r->comm},
                     {"state", r->state},
                     {"stack", r->stack},
                     {"waits", n},
                     {"total_ns", sim::to_nanoseconds(r->total)},
                     {"mean_ns", sim::to_nanoseconds(r->total) / static_cast<double>(n)},
                     {"p50_ns", sim::to_nanoseconds(percentile(r->waits, 50))},
                     {"p90_ns", sim::to_nanoseconds(percentile(r->waits, 90))}};
    if (ops != 0) j["per_op"] = static_cast<double>(n) / static_cast<double>(ops);
    out.push_back(std::move(j));
  }
  return nlohmann::json{{"rows", std::move(out)}, {"still_out", out_.size()}};
}

std::string OffCpuProfile::folded() const {
  std::vector<std::string> lines;
  for (const auto& [key, r] : rows_) {
    std::string s = r.comm;
    for (const std::string& f : r.stack) s += ";" + f;
    lines.push_back(fmt::format("{};[{}] {}", s, r.state, r.total.count()));
  }
  std::sort(lines.begin(), lines.end());
  std::string out;
  for (const std::string& l : lines) out += l + "\n";
  return out;
}

}  // namespace tlbsim::trace
