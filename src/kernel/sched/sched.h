// Tasks, per-CPU runqueues, schedule(), context_switch() and finish_task_switch() as in kernel/sched/core.c of
// Linux v6.1, with the idle loop and wait queues. Each task's code is a coroutine; switching tasks transfers
// control from one task's suspended coroutine chain to another's, so a task resumes exactly where it called
// schedule(), on whichever CPU ran the switch.
#pragma once

#include <algorithm>
#include <array>
#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "kernel/kernel.h"
#include "kernel/locking/locks.h"
#include "kernel/sched/fair.h"

namespace tlbsim::kernel {

class Sched;

enum class TaskState : std::uint8_t { TASK_RUNNING, TASK_INTERRUPTIBLE, TASK_UNINTERRUPTIBLE, TASK_DEAD };

// Scheduling-domain levels around a CPU (Sched::sched_domains): SMT siblings, the LLC, the socket, the machine.
inline constexpr std::size_t kSchedDomainLevels = 4;
// The CPUs of each level around one CPU, that CPU excluded, ascending (Sched::sched_domains).
using SchedDomains = std::array<std::span<const CpuId>, kSchedDomainLevels>;

// Wake-up flags (kernel/sched/sched.h), a bitmask: WF_SYNC, the waker is about to sleep (the _sync wake-ups of
// pipes, sockets and __wake_up_parent); WF_FORK, wake_up_new_task. Neither: a plain wake-up (WF_TTWU).
enum WakeFlags : unsigned { WF_TTWU = 0, WF_SYNC = 1u << 0, WF_FORK = 1u << 1 };

// struct task_struct, as far as scheduling and mm switching need it.
class TaskStruct {
 public:
  TaskStruct(hw::CoherenceModel& model, std::uint32_t pid, std::string comm, MmStruct* mm, CpuId cpu,
             SpinlockKind lock_kind);
  ~TaskStruct();
  TaskStruct(const TaskStruct&) = delete;
  TaskStruct& operator=(const TaskStruct&) = delete;

  std::uint32_t pid;
  std::string comm;
  MmStruct* mm;                   // NULL for kernel threads
  MmStruct* active_mm = nullptr;  // the mm in use: mm, or the one borrowed lazily by a kernel thread
  TaskState state = TaskState::TASK_RUNNING;
  CpuId cpu;             // the CPU it runs on or last ran on
  Cpumask cpus_allowed;  // affinity (sched_setaffinity); empty: any CPU
  bool is_idle = false;
  // The affinity test of select_task_rq and can_migrate_task: cpus_allowed is empty or holds `c`.
  bool allowed_on(CpuId c) const { return cpus_allowed.size() == 0 || cpus_allowed.test(c); }
  // se.exec_start as task_hot reads it: when it was last switched in or out; none before it first ran (a new task's
  // zero, which lies far behind the kernel's rq clock).
  std::optional<sim::SimTime> exec_start;
  std::uint64_t nvcsw = 0;   // voluntary context switches
  std::uint64_t nivcsw = 0;  // involuntary ones (preempted while runnable)
  // record_wakee: the last task this one woke, and how often that changed (halved once a second).
  std::uint32_t last_wakee_pid = 0;
  std::uint32_t wakee_flips = 0;
  std::int64_t wakee_flip_decay_ts = 0;  // jiffies
  // p->pi_lock: try_to_wake_up serializes wakers of this task with it.
  Spinlock pi_lock;
  // p->on_rq: queued or running (cleared by deactivate_task when it sleeps); p->on_cpu: running on its CPU,
  // from prepare_task until finish_task on the next switch. Both on the task_struct's scheduling line.
  hw::Shared<bool> on_rq;
  hw::Shared<bool> on_cpu;

  // struct sched_entity's EEVDF fields (kernel/sched/fair.c, v6.6+; kernel/sched/fair.cpp), used where
  // KernelConfig::sched_eevdf(). Every task has the weight of nice 0, so virtual time runs at the rate of real time.
  sim::Duration vruntime{0};   // se->vruntime
  sim::Duration deadline{0};   // se->deadline: vruntime + the slice it was issued
  sim::Duration vlag{0};       // se->vlag: V - vruntime when it left its runqueue, clamped (update_entity_lag)
  sim::Duration vprot{0};      // the deadline at the point of pick (v6.13 stashes it in se->vlag: RUN_TO_PARITY)
  bool rel_deadline = false;   // se->rel_deadline: the deadline is kept relative across a migration
  bool sched_delayed = false;  // se->sched_delayed: asleep but left on its runqueue until picked (DELAY_DEQUEUE)

