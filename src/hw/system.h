// One simulated machine instance: the scheduler that drives it, its coherence model, memory and IPI fabric.
#pragma once

#include <cstdint>
#include <memory>

#include "hw/coherence.h"
#include "hw/ipi.h"
#include "hw/machine.h"
#include "hw/memory.h"
#include "hw/topology.h"
#include "sim/scheduler.h"

namespace tlbsim::hw {

// Contract: owns every simulation object of one run; the scheduler is timed or exploring, and the model code
// cannot tell which.
class System {
 public:
  // Builds the machine with the scheduler made by make_scheduler(cpu_count).
  template <class MakeScheduler>
  System(const Machine& m, MakeScheduler&& make_scheduler)
      : machine_(m),
        topology_(m.topology),
        scheduler_(make_scheduler(topology_.cpu_count())),
        coherence_(topology_, m.coherence),
        memory_(*scheduler_, coherence_),
        ipi_(*scheduler_, topology_, m.ipi) {
    scheduler_->set_line_namer([this](LineId l) { return std::string(coherence_.name(l)); });
  }

  const Machine& machine() const { return machine_; }
  const Topology& topology() const { return topology_; }
  sim::Scheduler& scheduler() { return *scheduler_; }
  CoherenceModel& coherence() { return coherence_; }
  Memory& memory() { return memory_; }
  IpiFabric& ipi() { return ipi_; }
  sim::Cpu& cpu(CpuId id) { return scheduler_->cpu(id); }

 private:
  Machine machine_;
  Topology topology_;
  std::unique_ptr<sim::Scheduler> scheduler_;
  CoherenceModel coherence_;
  Memory memory_;
  IpiFabric ipi_;
};

}  // namespace tlbsim::hw
