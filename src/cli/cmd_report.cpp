// `tlbsim report DIR`: the self-contained HTML page of what DIR holds (reproduction, sweeps, plots, traces).
#include <CLI/CLI.hpp>
#include <ostream>

#include "cli/command.h"
#include "report/html.h"
#include "util/registry.h"

namespace tlbsim::cli {

namespace {

class ReportCommand final : public Command {
 public:
  CLI::App* define(CLI::App& parent) override {
    CLI::App* c = parent.add_subcommand(
        "report", "Write DIR/index.html: reproduction tables, sweep results, plots and trace links (opens offline)");
    c->add_option("dir", dir_, "Directory with reproduce.json, sweep results (results.json), *.svg, traces")
        ->required();
    return c;
  }

  int run(Streams& io) override {
    io.out << report::write_report_page(dir_) << "\n";
    return 0;
  }

 private:
  std::string dir_;
};

TLBSIM_REGISTER(Command, ReportCommand, "report", "write a self-contained HTML report page of a directory");

}  // namespace
}  // namespace tlbsim::cli
