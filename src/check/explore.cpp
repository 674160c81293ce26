#include "check/explore.h"

#include <algorithm>
#include <chrono>
#include <vector>

#include "sim/rng.h"
#include "util/error.h"

namespace tlbsim::check {

namespace {

using sim::Action;

// PCT (Burckhardt et al., ASPLOS 2010): random distinct priorities per CPU; at each step the highest-priority
// CPU with an enabled action runs; at d-1 random steps the running CPU drops below every initial priority.
// Interrupts and hardware actions belong to their CPU; timers to CPU 0.
class PctChooser final : public sim::Chooser {
 public:
  PctChooser(std::uint64_t seed, std::uint32_t cpus, std::uint32_t depth, std::uint64_t expected_steps)
      : rng_(seed) {
    for (std::uint32_t c = 0; c < cpus; ++c) priority_.push_back(depth + c);
    for (std::uint32_t c = cpus; c > 1; --c) std::swap(priority_[c - 1], priority_[rng_.below(c)]);
    for (std::uint32_t i = 1; i < depth; ++i) change_at_.push_back(rng_.below(std::max<std::uint64_t>(expected_steps, 1)));
  }
  std::size_t choose(const std::vector<Action>& actions) override {
    const std::uint64_t step = step_++;
    std::size_t best = 0;
    for (std::size_t i = 1; i < actions.size(); ++i) {
      if (priority_[actions[i].owner().get()] > priority_[actions[best].owner().get()]) best = i;
    }
    // Among the best CPU's actions, a coin decides between its step and its interrupts or hardware actions.
    std::vector<std::size_t> mine;
    for (std::size_t i = 0; i < actions.size(); ++i) {
      if (actions[i].owner() == actions[best].owner()) mine.push_back(i);
    }
    const std::size_t pick = mine.size() == 1 ? mine[0] : mine[rng_.below(mine.size())];
    for (std::size_t i = 0; i < change_at_.size(); ++i) {
      if (change_at_[i] == step) priority_[actions[pick].owner().get()] = static_cast<std::uint32_t>(i);
    }
    return pick;
  }

 private:
  sim::Rng rng_;
  std::vector<std::uint32_t> priority_;
  std::vector<std::uint64_t> change_at_;
  std::uint64_t step_ = 0;
};

// Depth-first enumeration of the schedules with at most `bound` preemptions, by re-running from the start: a
// choice point's alternatives are the running CPU's own step (free) and every other action (one preemption each),
// or every action (free) when the running CPU cannot continue. Sleep sets (Godefroid) prune reorderings of
// interrupt arrivals, the one kind of action known to commute: an arrival at cpu c touches only c's pending
// interrupts, so it is independent of every action of another CPU (timers are treated as dependent).
class BoundedDfs final : public sim::Chooser {
 public:
  explicit BoundedDfs(std::uint32_t bound) : bound_(bound) {}

  std::size_t choose(const std::vector<Action>& actions) override {
    if (depth_ == stack_.size()) {
      stack_.push_back(actions[0].kind == Action::Kind::kValue ? expand_values(actions)
                                                               : expand(actions, inherited_sleep()));
    }
    Frame& f = stack_[depth_++];
    const Alt a = f.alts[f.next];
    preemptions_ += a.cost;
    // An interrupt's arrival counts as its CPU's action: it commutes with every other CPU's steps, so delivering
    // it and then continuing elsewhere is equivalent to a schedule that delivers it later, at no more cost.
    if (actions[a.index].kind == Action::Kind::kStep || actions[a.index].kind == Action::Kind::kIrq) {
      current_ = actions[a.index].cpu.get();
    }
    return a.index;
  }
  // Moves to the next schedule; false when every one was run.
  bool advance() {
    stack_.resize(std::min(stack_.size(), depth_));
    while (!stack_.empty() && stack_.back().next + 1 >= stack_.back().alts.size()) stack_.pop_back();
    if (stack_.empty()) return false;
    ++stack_.back().next;
    depth_ = 0;
    preemptions_ = 0;
    current_ = kNone;
    return true;
  }

