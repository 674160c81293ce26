// `tlbsim sweep`: a grid of runs (kernels x threads x seeds) on all cores, resumable and shardable, with CSV, JSON
// and an SVG plot; `tlbsim sweep merge OUT DIR...` joins the shards.
#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <iostream>
#include <thread>

#include "cli/command.h"
#include "sweep/grid.h"
#include "sweep/sweep.h"
#include "util/error.h"
#include "util/int_list.h"
#include "util/interrupt.h"
#include "util/registry.h"

namespace tlbsim::cli {

namespace {

// Whether `err` is the process's stderr and that is a terminal (then progress is a redrawn bar).
bool stderr_is_terminal(const std::ostream& err) { return &err == &std::cerr && ::isatty(STDERR_FILENO) == 1; }

class SweepCommand final : public Command {
 public:
  CLI::App* define(CLI::App& parent) override {
    CLI::App* c = parent.add_subcommand("sweep", "Run a grid of kernels x threads x seeds; write CSV, JSON and a plot");
    c->require_subcommand(0, 1);
    c->add_option("--machine", opts_.grid.machine, "Built-in machine name or machine .toml file")
        ->capture_default_str();
    c->add_option("--workload", opts_.grid.workload,
                  "Workload: a name (`tlbsim list workloads`) or a workload .toml file (docs/usage.md)")
        ->capture_default_str();
    c->add_option("--kernel", kernels_, "Kernels, comma-separated: one line each in the plot")->capture_default_str();
    c->add_option("--threads", threads_, "Threads: the swept parameter, e.g. 1..55:5 or 1,5-55:5")
        ->capture_default_str();
    c->add_option("--seeds", seeds_, "Seeds of each point: the min-max band, e.g. 1..5")->capture_default_str();
    c->add_option("--duration", opts_.grid.duration, "Simulated time per point")->capture_default_str();
    c->add_option("--warmup", opts_.grid.warmup,
                  "Simulated warm-up before each point's measured window, e.g. 132ms (default: a tenth of --duration)");
    c->add_option("--param", opts_.grid.params, "A workload parameter NAME=VALUE at every point (repeatable)");
    c->add_option("--set", opts_.grid.machine_set,
                  "A machine parameter KEY=VALUE replaced at every point, e.g. ipi.send=100ns (repeatable; as `tlbsim "
                  "run --set`)");
    c->add_option("--metric", opts_.grid.metric,
                  "What to plot: a dotted path into `tlbsim run --format json` (default: the workload's figure)");
    c->add_option("--out", opts_.out_dir,
                  "Output directory (required): points.jsonl, results.csv, results.json, results.svg");
    c->add_flag("--resume", opts_.resume, "Continue the interrupted sweep in --out");
    c->add_option("--shard", shard_, "Run only shard i of N (points with index % N == i-1), e.g. 3/8");
    c->add_option("--jobs", jobs_, "Points simulated in parallel (default: the host's cores)");
    c->add_option("--max-points", opts_.max_points, "Stop after this many points, as Ctrl-C would (for tests)");
    merge_ = c->add_subcommand("merge", "Merge the output directories of a sweep's shards into OUT");
    merge_->add_option("out", merge_out_, "Output directory of the merged sweep")->required();
    merge_->add_option("dirs", merge_dirs_, "The shards' output directories")->required()->expected(1, -1);
    return c;
  }

  int run(Streams& io) override {
    if (merge_->parsed()) {
      const std::size_t missing = sweep::merge_sweeps(merge_out_, merge_dirs_, io.err);
      io.out << fmt::format("{}/results.csv\n{}/results.json\n{}/results.svg\n", merge_out_, merge_out_, merge_out_);
      return missing == 0 ? 0 : 1;
    }
    if (opts_.out_dir.empty()) throw InputError("--out DIR is required: where the sweep keeps its points and results");
    opts_.grid.kernels = sweep::parse_name_list(kernels_, "--kernel");
    opts_.grid.threads = parse_int_list(threads_, "--threads", 1, 100000);
    opts_.grid.seeds = sweep::parse_seed_list(seeds_);
    if (!shard_.empty()) opts_.shard = sweep::parse_shard(shard_);
    if (jobs_ > 256) throw InputError(fmt::format("--jobs: {} is outside 1..256", jobs_));
    opts_.jobs = jobs_ > 0 ? jobs_ : std::max(1u, std::thread::hardware_concurrency());
    opts_.progress_bar = stderr_is_terminal(io.err);
    const InterruptGuard guard;
    const sweep::SweepOutcome r = sweep::run_sweep(opts_, io.err, &guard.stop_flag());
    if (r.stopped) {
      io.err << fmt::format(
          "tlbsim: sweep stopped: {} of {} points finished, kept in {}/points.jsonl (partial results written); "
          "rerun the same command with --resume to continue\n",
          r.finished, r.owned, opts_.out_dir);
      return 130;
    }
    io.err << fmt::format("tlbsim: sweep: {} points ({} run now) in {}\n", r.finished, r.ran, opts_.out_dir);
    io.out << fmt::format("{}/results.csv\n{}/results.json\n{}/results.svg\n", opts_.out_dir, opts_.out_dir,
                          opts_.out_dir);
    return 0;
  }

 private:
  sweep::SweepOptions opts_;
  std::string kernels_ = "linux-5.17";
  std::string threads_ = "1";
  std::string seeds_ = "1";
  std::string shard_;
  unsigned jobs_ = 0;
  CLI::App* merge_ = nullptr;
  std::string merge_out_;
  std::vector<std::string> merge_dirs_;
};

TLBSIM_REGISTER(Command, SweepCommand, "sweep", "sweep a grid of runs: CSV, JSON, SVG; resumable, shardable");

}  // namespace
}  // namespace tlbsim::cli
