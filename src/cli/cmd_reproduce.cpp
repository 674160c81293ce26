// `tlbsim reproduce [SEED...]`: each seed's benchmark before and after the change, beside the published figures.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <unistd.h>

#include <iostream>
#include <thread>

#include "cli/command.h"
#include "cli/validators.h"
#include "report/html.h"
#include "report/reproduce.h"
#include "util/atomic_file.h"
#include "util/error.h"
#include "util/registry.h"

namespace tlbsim::cli {

namespace {

using SeedListing = RegistryListing<report::Reproduction, Registry<report::Reproduction>>;
TLBSIM_REGISTER(Listing, SeedListing, "seeds", "the seeds `tlbsim reproduce` reproduces");

class ReproduceCommand final : public Command {
 public:
  CLI::App* define(CLI::App& parent) override {
    CLI::App* c = parent.add_subcommand("reproduce", "Run each seed's benchmark before and after, beside the published figures");
    c->add_option("seeds", opts_.seeds, "Seeds to reproduce (default: all; see `tlbsim list seeds`)");
    c->add_flag("--quick", opts_.quick, "Fewer points and shorter simulated time, same machines and kernels");
    c->add_option("--runs", opts_.runs,
                  "Runs of each point, with --seed 1..N; headlines give their mean and range (default: 3, 1 with "
                  "--quick)")
        ->check(CLI::Range(1u, 20u));
    c->add_option("--format", format_, "Output format")->check(CLI::IsMember({"table", "json", "markdown"}))->capture_default_str();
    c->add_option("--jobs", jobs_, "Simulations run in parallel (default: the host's cores)");
    c->add_option("--output", output_, "Write the result to this file (atomically) instead of stdout")->check(non_empty());
    c->add_option("--plot", plot_dir_, "Also write one SVG per seed into this directory (seed-NNN.svg)");
    c->add_option("--html", html_dir_,
                  "Also write reproduce.json, the plots and a self-contained index.html into this directory");
    return c;
  }

  int run(Streams& io) override {
    if (!output_.empty()) check_output_path(output_, "--output");  // before the work, not after it
    for (const std::string& s : opts_.seeds) {
      if (Registry<report::Reproduction>::find(s) == nullptr) Registry<report::Reproduction>::make("seed", s);
    }
    if (jobs_ > 256) throw InputError(fmt::format("--jobs: {} is outside 1..256", jobs_));
    opts_.jobs = jobs_ > 0 ? jobs_ : std::max(1u, std::thread::hardware_concurrency());
    opts_.progress_bar = &io.err == &std::cerr && ::isatty(STDERR_FILENO) == 1;
    for (const std::string& dir : {plot_dir_, html_dir_}) {
      if (!dir.empty()) make_directories(dir);  // fail before hours of simulation, not after
    }
    const auto reports = report::reproduce(opts_, io.err);
    if (!plot_dir_.empty()) report::write_seed_plots(reports, plot_dir_);
    if (!html_dir_.empty()) {
      write_file_atomic(html_dir_ + "/reproduce.json", report::render_json(reports).dump(2) + "\n");
      report::write_seed_plots(reports, html_dir_);
      io.err << "tlbsim: report page " << report::write_report_page(html_dir_) << "\n";
    }
    std::string text;
    if (format_ == "json") text = report::render_json(reports).dump(2) + "\n";
    else if (format_ == "markdown") text = report::render_markdown(reports);
    else text = report::render_table(reports);
    write_result(io, output_, text);
    return 0;
  }

 private:
  report::ReproduceOptions opts_;
  unsigned jobs_ = 0;
  std::string format_ = "table";
  std::string output_;
  std::string plot_dir_;
  std::string html_dir_;
};

TLBSIM_REGISTER(Command, ReproduceCommand, "reproduce", "reproduce the seeds' published figures");

}  // namespace
}  // namespace tlbsim::cli
