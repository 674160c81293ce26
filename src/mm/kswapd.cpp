// The node's kswapd, modeled on Linux v4.14 mm/vmscan.c (wakeup_kswapd, kswapd, kswapd_try_to_sleep,
// balance_pgdat, pgdat_balanced) and the CFS slice it gets on a busy CPU (kernel/sched/fair.c sched_slice,
// get_update_sysctl_factor). Reclaim itself is mm/vmscan.cpp's shrink_inactive_list, run with kswapd's own
// scan_control and tlb_ubc. The scheduling is reduced to what a machine with a busy task on every CPU does with a
// woken kswapd; docs/model.md lists what is left out.
#include <algorithm>
#include <bit>
#include <memory>
#include <utility>

#include "mm/vmscan.h"

namespace tlbsim::kernel {

namespace {

// MAX_RECLAIM_RETRIES (v4.14 mm/internal.h): after this many balance_pgdat runs that reclaimed nothing, kswapd
// leaves the node to direct reclaim.
constexpr std::uint32_t MAX_RECLAIM_RETRIES = 16;
// sysctl_sched_latency's unscaled default (kernel/sched/fair.c): 6 ms.
constexpr std::int64_t kSchedLatencyNs = 6'000'000;

}  // namespace

sim::Duration Vmscan::kswapd_slice() const {
  // get_update_sysctl_factor, SCHED_TUNABLESCALING_LOG: 1 + ilog2(min(ncpus, 8)). Two runnable tasks of equal
  // weight (kswapd and the task it shares the CPU with) are within sched_nr_latency, so the period is the
  // latency and each task's sched_slice is half of it.
  const std::uint32_t cpus = std::min<std::uint32_t>(k_.ncpus(), 8);
  const std::int64_t factor = 1 + (std::bit_width(cpus) - 1);
  return sim::nanoseconds(kSchedLatencyNs * factor / 2);
}

void Vmscan::wakeup_kswapd(PerCpu& self, PgData& pgdat) {
  Kswapd& kd = pgdat.kswapd;
  if (kd.runnable) return;                                // !waitqueue_active(&pgdat->kswapd_wait): awake
  if (kd.kswapd_failures >= MAX_RECLAIM_RETRIES) return;  // hopeless node, left to direct reclaim
  if (pgdat_balanced(pgdat)) return;
  // wake_up_interruptible -> try_to_wake_up -> select_task_rq_fair: kswapd is bound to its node's CPUs and flips
  // no wakees, so wake_affine chooses the waker's CPU; with a task on every CPU select_idle_sibling finds no idle
  // one and keeps it. place_entity gives the sleeper up to sched_latency / 2 of credit, more than the wakeup
  // granularity, so check_preempt_wakeup preempts the waker at its next preemption point.
  // Woken from another node (the allocation's zonelist reached this one), it stays on its own node: on the CPU
  // it last ran on, or the node's first CPU the first time.
  kd.runnable = true;
  if (node_of(self.id) == pgdat.node_id) {
    kd.cpu = self.id;
  } else if (node_of(kd.cpu) != pgdat.node_id) {
    kd.cpu = k_.sys().topology().cpu_at(pgdat.node_id, 0, 0);
  }
  kd.turn = self.cpu.now();
}

bool Vmscan::kswapd_due(PerCpu& self) {
  const Kswapd& kd = node(node_of(self.id)).kswapd;
  return kd.runnable && kd.cpu == self.id && self.cpu.now() >= kd.turn;
}

sim::Task<void> Vmscan::kswapd_run(PerCpu& self) {
  PgData& pgdat = node(node_of(self.id));
  Kswapd& kd = pgdat.kswapd;
  if (!kd.tlb_ubc) kd.tlb_ubc = std::make_unique<TlbflushUnmapBatch>(k_.ncpus());
  ScanControl sc{kd.tlb_ubc.get(), true};
  // check_preempt_tick ends kswapd's turn once it has run its slice; cond_resched in the reclaim loop then
  // switches back. The model checks at each SWAP_CLUSTER_MAX batch.
  const sim::SimTime slice_end = self.cpu.now() + kswapd_slice();
  // balance_pgdat: reclaim from the node until pgdat_balanced. The priority loop is not modeled: kswapd reclaims
  // SWAP_CLUSTER_MAX at a time and tests the high watermark after each batch.
  if (!std::exchange(kd.in_balance_pgdat, true)) ++stats.pageoutrun;
  std::uint64_t nr_reclaimed = 0;
  while (!pgdat_balanced(pgdat) && self.cpu.now() < slice_end) {
    bool isolated_any = false;
    nr_reclaimed += co_await shrink_inactive_list(self, pgdat, sc, isolated_any);
    if (!isolated_any) break;  // every page is isolated by direct reclaimers or on pagevecs: nothing to scan now
  }
  // balance_pgdat returns unless kswapd was preempted in it; a run that reclaimed nothing counts toward
  // kswapd_failures (a batch that reclaimed reset them in shrink_inactive_list).
  const bool balanced = pgdat_balanced(pgdat);
  if (balanced || self.cpu.now() < slice_end) {
    kd.in_balance_pgdat = false;
    if (nr_reclaimed == 0 && !balanced) ++kd.kswapd_failures;
  }
  // kswapd_try_to_sleep: prepare_kswapd_sleep lets it sleep on a balanced or hopeless node (the HZ/10 nap before
  // the full sleep is not modeled: a wakeup in it is a wakeup). Otherwise it stays runnable, and the task it
  // preempted has the CPU for its own slice (also after a run that found nothing to isolate).
  if (balanced || kd.kswapd_failures >= MAX_RECLAIM_RETRIES) {
    kd.runnable = false;
  } else {
    kd.turn = self.cpu.now() + kswapd_slice();
  }
}

}  // namespace tlbsim::kernel