  // Where this task continues when switched to (its suspended coroutine chain, or its body not yet started).
  std::coroutine_handle<> resume_point;
  // The task's body; owned here and destroyed with the task.
  std::coroutine_handle<> body;
};

// struct rq: one per CPU.
struct Rq {
  Rq(hw::CoherenceModel& model, SpinlockKind kind) : lock(model, "rq.lock", kind) {}
  LineId lock_line() const { return lock.line(); }
  Spinlock lock;
  std::deque<TaskStruct*> queue;  // runnable tasks other than curr
  TaskStruct* curr = nullptr;
  TaskStruct* idle = nullptr;
  MmStruct* prev_mm = nullptr;      // dropped by finish_task_switch after a switch from a kernel thread
  TaskStruct* prev_task = nullptr;  // the task switched away from, for finish_task_switch
  hw::Shared<bool> need_resched;    // TIF_NEED_RESCHED of curr, on the idle task's polled thread_info line
  bool polling = true;              // TIF_POLLING_NRFLAG of the idle task, on the same line (IdleState::polls)
  std::uint64_t nr_switches = 0;
  sim::Duration last_idle{0};  // how long the previous idle period lasted (the governor's prediction)
  sim::Duration avg_idle = sim::microseconds(1000);  // rq->avg_idle, starting at 2 * sysctl_sched_migration_cost
  // rq->idle_stamp: when newidle balancing began on the way to idle; cleared by the next wake-up onto this rq.
  std::optional<sim::SimTime> idle_stamp;
  sim::Duration max_idle_balance_cost = sim::microseconds(500);  // rq->max_idle_balance_cost
  // This CPU's sched_domain of each level (sched_domains()): the newidle cost it has tracked.
  struct SchedDomainStats {
    sim::Duration max_newidle_lb_cost{0};     // sd->max_newidle_lb_cost
    std::int64_t last_decay_max_lb_cost = 0;  // sd->last_decay_max_lb_cost, in jiffies
    // sd->nr_balance_failed: idle (not newidle) balances in a row that moved nothing; past the level's
    // cache_nice_tries they may move a cache-hot task.
    std::uint32_t nr_balance_failed = 0;
  };
  std::array<SchedDomainStats, kSchedDomainLevels> sd;
  sim::SimTime exec_start{};       // when curr was switched in (curr->se.prev_sum_exec_runtime, as a time)
  sim::SimTime curr_exec_start{};  // curr->se.exec_start: up to when update_curr has charged curr's vruntime
  // The periodic tick (kernel/time/tick-sched.c with NO_HZ_IDLE): runs while curr is not the idle task.
  bool tick_running = false;
  sim::SimTime tick_next{};               // the next tick, on a jiffy boundary
  std::vector<sim::SimTime> tick_events;  // timer events queued for this CPU (an event cannot be cancelled)
  bool nohz_kick = false;                 // nohz_flags & NOHZ_BALANCE_KICK: kicked to balance for idle CPUs
};

// struct wait_queue_head. Non-exclusive entries sit at the head of the kernel's list and exclusive ones
// (WQ_FLAG_EXCLUSIVE, prepare_to_wait_exclusive) at its tail; the two deques keep that order.
struct WaitQueue {
  WaitQueue(hw::CoherenceModel& model, const char* name, SpinlockKind kind) : lock(model, name, kind) {}
  bool empty() const { return waiters.empty() && exclusive.empty(); }
  Spinlock lock;
  std::deque<TaskStruct*> waiters;
  std::deque<TaskStruct*> exclusive;
};

// Contract: one Sched per Kernel; every CPU runs its idle task from start(); user tasks are created pinned to a
// CPU and first run when that CPU's schedule() picks them. Task bodies never return: they end in do_task_dead().
// The scheduler's counters, registered while the Sched lives.
struct SchedStats {
  std::uint64_t context_switches = 0;
  // Of them, switches away from a task still runnable (preempted): the sum of the tasks' nivcsw, which
  // /proc/PID/status prints as nonvoluntary_ctxt_switches. The idle task's switches are not counted.
  std::uint64_t nivcsw = 0;
  std::uint64_t sched_migrations = 0;           // tasks pulled by newidle balancing and the tick's balancing
  std::vector<std::uint64_t> idle_state_usage;  // entries into each idle state (cpuidle "usage"), polling first
  void register_stats(Stats& stats) const;
};

class Sched final : private sim::RootObserver, private sim::TimerHandler {
 public:
  // `tick`: run the periodic scheduler tick at the profile's HZ on busy CPUs (the checker's scenarios run
  // without it, so that every step is one the scenario chose).
  explicit Sched(Kernel& k, bool tick = true);
  ~Sched();

