// A `tlbsim` subcommand, self-registered so main() never switches on command names.
#pragma once

#include <iosfwd>
#include <string>
#include <utility>
#include <vector>

namespace CLI {
class App;
}

namespace tlbsim::cli {

// Where a command writes: stdout for results, stderr for progress and speed figures.
struct Streams {
  std::ostream& out;
  std::ostream& err;
};

// A command's result: to stdout when `output` is empty, else atomically to that file (--output).
void write_result(Streams& io, const std::string& output, const std::string& text);

// Contract: define() adds the subcommand and its options to the parent app; run() is called when the user
// chose it, returns the exit status, and throws InputError for bad input (exit status 2).
class Command {
 public:
  virtual ~Command() = default;
  virtual CLI::App* define(CLI::App& parent) = 0;
  virtual int run(Streams& io) = 0;
};

// A kind of thing `tlbsim list KIND` can list (machines, patterns, ...), self-registered.
class Listing {
 public:
  virtual ~Listing() = default;
  // (name, one-line description) rows.
  virtual std::vector<std::pair<std::string, std::string>> rows() const = 0;
};

// Lists the entries of a registry: Listing implementations for self-registered kinds are one line each.
template <class Interface, class Reg>
class RegistryListing : public Listing {
 public:
  std::vector<std::pair<std::string, std::string>> rows() const override {
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto& e : Reg::list()) out.emplace_back(e.name, e.description);
    return out;
  }
};

// Runs the tlbsim command line; returns the process exit status.
int run_cli(int argc, const char* const* argv, std::ostream& out, std::ostream& err);

}  // namespace tlbsim::cli
