// The timeline tracer: the modeled kernel reports spans, sched switches, IPIs and TLB flushes to it; it applies the
// time window, CPU filter and event cap, pairs each IPI's sender with its handler, and feeds its writers.
#pragma once

#include <cstdint>
#include <exception>
#include <limits>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sim/cpu.h"
#include "sim/ids.h"
#include "sim/time.h"
#include "trace/event.h"

namespace tlbsim::hw {
class CoherenceModel;
}

namespace tlbsim::trace {

class OffCpuProfile;

// What to record: a time window [start, end), a set of CPUs (empty: all), at most max_events events (0: no cap).
struct TraceFilter {
  sim::SimTime start = sim::kTimeZero;
  sim::SimTime end = sim::SimTime::max();
  std::vector<bool> cpus;
  std::uint64_t max_events = 1'000'000;
  bool includes(std::uint32_t cpu) const { return cpus.empty() || (cpu < cpus.size() && cpus[cpu]); }
};

// Parses --trace-window "A:B" (either side may be empty: from the start, to the end; durations as --duration
// takes them) and --trace-cpus "0-7,64" against `ncpus`. Throws InputError naming the option.
TraceFilter parse_trace_filter(const std::string& window, const std::string& cpus, std::uint64_t max_events,
                               std::uint32_t ncpus);

// Contract: the model calls the hooks from the CPU the event happens on, at that CPU's current time; tracing only
// observes (it never changes simulated state, so a traced run's results equal an untraced one's). Writers are
// not owned and must outlive the tracer's use. After close() every hook is ignored.
class Tracer {
 public:
  Tracer(std::uint32_t ncpus, TraceFilter filter);

  void add_writer(TraceWriter& w) { writers_.push_back(&w); }
  // Samples the machine's cache-line transfer totals into a counter track, at most once per `interval`.
  void set_coherence(const hw::CoherenceModel* c, sim::Duration interval = sim::microseconds(1)) {
    coherence_ = c;
    sample_interval_ = interval;
  }

  // Feeds every sched_switch to `p` (not owned), whatever the window and the event cap.
  void set_offcpu(OffCpuProfile* p) { offcpu_ = p; }

  // --- hooks for the model ---
  void begin(const sim::Cpu& cpu, std::string_view name, std::string_view cat);
  void end(const sim::Cpu& cpu);
  // The task `comm`/`pid` runs on `cpu` from now (a span on its track); at boot, without a sched_switch event.
  void set_task(const sim::Cpu& cpu, std::string_view comm, std::uint32_t pid);
  // sched:sched_switch; prev_state as ftrace prints it ("R+", "S", "X"). Ends prev's span and the spans open in it
  // (saved for its next switch-in, which reopens them), and begins next's.
  void sched_switch(const sim::Cpu& cpu, std::string_view prev_comm, std::uint32_t prev_pid,
                    std::string_view prev_state, std::string_view next_comm, std::uint32_t next_pid);
  // One send to `targets`, whose interrupts arrive at `arrivals`; `reason` names the vector.
  void ipi_send(const sim::Cpu& cpu, std::span<const CpuId> targets, std::span<const sim::SimTime> arrivals, int vector,
                std::string_view reason);
  // Interrupt handler entry and exit (a span named `name`); arrows from the IPIs it serves end at the entry.
  // `ipi` false: the local timer (ftrace's local_timer_entry/exit rather than ipi_entry/exit).
  void irq_entry(const sim::Cpu& cpu, int vector, std::string_view name, std::string_view reason, bool ipi);
  void irq_exit(const sim::Cpu& cpu, int vector, std::string_view reason, bool ipi);
  // tlb:tlb_flush with the kernel's reason number and text and the pages (-1: TLB_FLUSH_ALL).
  void tlb_flush(const sim::Cpu& cpu, int reason, std::string_view reason_text, std::int64_t pages);
  // A named counter track's new value.
  void counter(sim::SimTime ts, std::string_view name, std::string_view series, double value);
  // The end of the run: closes every open span at `end` (or the window's end) and stops recording.
  void close(sim::SimTime end);

  bool closed() const { return closed_; }
  std::uint64_t events() const { return events_; }
  bool truncated() const { return truncated_; }
  // What a writer threw (std::bad_alloc, a write error), which stopped the recording; null when none did.
  std::exception_ptr failure() const { return failure_; }
  std::uint32_t ncpus() const { return static_cast<std::uint32_t>(cpus_.size()); }

 private:
  struct Open {
    std::string name;
    std::string_view cat;
    bool task = false;
  };
  struct PendingIpi {
    std::uint64_t id;
    int vector;
    std::uint32_t from;
    sim::SimTime sent;
    sim::SimTime arrives;
  };
  struct PerCpu {
    std::vector<Open> stack;
    std::string comm = "<idle>";
    std::uint32_t pid = 0;
    bool live = false;  // its open spans have been written (it is inside the window)
    std::vector<PendingIpi> pending;
  };

  // Whether an event of `cpu` at `ts` is recorded; opens the CPU's spans at the window's start on first use.
  bool admit(std::uint32_t cpu, sim::SimTime ts);
  // Writes the CPU's open spans as beginning at the window's start.
  void open_cpu(std::uint32_t cpu);
  void push(const sim::Cpu& cpu, std::string name, std::string_view cat, bool task);
  void pop(const sim::Cpu& cpu);
  TraceEvent base(const sim::Cpu& cpu, EventKind kind) const;
  void emit(const TraceEvent& e);
  // Stops recording at `ts`: every written open span ends there.
  void stop(sim::SimTime ts);
  void sample(sim::SimTime ts);
  std::string target_mask(std::span<const CpuId> targets) const;

  TraceFilter filter_;
  std::vector<PerCpu> cpus_;
  std::map<std::uint32_t, std::vector<Open>> switched_out_;  // by pid: the spans a sleeping task resumes in
  std::vector<TraceWriter*> writers_;
  const hw::CoherenceModel* coherence_ = nullptr;
  OffCpuProfile* offcpu_ = nullptr;
  sim::Duration sample_interval_ = sim::microseconds(1);
  sim::SimTime next_sample_ = sim::kTimeZero;
  sim::SimTime last_sample_ = sim::kTimeZero;
  std::uint64_t last_transfers_ = 0, last_remote_ = 0;
  std::uint64_t next_flow_ = 0;
  std::uint64_t events_ = 0;
  bool stopped_ = false;
  bool truncated_ = false;
  bool closed_ = false;
  std::exception_ptr failure_;
};

// A kernel function's span on its CPU for the lifetime of the guard (a coroutine's frame: it ends at co_return).
// A null tracer makes it a no-op.
class TraceSpan {
 public:
  TraceSpan(Tracer* t, const sim::Cpu& cpu, std::string_view name, std::string_view cat) : t_(t), cpu_(cpu) {
    if (t_ != nullptr) t_->begin(cpu, name, cat);
  }
  ~TraceSpan() {
    if (t_ != nullptr) t_->end(cpu_);
  }
  TraceSpan(const TraceSpan&) = delete;
  TraceSpan& operator=(const TraceSpan&) = delete;

 private:
  Tracer* t_;
  const sim::Cpu& cpu_;
};

}  // namespace tlbsim::trace