  Kernel& k;
  SchedStats stats;
  Rq& rq(CpuId c) { return *rqs_[c.get()]; }
  TaskStruct& current(CpuId c) { return *rq(c).curr; }
  // is_idle_task(cpu_rq(c)->curr) (include/linux/sched.h): whether `c` is running its idle task (false before
  // start() gives it one).
  bool runs_idle_task(CpuId c) { return rq(c).curr != nullptr && rq(c).curr == rq(c).idle; }
  // The same for a kernel that may have no scheduler (the profiler's predicate for idle time).
  static bool runs_idle_task(Kernel& k, CpuId c) { return k.sched() != nullptr && k.sched()->runs_idle_task(c); }
  PerCpu& cpu_of(TaskStruct& t) { return k.percpu(t.cpu); }

  // Starts every CPU's idle task (in init_mm, as after boot).
  void start();
  // Creates a task of `mm` (or a kernel thread for nullptr) pinned to `cpu`, running `make_body(task)`. For
  // mm != nullptr the caller holds an mm_users reference for it. Before the run starts, `runnable` queues it at
  // once; a running task instead calls wake_up_new_task, so the target CPU sees a modeled write.
  TaskStruct& create_task(std::string comm, MmStruct* mm, CpuId cpu,
                          const std::function<sim::Task<void>(TaskStruct&)>& make_body, bool runnable = true);
  // wake_up_new_task(): `parent` makes its new child runnable on the child's CPU.
  sim::Task<void> wake_up_new_task(TaskStruct& parent, TaskStruct& child);

  // schedule(): called by `current`; returns when it runs again.
  sim::Task<void> schedule(TaskStruct& current);
  // select_task_rq() (sched_wake.cpp). A wake-up takes select_task_rq_fair's wake-affine fast path: unless
  // wake_wide(), wake_affine() chooses between the waker's CPU and the task's previous one, then
  // select_idle_sibling() looks for an idle CPU in that one's LLC. A new task (WF_FORK) goes to its previous CPU
  // if idle, else the parent's if idle, else an idle CPU of the previous CPU's LLC, else the previous CPU.
  // Reading another CPU's runqueue state is a load of its runqueue line.
  sim::Task<CpuId> select_task_rq(TaskStruct& waker, TaskStruct& p, unsigned wake_flags);
  // try_to_wake_up(): `waker` (running on its CPU) makes `p` runnable, on the CPU select_task_rq picks.
  // WF_FORK (from wake_up_new_task): a new task does not preempt (START_DEBIT).
  sim::Task<void> try_to_wake_up(TaskStruct& waker, TaskStruct& p, unsigned wake_flags = WF_TTWU);
  // wait_event(wq, cond()): sleeps until cond() holds, re-checking after each wake-up.
  sim::Task<void> wait_event(TaskStruct& current, WaitQueue& wq, const std::function<bool()>& cond);
  // wait_event_interruptible_exclusive(wq, cond()): the same, queued as an exclusive waiter, so that one wake_up
  // wakes one such waiter (fs/pipe.c's readers and writers wait this way).
  sim::Task<void> wait_event_exclusive(TaskStruct& current, WaitQueue& wq, const std::function<bool()>& cond);
  // wake_up(wq) (__wake_up_common with nr_exclusive = 1, as wake_up_interruptible_sync_poll passes, WF_SYNC):
  // wakes every non-exclusive waiter and the first exclusive one still asleep, which leaves the queue
  // (autoremove_wake_function).
  sim::Task<void> wake_up(TaskStruct& waker, WaitQueue& wq, unsigned wake_flags = WF_TTWU);
  // schedule_hrtimeout / nanosleep: sleep for `d`; an hrtimer on this CPU's local timer wakes the task.
  sim::Task<void> sleep(TaskStruct& current, sim::Duration d);
  // The local timer interrupt's work on `self`: wake the tasks whose sleep expired, then the scheduler tick if
  // one is due (hrtimer_interrupt -> tick_sched_timer -> scheduler_tick).
  sim::Task<void> timer_interrupt(PerCpu& self);
  // resched_curr of an idle `target` from `waker`: set_nr_and_not_polling sets TIF_NEED_RESCHED, and when the idle
  // task does not poll (it halted) smp_send_reschedule interrupts it.
  sim::Task<void> resched_idle(PerCpu& waker, CpuId target);
  // need_resched(): TIF_NEED_RESCHED of the task running on `t`'s CPU, tested where a preemptible task would
  // take a preemption (the return to user mode of the tick or of a reschedule).
  bool need_resched(TaskStruct& t) { return rq(t.cpu).need_resched.value; }
  // exit_to_user_mode_loop (kernel/entry/common.c, v5.8+; prepare_exit_to_usermode before it): the return to user
  // mode that ends every system call schedules while TIF_NEED_RESCHED is set (a wake-up or the tick asked for it).
  sim::Task<void> exit_to_user_mode(TaskStruct& current);
  // The scheduler tick's period, 1 s / HZ; zero when the tick is off.
  sim::Duration tick_period() const { return tick_period_; }
  // task_hot() of can_migrate_task (sched_balance.cpp): `p` ran within sysctl_sched_migration_cost (0.5 ms) and
  // `to` is not an SMT sibling of its CPU, so load balancing leaves it where its cache is (unless the domain's
  // nr_balance_failed has passed its cache_nice_tries: pull_one_task).
  bool task_hot(const TaskStruct& p, CpuId to, sim::SimTime now);
  // do_task_dead(): the final schedule() of an exiting task.
  sim::Task<void> do_task_dead(TaskStruct& current);

