// Runs a litmus test on the checker's engine (check/litmus/litmus.h): an exploring scheduler, hw::Memory under the
// memory model, and a depth-first search over every schedule that re-runs from the start and stops a run at a
// state it has seen (a stateful search: the state is every process's statement and registers, memory and the store
// buffers, so the search is complete for the final states).
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>

#include "check/litmus/litmus.h"
#include "hw/coherence.h"
#include "hw/memory.h"
#include "hw/topology.h"
#include "kernel/barrier.h"
#include "sim/exploring_scheduler.h"

namespace tlbsim::check::litmus {

namespace {

using Value = long long;

Value eval(const Expr& e, const std::vector<Value>& regs) {
  switch (e.kind) {
    case Expr::Kind::kConst:
      return e.value;
    case Expr::Kind::kReg:
      return regs[static_cast<std::size_t>(e.reg)];
    case Expr::Kind::kUnary:
      return e.op == "!" ? !eval(*e.a, regs) : -eval(*e.a, regs);
    case Expr::Kind::kBinary:
      break;
  }
  const Value a = eval(*e.a, regs), b = eval(*e.b, regs);
  const std::string& op = e.op;
  if (op == "+") return a + b;
  if (op == "-") return a - b;
  if (op == "&") return a & b;
  if (op == "|") return a | b;
  if (op == "^") return a ^ b;
  if (op == "==") return a == b;
  if (op == "!=") return a != b;
  if (op == "<") return a < b;
  if (op == ">") return a > b;
  if (op == "<=") return a <= b;
  if (op == ">=") return a >= b;
  if (op == "&&") return a && b;
  return a || b;
}

// The latest of the dependencies of the registers an expression reads.
std::uint32_t dep_of(const Expr& e, const std::vector<std::uint32_t>& deps) {
  switch (e.kind) {
    case Expr::Kind::kConst:
      return 0;
    case Expr::Kind::kReg:
      return deps[static_cast<std::size_t>(e.reg)];
    case Expr::Kind::kUnary:
      return dep_of(*e.a, deps);
    case Expr::Kind::kBinary:
      break;
  }
  return std::max(dep_of(*e.a, deps), dep_of(*e.b, deps));
}

// One process's state: where it is and its registers (the search's state key reads them).
struct Proc {
  const Thread* thread = nullptr;
  std::vector<Value> regs;
  std::vector<std::uint32_t> deps;  // per register, the dependency its value carries (hw::Dependency)
  const Stmt* at = nullptr;  // the statement whose access is pending
  int phase = 0;             // spin_lock: 0 trying, 1 waiting for the lock's line
};

struct World {
  const LitmusTest& test;
  hw::Memory& mem;
  std::vector<hw::Shared<Value>>& vars;
};

hw::Fence fence_of(const std::string& fn) {
  if (fn == "smp_mb" || fn == "smp_mb__after_spinlock") return hw::Fence::kMb;
  if (fn == "smp_rmb") return hw::Fence::kRmb;
  if (fn == "smp_wmb") return hw::Fence::kWmb;
  if (fn == "smp_mb__before_atomic" || fn == "smp_mb__after_atomic") return hw::Fence::kMbAtomic;
  return hw::Fence::kCompiler;  // barrier()
}

// How an RMW is ordered (include/linux/atomic.h): the value-returning forms fully, their _relaxed, _acquire and
// _release forms and the void ones (atomic_inc, atomic_add, ...) not, or only on one side.
enum class RmwOrder : std::uint8_t { kFull, kRelaxed, kAcquire, kRelease };
RmwOrder rmw_order(const std::string& fn) {
  if (fn.ends_with("_relaxed")) return RmwOrder::kRelaxed;
  if (fn.ends_with("_acquire")) return RmwOrder::kAcquire;
  if (fn.ends_with("_release")) return RmwOrder::kRelease;
  static const char* const kVoid[] = {"atomic_inc", "atomic_dec", "atomic_add", "atomic_sub"};
  for (const char* v : kVoid) {
    if (fn == v) return RmwOrder::kRelaxed;
  }
  return RmwOrder::kFull;
}

// The new value of an RMW and what its register gets.
std::pair<Value, Value> rmw_result(const Stmt& s, Value old, const std::vector<Value>& regs) {
  std::string f = s.fn;
  for (const char* sfx : {"_relaxed", "_acquire", "_release"}) {
    const std::string x(sfx);
    if (f.size() > x.size() && f.compare(f.size() - x.size(), x.size(), x) == 0) f.resize(f.size() - x.size());
  }
  if (f == "xchg" || f == "atomic_xchg") return {eval(*s.e, regs), old};
  if (f == "cmpxchg" || f == "atomic_cmpxchg") return {old == eval(*s.e, regs) ? eval(*s.e2, regs) : old, old};
  const bool fetch = f.starts_with("atomic_fetch_");
  const Value delta = f.find("inc") != std::string::npos   ? 1
                      : f.find("dec") != std::string::npos ? -1
                      : f.find("sub") != std::string::npos ? -eval(*s.e, regs)
                                                           : eval(*s.e, regs);
  return {old + delta, fetch ? old : old + delta};
}

sim::Task<void> run_body(World& w, sim::Cpu& cpu, Proc& p, const std::vector<Stmt>& body);

sim::Task<void> run_stmt(World& w, sim::Cpu& cpu, Proc& p, const Stmt& s) {
  hw::Memory& m = w.mem;
  p.at = &s;
  p.phase = 0;
  auto var = [&]() -> hw::Shared<Value>& {
    if (s.addr_reg < 0) return w.vars[static_cast<std::size_t>(s.var)];
    const Value a = p.regs[static_cast<std::size_t>(s.addr_reg)];
    if (a < kAddressBase || a - kAddressBase >= static_cast<Value>(w.vars.size())) {
      throw InputError(fmt::format("{}:{}: '{}' holds {}, not the address of a shared variable", w.test.origin, s.line,
                                   p.thread->regs[static_cast<std::size_t>(s.addr_reg)], a));
    }
    return w.vars[static_cast<std::size_t>(a - kAddressBase)];
  };
  auto set = [&](Value v, hw::Dependency d) {
    if (s.reg < 0) return;
    p.regs[static_cast<std::size_t>(s.reg)] = v;
    p.deps[static_cast<std::size_t>(s.reg)] = d.at;
  };
  // A load's address dependency: the dependency of the register it goes through.
  const hw::Dependency addr{s.addr_reg < 0 ? 0 : p.deps[static_cast<std::size_t>(s.addr_reg)]};
  hw::Dependency got;
  switch (s.kind) {
    case Stmt::Kind::kWrite:
      co_await m.write(cpu, var(), eval(*s.e, p.regs));
      break;
    case Stmt::Kind::kRelease:
      kernel::smp_store_release_fence(m, cpu);
      co_await m.write(cpu, var(), eval(*s.e, p.regs));
      break;
    case Stmt::Kind::kRead: {
      const Value v = co_await m.read_dependent(cpu, var(), addr, got);
      set(v, got);
      break;
    }
    case Stmt::Kind::kAcquire: {
      const Value v = co_await m.read_dependent(cpu, var(), addr, got);
      set(v, got);
      kernel::smp_load_acquire_fence(m, cpu);
      break;
    }
    case Stmt::Kind::kFence:
      m.fence(cpu, fence_of(s.fn));
      break;
    case Stmt::Kind::kRmw: {
      Value result = 0;
      const std::vector<Value> regs = p.regs;
      auto op = [&](Value old) {
        const auto [nv, r] = rmw_result(s, old, regs);
        result = r;
        return nv;
      };
      const RmwOrder order = rmw_order(s.fn);
      if (order == RmwOrder::kFull) {
        co_await m.rmw(cpu, var(), op);
      } else {
        if (order == RmwOrder::kRelease) kernel::smp_store_release_fence(m, cpu);
        co_await m.rmw_relaxed(cpu, var(), op);
        if (order == RmwOrder::kAcquire) kernel::smp_load_acquire_fence(m, cpu);
      }
      set(result, m.dependency_now(cpu));
      break;
    }
    case Stmt::Kind::kLock:
      // arch_spin_lock: a relaxed RMW loop, then the acquire barrier (powerpc: isync after the stcx. branch).
      for (;;) {
        p.phase = 0;
        const Value old = co_await m.rmw_relaxed(cpu, var(), [](Value) { return Value{1}; });
        if (old == 0) break;
        p.phase = 1;
        co_await m.wait_for_write(cpu, var().line);
      }
      kernel::smp_load_acquire_fence(m, cpu);
      break;
    case Stmt::Kind::kUnlock:
      kernel::smp_store_release_fence(m, cpu);
      co_await m.write(cpu, var(), Value{0});
      break;
    case Stmt::Kind::kAssign:
      set(eval(*s.e, p.regs), hw::Dependency{dep_of(*s.e, p.deps)});
      break;
    case Stmt::Kind::kIf:
      co_await run_body(w, cpu, p, eval(*s.e, p.regs) != 0 ? s.body : s.orelse);
      break;
  }
}

sim::Task<void> run_body(World& w, sim::Cpu& cpu, Proc& p, const std::vector<Stmt>& body) {
  for (const Stmt& s : body) co_await run_stmt(w, cpu, p, s);
}

sim::Task<void> run_proc(World& w, sim::Cpu& cpu, Proc& p, const Thread& t) {
  co_await run_body(w, cpu, p, t.body);
  p.at = nullptr;
}

bool holds(const Cond& c, const std::vector<std::vector<Value>>& regs, const std::vector<Value>& vars) {
  switch (c.kind) {
    case Cond::Kind::kTrue:
      return true;
    case Cond::Kind::kRegEq:
      return regs[static_cast<std::size_t>(c.thread)][static_cast<std::size_t>(c.reg)] == c.value;
    case Cond::Kind::kVarEq:
      return vars[static_cast<std::size_t>(c.var)] == c.value;
    case Cond::Kind::kNot:
      return !holds(*c.a, regs, vars);
    case Cond::Kind::kAnd:
      return holds(*c.a, regs, vars) && holds(*c.b, regs, vars);
    case Cond::Kind::kOr:
      return holds(*c.a, regs, vars) || holds(*c.b, regs, vars);
  }
  return false;
}

// Depth-first over the choice points, by re-running; a choice point whose state was seen stops the run.
class StatefulDfs final : public sim::Chooser {
 public:
  explicit StatefulDfs(std::function<std::vector<Value>()> key) : key_(std::move(key)) {}
  std::size_t choose(const std::vector<sim::Action>& actions) override {
    if (depth_ < path_.size()) return path_[depth_++].first;
    // A load's choice of value and a scheduling point may share a state; they are told apart by what is offered.
    std::vector<Value> k = key_();
    k.push_back(static_cast<Value>(actions.size()));
    k.push_back(static_cast<Value>(actions[0].kind));
    if (!seen_.insert(std::move(k)).second) {
      pruned_ = true;
      path_.push_back({0, 1});
      ++depth_;
      return 0;
    }
    path_.push_back({0, actions.size()});
    ++depth_;
    return 0;
  }
  bool next() {
    path_.resize(depth_);
    while (!path_.empty() && path_.back().first + 1 >= path_.back().second) path_.pop_back();
    if (path_.empty()) return false;
    ++path_.back().first;
    depth_ = 0;
    pruned_ = false;
    return true;
  }
  bool pruned() const { return pruned_; }
  std::uint64_t states() const { return seen_.size(); }

