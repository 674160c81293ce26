// Models wake-up placement of kernel/sched/fair.c (Linux v6.1, select_task_rq_fair's fast path: record_wakee,
// wake_wide, wake_affine -> wake_affine_idle / wake_affine_weight, select_idle_sibling), with the runqueue's
// number of tasks standing for its PELT load (docs/model.md, "Wake-up placement").
#include <algorithm>
#include <optional>
#include <utility>

#include "kernel/sched/sched.h"

namespace tlbsim::kernel {

namespace {

// available_idle_cpu(): running the idle task with nothing queued.
bool available_idle(const Rq& r) { return r.curr == r.idle && r.queue.empty(); }

// rq->nr_running: curr (unless idle) and the queued tasks.
std::int64_t nr_running(const Rq& r) { return static_cast<std::int64_t>(r.queue.size()) + (r.curr != r.idle ? 1 : 0); }

}  // namespace

std::int64_t Sched::jiffies(sim::SimTime now) const { return jiffies_at(now, hz()); }

void Sched::record_wakee(TaskStruct& waker, TaskStruct& p, sim::SimTime now) {
  // Decay the flips once a second so that a waker that stopped switching wakees is not wide for ever.
  const std::int64_t j = jiffies(now);
  if (j > waker.wakee_flip_decay_ts + hz()) {
    waker.wakee_flips >>= 1;
    waker.wakee_flip_decay_ts = j;
  }
  if (waker.last_wakee_pid != p.pid) {
    waker.last_wakee_pid = p.pid;
    ++waker.wakee_flips;
  }
}

bool Sched::wake_wide(const TaskStruct& waker, const TaskStruct& p, CpuId this_cpu) {
  // A waker that switches among more wakees than its LLC has CPUs (and wakees that do so too) spreads its
  // wakees instead of pulling them to itself.
  std::uint32_t master = waker.wakee_flips;
  std::uint32_t slave = p.wakee_flips;
  const auto& levels = sched_domains(this_cpu);
  const auto factor = static_cast<std::uint32_t>(1 + levels[0].size() + levels[1].size());  // sd_llc_size
  if (master < slave) std::swap(master, slave);
  return !(slave < factor || master < slave * factor);
}

sim::Task<CpuId> Sched::wake_affine(PerCpu& w, CpuId prev, bool sync) {
  hw::Memory& mem = k.mem();
  const CpuId this_cpu = w.id;
  Rq& here = rq(this_cpu);
  Rq& there = rq(prev);
  co_await mem.touch(w.cpu, here.lock_line(), hw::Access::kLoad);
  co_await mem.touch(w.cpu, there.lock_line(), hw::Access::kLoad);
  const hw::Topology& topo = k.sys().topology();
  // wake_affine_idle.
  if (available_idle(here) && topo.llc_of(this_cpu) == topo.llc_of(prev)) {
    co_return available_idle(there) ? prev : this_cpu;
  }
  if (sync && nr_running(here) == 1) co_return this_cpu;  // the waker is about to sleep: take its place
  if (available_idle(there)) co_return prev;
  // wake_affine_weight, in units of one task's load: the waker's CPU, less the waker itself when it is about to
  // sleep, plus the wakee, against the previous CPU without the wakee (whose blocked load it still carries),
  // biased by half the affine domain's imbalance_pct (110 for SMT siblings, 117 above).
  std::int64_t this_eff_load = nr_running(here);
  if (sync) {
    constexpr std::int64_t current_load = 1;  // task_h_load(current): the waker, one task
    if (current_load > this_eff_load) co_return this_cpu;
    this_eff_load -= current_load;
  }
  this_eff_load += 1;
  this_eff_load *= 100;
  const auto& levels = sched_domains(this_cpu);
  const bool smt = std::find(levels[0].begin(), levels[0].end(), prev) != levels[0].end();
  const std::int64_t imbalance_pct = smt ? 110 : 117;
  std::int64_t prev_eff_load = nr_running(there);  // cpu_load(prev) with the wakee's blocked load, less the wakee
  prev_eff_load *= 100 + (imbalance_pct - 100) / 2;
  if (sync) prev_eff_load += 1;
  co_return this_eff_load < prev_eff_load ? this_cpu : prev;
}

sim::Task<CpuId> Sched::select_idle_sibling(PerCpu& w, TaskStruct& p, CpuId prev, CpuId target) {
  hw::Memory& mem = k.mem();
  const hw::Topology& topo = k.sys().topology();
  co_await mem.touch(w.cpu, rq(target).lock_line(), hw::Access::kLoad);
  if (available_idle(rq(target))) co_return target;
  if (prev != target && topo.llc_of(prev) == topo.llc_of(target)) {
    co_await mem.touch(w.cpu, rq(prev).lock_line(), hw::Access::kLoad);
    if (available_idle(rq(prev))) co_return prev;
  }
  co_return (co_await select_idle_cpu(w, p, target)).value_or(target);
}

sim::Task<std::optional<CpuId>> Sched::select_idle_cpu(PerCpu& w, TaskStruct& p, CpuId target) {
  // The rest of target's LLC, from the CPU after it: the first idle CPU the task may run on.
  const hw::Topology& topo = k.sys().topology();
  for (std::uint32_t i = 1; i < k.ncpus(); ++i) {
    const CpuId c{(target.get() + i) % k.ncpus()};
    if (!p.allowed_on(c) || topo.llc_of(c) != topo.llc_of(target)) continue;
    co_await k.mem().touch(w.cpu, rq(c).lock_line(), hw::Access::kLoad);
    if (available_idle(rq(c))) co_return c;
  }
  co_return std::nullopt;
}

sim::Task<CpuId> Sched::select_task_rq_fork(PerCpu& w, TaskStruct& p) {
  hw::Memory& mem = k.mem();
  const CpuId prev = p.cpu;
  co_await mem.touch(w.cpu, rq(prev).lock_line(), hw::Access::kLoad);
  if (p.allowed_on(prev) && available_idle(rq(prev))) co_return prev;
  if (p.allowed_on(w.id) && w.id != prev) {
    co_await mem.touch(w.cpu, rq(w.id).lock_line(), hw::Access::kLoad);
    if (available_idle(rq(w.id))) co_return w.id;
  }
  co_return (co_await select_idle_cpu(w, p, prev)).value_or(prev);
}

sim::Task<CpuId> Sched::select_task_rq(TaskStruct& waker, TaskStruct& p, unsigned wake_flags) {
  PerCpu& w = cpu_of(waker);
  if ((wake_flags & WF_FORK) != 0) co_return co_await select_task_rq_fork(w, p);
  const CpuId prev = p.cpu;
  const CpuId this_cpu = w.id;
  record_wakee(waker, p, w.cpu.now());  // current: the waker, or the task a timer interrupt found running
  const bool want_affine = !wake_wide(waker, p, this_cpu) && p.allowed_on(this_cpu);
  CpuId target = prev;
  if (want_affine && this_cpu != prev) target = co_await wake_affine(w, prev, (wake_flags & WF_SYNC) != 0);
  co_return co_await select_idle_sibling(w, p, prev, target);
}

}  // namespace tlbsim::kernel
