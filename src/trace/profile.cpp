#include "trace/profile.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "sim/task.h"

namespace tlbsim::trace {

const char* to_string(ProfileClass c) {
  switch (c) {
    case ProfileClass::kUser:
      return "user";
    case ProfileClass::kSystem:
      return "system";
    case ProfileClass::kIrq:
      return "irq";
    case ProfileClass::kIdle:
      return "idle";
  }
  return "?";
}

Profiler::Profiler(std::function<std::string(LineId)> line_name, std::function<bool(CpuId)> runs_idle_task)
    : line_name_(std::move(line_name)), runs_idle_task_(std::move(runs_idle_task)) {
  nodes_.push_back(Node{intern(std::string()), 0, sim::Duration{0}, {}});
  for (std::size_t c = 0; c < kProfileClasses; ++c) {
    child(0, intern(fmt::format("[{}]", to_string(static_cast<ProfileClass>(c)))));
  }
}

void Profiler::attach(sim::Scheduler& sched) {
  for (std::uint32_t c = 0; c < sched.cpu_count(); ++c) sched.cpu(CpuId{c}).set_observer(this);
}

void Profiler::start(sim::SimTime t) {
  start_ = t;
  for (Node& n : nodes_) n.self = sim::Duration{0};
  total_ = sim::Duration{0};
  by_class_ = {};
}

void Profiler::finish(sim::Scheduler& sched, sim::SimTime end) {
  for (std::uint32_t c = 0; c < sched.cpu_count(); ++c) {
    sim::Cpu& cpu = sched.cpu(CpuId{c});
    if (const sim::Suspension* s = cpu.open_suspension()) charge(cpu, *s, end);
    cpu.set_observer(nullptr);
  }
  finished_ = true;
  line_name_ = nullptr;  // they refer to the machine and kernel of the run, which end before the profile
  runs_idle_task_ = nullptr;
}

void Profiler::on_interval(const sim::Cpu& cpu, const sim::Suspension& s, sim::SimTime end) { charge(cpu, s, end); }

std::uint32_t Profiler::intern(const std::string& name) {
  const auto [it, added] = by_name_.try_emplace(name, static_cast<std::uint32_t>(names_.size()));
  if (added) names_.push_back(name);
  return it->second;
}

std::uint32_t Profiler::intern(const char* name) {
  if (const auto it = by_pointer_.find(name); it != by_pointer_.end()) return it->second;
  const std::uint32_t id = intern(std::string(name));
  by_pointer_.emplace(name, id);
  return id;
}

std::uint32_t Profiler::child(std::uint32_t node, std::uint32_t name) {
  for (const std::uint32_t c : nodes_[node].children) {
    if (nodes_[c].name == name) return c;
  }
  const auto id = static_cast<std::uint32_t>(nodes_.size());
  nodes_.push_back(Node{name, node, sim::Duration{0}, {}});
  nodes_[node].children.push_back(id);
  return id;
}

void Profiler::charge(const sim::Cpu& cpu, const sim::Suspension& s, sim::SimTime end) {
  if (finished_) return;
  const sim::SimTime from = std::max(s.since, start_);
  if (end <= from) return;
  const sim::Duration d = end - from;
  ProfileClass cls = ProfileClass::kSystem;
  if (s.in_irq) {
    cls = ProfileClass::kIrq;
  } else if (s.kind == sim::Suspension::Kind::kHalt || s.kind == sim::Suspension::Kind::kPoll ||
             runs_idle_task_(cpu.id())) {
    cls = ProfileClass::kIdle;
  } else if (s.user || std::strstr(s.site.file, "/workloads/") != nullptr) {
    cls = ProfileClass::kUser;
  }
  // The task frames, innermost first, then reversed.
  frames_.clear();
  const char* leaf_function = nullptr;
  for (std::coroutine_handle<> h = s.leaf; h;) {
    const sim::PromiseBase& p = sim::PromiseBase::of(h);
    if (leaf_function == nullptr) leaf_function = p.function;
    if (*p.function != '\0') frames_.push_back(intern(p.function));  // a root not yet past its first await: none
    h = p.continuation;
  }
  std::reverse(frames_.begin(), frames_.end());
  // An awaiter made in a helper that is not a coroutine names the helper.
  if (*s.site.function != '\0' && (leaf_function == nullptr || std::strcmp(leaf_function, s.site.function) != 0)) {
    frames_.push_back(intern(s.site.function));
  }
  const auto named = [this](std::unordered_map<std::uint32_t, std::uint32_t>& cache, const char* what, LineId line) {
    const auto it = cache.find(line.get());
    if (it != cache.end()) return it->second;
    const std::uint32_t id = intern(fmt::format("{}: {}", what, line_name_(line)));
    cache.emplace(line.get(), id);
    return id;
  };
  switch (s.kind) {
    case sim::Suspension::Kind::kStep:
      if (s.line != sim::kNoLine) frames_.push_back(named(line_names_, "line", s.line));
      break;
    case sim::Suspension::Kind::kSpin:
      frames_.push_back(named(spin_names_, "spin", s.line));
      break;
    case sim::Suspension::Kind::kPoll:
      frames_.push_back(named(poll_names_, "poll", s.line));
      break;
    case sim::Suspension::Kind::kHalt:
      frames_.push_back(intern(std::string("halt")));
      break;
  }
  std::uint32_t node = nodes_[0].children[static_cast<std::size_t>(cls)];
  for (const std::uint32_t f : frames_) node = child(node, f);
  nodes_[node].self += d;
  total_ += d;
  by_class_[static_cast<std::size_t>(cls)] += d;
}

sim::Duration Profiler::of_class(ProfileClass c) const { return by_class_[static_cast<std::size_t>(c)]; }

std::vector<sim::Duration> Profiler::subtree_times() const {
  // A child's index is always above its parent's: one pass from the last node adds each into its parent.
  std::vector<sim::Duration> sub(nodes_.size(), sim::Duration{0});
  for (std::size_t i = nodes_.size(); i-- > 0;) {
    sub[i] += nodes_[i].self;
    if (i != 0) sub[nodes_[i].parent] += sub[i];
  }
  return sub;
}

std::vector<Profiler::Row> Profiler::rows() const {
  std::vector<sim::Duration> children(names_.size(), sim::Duration{0});
  std::vector<sim::Duration> self(names_.size(), sim::Duration{0});
  std::vector<std::uint32_t> on_path(names_.size(), 0);
  std::vector<bool> seen(names_.size(), false);
  const std::vector<sim::Duration> sub = subtree_times();
  // Depth first: a function's first frame on a path takes its whole subtree (deeper recursion adds nothing).
  const auto visit = [&](auto& self_ref, std::uint32_t n) -> void {
    const std::uint32_t name = nodes_[n].name;
    if (n != 0) {
      if (on_path[name] == 0) children[name] += sub[n];
      ++on_path[name];
      self[name] += nodes_[n].self;
      seen[name] = true;
    }
    for (const std::uint32_t c : nodes_[n].children) self_ref(self_ref, c);
    if (n != 0) --on_path[name];
  };
  visit(visit, 0);
  std::vector<Row> out;
  for (std::uint32_t i = 0; i < names_.size(); ++i) {
    if (seen[i] && children[i].count() > 0) out.push_back(Row{names_[i], children[i], self[i]});
  }
  std::sort(out.begin(), out.end(), [](const Row& a, const Row& b) {
    if (a.children != b.children) return a.children > b.children;
    if (a.self != b.self) return a.self > b.self;
    return a.function < b.function;
  });
  return out;
}

std::string Profiler::folded() const {
  std::vector<std::string> lines;
  std::vector<std::string> path;
  const auto visit = [&](auto& self_ref, std::uint32_t n) -> void {
    if (n != 0) path.push_back(names_[nodes_[n].name]);
    if (nodes_[n].self.count() > 0) {
      std::string line;
      for (std::size_t i = 0; i < path.size(); ++i) line += (i == 0 ? "" : ";") + path[i];
      lines.push_back(fmt::format("{} {}", line, nodes_[n].self.count()));
    }
    for (const std::uint32_t c : nodes_[n].children) self_ref(self_ref, c);
    if (n != 0) path.pop_back();
  };
  visit(visit, 0);
  std::sort(lines.begin(), lines.end());
  std::string out;
  for (const std::string& l : lines) out += l + "\n";
  return out;
}

namespace {
double share(sim::Duration part, sim::Duration total) {
  return total.count() > 0 ? 100.0 * static_cast<double>(part.count()) / static_cast<double>(total.count()) : 0.0;
}
}  // namespace

std::string Profiler::table(double min_share) const {
  std::string out = fmt::format("profile: {} of simulated CPU time:", sim::format_duration(total_));
  for (std::size_t c = 0; c < kProfileClasses; ++c) {
    out += fmt::format(" {} {:.2f}%{}", to_string(static_cast<ProfileClass>(c)), share(by_class_[c], total_),
                       c + 1 < kProfileClasses ? "," : "\n");
  }
  out += fmt::format("{:>10}  {:>8}  {}\n", "Children", "Self", "Function");
  for (const Row& r : rows()) {
    if (share(r.children, total_) < 100.0 * min_share) break;
    out += fmt::format("{:>9.2f}%  {:>7.2f}%  {}\n", share(r.children, total_), share(r.self, total_), r.function);
  }
  return out;
}

nlohmann::json Profiler::to_json(double min_share) const {
  nlohmann::json j;
  j["total_ps"] = total_.count();
  for (std::size_t c = 0; c < kProfileClasses; ++c) {
    j["classes"][to_string(static_cast<ProfileClass>(c))] = by_class_[c].count();
  }
  j["functions"] = nlohmann::json::array();
  for (const Row& r : rows()) {
    if (share(r.children, total_) < 100.0 * min_share) break;
    j["functions"].push_back(
        {{"function", r.function}, {"children_ps", r.children.count()}, {"self_ps", r.self.count()}});
  }
  return j;
}

}  // namespace tlbsim::trace
