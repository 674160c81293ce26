#include "check/counterexample.h"

#include <algorithm>
#include <optional>
#include <string_view>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "check/explore.h"
#include "kernel/kernel.h"
#include "trace/tracer.h"
#include "util/error.h"

namespace tlbsim::check {

namespace {

Outcome rerun(const CheckTarget& t, const std::vector<Decision>& d, const RunHooks& hooks = {}) {
  DecisionChooser c(d);
  return run_schedule(t, c, hooks);
}

}  // namespace

Counterexample shrink(const Counterexample& cx, std::uint64_t max_runs) {
  std::vector<Decision> d = cx.decisions;
  std::uint64_t runs = 0;
  // Iterative preemption bounding first: a violation reachable with fewer preemptions is a simpler story than
  // whatever a random walk stumbled on. Then delta debugging on the decisions.
  for (std::uint32_t bound = 0; bound <= 3 && runs < max_runs / 2 && d.size() > bound; ++bound) {
    ExploreSpec spec;
    spec.strategy = "exhaustive";
    spec.preemptions = bound;
    spec.budget = max_runs / 2 - runs;
    const ExploreResult r = explore(cx.target, spec);
    runs += r.runs;
    if (r.found) {
      if (r.found->decisions.size() < d.size()) d = r.found->decisions;
      break;
    }
  }
  std::size_t n = 2;
  while (d.size() >= 2 && runs < max_runs) {
    const std::size_t chunk = (d.size() + n - 1) / n;
    bool reduced = false;
    for (std::size_t start = 0; start < d.size() && runs < max_runs; start += chunk) {
      std::vector<Decision> rest(d.begin(), d.begin() + static_cast<std::ptrdiff_t>(start));
      rest.insert(rest.end(), d.begin() + static_cast<std::ptrdiff_t>(std::min(d.size(), start + chunk)), d.end());
      ++runs;
      if (rerun(cx.target, rest).violation) {
        d = std::move(rest);
        n = std::max<std::size_t>(n - 1, 2);
        reduced = true;
        break;
      }
    }
    if (!reduced) {
      if (n >= d.size()) break;
      n = std::min(d.size(), n * 2);
    }
  }
  if (d.size() == 1 && runs < max_runs && rerun(cx.target, {}).violation) d.clear();
  const Outcome o = rerun(cx.target, d);
  Counterexample out = cx;
  if (!o.violation) return out;  // cannot happen for a deterministic model; keep the original
  out.decisions = o.decisions;
  out.violation = o.what;
  out.steps = o.steps;
  return out;
}

std::string to_json_text(const Counterexample& cx) {
  nlohmann::json j;
  j["tlbsim_counterexample"] = 1;
  j["kernel"] = cx.target.kernel;
  j["options"] = cx.target.options;
  j["mutations"] = cx.target.mutations;
  j["scenario"] = cx.target.scenario;
  j["machine"] = cx.target.machine_name;
  j["hardware_budget"] = cx.target.hardware_budget;
  j["max_steps"] = cx.target.max_steps;
  j["decisions"] = nlohmann::json::array();
  for (const Decision& d : cx.decisions) j["decisions"].push_back({{"step", d.step}, {"action", d.label}});
  j["violation"] = cx.violation;
  j["steps"] = cx.steps;
  return j.dump(2) + "\n";
}

Counterexample parse_counterexample(const std::string& text, const std::string& origin) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw InputError(origin + ": not JSON: " + e.what());
  }
  auto field = [&](const char* key) -> const nlohmann::json& {
    if (!j.is_object() || !j.contains(key)) throw InputError(origin + ": missing field '" + key + "'");
    return j.at(key);
  };
  try {
    if (field("tlbsim_counterexample").get<int>() != 1) throw InputError(origin + ": unknown counterexample version");
    Counterexample cx;
    cx.target = make_target(field("kernel").get<std::string>(), field("options").get<std::vector<std::string>>(),
                            field("mutations").get<std::vector<std::string>>(), field("scenario").get<std::string>(),
                            field("machine").get<std::string>());
    cx.target.hardware_budget = field("hardware_budget").get<std::uint32_t>();
    cx.target.max_steps = field("max_steps").get<std::uint64_t>();
    if (cx.target.max_steps == 0 || cx.target.max_steps > 100'000'000) throw InputError(origin + ": absurd max_steps");
    std::uint64_t last = 0;
    for (const auto& d : field("decisions")) {
      Decision x{d.at("step").get<std::uint64_t>(), d.at("action").get<std::string>()};
      if (!cx.decisions.empty() && x.step <= last) throw InputError(origin + ": decision steps must increase");
      last = x.step;
      cx.decisions.push_back(std::move(x));
    }
    cx.violation = field("violation").get<std::string>();
    cx.steps = field("steps").get<std::uint64_t>();
    return cx;
  } catch (const nlohmann::json::exception& e) {
    throw InputError(origin + ": malformed counterexample: " + e.what());
  } catch (const InputError& e) {
    const std::string what = e.what();
    if (what.rfind(origin, 0) == 0) throw;
    throw InputError(origin + ": " + what);
  }
}

