// The scheduler and pipe costs of `tlbsim calibrate`: [kernel] pipe_write, pipe_read, context_switch and
// try_to_wake_up, from three measurements on one CPU (microbench_sched.h), each less what is measured apart.
#include "native/calibrate_sched.h"

#include <fmt/format.h>

#include <algorithm>
#include <tuple>

#include "native/microbench_sched.h"

namespace tlbsim::native {

void measure_scheduler_costs(CalibrationRun& r) {
  const BenchScale& s = r.o.scale;
  const std::uint32_t cpu = r.cpu0;
  const double sys = r.fields.ns("kernel.syscall");
  // pipe_write / pipe_read: one call each, no sleep and no switch, less the null system call.
  const PipeCalls calls = in_thread([&] { return pipe_calls_ns(cpu, s); });
  r.note(fmt::format("pipe write() of 1 byte to an empty pipe, CPU {}", cpu), calls.write);
  r.note(fmt::format("pipe read() of that byte, CPU {}", cpu), calls.read);
  for (const auto& [key, sp, what] :
       {std::tuple{"kernel.pipe_write", calls.write, "write() of 1 byte to an empty pipe"},
        std::tuple{"kernel.pipe_read", calls.read, "read() of the byte back"}}) {
    r.fields.measure(key, std::max(1.0, sp.median - sys),
                     r.from(sp, fmt::format("one thread, a {} in a loop, each call timed apart less an empty pair of "
                                            "clock reads, less kernel.syscall {:.1f} ns; figure is the whole call",
                                            what, sys)));
  }
  // context_switch: a yield that switched is a null system call and one switch (sched_yield's own work, a
  // runqueue lock and yield_task_fair, is left in: an upper bound).
  const YieldSwitch y = in_thread([&] { return yield_switch_ns(cpu, s); });
  r.note(fmt::format("sched_yield() of 2 threads on CPU {} ({:.0f}% switched)", cpu, 100 * y.switched), y.per_yield);
  const bool switch_measured = y.switched >= 0.9 && y.per_yield.median > sys;
  if (switch_measured) {
    r.fields.measure(
        "kernel.context_switch", y.per_yield.median - sys,
        r.from(y.per_yield, fmt::format("two threads pinned on CPU {} call sched_yield() in turn, {:.0f}% "
                                        "of the yields switched (getrusage); per yield less kernel.syscall "
                                        "{:.1f} ns; figure is the whole yield",
                                        cpu, 100 * y.switched, sys)));
  }
  // try_to_wake_up: context_switch1's half round trip (a write that wakes the partner, a read that sleeps and
  // switches to it) less the two calls and the switch measured above.
  const Spread threads = r.note(fmt::format("pipe ping-pong, 2 threads on CPU {} (half a round trip)", cpu),
                                in_thread([&] { return pipe_pingpong_ns(cpu, false, s); }));
  r.note(fmt::format("pipe ping-pong, 2 processes on CPU {} (half a round trip)", cpu),
         in_thread([&] { return pipe_pingpong_ns(cpu, true, s); }));
  const double rest = threads.median - calls.write.median - calls.read.median - r.fields.ns("kernel.context_switch");
  if (switch_measured && rest > 0.1 * (threads.p90 - threads.p10)) {
    r.fields.measure(
        "kernel.try_to_wake_up", rest,
        r.from(threads, fmt::format("will-it-scale context_switch1's loop, 2 threads pinned on CPU {} passing a byte "
                                    "over two pipes: half a round trip less the write() {:.1f} ns and read() {:.1f} ns "
                                    "measured alone and kernel.context_switch {:.1f} ns; figure is the half round trip",
                                    cpu, calls.write.median, calls.read.median, r.fields.ns("kernel.context_switch"))));
  }
}

}  // namespace tlbsim::native
