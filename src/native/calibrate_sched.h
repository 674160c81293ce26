// `tlbsim calibrate`'s scheduler and pipe figures: [kernel] pipe_write, pipe_read, context_switch and
// try_to_wake_up. The processes ping-pong is noted but measures no field: it is what the model's switch_mm
// (cr3_write and the mm_cpumask updates) is checked against.
#pragma once

#include "native/calibration_run.h"

namespace tlbsim::native {

// Contract: needs kernel.syscall measured first; a field whose difference does not stand out of its spread keeps
// the base machine's figure.
void measure_scheduler_costs(CalibrationRun& r);

}  // namespace tlbsim::native
