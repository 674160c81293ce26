// Rules of the code base that a compiler does not enforce.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <string>

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

}  // namespace
