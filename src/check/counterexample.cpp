#include "check/counterexample.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>

#include "check/explore.h"
#include "check/scenario.h"
#include "hw/machine.h"
#include "kernel/kernel.h"
#include "kernel/sched/sched.h"
#include "model/options.h"
#include "model/profile.h"
#include "trace/tracer.h"
#include "util/error.h"
#include "util/json_reader.h"

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
  // Written when not sequentially consistent, so that the files of before the memory models read the same.
  if (cx.target.memory_model != hw::MemoryModel::kSc) j["memory_model"] = hw::to_string(cx.target.memory_model);
  j["decisions"] = nlohmann::json::array();
  for (const Decision& d : cx.decisions) j["decisions"].push_back({{"step", d.step}, {"action", d.label}});
  j["violation"] = cx.violation;
  j["steps"] = cx.steps;
  return j.dump(2) + "\n";
}

namespace {

constexpr const char* kComponent = "counterexample file";

// Why `label` is not a sim::Action::label() of a machine with `cpus` CPUs ("" when it is one).
std::string action_problem(std::string_view label, std::uint32_t cpus) {
  // A decimal number as fmt prints one (no sign, no leading zero), consumed from the front of `s`.
  auto number = [](std::string_view& s, std::uint64_t limit) -> std::optional<std::uint64_t> {
    std::size_t n = 0;
    while (n < s.size() && s[n] >= '0' && s[n] <= '9') ++n;
    if (n == 0 || n > 10 || (n > 1 && s[0] == '0')) return std::nullopt;
    const std::uint64_t v = std::stoull(std::string(s.substr(0, n)));
    if (v >= limit) return std::nullopt;
    s.remove_prefix(n);
    return v;
  };
  auto cpu = [&](std::string_view s) {
    if (!s.starts_with("cpu")) return false;
    s.remove_prefix(3);
    return number(s, cpus).has_value() && s.empty();
  };
  std::string_view s = label;
  bool ok = false;
  if (s.starts_with("cpu")) {
    ok = cpu(s);
  } else if (s.starts_with("irq")) {
    s.remove_prefix(3);
    ok = number(s, 1u << 16).has_value() && s.starts_with("@") && cpu(s.substr(1));
  } else if (s.starts_with("timer")) {
    s.remove_prefix(5);
    ok = number(s, 1ull << 32).has_value() && s.empty();
  } else if (s.starts_with("hw@") || s.starts_with("sb@")) {
    ok = cpu(s.substr(3));
  } else if (s.starts_with("pr")) {
    s.remove_prefix(2);
    ok = number(s, 1u << 20).has_value() && s.starts_with(".");
    if (ok) {
      s.remove_prefix(1);
      ok = number(s, 1ull << 32).has_value() && s.starts_with("@") && cpu(s.substr(1));
    }
  } else if (s.starts_with("rv")) {
    s.remove_prefix(2);
    ok = number(s, 1ull << 32).has_value() && s.starts_with("@") && cpu(s.substr(1));
  }
  if (ok) return "";
  return fmt::format(
      "expected an action cpuN, irqV@cpuN, timerT, hw@cpuN or sb@cpuN with N a CPU of the scenario (0..{}), got "
      "\"{}\"",
      cpus - 1, label);
}

// Runs `check` and turns its InputError into one about `key` of `r`.
template <typename F>
auto about(JsonReader& r, const std::string& key, F&& check) {
  try {
    return check();
  } catch (const InputError& e) {
    r.fail(key, e.what());
  }
}

}  // namespace

