// `tlbsim sweep`: runs a grid's points on a pool of threads, journaling each finished point, so that an interrupted
// sweep resumes where it stopped and shards of one grid, run on different machines, merge into one result.
#pragma once

#include <atomic>
#include <cstddef>
#include <iosfwd>
#include <string>
#include <vector>

#include "sweep/grid.h"
#include "sweep/journal.h"

namespace tlbsim::sweep {

struct SweepOptions {
  Grid grid;
  Shard shard;
  std::string out_dir;
  bool resume = false;         // continue the journal in out_dir (refused when its grid differs)
  unsigned jobs = 1;           // points simulated in parallel
  std::size_t max_points = 0;  // stop after this many points of this run, as Ctrl-C would (0: no limit)
  bool progress_bar = false;   // redraw a bar on stderr instead of a line per point
};

struct SweepOutcome {
  std::size_t owned = 0;     // the points of this shard
  std::size_t finished = 0;  // of those, finished now or before
  std::size_t ran = 0;       // finished by this run
  bool stopped = false;      // interrupted (or max_points reached) before every point finished
};

// Contract: each point is a deterministic simulation, so results (sweep/results.h) depend only on the grid and the
// set of finished points. Writes out_dir/points.jsonl as points finish and the results files at the end (also when
// stopped). Throws InputError for bad grids, an existing sweep without --resume, a mismatched grid, or paths it
// cannot write.
SweepOutcome run_sweep(const SweepOptions& o, std::ostream& progress, const std::atomic<bool>* stop);

// `tlbsim sweep merge OUT DIR...`: the union of the shards' journals in OUT (journal and results). Refuses
// directories whose grids differ or whose points disagree. Returns the number of grid points still missing.
std::size_t merge_sweeps(const std::string& out, const std::vector<std::string>& dirs, std::ostream& err);

}  // namespace tlbsim::sweep
