#pragma once
// Purpose: how a halted CPU's wake-up latency depends on how long it halted. In a KVM guest a vCPU halted briefly
// wakes faster than one halted long (the host's halt polling, and the host CPU's own idle states): tlbsim calibrate
// times both, and the modeled HLT exit is scaled between them (hw::IdleState, sim::Cpu::safe_halt).
// Contract: short_halt < long_halt when long_halt > 0; long_halt == 0 scales nothing (at() is 1).

#include "sim/time.h"

namespace tlbsim::sim {

struct HaltLengthScaling {
  Duration short_halt{0}, long_halt{0};
  double short_scale = 1.0;  // the exit after a halt of short_halt or less, over the exit after one of long_halt

  // The factor for a halt of `halted`: short_scale up to short_halt, 1 from long_halt, linear in the length between.
  double at(Duration halted) const {
    if (long_halt.count() <= 0 || halted >= long_halt) return 1.0;
    if (halted <= short_halt) return short_scale;
    const double f =
        static_cast<double>((halted - short_halt).count()) / static_cast<double>((long_halt - short_halt).count());
    return short_scale + (1.0 - short_scale) * f;
  }
};

}  // namespace tlbsim::sim