Counterexample parse_counterexample(const std::string& text, const std::string& origin) {
  const nlohmann::json doc = parse_json_text(text, origin, kComponent);
  JsonReader top(doc, origin, kComponent);
  if (const std::uint64_t v = top.unsigned_integer("tlbsim_counterexample", 0, UINT32_MAX); v != 1) {
    top.fail("tlbsim_counterexample", fmt::format("version {} is not 1, the version this tlbsim reads", v));
  }
  const std::string kernel = top.string("kernel");
  const std::vector<std::string> options = top.string_list("options");
  const std::vector<std::string> mutations = top.string_list("mutations");
  const std::string scenario = top.string("scenario");
  const std::string machine = top.string("machine");
  // Each name on its own first, so that an error names its field; then the target as the checker builds it.
  kernel::KernelConfig cfg = about(top, "kernel", [&] { return kernel::load_kernel_profile(kernel).config; });
  for (std::size_t i = 0; i < options.size(); ++i) {
    about(top, fmt::format("options[{}]", i), [&] { kernel::apply_option_override(cfg, options[i]); });
  }
  about(top, "options", [&] { kernel::validate_options(cfg, "the options"); });
  for (std::size_t i = 0; i < mutations.size(); ++i) {
    about(top, fmt::format("mutations[{}]", i), [&] { kernel::set_mutation(cfg, mutations[i], "the mutation"); });
  }
  about(top, "scenario", [&] { Registry<CheckScenario>::make("scenario", scenario); });
  if (!machine.empty()) about(top, "machine", [&] { hw::load_machine(machine); });
  Counterexample cx;
  cx.target = about(top, "scenario", [&] { return make_target(kernel, options, mutations, scenario, machine); });
  cx.target.hardware_budget = static_cast<std::uint32_t>(top.unsigned_integer("hardware_budget", 0, 1000));
  cx.target.max_steps = top.unsigned_integer("max_steps", 1, 100'000'000);
  if (top.has("memory_model")) {
    const std::string mm = top.string("memory_model");
    const auto m = hw::memory_model_from_string(mm);
    if (!m) top.fail("memory_model", "unknown memory model '" + mm + "' (known: sc, tso, power, arm)");
    cx.target.memory_model = *m;
  }
  const std::uint32_t cpus = cx.target.machine.cpu_count();
  std::vector<JsonReader> decisions = top.object_array("decisions");
  for (std::size_t i = 0; i < decisions.size(); ++i) {
    JsonReader& d = decisions[i];
    Decision x{d.unsigned_integer("step", 0, cx.target.max_steps - 1), d.string("action")};
    if (i > 0 && x.step <= cx.decisions.back().step) {
      d.fail("step", fmt::format("{} does not follow step {} of the decision before: steps must increase", x.step,
                                 cx.decisions.back().step));
    }
    if (const std::string why = action_problem(x.label, cpus); !why.empty()) d.fail("action", why);
    d.finish();
    cx.decisions.push_back(std::move(x));
  }
  cx.violation = top.string("violation");
  cx.steps = top.unsigned_integer("steps", 0, cx.target.max_steps);
  top.finish();
  return cx;
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
      case sim::Action::Kind::kDrain:
        text = "store buffer commits: " + access_;
        break;
      case sim::Action::Kind::kPropagate: {
        const hw::PowerStorage& p = *k->sys().memory().power();
        const auto loc = static_cast<std::uint32_t>(a.vector);
        text = fmt::format("write {} of {}{} reaches this CPU", a.arg, k->sys().coherence().name(p.line(loc)),
                           shown(p, loc, a.arg));
        break;
      }
      case sim::Action::Kind::kValue:
        text = a.arg == 0 ? std::string("the next load reads the newest value that has reached this CPU")
                          : fmt::format(
                                "the next load reads a value {} writes older than the newest that has "
                                "reached this CPU",
                                a.arg);
        break;
    }
    // Under POWER: the writes that have not reached this CPU yet.
    if (const hw::PowerStorage* p = k->sys().memory().power(); p != nullptr && a.kind != sim::Action::Kind::kValue) {
      std::vector<std::string> held;
      for (const auto& [loc, i] : p->unseen(a.cpu)) {
        held.push_back(fmt::format("{}{}", k->sys().coherence().name(p->line(loc)), shown(*p, loc, i)));
      }
      if (!held.empty()) text += fmt::format(" [not seen here yet: {}]", fmt::join(held, ", "));
    }
    // What the CPU's store buffer holds after the action, oldest first.
    if (const hw::StoreBuffers* sb = k->sys().memory().store_buffers(); sb != nullptr && sb->pending(a.cpu)) {
      std::vector<std::string> held;
      for (const hw::BufferedStore& b : sb->of(a.cpu)) {
        held.push_back(b.shown ? fmt::format("{} := {}", k->sys().coherence().name(b.line), *b.shown)
                               : std::string(k->sys().coherence().name(b.line)));
      }
      text += fmt::format(" [buffered: {}]", fmt::join(held, ", "));
    }
    rows.push_back(Row{a.cpu.get(), std::move(text)});
  }
  static std::string shown(const hw::PowerStorage& p, std::uint32_t loc, std::uint32_t i) {
    const auto v = p.shown(loc, i);
    return v ? fmt::format(" := {:#x}", *v) : std::string();
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

Replay replay(const Counterexample& cx, trace::Tracer* tracer, bool profile) {
  TraceRecorder rec;
  RunHooks hooks{&rec, &rec, [&rec](kernel::Kernel& k) { rec.k = &k; }, nullptr, nullptr};
  if (tracer != nullptr) {
    hooks.before_setup = [tracer](kernel::Kernel& k) {
      k.set_tracer(tracer);
      tracer->set_coherence(&k.sys().coherence());
    };
    hooks.on_end = [tracer](kernel::Kernel& k) {
      tracer->close(k.sys().scheduler().now());
      k.set_tracer(nullptr);
    };
  }
  std::shared_ptr<trace::Profiler> profiler;
  if (profile) {
    const auto before = hooks.before_setup;
    const auto end = hooks.on_end;
    hooks.before_setup = [&profiler, before](kernel::Kernel& k) {
      if (before) before(k);
      profiler = std::make_shared<trace::Profiler>([&k](LineId l) { return std::string(k.sys().coherence().name(l)); },
                                                   [&k](CpuId c) { return kernel::Sched::runs_idle_task(k, c); });
      profiler->attach(k.sys().scheduler());
      profiler->start(sim::kTimeZero);
    };
    hooks.on_end = [&profiler, end](kernel::Kernel& k) {
      if (profiler) profiler->finish(k.sys().scheduler(), k.sys().scheduler().now());
      if (end) end(k);
    };
  }
  DecisionChooser chooser(cx.decisions);
  const Outcome o = run_schedule(cx.target, chooser, hooks);
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
  return Replay{o.violation, o.what, std::move(text), chooser.unapplied(), std::move(profiler)};
}

}  // namespace tlbsim::check