 private:
  std::function<std::vector<Value>()> key_;
  std::vector<std::pair<std::size_t, std::size_t>> path_;
  std::size_t depth_ = 0;
  bool pruned_ = false;
  std::set<std::vector<Value>> seen_;
};

}  // namespace

LitmusResult run_litmus(const LitmusTest& t, hw::MemoryModel model, std::uint64_t max_runs) {
  const std::size_t n = t.threads.size();
  hw::TopologyParams tp;
  tp.sockets = 1;
  tp.cores_per_socket = static_cast<std::uint32_t>(n);
  tp.cores_per_llc = static_cast<std::uint32_t>(n);
  tp.threads_per_core = 1;
  tp.sockets_per_group = 1;
  const hw::Topology topo(tp);
  // The state of the run in progress, for the search's key.
  std::vector<Proc>* procs = nullptr;
  std::vector<hw::Shared<Value>>* vars = nullptr;
  hw::Memory* memory = nullptr;
  StatefulDfs dfs([&] {
    std::vector<Value> k;
    for (const Proc& p : *procs) {
      k.push_back(static_cast<Value>(reinterpret_cast<std::uintptr_t>(p.at)));
      k.push_back(p.phase);
      k.insert(k.end(), p.regs.begin(), p.regs.end());
      k.insert(k.end(), p.deps.begin(), p.deps.end());
    }
    for (const auto& v : *vars) k.push_back(v.value);
    if (const hw::PowerStorage* pw = memory->power()) pw->key(k);
    if (const hw::StoreBuffers* sb = memory->store_buffers()) {
      for (std::uint32_t c = 0; c < n; ++c) {
        k.push_back(-1);
        for (const hw::BufferedStore& b : sb->of(CpuId{c})) {
          k.push_back(static_cast<const hw::Shared<Value>*>(b.addr) - vars->data());
          k.push_back(std::any_cast<Value>(b.value));
        }
      }
    }
    return k;
  });
  LitmusResult r;
  std::set<std::vector<Value>> finals;
  do {
    if (r.runs >= max_runs) return r;
    ++r.runs;
    sim::ExploringScheduler sched(n, dfs);
    hw::CoherenceModel coherence(topo, hw::CoherenceLatencies{});
    hw::Memory mem(sched, coherence);
    mem.set_memory_model(model);
    if (mem.power() != nullptr && t.dependencies) mem.power()->track_dependencies();
    sched.set_memory_actions(mem.memory_actions());
    sched.set_stop([&dfs] { return dfs.pruned(); });
    std::vector<hw::Shared<Value>> v;
    for (std::size_t i = 0; i < t.vars.size(); ++i) v.push_back({t.init[i], coherence.add_line(t.vars[i])});
    std::vector<Proc> p(n);
    for (std::size_t i = 0; i < n; ++i) {
      p[i].thread = &t.threads[i];
      p[i].regs.assign(t.threads[i].regs.size(), 0);
      p[i].deps.assign(t.threads[i].regs.size(), 0);
    }
    procs = &p;
    vars = &v;
    memory = &mem;
    World w{t, mem, v};
    for (std::uint32_t c = 0; c < n; ++c)
      sched.cpu(CpuId{c}).start(run_proc(w, sched.cpu(CpuId{c}), p[c], t.threads[c]));
    try {
      sched.run(sim::kTimeZero + sim::milliseconds(1000));
    } catch (const sim::DeadlockError&) {
      continue;  // every process waits on a lock that is never released: no final state
    }
    if (dfs.pruned()) continue;
    std::vector<Value> fin;
    std::vector<std::vector<Value>> regs;
    for (const Proc& q : p) {
      regs.push_back(q.regs);
      fin.insert(fin.end(), q.regs.begin(), q.regs.end());
    }
    std::vector<Value> vals;
    for (const auto& x : v) vals.push_back(x.value);
    fin.insert(fin.end(), vals.begin(), vals.end());
    if (finals.insert(fin).second) {
      ++r.final_states;
      if (holds(t.cond, regs, vals)) ++r.satisfying;
    }
  } while (dfs.next());
  r.complete = true;
  r.states = dfs.states();
  r.verdict = r.satisfying == 0 ? "Never" : r.satisfying == r.final_states ? "Always" : "Sometimes";
  switch (t.quantifier) {
    case LitmusTest::Quantifier::kExists:
      r.positive = r.satisfying > 0;
      break;
    case LitmusTest::Quantifier::kNotExists:
      r.positive = r.satisfying == 0;
      break;
    case LitmusTest::Quantifier::kForall:
      r.positive = r.satisfying == r.final_states;
      break;
  }
  return r;
}

}  // namespace tlbsim::check::litmus
