// The timeline tracer: filtering, per-CPU span stacks, IPI arrows and counter sampling.
#include "trace/tracer.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "hw/coherence.h"
#include "trace/offcpu.h"
#include "util/error.h"
#include "util/int_list.h"

namespace tlbsim::trace {

std::string format_us(sim::SimTime t) {
  const std::int64_t ps = t.time_since_epoch().count();
  return fmt::format("{}.{:06}", ps / 1'000'000, ps % 1'000'000);
}

TraceFilter parse_trace_filter(const std::string& window, const std::string& cpus, std::uint64_t max_events,
                               std::uint32_t ncpus) {
  TraceFilter f;
  f.max_events = max_events;
  if (!window.empty()) {
    const std::size_t colon = window.find(':');
    if (colon == std::string::npos) {
      throw InputError(
          fmt::format("--trace-window: '{}' is not START:END (e.g. 1ms:2ms; either side may be empty)", window));
    }
    const auto parse = [&](const std::string& text) {
      try {
        return sim::parse_duration(text);
      } catch (const std::invalid_argument& e) {
        throw InputError(fmt::format("--trace-window: {}", e.what()));
      }
    };
    const std::string a = window.substr(0, colon), b = window.substr(colon + 1);
    if (!a.empty()) f.start = sim::kTimeZero + parse(a);
    if (!b.empty()) f.end = sim::kTimeZero + parse(b);
    if (f.end <= f.start) throw InputError(fmt::format("--trace-window: '{}' ends before it starts", window));
  }
  if (!cpus.empty()) {
    f.cpus.assign(ncpus, false);
    for (std::uint32_t c : parse_int_list(cpus, "--trace-cpus", 0, ncpus - 1)) f.cpus[c] = true;
  }
  return f;
}

Tracer::Tracer(std::uint32_t ncpus, TraceFilter filter) : filter_(std::move(filter)), cpus_(ncpus) {}

TraceEvent Tracer::base(const sim::Cpu& cpu, EventKind kind) const {
  TraceEvent e;
  e.kind = kind;
  e.ts = cpu.now();
  e.cpu = cpu.id().get();
  const PerCpu& pc = cpus_[e.cpu];
  e.comm = pc.comm;
  e.pid = pc.pid;
  e.irqs_off = cpu.irqs_disabled();
  e.in_irq = cpu.in_irq();
  return e;
}

void Tracer::emit(const TraceEvent& e) {
  if (failure_) return;
  ++events_;
  // The hooks run inside the model, some from destructors (TraceSpan): a writer's failure (memory, a full disk)
  // must not escape there. It ends the recording; the session reports it after the run.
  try {
    for (TraceWriter* w : writers_) w->write(e);
  } catch (...) {
    failure_ = std::current_exception();
  }
}

bool Tracer::admit(std::uint32_t cpu, sim::SimTime ts) {
  if (stopped_ || closed_) return false;
  if (ts >= filter_.end) {
    stop(filter_.end);
    return false;
  }
  if (ts < filter_.start || !filter_.includes(cpu)) return false;
  if (filter_.max_events != 0 && events_ >= filter_.max_events) {
    truncated_ = true;
    stop(ts);
    TraceEvent note;
    note.kind = EventKind::kNote;
    note.ts = ts;
    const std::string text =
        fmt::format("trace truncated at {} us: --trace-max-events {} reached", format_us(ts), filter_.max_events);
    note.detail = text;
    for (TraceWriter* w : writers_) w->write(note);
    return false;
  }
  sample(ts);
  if (!cpus_[cpu].live) open_cpu(cpu);
  return true;
}

void Tracer::open_cpu(std::uint32_t cpu) {
  PerCpu& pc = cpus_[cpu];
  pc.live = true;
  for (const Open& o : pc.stack) {
    TraceEvent b;
    b.kind = EventKind::kBegin;
    b.ts = filter_.start;
    b.cpu = cpu;
    b.comm = pc.comm;
    b.pid = pc.pid;
    b.synthetic = true;
    b.name = o.name;
    b.cat = o.cat;
    emit(b);
  }
}

void Tracer::stop(sim::SimTime ts) {
  if (stopped_) return;
  stopped_ = true;
  for (std::uint32_t c = 0; c < cpus_.size(); ++c) {
    PerCpu& pc = cpus_[c];
    // A CPU with no event inside the window still shows what it was doing.
    if (!pc.live && !pc.stack.empty() && filter_.includes(c) && ts > filter_.start) open_cpu(c);
    if (!pc.live) continue;
    for (std::size_t i = pc.stack.size(); i-- > 0;) {
      TraceEvent e;
      e.kind = EventKind::kEnd;
      e.ts = ts;
      e.cpu = c;
      e.comm = pc.comm;
      e.pid = pc.pid;
      e.synthetic = true;
      e.name = pc.stack[i].name;
      e.cat = pc.stack[i].cat;
      emit(e);
    }
    pc.live = false;
  }
}

void Tracer::sample(sim::SimTime ts) {
  if (coherence_ == nullptr || ts < next_sample_) return;
  const std::uint64_t all = coherence_->total_transfers(), remote = coherence_->total_remote_transfers();
  if (ts > last_sample_) {
    // Transfers per microsecond since the previous sample, split into those within a socket and across.
    const double us = static_cast<double>((ts - last_sample_).count()) / 1e6;
    // Rounded to thousandths: shorter files, and the figure means no more than that.
    const double r = std::round(static_cast<double>(remote - last_remote_) / us * 1000) / 1000;
    const double l =
        std::round(static_cast<double>((all - last_transfers_) - (remote - last_remote_)) / us * 1000) / 1000;
    TraceEvent e;
    e.kind = EventKind::kCounter;
    e.ts = ts;
    e.name = "cache-line transfers per us";
    e.cat = "within a socket";
    e.number = l;
    e.detail = "across sockets";
    e.number2 = r;
    emit(e);
  }
  last_sample_ = ts;
  last_transfers_ = all;
  last_remote_ = remote;
  next_sample_ = ts + sample_interval_;
}

void Tracer::push(const sim::Cpu& cpu, std::string name, std::string_view cat, bool task) {
  const std::uint32_t c = cpu.id().get();
  const bool in = admit(c, cpu.now());  // first: a CPU coming into the window writes what was open before
  cpus_[c].stack.push_back(Open{std::move(name), cat, task});
  if (!in) return;
  TraceEvent e = base(cpu, EventKind::kBegin);
  e.name = cpus_[c].stack.back().name;
  e.cat = cat;
  emit(e);
}

void Tracer::pop(const sim::Cpu& cpu) {
  const std::uint32_t c = cpu.id().get();
  PerCpu& pc = cpus_[c];
  if (pc.stack.empty()) return;  // opened before the tracer was attached
  if (admit(c, cpu.now())) {
    TraceEvent e = base(cpu, EventKind::kEnd);
    e.name = pc.stack.back().name;
    e.cat = pc.stack.back().cat;
    emit(e);
  }
  pc.stack.pop_back();
}

void Tracer::begin(const sim::Cpu& cpu, std::string_view name, std::string_view cat) {
  if (closed_) return;
  push(cpu, std::string(name), cat, false);
}

void Tracer::end(const sim::Cpu& cpu) {
  if (closed_) return;
  pop(cpu);
}

void Tracer::set_task(const sim::Cpu& cpu, std::string_view comm, std::uint32_t pid) {
  if (closed_) return;
  PerCpu& pc = cpus_[cpu.id().get()];
  pc.comm = std::string(comm);
  pc.pid = pid;
  push(cpu, pid == 0 ? std::string(comm) : fmt::format("{}-{}", comm, pid), "task", true);  // idle: swapper/N
}

void Tracer::sched_switch(const sim::Cpu& cpu, std::string_view prev_comm, std::uint32_t prev_pid,
                          std::string_view prev_state, std::string_view next_comm, std::uint32_t next_pid) {
  if (closed_) return;
  const std::uint32_t c = cpu.id().get();
  if (admit(c, cpu.now())) {
    TraceEvent e = base(cpu, EventKind::kSchedSwitch);
    const std::string text =
        fmt::format("prev_comm={} prev_pid={} prev_prio=120 prev_state={} ==> next_comm={} next_pid={} next_prio=120",
                    prev_comm, prev_pid, prev_state, next_comm, next_pid);
    e.name = "sched_switch";
    e.cat = "sched";
    e.detail = text;
    emit(e);
  }
  // End prev's span and the kernel functions open inside it, which prev resumes in when it next runs (a lock's
  // slow path, a fault); then begin next's span and reopen the functions it was switched out in.
  PerCpu& pc = cpus_[c];
  const auto task = std::find_if(pc.stack.begin(), pc.stack.end(), [](const Open& o) { return o.task; });
  const auto keep = static_cast<std::size_t>(task - pc.stack.begin());
  std::vector<Open> inside;
  if (keep < pc.stack.size()) inside.assign(pc.stack.begin() + static_cast<std::ptrdiff_t>(keep) + 1, pc.stack.end());
  while (pc.stack.size() > keep) pop(cpu);
  if (offcpu_ != nullptr) {
    std::vector<std::string> names;
    names.reserve(inside.size());
    for (const Open& o : inside) names.push_back(o.name);
    offcpu_->switch_out(prev_comm, prev_pid, prev_state, std::move(names), cpu.now());
    offcpu_->switch_in(next_pid, cpu.now());
  }
  if (!inside.empty()) switched_out_[prev_pid] = std::move(inside);
  set_task(cpu, next_comm, next_pid);
  const auto resumed = switched_out_.find(next_pid);
  if (resumed == switched_out_.end()) return;
  for (Open& o : resumed->second) push(cpu, std::move(o.name), o.cat, false);
  switched_out_.erase(resumed);
}

std::string Tracer::target_mask(std::span<const CpuId> targets) const {
  // %*pb: 32-bit hex words, most significant first, comma-separated; the first word only as wide as its bits.
  const std::uint32_t n = ncpus();
  const std::uint32_t words = (n + 31) / 32;
  std::vector<std::uint32_t> w(words, 0);
  for (CpuId t : targets) w[t.get() / 32] |= std::uint32_t{1} << (t.get() % 32);
  std::string out;
  for (std::uint32_t i = words; i-- > 0;) {
    const std::uint32_t bits = i + 1 == words && n % 32 != 0 ? n % 32 : 32;
    if (!out.empty()) out += ',';
    out += fmt::format("{:0{}x}", w[i], (bits + 3) / 4);
  }
  return out;
}

void Tracer::ipi_send(const sim::Cpu& cpu, std::span<const CpuId> targets, std::span<const sim::SimTime> arrivals,
                      int vector, std::string_view reason) {
  if (closed_) return;
  const std::uint32_t c = cpu.id().get();
  for (std::size_t i = 0; i < targets.size() && i < arrivals.size(); ++i) {
    cpus_[targets[i].get()].pending.push_back(PendingIpi{++next_flow_, vector, c, cpu.now(), arrivals[i]});
  }
  if (!admit(c, cpu.now())) return;
  TraceEvent e = base(cpu, EventKind::kIpiRaise);
  const std::string mask = target_mask(targets);
  e.name = "ipi_raise";
  e.cat = "ipi";
  e.detail = mask;
  e.reason = reason;
  e.value = vector;
  emit(e);
}

void Tracer::irq_entry(const sim::Cpu& cpu, int vector, std::string_view name, std::string_view reason, bool ipi) {
  if (closed_) return;
  push(cpu, std::string(name), "irq", false);
  const std::uint32_t c = cpu.id().get();
  const bool in = admit(c, cpu.now());
  if (in) {
    TraceEvent e = base(cpu, EventKind::kIpiEntry);
    e.name = ipi ? "ipi_entry" : "local_timer_entry";
    e.cat = "ipi";
    e.reason = reason;
    e.value = vector;
    emit(e);
  }
  // The arrows of the IPIs this entry serves: those of this vector that have arrived.
  const sim::SimTime now = cpu.now();
  std::erase_if(cpus_[c].pending, [&](const PendingIpi& p) {
    if (p.vector != vector || p.arrives > now) return false;
    if (in && p.sent >= filter_.start && filter_.includes(p.from)) {
      TraceEvent f = base(cpu, EventKind::kFlow);
      f.name = "ipi";
      f.cat = "ipi";
      f.reason = reason;
      f.id = p.id;
      f.from_cpu = p.from;
      f.from_ts = p.sent;
      emit(f);
    }
    return true;
  });
}

void Tracer::irq_exit(const sim::Cpu& cpu, int vector, std::string_view reason, bool ipi) {
  if (closed_) return;
  if (admit(cpu.id().get(), cpu.now())) {
    TraceEvent e = base(cpu, EventKind::kIpiExit);
    e.name = ipi ? "ipi_exit" : "local_timer_exit";
    e.cat = "ipi";
    e.reason = reason;
    e.value = vector;
    emit(e);
  }
  pop(cpu);
}

void Tracer::tlb_flush(const sim::Cpu& cpu, int reason, std::string_view reason_text, std::int64_t pages) {
  if (closed_ || !admit(cpu.id().get(), cpu.now())) return;
  TraceEvent e = base(cpu, EventKind::kTlbFlush);
  e.name = "tlb_flush";
  e.cat = "tlb";
  e.reason = reason_text;
  e.id = static_cast<std::uint64_t>(reason);
  e.value = pages;
  emit(e);
}

void Tracer::counter(sim::SimTime ts, std::string_view name, std::string_view series, double value) {
  if (closed_ || stopped_ || ts < filter_.start) return;
  if (ts >= filter_.end) {
    stop(filter_.end);
    return;
  }
  if (filter_.max_events != 0 && events_ >= filter_.max_events) return;  // the next CPU event notes it
  TraceEvent e;
  e.kind = EventKind::kCounter;
  e.ts = ts;
  e.name = name;
  e.cat = series;
  e.number = value;
  emit(e);
}

void Tracer::close(sim::SimTime end) {
  if (closed_) return;
  if (!stopped_) {
    const sim::SimTime t = std::min(end, filter_.end);
    if (t > filter_.start) sample(t);
    stop(std::max(t, filter_.start));
  }
  closed_ = true;
}

}  // namespace tlbsim::trace
