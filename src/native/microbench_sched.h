// Microbenchmarks of this host's scheduler and pipe paths, for the machine file's [kernel] context_switch,
// try_to_wake_up, pipe_write and pipe_read: a pipe written and read back by one thread (no sleep, no switch), two
// threads on one CPU yielding to each other (a switch with no wake-up), and will-it-scale context_switch1's loop, a
// byte passed back and forth over two pipes between two threads or two processes on one CPU.
#pragma once

#include <cstdint>
#include <optional>

#include "native/microbench.h"
#include "native/spread.h"

namespace tlbsim::native {

// One 1-byte write() to an empty pipe and the read() that empties it again, by one thread pinned on `cpu`; each
// call timed on its own, less the clock's own cost (an empty pair of clock reads), in ns.
struct PipeCalls {
  Spread write, read;
};
PipeCalls pipe_calls_ns(std::uint32_t cpu, const BenchScale& s);

// Two threads pinned on `cpu` call sched_yield() in turn: wall time per yield, in ns (a null system call plus one
// context switch when the yield switched). `switched` is the share of yields that switched (getrusage's
// ru_nvcsw + ru_nivcsw of the timing thread, counted twice: each switch away is followed by one back).
struct YieldSwitch {
  Spread per_yield;
  double switched = 0;
};
YieldSwitch yield_switch_ns(std::uint32_t cpu, const BenchScale& s);

// will-it-scale context_switch1's loop on one CPU: a task and its partner (a thread, or with `processes` a forked
// process) pinned on `cpu` pass one byte back and forth over two pipes. Half a round trip (one write, one read and
// one context switch), in ns.
Spread pipe_pingpong_ns(std::uint32_t cpu, bool processes, const BenchScale& s);

// The sender's side of an IPI to a running CPU: a thread spins in user space on `target`; one on `sender` times
// its own tgkill() of it with a real-time signal. With `blocked` false the signal has a handler, so
// signal_wake_up() finds the task running on another CPU and kick_process() sends it a reschedule IPI; with
// `blocked` true the thread blocks the signal, and tgkill() queues it and returns with no IPI. Each signal is
// handled (or dequeued) before the next is sent. In ns; nullopt when signals cannot be set up here.
std::optional<Spread> kick_ns(std::uint32_t sender, std::uint32_t target, bool blocked, const BenchScale& s);

}  // namespace tlbsim::native
