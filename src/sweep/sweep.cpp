// Running, resuming and merging sweeps.
#include "sweep/sweep.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <ostream>

#include "hw/machine.h"
#include "sim/time.h"
#include "sweep/results.h"
#include "util/atomic_file.h"
#include "util/error.h"
#include "util/parallel.h"
#include "util/progress.h"
#include "workloads/run.h"

namespace tlbsim::sweep {

namespace {

// "threads: [1,5] here, [1,10] in DIR" for the first key on which two grids differ.
std::string grid_difference(const Grid& a, const Grid& b, const std::string& where) {
  const nlohmann::json ja = grid_to_json(a), jb = grid_to_json(b);
  for (const auto& [key, value] : ja.items()) {
    if (!jb.contains(key) || jb[key] != value) {
      return fmt::format("{}: {} here, {} in {}", key, value.dump(), jb.value(key, nlohmann::json()).dump(), where);
    }
  }
  for (const auto& [key, value] : jb.items()) {  // a key only the journal has (e.g. its --param)
    if (!ja.contains(key)) return fmt::format("{}: null here, {} in {}", key, value.dump(), where);
  }
  return "";
}

double metric_value(const workloads::RunOutput& r, const std::string& metric) {
  if (metric.empty()) return r.metric;
  const nlohmann::json* j = &r.json;
  std::size_t at = 0;
  while (at <= metric.size()) {
    const std::size_t dot = std::min(metric.find('.', at), metric.size());
    const std::string key = metric.substr(at, dot - at);
    if (!j->is_object() || !j->contains(key)) {
      throw InputError(fmt::format("--metric: '{}' is not in the run's JSON (no '{}'; see `tlbsim run --format json`)",
                                   metric, key));
    }
    j = &(*j)[key];
    at = dot + 1;
  }
  if (!j->is_number()) throw InputError(fmt::format("--metric: '{}' is not a number but {}", metric, j->dump()));
  return j->get<double>();
}

PointResult run_point(const hw::Machine& machine, const Grid& g, const GridPoint& p) {
  workloads::RunSpec spec;
  spec.kernel = p.kernel;
  spec.workload = g.workload;
  spec.params = g.params;
  spec.threads = p.threads;
  spec.seed = p.seed;
  spec.duration = sim::parse_duration(g.duration);
  if (!g.warmup.empty()) spec.warmup = sim::parse_duration(g.warmup);
  const workloads::RunOutput r = workloads::run_workload(machine, spec);
  PointResult out;
  out.point = p;
  out.value = metric_value(r, g.metric);
  out.unit = g.metric.empty() ? r.json["metric"]["unit"].get<std::string>() : g.metric;
  out.ops = r.json["ops"].get<std::uint64_t>();
  out.events = r.events;
  out.violations = r.violations;
  return out;
}

std::vector<PointResult> sorted_unique(std::vector<PointResult> points) {
  std::sort(points.begin(), points.end(),
            [](const PointResult& a, const PointResult& b) { return a.point.index < b.point.index; });
  points.erase(std::unique(points.begin(), points.end(),
                           [](const PointResult& a, const PointResult& b) { return a.point.index == b.point.index; }),
               points.end());
  return points;
}

// The sweep being run: its options, machine, journal file and progress output.
struct SweepRun {
  const SweepOptions& o;
  const hw::Machine& machine;
  std::ostream& progress;
  const std::atomic<bool>* stop;
  std::string journal_path;
};

// A sweep's points: those finished (from the journal, then by this run) and those this shard still has to run.
struct SweepPlan {
  std::vector<PointResult> finished;
  std::vector<GridPoint> pending;
  std::size_t already = 0;  // this shard's points the journal had finished
};

// Fails fast on what only a run detects (a workload's own limits, e.g. one thread per core): a 1us run of each
// kernel at the most threads, before hours of simulation.
void probe_kernels(const SweepRun& s) {
  const Grid& grid = s.o.grid;
  Grid probe = grid;
  probe.duration = "1us";
  for (const std::string& k : grid.kernels) {
    run_point(s.machine, probe, GridPoint{0, k, *std::max_element(grid.threads.begin(), grid.threads.end()), 1});
  }
}

// The journal of an earlier run in the output folder, when --resume continues it; refuses to overwrite one without
// --resume, and to resume one of another grid or shard.
std::optional<Journal> read_old_journal(const SweepRun& s) {
  const SweepOptions& o = s.o;
  const std::string& journal_path = s.journal_path;
  std::optional<Journal> old = read_journal(journal_path);
  if (old && !o.resume && old->points.empty()) old.reset();  // stopped before its first point: start afresh
  if (old && !o.resume) {
    throw InputError(fmt::format(
        "'{}' already holds a sweep ({} points finished); pass --resume to continue it, or choose another --out",
        o.out_dir, old->points.size()));
  }
  if (old) {
    const std::string diff = grid_difference(o.grid, old->grid, journal_path);
    if (!diff.empty()) throw InputError(fmt::format("--resume: the grid differs from the journal's: {}", diff));
    if (old->shard.index != o.shard.index || old->shard.count != o.shard.count) {
      throw InputError(fmt::format("--resume: {} is shard {}/{}, not {}/{}", journal_path, old->shard.index,
                                   old->shard.count, o.shard.index, o.shard.count));
    }
  }
  return old;
}

// Splits the grid into the points the journal finished and this shard's points still to run (at most
// --max-points of them); counts the shard's points in `out`.
SweepPlan plan_points(const SweepRun& s, const std::optional<Journal>& old, SweepOutcome& out) {
  const SweepOptions& o = s.o;
  const std::vector<GridPoint> all = grid_points(o.grid);
  SweepPlan plan;
  std::vector<bool> done(all.size(), false);
  if (old) {
    for (const PointResult& p : old->points) {
      if (p.point.index < all.size() && !done[p.point.index]) {
        done[p.point.index] = true;
        plan.finished.push_back(p);
      }
    }
  }
  for (const GridPoint& p : all) {
    if (!o.shard.owns(p.index)) continue;
    ++out.owned;
    if (!done[p.index]) plan.pending.push_back(p);
  }
  plan.already = out.owned - plan.pending.size();
  if (o.max_points > 0 && plan.pending.size() > o.max_points) {
    plan.pending.resize(o.max_points);
    out.stopped = true;
  }
  return plan;
}

// Runs the pending points in parallel, journaling each as it finishes, until done or stopped; adds those that ran
// to the finished ones.
void run_pending(const SweepRun& s, std::size_t journal_bytes, SweepPlan& plan, SweepOutcome& out) {
  const SweepOptions& o = s.o;
  const std::vector<GridPoint>& pending = plan.pending;
  JournalWriter journal(s.journal_path, o.grid, o.shard, journal_bytes);
  std::vector<PointResult> fresh(pending.size());
  std::vector<bool> ran(pending.size(), false);
  Progress bar(s.progress, "sweep", out.owned, plan.already, o.progress_bar);
  double work = 0;  // simulated events grow about linearly with threads
  for (const GridPoint& p : pending) work += p.threads;
  bar.set_work_left(work);
  run_parallel(
      pending.size(), o.jobs, [&](std::size_t i) { fresh[i] = run_point(s.machine, o.grid, pending[i]); },
      [&](std::size_t i) {
        journal.append(fresh[i]);
        ran[i] = true;
        bar.point_done(fmt::format("{} {} threads seed {}", pending[i].kernel, pending[i].threads, pending[i].seed),
                       pending[i].threads);
      },
      s.stop);
  bar.finish();
  for (std::size_t i = 0; i < pending.size(); ++i) {
    if (!ran[i]) continue;
    plan.finished.push_back(fresh[i]);
    ++out.ran;
  }
  if (out.ran < pending.size()) out.stopped = true;
}

}  // namespace

SweepOutcome run_sweep(const SweepOptions& o, std::ostream& progress, const std::atomic<bool>* stop) {
  validate_grid(o.grid);
  const hw::Machine machine = hw::load_machine(o.grid.machine, o.grid.machine_set);
  const SweepRun s{o, machine, progress, stop, o.out_dir + "/" + kJournalName};
  probe_kernels(s);
  make_directories(o.out_dir);
  const DirectoryLock lock(o.out_dir);  // held until the results are written
  const std::optional<Journal> old = read_old_journal(s);
  SweepOutcome out;
  SweepPlan plan = plan_points(s, old, out);
  run_pending(s, old ? old->valid_bytes : 0, plan, out);
  const std::vector<PointResult> finished = sorted_unique(std::move(plan.finished));
  for (const PointResult& p : finished) out.finished += o.shard.owns(p.point.index) ? 1 : 0;
  write_results(o.out_dir, o.grid, finished);
  return out;
}

std::size_t merge_sweeps(const std::string& out, const std::vector<std::string>& dirs, std::ostream& err) {
  if (dirs.empty()) throw InputError("sweep merge: no shard directories given");
  std::optional<Grid> grid;
  std::map<std::size_t, PointResult> points;
  std::string first;
  for (const std::string& dir : dirs) {
    const std::string path = dir + "/" + kJournalName;
    const std::optional<Journal> j = read_journal(path);
    if (!j)
      throw InputError(fmt::format("sweep merge: '{}' has no {}: not a sweep's output directory", dir, kJournalName));
    if (!grid) {
      grid = j->grid;
      first = path;
    } else if (const std::string diff = grid_difference(*grid, j->grid, path); !diff.empty()) {
      throw InputError(fmt::format("sweep merge: {} sweeps another grid than {}: {}", path, first, diff));
    }
    for (const PointResult& p : j->points) {
      auto [it, inserted] = points.emplace(p.point.index, p);
      if (!inserted && point_to_json(it->second) != point_to_json(p)) {
        throw InputError(fmt::format("sweep merge: point {} differs between shards ({} in {})", p.point.index,
                                     point_to_json(p).dump(), path));
      }
    }
  }
  make_directories(out);
  const DirectoryLock lock(out);
  std::vector<PointResult> merged;
  for (auto& [index, p] : points) merged.push_back(p);
  {
    JournalWriter journal(out + "/" + kJournalName, *grid, Shard{}, 0);
    for (const PointResult& p : merged) journal.append(p);
  }
  write_results(out, *grid, merged);
  const std::size_t expected = grid_size(*grid);
  err << fmt::format("sweep merge: {} of {} points from {} directories into {}\n", merged.size(), expected, dirs.size(),
                     out);
  if (merged.size() < expected) {
    err << fmt::format("sweep merge: {} points missing: a shard has not finished (rerun it with --resume)\n",
                       expected - merged.size());
  }
  return expected - merged.size();
}

}  // namespace tlbsim::sweep
