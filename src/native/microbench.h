// Microbenchmarks of this host, each repeated to give a median and spread: cache-line transfer between two CPUs,
// atomic read-modify-write alone and under contention, the null system call, page faults, clearing and copying a
// page, a DRAM load, madvise(MADV_DONTNEED) of one page with and without another CPU running the same mm (the
// kernel's remote TLB shootdown round trip), and membarrier's expedited IPI round trip.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <vector>

#include "native/spread.h"

namespace tlbsim::native {

struct BenchScale {
  std::uint32_t repetitions = 15;  // samples per figure
  double work = 1.0;               // multiplies the iterations in each sample (tests use a small value)
};
// The iterations of a sample: `base` times the scale's work, at least 1.
std::uint64_t bench_iters(const BenchScale& s, std::uint64_t base);
// Pins the calling thread on `cpu`, or throws std::runtime_error saying which CPU refused.
void pin_or_throw(std::uint32_t cpu);

// One-way line transfer: two threads pinned on `a` and `b` ping-pong one cache line; half a round trip, in ns.
Spread line_transfer_ns(std::uint32_t a, std::uint32_t b, const BenchScale& s);
// Wall time of one atomic fetch-add on one line hammered by a thread on each of `cpus` (one CPU: uncontended).
Spread atomic_rmw_ns(const std::vector<std::uint32_t>& cpus, const BenchScale& s);
// syscall(SYS_getppid) round trip.
Spread syscall_ns(const BenchScale& s);
// First touch of an anonymous page: a read (maps the shared zero page: fault entry/exit and PTE work, no page) or
// a write (also allocates and clears a page).
Spread page_fault_ns(bool write, const BenchScale& s);
// The spread of one kernel operation's duration from one execution to the next: write faults of anonymous pages,
// each timed alone; per repetition (p90 - p10) / (1.6 * median) of the single faults, the step_spread whose uniform
// draw has the same 10th-90th percentile range (hw::TimingParams).
Spread fault_step_spread(const BenchScale& s);
// Clearing (memset) or copying (memcpy) one cache-warm 4 KiB page.
Spread page_op_ns(bool copy, const BenchScale& s);
// One dependent load missing every cache (pointer chase through 64 MiB in random order).
Spread memory_load_ns(const BenchScale& s);
// madvise(MADV_DONTNEED) of one just-written page by a thread on `cpu`, while a thread of the same process spins
// in user space on `remote` (the kernel must shoot down its TLB) or with no other thread running. With
// `populate` false the page is never touched: no PTE to zap, no flush, just the system call's own path.
Spread madvise_dontneed_ns(std::uint32_t cpu, std::optional<std::uint32_t> remote, const BenchScale& s,
                           bool populate = true);
// membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) on `cpu`, with or without a thread of the process running on
// `remote` (then the kernel IPIs it and waits); nullopt when the kernel lacks it.
std::optional<Spread> membarrier_ns(std::uint32_t cpu, std::optional<std::uint32_t> remote, const BenchScale& s);
// The wake-up of an idle CPU: a thread pinned on `sleeper` blocks in read() on a pipe; one on `waker`, every 1 ms
// (long enough for the sleeper's CPU to enter its idle state), writes a byte; the figure is the time from just
// before the write to the sleeper's return from read(), in ns.
// `asleep` is how long the waker waits before each write: 1 ms by a sleep, shorter times by spinning on the clock
// (a sleep's timer slack is longer than they are). The sleeper has been blocked longer than that: the waker blocks
// in read() for the sleeper's reply first, and its own wake-up adds to the sleeper's halt.
// With `single`, also the spread of every single wake-up of every repetition (the figure is a mean per repetition);
// with `halted`, the spread of how long the sleeper had been blocked at each write (its CPU's halt, in ns).
Spread wakeup_ns(std::uint32_t waker, std::uint32_t sleeper, const BenchScale& s,
                 std::chrono::microseconds asleep = std::chrono::microseconds(1000), Spread* single = nullptr,
                 Spread* halted = nullptr);
// The wake-up of a CPU halted briefly: the sleeper blocks in read() as above, and the waker, spinning on the clock
// without ever blocking, writes `after_block` after the sleeper's call of read(). The figure is the time from just
// before each write to the sleeper's return, in ns (a mean per repetition); `halted` gets the spread of how long the
// sleeper had been blocked at each write.
Spread brief_wakeup_ns(std::uint32_t waker, std::uint32_t sleeper, const BenchScale& s,
                       std::chrono::microseconds after_block, Spread* halted);
// The waker's side of a wake-up: a thread pinned on `sleeper` blocks in FUTEX_WAIT; one on `waker` times its own
// FUTEX_WAKE system call, which finds the sleeper asleep (50 us after it last ran, so that an idle CPU has halted).
// With `sleeper` == `waker` the wake-up is local (an enqueue on the waker's own runqueue, no IPI); with another,
// idle CPU, v5.x+ try_to_wake_up queues the task on that CPU's wake list and sends it an IPI. In ns; nullopt when
// no FUTEX_WAKE of a sample found the sleeper asleep.
std::optional<Spread> wake_call_ns(std::uint32_t waker, std::uint32_t sleeper, const BenchScale& s);

}  // namespace tlbsim::native
