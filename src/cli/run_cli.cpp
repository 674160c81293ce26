#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <memory>
#include <new>
#include <ostream>
#include <vector>

#include "cli/command.h"
#include "sim/scheduler.h"
#include "util/atomic_file.h"
#include "util/error.h"
#include "util/registry.h"

namespace tlbsim::cli {

void write_result(Streams& io, const std::string& output, const std::string& text) {
  if (output.empty()) {
    io.out << text;
  } else {
    write_file_atomic(output, text);
  }
}

namespace {

const CLI::App* find_subcommand(const CLI::App& app, const std::string& name) {
  const auto found = app.get_subcommands([&](const CLI::App* s) { return s->get_name() == name; });
  return found.empty() ? nullptr : found.front();
}

}  // namespace

int run_cli(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  CLI::App app{"tlbsim: an executable model of the Linux multiprocessor TLB-shootdown machinery", "tlbsim"};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "Show help for every subcommand");

  std::vector<std::unique_ptr<Command>> commands;
  std::vector<std::pair<CLI::App*, Command*>> chosen;
  for (const auto& entry : Registry<Command>::list()) {
    commands.push_back(entry.make());
    chosen.emplace_back(commands.back()->define(app), commands.back().get());
  }

  Streams io{out, err};
  if (argc > 1 && argv[1][0] != '-' && Registry<Command>::find(argv[1]) == nullptr) {
    std::string known;
    for (const auto& e : Registry<Command>::list()) known += (known.empty() ? "" : ", ") + e.name;
    err << "tlbsim: unknown command '" << argv[1] << "' (known: " << known << ")\n";
    return 2;
  }
  // A command made of subcommands (`bench contention`, `machine show`) names an unknown one as such; CLI11 would say
  // only that a subcommand is required.
  if (argc > 2 && argv[2][0] != '-') {
    const CLI::App* sub = find_subcommand(app, argv[1]);
    if (sub != nullptr && sub->get_require_subcommand_min() > 0 && find_subcommand(*sub, argv[2]) == nullptr) {
      std::string known;
      for (const CLI::App* s : sub->get_subcommands([](const CLI::App*) { return true; })) {
        known += (known.empty() ? "" : ", ") + s->get_name();
      }
      err << "tlbsim: error: " << argv[1] << ": unknown subcommand '" << argv[2] << "' (known: " << known << ")\n";
      return 2;
    }
  }
  try {
    try {
      app.parse(argc, argv);
    } catch (const CLI::CallForHelp&) {
      out << app.help();
      return 0;
    } catch (const CLI::CallForAllHelp&) {
      out << app.help("", CLI::AppFormatMode::All);
      return 0;
    } catch (const CLI::ParseError& e) {
      err << "tlbsim: error: " << e.what() << "\n";
      err << "Run 'tlbsim --help' for usage.\n";
      return 2;
    }
    for (auto& [sub, cmd] : chosen) {
      if (sub->parsed()) return cmd->run(io);
    }
    err << "tlbsim: no subcommand given\n";
    return 2;
  } catch (const InputError& e) {
    err << "tlbsim: error: " << e.what() << "\n";
    return 2;
  } catch (const std::bad_alloc&) {
    err << "tlbsim: error: out of memory: the run needs more memory than this process may use "
           "(a smaller machine, fewer threads, a smaller workload, or a narrower --trace)\n";
    return 2;
  } catch (const sim::DeadlockError& e) {
    err << "tlbsim: simulation stopped: " << e.what();
    return 3;
  } catch (const std::exception& e) {
    err << "tlbsim: internal error: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace tlbsim::cli
