#include "workloads/contention.h"

#include <chrono>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "hw/system.h"
#include "sim/timed_scheduler.h"
#include "util/registry.h"

namespace tlbsim::workloads {

namespace {

// Every CPU does atomic read-modify-writes on one shared line (a contended counter such as mm->context.tlb_gen).
class SharedRmw final : public ContentionPattern {
 public:
  void setup(hw::CoherenceModel& model, std::uint32_t) override { line_ = model.add_line("contention.shared"); }
  hw::Access access() const override { return hw::Access::kRmw; }
  LineId line_for(CpuId) const override { return line_; }

 private:
  LineId line_;
};

// Every CPU reads one shared line that nobody writes.
class SharedRead final : public ContentionPattern {
 public:
  void setup(hw::CoherenceModel& model, std::uint32_t) override { line_ = model.add_line("contention.shared"); }
  hw::Access access() const override { return hw::Access::kLoad; }
  LineId line_for(CpuId) const override { return line_; }

 private:
  LineId line_;
};

// Every CPU does atomic read-modify-writes on a line of its own (a per-CPU counter).
class PrivateRmw final : public ContentionPattern {
 public:
  void setup(hw::CoherenceModel& model, std::uint32_t cpus) override {
    for (std::uint32_t i = 0; i < cpus; ++i) lines_.push_back(model.add_line("contention.private"));
  }
  hw::Access access() const override { return hw::Access::kRmw; }
  LineId line_for(CpuId cpu) const override { return lines_[cpu.get()]; }

 private:
  std::vector<LineId> lines_;
};

TLBSIM_REGISTER(ContentionPattern, SharedRmw, "shared-rmw", "atomic RMW on one line shared by every CPU");
TLBSIM_REGISTER(ContentionPattern, SharedRead, "shared-read", "loads of one line shared by every CPU, never written");
TLBSIM_REGISTER(ContentionPattern, PrivateRmw, "private-rmw", "atomic RMW on a private line per CPU");

sim::Task<void> worker(hw::Memory& mem, sim::Cpu& cpu, LineId line, hw::Access kind, sim::SimTime end,
                       std::uint64_t& ops) {
  while (cpu.now() < end) {
    co_await mem.touch(cpu, line, kind);
    ++ops;
  }
}

}  // namespace

ContentionPoint run_contention(const hw::Machine& machine, const std::string& pattern_name, std::uint32_t cpus,
                               sim::Duration duration, std::uint64_t seed) {
  auto pattern = Registry<ContentionPattern>::make("pattern", pattern_name);
  if (cpus == 0 || cpus > machine.cpu_count()) {
    throw InputError(fmt::format("--cpus: {} CPUs requested, but machine '{}' has {} (use 1..{})", cpus, machine.name,
                                 machine.cpu_count(), machine.cpu_count()));
  }
  if (duration.count() <= 0) throw InputError("--duration must be positive");
  const auto wall_start = std::chrono::steady_clock::now();

  hw::System sys(machine, [seed](std::size_t n) { return std::make_unique<sim::TimedScheduler>(n, seed); });
  pattern->setup(sys.coherence(), cpus);
  ContentionPoint p;
  p.cpus = cpus;
  p.per_cpu_ops.assign(cpus, 0);
  const sim::SimTime end = sim::kTimeZero + duration;
  for (std::uint32_t i = 0; i < cpus; ++i) {
    const CpuId id{i};
    sys.cpu(id).start(worker(sys.memory(), sys.cpu(id), pattern->line_for(id), pattern->access(), end,
                             p.per_cpu_ops[i]));
  }
  const sim::RunResult r = sys.scheduler().run(end);
  for (std::uint64_t n : p.per_cpu_ops) p.ops += n;
  p.ops_per_sec = static_cast<double>(p.ops) / sim::to_seconds(duration);
  p.events = r.events;
  for (const auto& [name, st] : sys.coherence().stats_by_name()) p.lines += st;
  p.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return p;
}

nlohmann::json to_json(const ContentionPoint& p) {
  return {{"cpus", p.cpus},
          {"ops", p.ops},
          {"ops_per_sec", p.ops_per_sec},
          {"per_cpu_ops", p.per_cpu_ops},
          {"events", p.events},
          {"line_transfers", p.lines.transfers},
          {"line_remote_transfers", p.lines.remote_transfers},
          {"line_wait_ns", sim::to_nanoseconds(p.lines.wait)}};
}

}  // namespace tlbsim::workloads
