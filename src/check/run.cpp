#include "check/run.h"

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <stdexcept>

#include "check/oracle.h"
#include "check/scenario.h"
#include "hw/system.h"
#include "kernel/kernel.h"
#include "mm/memory.h"
#include "mm/pte_visibility.h"
#include "model/options.h"
#include "model/profile.h"
#include "util/error.h"

namespace tlbsim::check {

CheckTarget make_target(const std::string& kernel, const std::vector<std::string>& options,
                        const std::vector<std::string>& mutations, const std::string& scenario,
                        const std::string& machine) {
  CheckTarget t;
  t.kernel = kernel;
  t.scenario = scenario;
  t.options = options;
  t.mutations = mutations;
  t.machine_name = machine;
  t.config = kernel::load_kernel_profile(kernel).config;
  kernel::apply_option_overrides(t.config, options);
  kernel::validate_options(t.config, "--option");
  for (const std::string& m : mutations) kernel::set_mutation(t.config, m, "--mutation");
  const auto s = Registry<CheckScenario>::make("scenario", scenario);
  if (const std::string why = s->applies_to(t.config); !why.empty()) {
    throw NotApplicable("scenario '" + scenario + "' does not apply to " + kernel + ": " + why);
  }
  const std::string m = !machine.empty()                          ? machine
                        : !s->machine().empty()                   ? s->machine()
                        : t.config.arch == kernel::Arch::kPowerpc ? "power9-2s16c-smt4"
                        : t.config.arch == kernel::Arch::kArm64   ? "rpi4-a72-4c"
                                                                  : "small-2s2c";
  t.machine = hw::load_machine(m);
  // The checker's machine: the scenario's CPUs on one socket sharing one LLC, or on as many sockets as the scenario
  // asks NUMA nodes, one LLC each (docs/model.md, "The checker").
  t.machine.topology.sockets = s->nodes();
  t.machine.topology.sockets_per_group = s->nodes();
  t.machine.topology.cores_per_socket = s->cpus() / s->nodes();
  t.machine.topology.cores_per_llc = s->cpus() / s->nodes();
  t.machine.topology.threads_per_core = 1;
  if (const std::uint32_t bits = s->asid_bits(); bits != 0) t.machine.tlb.tag_bits = bits;
  // The scheduler's and the pipes' own compute (issue 29) touches no shared line: a step for it would only add
  // choice points equivalent to their neighbours', so the checker leaves it out (docs/model.md, "The checker").
  t.machine.kernel.context_switch = t.machine.kernel.try_to_wake_up = sim::Duration{0};
  t.machine.kernel.pipe_write = t.machine.kernel.pipe_read = sim::Duration{0};
  // Swapping (madvise(MADV_PAGEOUT) scenarios) on a machine file without swap costs: its bookkeeping is compute too.
  if (!t.machine.kernel.swap_out) t.machine.kernel.swap_out = sim::Duration{0};
  if (!t.machine.kernel.swap_in) t.machine.kernel.swap_in = sim::Duration{0};
  return t;
}

hw::MemoryModel arch_memory_model(kernel::Arch arch) {
  if (arch == kernel::Arch::kX86) return hw::MemoryModel::kTso;
  return arch == kernel::Arch::kArm64 ? hw::MemoryModel::kArm : hw::MemoryModel::kPower;
}

std::size_t DefaultOrder::pick(const std::vector<sim::Action>& actions) const {
  std::size_t best = 0;
  bool found = false;
  if (!actions.empty() && actions[0].kind == sim::Action::Kind::kValue) return 0;  // the newest value
  std::size_t drain = actions.size();
  for (std::size_t i = 0; i < actions.size(); ++i) {
    if (actions[i].kind == sim::Action::Kind::kPropagate) return i;  // a write reaches every CPU at once
    if (actions[i].kind != sim::Action::Kind::kDrain) continue;
    if (actions[i].arg == 0) return i;  // a store that just entered its buffer commits at once
    if (drain == actions.size()) drain = i;
  }
  for (std::size_t i = 0; i < actions.size(); ++i) {
    const sim::Action& a = actions[i];
    if (a.kind == sim::Action::Kind::kHardware || a.kind == sim::Action::Kind::kDrain ||
        a.kind == sim::Action::Kind::kPropagate) {
      continue;
    }
    if (a.kind == sim::Action::Kind::kStep && a.cpu.get() == last_) return i;
    if (!found || a.time < actions[best].time) best = i;
    found = true;
  }
  // Held stores commit only when nothing else can run (or a decision commits them).
  return found || drain == actions.size() ? best : drain;
}

std::size_t DecisionChooser::choose(const std::vector<sim::Action>& actions) {
  const std::uint64_t step = step_++;
  while (next_ < decisions_.size() && decisions_[next_].step < step) ++next_;
  std::size_t pick = order_.pick(actions);
  if (next_ < decisions_.size() && decisions_[next_].step == step) {
    bool offered = false;
    for (std::size_t i = 0; i < actions.size(); ++i) {
      if (actions[i].label() == decisions_[next_].label) {
        pick = i;
        offered = true;
      }
    }
    if (!offered && not_offered_.empty()) {
      std::vector<std::string> labels;
      for (const sim::Action& a : actions) labels.push_back(a.label());
      not_offered_ = fmt::format("'decisions[{}]' (step {}): action '{}' is not offered at that step (offered: {})",
                                 next_, step, decisions_[next_].label, fmt::join(labels, ", "));
    }
  }
  order_.ran(actions[pick]);
  return pick;
}

std::string DecisionChooser::unapplied() const {
  if (!not_offered_.empty()) return not_offered_;
  for (std::size_t i = next_; i < decisions_.size(); ++i) {
    if (decisions_[i].step >= step_) {
      return fmt::format("'decisions[{}]' (step {}): never reached: the run ended after {} steps", i,
                         decisions_[i].step, step_);
    }
  }
  return "";
}

namespace {

// Runs setup in the default order, then hands exploration steps to the strategy, recording its choices.
class PhaseChooser final : public sim::Chooser {
 public:
  explicit PhaseChooser(sim::Chooser& strategy) : strategy_(strategy) {}
  std::size_t choose(const std::vector<sim::Action>& actions) override {
    const std::size_t def = order_.pick(actions);
    std::size_t c = def;
    if (exploring) {
      c = strategy_.choose(actions);
      if (c != def) decisions.push_back(Decision{steps, actions[c].label()});
      ++steps;
    }
    order_.ran(actions[c]);
    return c;
  }
  // From here on the strategy chooses; the default order starts afresh, as the strategy's own does.
  void begin_exploring() {
    exploring = true;
    order_ = DefaultOrder();
  }
  bool exploring = false;
  std::uint64_t steps = 0;
  std::vector<Decision> decisions;