  std::uint64_t context_switches() const;
  const std::vector<std::unique_ptr<TaskStruct>>& tasks() const { return tasks_; }

 private:
  // wait_event and wait_event_exclusive: `list` is `wq`'s non-exclusive or exclusive waiters.
  sim::Task<void> wait_event_on(TaskStruct& current, WaitQueue& wq, std::deque<TaskStruct*>& list,
                                const std::function<bool()>& cond);
  sim::Task<void> idle_loop(TaskStruct& idle);
  sim::Task<void> task_main(TaskStruct& t, sim::Task<void> body);
  sim::Task<void> context_switch(Rq& rq, TaskStruct& prev, TaskStruct& next);
  sim::Task<void> finish_task_switch(TaskStruct& current);
  // detach_task (sched_balance.cpp): removes from `busiest` (its lock held) the last-queued task that may move to `to`;
  // under EEVDF it leaves with its lag and a relative deadline (dequeue_entity without DEQUEUE_SLEEP).
  TaskStruct* detach_task(Rq& busiest, CpuId to, sim::SimTime now, bool allow_hot = false);
  // attach_task's enqueue of a migrated task `p` onto `target` (its lock held).
  void attach_task(Rq& target, TaskStruct& p);
  // pick_next_task_fair under EEVDF (sched_fair.cpp), in schedule() with `r` locked: prev leaves the runqueue if it
  // sleeps (deactivate_task), or stays on it as sched_delayed while it is not eligible (DELAY_DEQUEUE); a delayed
  // task that pick_eevdf() picks is dequeued then, and the pick runs again; an empty runqueue balances (newidle).
  // Returns the task to run: `current` to keep it, the idle task to idle.
  sim::Task<TaskStruct*> pick_next_task_fair(PerCpu& pc, Rq& r, TaskStruct& current, bool prev_runnable);
  // ttwu_runnable of a sched_delayed task `p` on `r` (locked): enqueue_task(ENQUEUE_DELAYED) ->
  // requeue_delayed_entity (DELAY_ZERO: re-placed with zero lag if its lag is positive), then wakeup_preempt.
  sim::Task<void> requeue_delayed(PerCpu& w, Rq& r, TaskStruct& p);
  // The fair class's policy is EEVDF (sched_fair.h) where the kernel's version has it.
  bool eevdf() const { return k.config().sched_eevdf(); }
  // sysctl_sched_base_slice: 0.75 ms, scaled by 1 + ilog2(min(ncpus, 8)).
  sim::Duration base_slice() const { return eevdf_base_slice(k.ncpus()); }
  // update_entity_lag's limit: max(2 * slice, TICK_NSEC).
  sim::Duration lag_limit() const;
  // newidle_balance (sched_balance.cpp): before idling, pull a queued task from the busiest runqueue nearby.
  sim::Task<void> newidle_balance(PerCpu& pc, Rq& r);
  // add_nr_running's rd->overload update after a wakeup queued a task behind a running one.
  sim::Task<void> mark_overloaded(PerCpu& waker, Rq& target);
  // ttwu_do_activate's avg_idle sample: the time from newidle balancing to this wake-up onto `r`.
  void update_avg_idle(Rq& r, sim::SimTime now);
  // update_newidle_cost: track the most a domain's newidle balance has cost, decayed ~1% a second.
  void update_newidle_cost(Rq::SchedDomainStats& sd, sim::Duration cost, sim::SimTime now) const;
  // The tick (kernel/sched/tick.cpp): started when a CPU leaves idle, stopped when it enters idle.
  void tick_nohz_idle_exit(CpuId c, sim::SimTime now);
  void arm_tick(CpuId c, sim::SimTime at);
  void on_timer(std::uint32_t cpu) override;
  sim::Task<void> run_expired_timers(PerCpu& self);
  sim::Task<void> scheduler_tick(PerCpu& self);
  // trigger_load_balance -> nohz_balancer_kick: a busy CPU with queued tasks kicks an idle CPU to balance.
  sim::Task<void> nohz_balancer_kick(PerCpu& self, Rq& r);
  // nohz_idle_balance, on the kicked CPU: pulls queued tasks onto the idle CPUs.
  sim::Task<void> nohz_idle_balance(PerCpu& pc);
  // The busiest runqueue with a task `to` may run, nearest scheduling domain first; nullptr if none.
  sim::Task<Rq*> find_busiest_queue(PerCpu& pc, CpuId to);
  // Moves one task `to` may run from `busiest` to `to`'s runqueue (detach_task / attach_task); false if none. An
  // idle balance (CPU_IDLE): a failure counts in `to`'s domain that spans both CPUs, a success clears the count.
  sim::Task<bool> pull_one_task(PerCpu& pc, Rq& busiest, CpuId to);
  // Wake-up placement helpers (sched_wake.cpp).
  void record_wakee(TaskStruct& waker, TaskStruct& p, sim::SimTime now);
  bool wake_wide(const TaskStruct& waker, const TaskStruct& p, CpuId this_cpu);
  sim::Task<CpuId> wake_affine(PerCpu& w, CpuId prev, bool sync);
  sim::Task<CpuId> select_idle_sibling(PerCpu& w, TaskStruct& p, CpuId prev, CpuId target);
  sim::Task<std::optional<CpuId>> select_idle_cpu(PerCpu& w, TaskStruct& p, CpuId target);
  sim::Task<CpuId> select_task_rq_fork(PerCpu& w, TaskStruct& p);
  // The profile's HZ, and jiffies at it (also when the checker runs without the tick).
  std::int64_t hz() const { return std::max<std::int64_t>(k.config().HZ, 1); }
  std::int64_t jiffies(sim::SimTime now) const;
  // The CPUs of each scheduling-domain level around `c` (SMT, LLC, socket, machine), built on first use. Contract:
  // the spans stay valid for the run (nothing built later moves them).
  SchedDomains sched_domains(CpuId c);
  // A task's body is a root owned by its TaskStruct: a failure in it stops the run on the CPU it ran on.
  std::coroutine_handle<> on_root_done(std::coroutine_handle<> finished, std::exception_ptr error) noexcept override;

  struct Hrtimer {
    sim::SimTime expires;
    TaskStruct* task;
  };
  std::vector<std::vector<Hrtimer>> timers_;  // per CPU, pending sleep timers
  std::vector<std::unique_ptr<Rq>> rqs_;
  std::vector<std::unique_ptr<TaskStruct>> tasks_;
  std::uint32_t next_pid_ = 1;
  // By CPU: its SMT, LLC and socket levels, built when first asked (`built`).
  struct OwnDomains {
    bool built = false;
    std::array<std::vector<CpuId>, kSchedDomainLevels - 1> levels;
  };
  std::vector<OwnDomains> domains_;
  std::vector<std::vector<CpuId>> socket_cpus_;  // by socket, ascending: built with the first domains
  // By socket: the machine level of its CPUs, the same list for each (built when one of them is first asked).
  std::vector<std::vector<CpuId>> rest_of_machine_;
  hw::Shared<bool> rd_overload_;  // root_domain->overload, on its own line
  sim::Duration tick_period_{0};
  sim::SimTime nohz_next_balance_{};  // nohz.next_balance
  LineId nohz_idle_cpus_line_;        // nohz.idle_cpus_mask, read by find_new_ilb
};

}  // namespace tlbsim::kernel
