// Models newidle balancing of kernel/sched/fair.c (Linux v6.1: newidle_balance -> load_balance -> detach_tasks /
// attach_tasks), reduced to pulling one queued task: a CPU about to go idle looks for the busiest runqueue in its
// nearest scheduling domain that has queued tasks (SMT siblings, then the LLC, then the socket, then the machine)
// and pulls one it is allowed to run. Skipped, as in the kernel since v5.16, when no runqueue is overloaded
// (rd->overload) or when this CPU's expected idle time (rq->avg_idle) is shorter than the most a balance of its
// lowest domain has cost (sd->max_newidle_lb_cost); each further domain is balanced only while avg_idle covers the
// cost so far plus that domain's maximum.
#include <algorithm>

#include "kernel/sched/sched.h"

namespace tlbsim::kernel {

namespace {

// sysctl_sched_migration_cost (kernel/sched/fair.c): 0.5 ms, not scaled with the CPU count.
constexpr sim::Duration kSysctlSchedMigrationCost = sim::microseconds(500);

}  // namespace

SchedDomains Sched::sched_domains(CpuId c) {
  // Built for a CPU when first asked: a run visits few CPUs' domains. Levels: 0 SMT siblings, 1 the rest of the
  // LLC, 2 the rest of the socket, 3 the rest of the machine, each in ascending CPU order. The machine level is one
  // list per socket, shared by its CPUs (a 1,536-CPU machine's copies of it were 9 MB and most of a short run).
  const hw::Topology& t = k.sys().topology();
  if (domains_.empty()) {
    domains_.resize(k.ncpus());
    for (std::uint32_t b = 0; b < k.ncpus(); ++b) {
      const std::uint32_t s = t.socket_of(CpuId{b});
      if (s >= socket_cpus_.size()) socket_cpus_.resize(s + 1);
      socket_cpus_[s].push_back(CpuId{b});
    }
    rest_of_machine_.resize(socket_cpus_.size());
  }
  OwnDomains& own = domains_[c.get()];
  const std::uint32_t s = t.socket_of(c);
  if (!own.built) {
    own.built = true;
    for (const CpuId y : socket_cpus_[s]) {
      if (y == c) continue;
      std::size_t level = 2;
      if (t.llc_of(c) == t.llc_of(y)) level = 1;
      if (t.core_of(c) == t.core_of(y)) level = 0;
      own.levels[level].push_back(y);
    }
    std::vector<CpuId>& rest = rest_of_machine_[s];
    if (rest.empty() && socket_cpus_[s].size() < k.ncpus()) {
      rest.reserve(k.ncpus() - socket_cpus_[s].size());
      for (std::uint32_t b = 0; b < k.ncpus(); ++b) {
        if (t.socket_of(CpuId{b}) != s) rest.push_back(CpuId{b});
      }
    }
  }
  return SchedDomains{own.levels[0], own.levels[1], own.levels[2], rest_of_machine_[s]};
}

sim::Task<void> Sched::newidle_balance(PerCpu& pc, Rq& r) {
  hw::Memory& mem = k.mem();
  r.idle_stamp = pc.cpu.now();  // this_rq->idle_stamp = rq_clock(this_rq): the balancing counts as idle time
  const SchedDomains domains = sched_domains(pc.id);
  // this_rq->sd: the lowest domain that is not degenerate (has CPUs besides this one).
  std::size_t lowest = 0;
  while (lowest < domains.size() && domains[lowest].empty()) ++lowest;
  const bool overload = co_await mem.read(pc.cpu, rd_overload_);
  if (!overload || (lowest < domains.size() && r.avg_idle < r.sd[lowest].max_newidle_lb_cost)) co_return;
  sim::Duration curr_cost{0};
  bool pulled = false;
  bool stopped = false;
  for (std::size_t level = lowest; level < domains.size() && !pulled; ++level) {
    if (domains[level].empty()) continue;
    Rq::SchedDomainStats& sd = r.sd[level];
    // Stop when the expected idle time cannot pay for balancing this domain too.
    if (r.avg_idle < curr_cost + sd.max_newidle_lb_cost) {
      stopped = true;
      break;
    }
    const sim::SimTime t0 = pc.cpu.now();
    // load_balance -> find_busiest_queue: read each runqueue of the domain.
    Rq* busiest = nullptr;
    std::size_t most = 0;
    for (CpuId c : domains[level]) {
      Rq& other = rq(c);
      co_await mem.touch(pc.cpu, other.lock_line(), hw::Access::kLoad);
      if (other.queue.size() > most) {
        most = other.queue.size();
        busiest = &other;
      }
    }
    if (busiest != nullptr) {
      // Drop this runqueue's lock, detach one task from the busiest, attach it here.
      co_await r.lock.unlock(mem, pc.cpu);
      co_await busiest->lock.lock(mem, pc.cpu);
      TaskStruct* p = detach_task(*busiest, pc.id, pc.cpu.now());
      co_await busiest->lock.unlock(mem, pc.cpu);
      co_await r.lock.lock(mem, pc.cpu);
      if (p != nullptr) {
        p->cpu = pc.id;
        attach_task(r, *p);
        ++stats.sched_migrations;
        pulled = true;
      }
    }
    const sim::Duration domain_cost = pc.cpu.now() - t0;
    curr_cost += domain_cost;
    update_newidle_cost(sd, domain_cost, pc.cpu.now());
  }
  if (curr_cost > r.max_idle_balance_cost) r.max_idle_balance_cost = curr_cost;
  if (pulled) {
    r.idle_stamp.reset();
    co_return;
  }
  // Nothing to pull in any domain: update_sd_lb_stats of the top domain clears rd->overload.
  if (!stopped) co_await mem.write(pc.cpu, rd_overload_, false);
}

bool Sched::task_hot(const TaskStruct& p, CpuId to, sim::SimTime now) {
  // SMT siblings share the core's caches (SD_SHARE_CPUCAPACITY): never hot between them.
  const hw::Topology& t = k.sys().topology();
  if (t.core_of(p.cpu) == t.core_of(to) && t.socket_of(p.cpu) == t.socket_of(to)) return false;
  return p.exec_start.has_value() && now - *p.exec_start < kSysctlSchedMigrationCost;
}

TaskStruct* Sched::detach_task(Rq& busiest, CpuId to, sim::SimTime now, bool allow_hot) {
  // detach_tasks: from the tail of the runqueue's task list (the task that waited least), skipping the tasks
  // can_migrate_task refuses: for their affinity, or as cache hot.
  for (auto it = busiest.queue.rbegin(); it != busiest.queue.rend(); ++it) {
    // A sched_delayed task is asleep: it leaves its runqueue when picked or requeues when woken, never migrates.
    if (!(*it)->allowed_on(to) || (*it)->sched_delayed) continue;
    TaskStruct* t = *it;
    if (!allow_hot && task_hot(*t, to, now)) continue;
    if (eevdf()) {
      // dequeue_entity without DEQUEUE_SLEEP: update_curr, update_entity_lag, and PLACE_REL_DEADLINE.
      update_curr(busiest, now, base_slice());
      update_entity_lag(busiest, fair_curr(busiest), *t, lag_limit());
      if (k.config().sched_delay_dequeue()) {
        t->deadline -= t->vruntime;
        t->rel_deadline = true;
      }
    }
    busiest.queue.erase(std::next(it).base());
    return t;
  }
  return nullptr;
}

void Sched::attach_task(Rq& target, TaskStruct& p) {
  if (eevdf()) place_entity(target, p, false, base_slice());
  target.queue.push_back(&p);
}

sim::Task<void> Sched::mark_overloaded(PerCpu& waker, Rq& target) {
  // add_nr_running: set rd->overload once a runqueue has a task waiting beside curr (WRITE_ONCE only on change).
  if (target.queue.size() < 1 || target.curr == target.idle) co_return;
  const bool set = co_await k.mem().read(waker.cpu, rd_overload_);
  if (!set) co_await k.mem().write(waker.cpu, rd_overload_, true);
}

void Sched::update_avg_idle(Rq& r, sim::SimTime now) {
  // ttwu_do_activate: a wake-up onto a runqueue that went idle through newidle balancing samples the idle time
  // (update_avg, 1/8 weight), capped at twice rq->max_idle_balance_cost.
  if (!r.idle_stamp) return;
  const sim::Duration delta = now - *r.idle_stamp;
  r.avg_idle += (delta - r.avg_idle) / 8;
  r.avg_idle = std::min(r.avg_idle, 2 * r.max_idle_balance_cost);
  r.idle_stamp.reset();
}

void Sched::update_newidle_cost(Rq::SchedDomainStats& sd, sim::Duration cost, sim::SimTime now) const {
  const std::int64_t j = jiffies(now);
  if (cost > sd.max_newidle_lb_cost) {
    sd.max_newidle_lb_cost = cost;
    sd.last_decay_max_lb_cost = j;
  } else if (j > sd.last_decay_max_lb_cost + hz()) {
    // Decay by ~1% a second so that an outdated maximum does not block balancing forever.
    sd.max_newidle_lb_cost = sd.max_newidle_lb_cost * 253 / 256;
    sd.last_decay_max_lb_cost = j;
  }
}

}  // namespace tlbsim::kernel