 private:
  sim::Chooser& strategy_;
  DefaultOrder order_;
};

// The hardware's own speculative page walks, offered to the strategy as actions of their own.
class SpeculativeWalker final : public sim::HardwareAgent {
 public:
  explicit SpeculativeWalker(kernel::Kernel& k) : k_(k) {}
  bool can_act(CpuId cpu) const override {
    const kernel::MmStruct* mm = k_.percpu(cpu).cr3_mm;
    return mm != nullptr && !mm->is_init_mm() && !k_.percpu(cpu).tlb.recent_vpns().empty();
  }
  void act(CpuId cpu) override { k_.speculative_walks(k_.percpu(cpu)); }

 private:
  kernel::Kernel& k_;
};

class Run final : public ScenarioRun {
 public:
  Run(const CheckTarget& t, PhaseChooser& chooser)
      : sys_(t.machine,
             [&](std::size_t n) {
               auto s = std::make_unique<sim::ExploringScheduler>(n, chooser);
               sched_ = s.get();
               return s;
             }),
        k_(sys_, t.config),
        oracle_(Oracle::attach(k_)) {
    sys_.memory().set_memory_model(t.memory_model);
    sched_->set_memory_actions(sys_.memory().memory_actions());
    if (sys_.memory().power() != nullptr) {
      ptes_ = std::make_unique<kernel::PowerPteVisibility>(sys_.memory(), sys_.coherence().add_line("pte"));
      k_.frames().set_pte_visibility(ptes_.get());
    }
  }
  kernel::Kernel& kernel() override { return k_; }
  const Oracle& oracle() const { return *oracle_; }
  void prepare(std::uint32_t cpu, sim::Task<void> task) override {
    sys_.cpu(CpuId{cpu}).start(std::move(task));
    sched_->run(sys_.scheduler().now() + sim::milliseconds(1000));
  }
  void race(std::uint32_t cpu, sim::Task<void> task) override { sys_.cpu(CpuId{cpu}).start(std::move(task)); }
  sim::ExploringScheduler& sched() { return *sched_; }
  hw::System& sys() { return sys_; }

 private:
  sim::ExploringScheduler* sched_ = nullptr;
  hw::System sys_;
  std::unique_ptr<kernel::PowerPteVisibility> ptes_;  // under POWER; outlives the kernel's page tables
  kernel::Kernel k_;
  std::unique_ptr<Oracle> oracle_;
};

}  // namespace

Outcome run_schedule(const CheckTarget& target, sim::Chooser& chooser, const RunHooks& hooks) {
  PhaseChooser phases(chooser);
  Run run(target, phases);
  kernel::Kernel& k = run.kernel();
  const auto scenario = Registry<CheckScenario>::make("scenario", target.scenario);
  // Runs on_end on every way out, before the run's kernel and machine are destroyed.
  struct EndHook {
    const RunHooks& hooks;
    kernel::Kernel& k;
    ~EndHook() {
      if (hooks.on_end) hooks.on_end(k);
    }
  } end_hook{hooks, k};
  if (hooks.before_setup) hooks.before_setup(k);
  Outcome out;
  // The setup runs in the default order: a violation there needs no interleaving at all (zero decisions).
  try {
    scenario->start(run);
  } catch (const std::exception& e) {
    out.violation = true;
    out.what = std::string("in the scenario's setup: kernel BUG: ") + e.what();
    return out;
  }
  if (!run.oracle().violations().empty()) {
    out.violation = true;
    out.what = "in the scenario's setup: " + run.oracle().violations()[0].what;
    return out;
  }
  SpeculativeWalker walker(k);
  sim::ExploringScheduler& s = run.sched();
  s.set_hardware(&walker, target.hardware_budget);
  s.set_stop([&] { return !run.oracle().violations().empty() || phases.steps >= target.max_steps; });
  if (hooks.on_kernel) hooks.on_kernel(k);
  s.set_observer(hooks.actions);
  run.sys().memory().set_observer(hooks.accesses);
  phases.begin_exploring();
  try {
    s.run(s.now() + sim::milliseconds(10000));
  } catch (const sim::DeadlockError& e) {
    out.violation = true;
    out.what = std::string("deadlock: ") + e.what();
  } catch (const std::exception& e) {
    out.violation = true;
    out.what = std::string("kernel BUG: ") + e.what();
  }
  run.sys().memory().set_observer(nullptr);
  if (!run.oracle().violations().empty()) {
    out.violation = true;
    out.what = run.oracle().violations()[0].what;
  }
  out.cut_off = !out.violation && phases.steps >= target.max_steps;
  out.decisions = std::move(phases.decisions);
  out.steps = phases.steps;
  return out;
}

}  // namespace tlbsim::check
