// Models newidle balancing of kernel/sched/fair.c (Linux v6.1: newidle_balance -> load_balance -> detach_tasks /
// attach_tasks), reduced to pulling one queued task: a CPU about to go idle looks for the busiest runqueue in its
// nearest scheduling domain that has queued tasks (SMT siblings, then the LLC, then the socket, then the machine)
// and pulls one it is allowed to run. Skipped, as in the kernel, when this CPU's expected idle time is below
// sysctl_sched_migration_cost or when no runqueue is overloaded (rd->overload).
#include <algorithm>

#include "kernel/sched.h"

namespace tlbsim::kernel {

namespace {

// sysctl_sched_migration_cost: 500 us (kernel/sched/fair.c).
constexpr sim::Duration kSchedMigrationCost = sim::microseconds(500);

}  // namespace

const std::vector<std::vector<CpuId>>& Sched::sched_domains(CpuId c) {
  if (domains_.empty()) {
    const hw::Topology& t = k.sys().topology();
    domains_.resize(k.ncpus());
    for (std::uint32_t a = 0; a < k.ncpus(); ++a) {
      // Levels: 0 SMT siblings, 1 the rest of the LLC, 2 the rest of the socket, 3 the rest of the machine.
      auto& levels = domains_[a];
      levels.resize(4);
      for (std::uint32_t b = 0; b < k.ncpus(); ++b) {
        if (a == b) continue;
        const CpuId x{a}, y{b};
        std::size_t level = 3;
        if (t.socket_of(x) == t.socket_of(y)) level = 2;
        if (t.llc_of(x) == t.llc_of(y)) level = 1;
        if (t.core_of(x) == t.core_of(y) && t.socket_of(x) == t.socket_of(y)) level = 0;
        levels[level].push_back(y);
      }
    }
  }
  return domains_[c.get()];
}

sim::Task<void> Sched::newidle_balance(PerCpu& pc, Rq& r) {
  hw::Memory& mem = k.mem();
  if (r.avg_idle < kSchedMigrationCost) co_return;  // this_rq->avg_idle < sysctl_sched_migration_cost
  const bool overload = co_await mem.read(pc.cpu, rd_overload_);
  if (!overload) co_return;
  for (const std::vector<CpuId>& level : sched_domains(pc.id)) {
    // find_busiest_queue: read each runqueue of the domain.
    Rq* busiest = nullptr;
    std::size_t most = 0;
    for (CpuId c : level) {
      Rq& other = rq(c);
      co_await mem.touch(pc.cpu, other.lock_line(), hw::Access::kLoad);
      if (other.queue.size() > most) {
        most = other.queue.size();
        busiest = &other;
      }
    }
    if (busiest == nullptr) continue;
    // load_balance: drop this runqueue's lock, detach one task from the busiest, attach it here.
    co_await r.lock.unlock(mem, pc.cpu);
    co_await busiest->lock.lock(mem, pc.cpu);
    TaskStruct* pulled = detach_task(*busiest, pc.id);
    co_await busiest->lock.unlock(mem, pc.cpu);
    co_await r.lock.lock(mem, pc.cpu);
    if (pulled != nullptr) {
      pulled->cpu = pc.id;
      r.queue.push_back(pulled);
      ++k.counters().sched_migrations;
      co_return;
    }
  }
  // Nothing to pull anywhere: update_sd_lb_stats clears rd->overload.
  co_await mem.write(pc.cpu, rd_overload_, false);
}

TaskStruct* Sched::detach_task(Rq& busiest, CpuId to) {
  // detach_tasks: from the tail of the runqueue's task list (the task that waited least), skipping the tasks
  // can_migrate_task refuses for their affinity.
  for (auto it = busiest.queue.rbegin(); it != busiest.queue.rend(); ++it) {
    if (!(*it)->allowed_on(to)) continue;
    TaskStruct* t = *it;
    busiest.queue.erase(std::next(it).base());
    return t;
  }
  return nullptr;
}

sim::Task<void> Sched::mark_overloaded(PerCpu& waker, Rq& target) {
  // add_nr_running: set rd->overload once a runqueue has a task waiting beside curr (WRITE_ONCE only on change).
  if (target.queue.size() < 1 || target.curr == target.idle) co_return;
  const bool set = co_await k.mem().read(waker.cpu, rd_overload_);
  if (!set) co_await k.mem().write(waker.cpu, rd_overload_, true);
}

void Sched::update_avg_idle(Rq& r, sim::Duration idle) {
  // update_avg(&rq->avg_idle, delta) in ttwu_do_wakeup, capped at twice the migration cost.
  r.avg_idle += (idle - r.avg_idle) / 8;
  r.avg_idle = std::min(r.avg_idle, 2 * kSchedMigrationCost);
}

}  // namespace tlbsim::kernel
