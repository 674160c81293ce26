// Rules of the code base that a compiler does not enforce.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "model/options.h"

namespace {

namespace fs = std::filesystem;

template <class F>
void for_each_source_line(F&& f) {
  for (const auto& e : fs::recursive_directory_iterator(fs::path(TLBSIM_SOURCE_DIR) / "src")) {
    if (!e.is_regular_file()) continue;
    const auto ext = e.path().extension();
    if (ext != ".h" && ext != ".cpp") continue;
    std::ifstream in(e.path());
    std::string line;
    int n = 0;
    while (std::getline(in, line)) f(e.path(), ++n, line);
  }
}

// GCC 12 miscompiles a co_await inside a loop condition (the awaited value is not re-read on later iterations;
// seen here as a coroutine that never suspends again). Write the await as a statement in the loop body.
TEST(Style, NoCoAwaitInLoopConditions) {
  const std::regex bad(R"((while|for)\s*\([^)]*co_await)");
  for_each_source_line([&](const fs::path& p, int n, const std::string& line) {
    EXPECT_FALSE(std::regex_search(line, bad)) << p << ":" << n << ": " << line;
  });
}

// Files stay short enough to read in one sitting.
TEST(Style, SourceFilesStayUnder500Lines) {
  std::map<fs::path, int> lines;
  for_each_source_line([&](const fs::path& p, int n, const std::string&) { lines[p] = n; });
  for (const auto& [p, n] : lines) EXPECT_LE(n, 500) << p;
}

// The generic kernel (kernel/, mm/, fs/, net/, lib/) reaches the architecture only through kernel/arch_mmu.h and
// its observers only through kernel/events.h: none of its files includes an arch/ or check/ header.
TEST(Style, GenericKernelIncludesNoArchOrCheckHeader) {
  const std::regex include(R"re(^\s*#\s*include\s*"(arch|check)/)re");
  int files = 0;
  for_each_source_line([&](const fs::path& p, int n, const std::string& line) {
    const std::string rel = fs::relative(p, fs::path(TLBSIM_SOURCE_DIR) / "src").generic_string();
    const bool generic = rel.starts_with("kernel/") || rel.starts_with("mm/") || rel.starts_with("fs/") ||
                         rel.starts_with("net/") || rel.starts_with("lib/");
    if (!generic) return;
    if (n == 1) ++files;
    EXPECT_FALSE(std::regex_search(line, include)) << rel << ":" << n << ": " << line;
  });
  EXPECT_GT(files, 20) << "the generic kernel's folders were not found";
}

// Model code tests options and mutations by their typed ids (cfg.on(Option::x), planted(cfg, Mutation::x)); a name
// in quotes would be a lookup that a misspelling survives. Only the declarations (each owner's options.h) spell the
// names as strings.
TEST(Style, ModelCodeNamesNoOptionOrMutationAsAString) {
  std::vector<std::string> names;
  for (const auto& o : tlbsim::kernel::all_options()) names.emplace_back(o.name);
  for (const auto& m : tlbsim::kernel::all_mutations()) names.emplace_back(m.name);
  ASSERT_GT(names.size(), 20u);
  int lines = 0;
  for_each_source_line([&](const fs::path& p, int n, const std::string& line) {
    const std::string rel = fs::relative(p, fs::path(TLBSIM_SOURCE_DIR) / "src").generic_string();
    const bool model = rel.starts_with("kernel/") || rel.starts_with("mm/") || rel.starts_with("fs/") ||
                       rel.starts_with("net/") || rel.starts_with("lib/") || rel.starts_with("arch/");
    if (!model || p.filename() == "options.h") return;
    ++lines;
    for (const std::string& name : names) {
      EXPECT_EQ(line.find('"' + name + '"'), std::string::npos) << rel << ":" << n << ": " << line;
    }
  });
  EXPECT_GT(lines, 1000) << "the model's folders were not found";
}

}  // namespace
