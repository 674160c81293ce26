// Ctrl-C on the real `tlbsim sweep`: the running points finish, the journal keeps every finished point, the exit
// status is 130, and `--resume` completes the sweep with the bytes of an uninterrupted run.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "util/atomic_file.h"

namespace tlbsim::sweep {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> sweep_args(const std::string& out) {
  return {TLBSIM_BINARY, "sweep",      "--machine", "skylake-sp-2s28c", "--kernel", "linux-5.17", "--threads",
          "20..55:5",    "--duration", "1ms",       "--jobs",           "1",        "--out",      out};
}

// Starts the program with stderr into `err_path`; returns its pid.
pid_t spawn(const std::vector<std::string>& args, const std::string& err_path) {
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  return rc == 0 ? pid : -1;
}

int wait_status(pid_t pid) {
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::size_t lines(const std::string& path) {
  if (!fs::exists(path)) return 0;
  const std::string text = read_file(path);
  return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
}

TEST(SweepInterrupt, CtrlCKeepsFinishedPointsAndResumeGivesTheSameBytes) {
  const fs::path base = fs::temp_directory_path() / ("tlbsim_sigint_" + std::to_string(::getpid()));
  fs::remove_all(base);
  fs::create_directories(base);
  const std::string whole = (base / "whole").string(), cut = (base / "cut").string();
  const std::string err = (base / "err.txt").string();
  ASSERT_EQ(wait_status(spawn(sweep_args(whole), err)), 0) << read_file(err);

  const pid_t pid = spawn(sweep_args(cut), err);
  ASSERT_GT(pid, 0);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (lines(cut + "/points.jsonl") < 3 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ::kill(pid, SIGINT);
  const int status = wait_status(pid);
  const std::string said = read_file(err);
  if (status == 0) GTEST_SKIP() << "the sweep finished before the signal arrived";
  EXPECT_EQ(status, 130) << said;
  EXPECT_NE(said.find("interrupted; finishing the running points"), std::string::npos) << said;
  EXPECT_NE(said.find("rerun the same command with --resume"), std::string::npos) << said;
  const std::size_t kept = lines(cut + "/points.jsonl") - 1;
  EXPECT_GE(kept, 2u);
  EXPECT_LT(kept, 8u);

  std::vector<std::string> resume = sweep_args(cut);
  resume.push_back("--resume");
  ASSERT_EQ(wait_status(spawn(resume, err)), 0) << read_file(err);
  for (const char* f : {"/results.csv", "/results.json", "/results.svg"}) {
    EXPECT_EQ(read_file(cut + f), read_file(whole + f)) << f;
  }
  fs::remove_all(base);
}

}  // namespace
}  // namespace tlbsim::sweep
