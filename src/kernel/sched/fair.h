// The EEVDF policy of the fair class (kernel/sched/fair.c, Linux v6.6+, as of v6.13) for tasks that all have the
// weight of nice 0 and no cgroup hierarchy: virtual time advances at the rate of real time, and V, the weighted
// average vruntime, is the plain mean over the runqueue. Sched calls these where KernelConfig::sched_eevdf() holds.
// Contract: `r` is locked by the caller; a runqueue's entities are its queued tasks plus `curr` when one is given.
#pragma once

#include <cstdint>

#include "sim/time.h"

namespace tlbsim::kernel {

class TaskStruct;
struct Rq;

// SCHED_TUNABLESCALING_LOG's factor for the scheduler's time sysctls: 1 + ilog2(min(ncpus, 8)).
std::int64_t sched_tunable_scaling(std::uint32_t ncpus);
// sysctl_sched_base_slice: normalized 0.75 ms times that factor.
sim::Duration eevdf_base_slice(std::uint32_t ncpus);

// The runqueue's running fair task if it is on the runqueue (cfs_rq->curr with curr->on_rq), else nullptr.
TaskStruct* fair_curr(Rq& r);
// avg_vruntime(): V over the queued tasks and `curr` (nullptr: none).
sim::Duration avg_vruntime(const Rq& r, const TaskStruct* curr);
// entity_eligible(): se's vruntime is at most V (compared without the division's rounding).
bool entity_eligible(const Rq& r, const TaskStruct* curr, const TaskStruct& se);
// update_curr() -> update_deadline(): charges r.curr the time since r.curr_exec_start; once its vruntime reaches
// its deadline it is issued a new request, one `slice` on. Returns whether that asks for a reschedule (another task
// is queued: resched_curr).
bool update_curr(Rq& r, sim::SimTime now, sim::Duration slice);
// update_entity_lag(): se.vlag = V - se.vruntime, clamped to +-`limit` (max(2 * slice, TICK_NSEC)).
void update_entity_lag(const Rq& r, const TaskStruct* curr, TaskStruct& se, sim::Duration limit);
// place_entity(): vruntime = V - lag, the lag inflated so that it survives se's own weight joining the average
// (PLACE_LAG); the deadline one slice on, half of one for a new task (PLACE_DEADLINE_INITIAL), or the relative one
// kept across a migration (PLACE_REL_DEADLINE). Call before `se` joins `r`'s queue.
void place_entity(Rq& r, TaskStruct& se, bool initial, sim::Duration slice);
// pick_eevdf(): `curr` (nullptr: none) while it is eligible and still inside the request it was picked with
// (RUN_TO_PARITY: vprot == deadline); else the eligible task with the earliest deadline, equal deadlines in the
// order queued.
TaskStruct* pick_eevdf(Rq& r, TaskStruct* curr);

}  // namespace tlbsim::kernel
