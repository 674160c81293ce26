#include "util/atomic_file.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "util/error.h"

namespace tlbsim {
namespace {

TEST(AtomicFile, WritesAndReplacesWholeFiles) {
  const auto dir = std::filesystem::temp_directory_path() / "tlbsim_atomic_test";
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "out.json").string();
  write_file_atomic(path, "first");
  write_file_atomic(path, "second");
  EXPECT_EQ(read_file(path), "second");
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    EXPECT_EQ(e.path().filename(), "out.json") << "temporary file left behind";
  }
  std::filesystem::remove_all(dir);
}

TEST(AtomicFile, UnwritablePathIsAClearError) {
  try {
    write_file_atomic("/nonexistent-dir/x/out.json", "x");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent-dir/x/out.json"), std::string::npos);
  }
}

}  // namespace
}  // namespace tlbsim
