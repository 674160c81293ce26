// Models the blocking paths of fs/pipe.c's pipe_write and pipe_read for one-byte messages.
#include "kernel/pipe.h"

namespace tlbsim::kernel {

sim::Task<void> pipe_write(Sched& s, TaskStruct& t, Pipe& p) {
  PerCpu& pc = s.cpu_of(t);
  hw::Memory& mem = s.k.mem();
  co_await pc.cpu.delay(s.k.machine().kernel.syscall);
  co_await p.mutex.lock(mem, pc.cpu);
  co_await mem.rmw(pc.cpu, p.bytes, [](int b) { return b + 1; });
  co_await p.mutex.unlock(mem, pc.cpu);
  co_await s.wake_up(t, p.rd_wait, WF_SYNC);  // wake_up_interruptible_sync_poll(&pipe->rd_wait)
}

sim::Task<void> pipe_read(Sched& s, TaskStruct& t, Pipe& p) {
  hw::Memory& mem = s.k.mem();
  co_await s.cpu_of(t).cpu.delay(s.k.machine().kernel.syscall);
  for (;;) {
    PerCpu& pc = s.cpu_of(t);
    co_await p.mutex.lock(mem, pc.cpu);
    const int have = co_await mem.read(pc.cpu, p.bytes);
    if (have > 0) {
      co_await mem.rmw(pc.cpu, p.bytes, [](int b) { return b - 1; });
      co_await p.mutex.unlock(mem, pc.cpu);
      co_return;
    }
    co_await p.mutex.unlock(mem, pc.cpu);
    co_await s.wait_event(t, p.rd_wait, [&p] { return p.bytes.value > 0; });
  }
}

}  // namespace tlbsim::kernel
