// A pipe as context_switch1 and hackbench use it: a byte count under the pipe mutex, with reader and writer wait
// queues (fs/pipe.c, reduced to blocking one-byte reads and writes).
#pragma once

#include "kernel/sched.h"

namespace tlbsim::kernel {

struct Pipe {
  explicit Pipe(hw::CoherenceModel& model)
      : mutex(model, "pipe.mutex"), rd_wait(model, "pipe.rd_wait"), bytes{0, model.add_line("pipe.buf")} {}
  Spinlock mutex;  // pipe->mutex (see docs/model.md: sleeping locks spin in the model)
  WaitQueue rd_wait;
  hw::Shared<int> bytes;
};

// write(fd, &c, 1): one byte in, then wake the readers.
sim::Task<void> pipe_write(Sched& s, TaskStruct& t, Pipe& p);
// read(fd, &c, 1): one byte out, sleeping while the pipe is empty.
sim::Task<void> pipe_read(Sched& s, TaskStruct& t, Pipe& p);

}  // namespace tlbsim::kernel
