#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <memory>
#include <ostream>
#include <vector>

#include "cli/command.h"
#include "sim/scheduler.h"
#include "util/error.h"
#include "util/registry.h"

namespace tlbsim::cli {

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
      err << "tlbsim: " << e.what() << "\n";
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
  } catch (const sim::DeadlockError& e) {
    err << "tlbsim: simulation stopped: " << e.what();
    return 3;
  } catch (const std::exception& e) {
    err << "tlbsim: internal error: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace tlbsim::cli
