#pragma once
// Purpose: how a halted CPU's wake-up latency depends on how long it halted. In a KVM guest a vCPU halted briefly
// wakes faster than one halted long (the host's halt polling, and the host CPU's own idle states): tlbsim calibrate
// times wake-ups after halts of three lengths, and the modeled HLT exit is scaled between them (hw::IdleState,
// sim::Cpu::safe_halt).
// Contract: brief_halt < short_halt < long_halt when long_halt > 0 (brief_halt 0: no brief point); long_halt == 0
// scales nothing (at() is 1).

#include "sim/time.h"

namespace tlbsim::sim {

struct HaltLengthScaling {
  Duration short_halt{0}, long_halt{0};
  double short_scale = 1.0;  // the exit after a halt of short_halt, over the exit after one of long_halt
  // Optional: the exit after a halt of brief_halt or less, over the exit after one of long_halt. 0: no brief point,
  // and short_scale holds for every halt up to short_halt.
  Duration brief_halt{0};
  double brief_scale = 1.0;

  // The factor for a halt of `halted`: piecewise linear in the halt's length through (brief_halt, brief_scale),
  // (short_halt, short_scale) and (long_halt, 1); the first point's scale below it, 1 from long_halt.
  double at(Duration halted) const {
    if (long_halt.count() <= 0 || halted >= long_halt) return 1.0;
    if (halted <= short_halt) {
      if (brief_halt.count() <= 0) return short_scale;
      if (halted <= brief_halt) return brief_scale;
      return between(halted, brief_halt, brief_scale, short_halt, short_scale);
    }
    return between(halted, short_halt, short_scale, long_halt, 1.0);
  }

 private:
  static double between(Duration halted, Duration lo, double lo_scale, Duration hi, double hi_scale) {
    const double f = static_cast<double>((halted - lo).count()) / static_cast<double>((hi - lo).count());
    return lo_scale + (hi_scale - lo_scale) * f;
  }
};

}  // namespace tlbsim::sim
