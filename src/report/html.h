// The report page (`tlbsim report DIR`, `tlbsim reproduce --html DIR`): one self-contained HTML file gathering the
// reproduction tables, sweep results, plots and links to traces found in a directory.
#pragma once

#include <string>

namespace tlbsim::report {

// Contract: the page is a pure function of DIR's files (sorted by name; no clock, no absolute paths), and
// self-contained: inline CSS, SVG plots inline, no scripts, no external URLs; traces are linked by relative paths.
// Reads DIR/reproduce.json (`reproduce --format json`), DIR/results.json and DIR/*/results.json (sweeps), every
// *.svg not already shown with them, and links every other *.json, *.jsonl and trace file. Throws InputError when
// DIR is not a readable directory or a file there is malformed.
std::string render_report_page(const std::string& dir);

// Writes DIR/index.html atomically; returns its path.
std::string write_report_page(const std::string& dir);

}  // namespace tlbsim::report