namespace {

std::string_view base_name(std::string_view path) {
  const auto slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

// Collects one row per exploration step: the CPU, what it did (the access its step completed, with the value).
class TraceRecorder final : public sim::ActionObserver, public hw::AccessObserver {
 public:
  struct Row {
    std::uint32_t column;
    std::string text;
  };
  kernel::Kernel* k = nullptr;
  std::vector<Row> rows;

  void before(const sim::Action& a) override {
    access_.clear();
    site_ = a.kind == sim::Action::Kind::kStep ? k->sys().cpu(a.cpu).last_site() : sim::SourceSite{};
  }
  void after(const sim::Action& a) override {
    std::string text;
    switch (a.kind) {
      case sim::Action::Kind::kStep:
        text = site_.line_number() == 0 ? std::string(site_.function_name())
                                        : fmt::format("{} {}:{}", site_.function_name(), base_name(site_.file_name()),
                                                      site_.line_number());
        if (!access_.empty()) text += " " + access_;
        break;
      case sim::Action::Kind::kIrq: text = fmt::format("<- interrupt vector {} arrives", a.vector); break;
      case sim::Action::Kind::kTimer: text = fmt::format("timer {} fires", a.arg); break;
      case sim::Action::Kind::kHardware: text = "speculative page walk (hardware)"; break;
    }
    rows.push_back(Row{a.cpu.get(), std::move(text)});
  }
  void on_access(CpuId, LineId line, hw::Access kind, std::optional<std::uint64_t> old_value,
                 std::optional<std::uint64_t> new_value) override {
    const char* verb = kind == hw::Access::kLoad ? "load" : kind == hw::Access::kStore ? "store" : "rmw";
    std::string s = fmt::format("{} {}", verb, k->sys().coherence().name(line));
    if (kind == hw::Access::kLoad && old_value) s += fmt::format(" = {}", *old_value);
    if (kind != hw::Access::kLoad && new_value) {
      s += old_value ? fmt::format(" {} -> {}", *old_value, *new_value) : fmt::format(" := {}", *new_value);
    }
    access_ = std::move(s);
  }

 private:
  sim::SourceSite site_;
  std::string access_;
};

}  // namespace

Replay replay(const Counterexample& cx, trace::Tracer* tracer) {
  TraceRecorder rec;
  RunHooks hooks{&rec, &rec, [&rec](kernel::Kernel& k) { rec.k = &k; }, nullptr, nullptr};
  if (tracer != nullptr) {
    hooks.before_setup = [tracer](kernel::Kernel& k) {
      k.tracer = tracer;
      tracer->set_coherence(&k.sys().coherence());
    };
    hooks.on_end = [tracer](kernel::Kernel& k) {
      tracer->close(k.sys().scheduler().now());
      k.tracer = nullptr;
    };
  }
  const Outcome o = rerun(cx.target, cx.decisions, hooks);
  const std::uint32_t ncpus = cx.target.machine.cpu_count();
  constexpr std::size_t kWidth = 58;
  std::string with;
  for (const std::string& opt : cx.target.options) with += " --option " + opt;
  for (const std::string& m : cx.target.mutations) with += " --mutation " + m;
  std::string text = fmt::format("replay of {} on {}{}: {} steps, {} forced choices (*)\n", cx.target.scenario,
                                 cx.target.kernel, with, o.steps, o.decisions.size());
  text += "step  ";
  for (std::uint32_t c = 0; c < ncpus; ++c) {
    text += c + 1 < ncpus ? fmt::format("{:<{}}", fmt::format("cpu{}", c), kWidth) : fmt::format("cpu{}", c);
  }
  text += "\n";
  std::size_t next_decision = 0;
  for (std::size_t i = 0; i < rec.rows.size(); ++i) {
    bool forced = false;
    while (next_decision < o.decisions.size() && o.decisions[next_decision].step < i) ++next_decision;
    if (next_decision < o.decisions.size() && o.decisions[next_decision].step == i) forced = true;
    const std::string& cell = rec.rows[i].text;
    text += fmt::format("{:>4}{} {}{}\n", i, forced ? "*" : " ", std::string(rec.rows[i].column * kWidth, ' '), cell);
  }
  text += o.violation ? "VIOLATION: " + o.what + "\n" : "no violation: the schedule ran to its end\n";
  return Replay{o.violation, o.what, std::move(text)};
}

}  // namespace tlbsim::check