 private:
  static constexpr std::uint32_t kNone = ~0u;
  struct Alt {
    std::size_t index;
    std::uint32_t cost;
    Action action;
  };
  struct Frame {
    std::vector<Alt> alts;
    std::size_t next = 0;
    std::vector<Action> sleep;  // interrupt arrivals whose other orders were explored already
  };
  static bool independent(const Action& irq, const Action& b) {
    return b.kind != Action::Kind::kTimer && b.cpu != irq.cpu;
  }
  // The sleep set of a new frame: the parent's, plus the siblings explored before the parent's current choice,
  // kept while independent of that choice.
  std::vector<Action> inherited_sleep() const {
    std::vector<Action> out;
    if (depth_ == 0) return out;
    const Frame& p = stack_[depth_ - 1];
    const Action& chosen = p.alts[p.next].action;
    for (const Action& a : p.sleep) {
      if (independent(a, chosen)) out.push_back(a);
    }
    for (std::size_t j = 0; j < p.next; ++j) {
      const Action& a = p.alts[j].action;
      if (a.kind == Action::Kind::kIrq && independent(a, chosen)) out.push_back(a);
    }
    return out;
  }
  // A load's choice of value: the newest is free, each older one costs one.
  Frame expand_values(const std::vector<Action>& actions) const {
    Frame f;
    f.alts.push_back(Alt{0, 0, actions[0]});
    for (std::size_t i = 1; i < actions.size(); ++i) {
      if (preemptions_ + 1 <= bound_) f.alts.push_back(Alt{i, 1, actions[i]});
    }
    return f;
  }
  Frame expand(const std::vector<Action>& actions, std::vector<Action> sleep) const {
    Frame f;
    f.sleep = std::move(sleep);
    auto asleep = [&](const Action& a) {
      return std::any_of(f.sleep.begin(), f.sleep.end(), [&](const Action& z) { return z.same_as(a); });
    };
    // Under a weak memory model, a store that has just entered its buffer commits at once for free (the
    // sequentially consistent schedule); holding it costs one, like a preemption. A store held already may commit
    // at any later point for free. Under POWER the same holds for a write's propagation to another CPU: fresh when
    // first offered, free to take then, one to hold, free to take or pass over once held.
    std::size_t own = actions.size();
    bool fresh_drain = false;
    for (std::size_t i = 0; i < actions.size() && !fresh_drain; ++i) {
      if ((actions[i].kind == Action::Kind::kDrain && actions[i].arg == 0) ||
          (actions[i].kind == Action::Kind::kPropagate && !actions[i].held)) {
        own = i;
        fresh_drain = true;
      } else if (actions[i].kind == Action::Kind::kStep && actions[i].cpu.get() == current_) {
        own = i;
      }
    }
    if (own < actions.size()) f.alts.push_back(Alt{own, 0, actions[own]});
    const std::uint32_t cost = own < actions.size() ? 1 : 0;
    for (std::size_t i = 0; i < actions.size(); ++i) {
      if (i == own || asleep(actions[i])) continue;
      const Action& a = actions[i];
      std::uint32_t c = a.kind == Action::Kind::kHardware ? 1 : cost;
      if ((a.kind == Action::Kind::kDrain && a.arg > 0) || (a.kind == Action::Kind::kPropagate && a.held)) c = 0;
      if (preemptions_ + c <= bound_) f.alts.push_back(Alt{i, c, a});
    }
    if (f.alts.empty()) {
      const std::size_t d = DefaultOrder().pick(actions);
      f.alts.push_back(Alt{d, 0, actions[d]});
    }
    return f;
  }

  std::uint32_t bound_;
  std::vector<Frame> stack_;
  std::size_t depth_ = 0;
  std::uint32_t preemptions_ = 0;
  std::uint32_t current_ = kNone;
};

}  // namespace

ExploreResult explore(const CheckTarget& target, const ExploreSpec& spec) {
  if (spec.strategy != "random" && spec.strategy != "pct" && spec.strategy != "exhaustive") {
    throw InputError("unknown strategy '" + spec.strategy + "' (known: random, pct, exhaustive)");
  }
  if (spec.budget == 0 || spec.budget > 1'000'000'000) throw InputError("--budget must be between 1 and 1e9 runs");
  if (spec.pct_depth == 0 || spec.pct_depth > 64) throw InputError("--depth must be between 1 and 64");
  if (spec.preemptions > 16) throw InputError("--preemptions must be at most 16");
  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  ExploreResult r;
  auto record = [&](Outcome o) {
    ++r.runs;
    r.steps += o.steps;
    r.cut_off += o.cut_off ? 1 : 0;
    if (o.violation && !r.found) {
      r.found = std::move(o);
      r.found_at_run = r.runs;
    }
  };
  const sim::Rng root(spec.seed);
  if (spec.strategy == "exhaustive") {
    BoundedDfs dfs(spec.preemptions);
    for (;;) {
      record(run_schedule(target, dfs));
      if (r.found || r.runs >= spec.budget || (spec.time_limit_s > 0 && elapsed() >= spec.time_limit_s)) break;
      if (!dfs.advance()) {
        r.complete = true;
        break;
      }
    }
  } else {
    std::uint64_t expected_steps = 64;
    while (!r.found && r.runs < spec.budget && (spec.time_limit_s <= 0 || elapsed() < spec.time_limit_s)) {
      const std::uint64_t seed = root.split(r.runs).seed();
      if (spec.strategy == "random") {
        sim::RandomChooser c(seed);
        record(run_schedule(target, c));
      } else {
        PctChooser c(seed, target.machine.cpu_count(), spec.pct_depth, expected_steps);
        record(run_schedule(target, c));
      }
      expected_steps = std::max<std::uint64_t>(expected_steps, r.steps / r.runs);
    }
  }
  r.wall_s = elapsed();
  return r;
}

}  // namespace tlbsim::check
