#include "cli/profile_options.h"

#include <CLI/CLI.hpp>

#include "cli/validators.h"
#include "trace/flame_graph.h"
#include "util/atomic_file.h"

namespace tlbsim::cli {

void ProfileOptions::define(CLI::App* c) {
  c->add_flag("--profile", table,
              "Print the simulated CPU time by function, as `perf report --children` does (docs/usage.md, "
              "\"Profiles\")");
  c->add_option("--profile-folded", folded_path,
                "Write the profile's folded stacks (picoseconds per stack) to this file, for flame-graph tools")
      ->check(non_empty());
  c->add_option("--profile-svg", svg_path, "Write the profile as a flame graph (SVG) to this file")->check(non_empty());
}

void ProfileOptions::validate() const {
  if (!folded_path.empty()) check_output_path(folded_path, "--profile-folded");
  if (!svg_path.empty()) check_output_path(svg_path, "--profile-svg");
}

void ProfileOptions::write_files(const trace::Profiler& p, const std::string& title) const {
  if (!folded_path.empty()) write_file_atomic(folded_path, p.folded());
  if (!svg_path.empty()) write_file_atomic(svg_path, trace::flame_graph_svg(p, title));
}

}  // namespace tlbsim::cli
