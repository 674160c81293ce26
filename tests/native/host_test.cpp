#include "native/host.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace tlbsim::native {
namespace {

namespace fs = std::filesystem;

// A fake /sys/devices/system/cpu: `pkg`, `core` per CPU, and an L3 shared by `llc_cpus` CPUs when given.
class FakeSysfs {
 public:
  explicit FakeSysfs(const std::string& tag) : dir_(fs::temp_directory_path() / ("tlbsim-sysfs-" + tag)) {
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  ~FakeSysfs() { fs::remove_all(dir_); }
  void write(const std::string& rel, const std::string& text) {
    fs::create_directories((dir_ / rel).parent_path());
    std::ofstream(dir_ / rel) << text << "\n";
  }
  void cpu(int c, int pkg, int core, const std::string& l3 = "") {
    write(fmt::format("cpu{}/topology/physical_package_id", c), std::to_string(pkg));
    write(fmt::format("cpu{}/topology/core_id", c), std::to_string(core));
    if (!l3.empty()) {
      write(fmt::format("cpu{}/cache/index3/level", c), "3");
      write(fmt::format("cpu{}/cache/index3/shared_cpu_list", c), l3);
    }
  }
  std::string path() const { return dir_.string(); }

 private:
  fs::path dir_;
};

TEST(HostTopology, TwoCoresWithoutCacheInfoAreOneLlc) {
  FakeSysfs s("two");
  s.write("online", "0-1");
  s.cpu(0, 0, 0);
  s.cpu(1, 0, 1);
  const HostTopology t = read_host_topology(s.path());
  ASSERT_EQ(t.cpus.size(), 2u);
  EXPECT_EQ(t.params.sockets, 1u);
  EXPECT_EQ(t.params.cores_per_socket, 2u);
  EXPECT_EQ(t.params.threads_per_core, 1u);
  EXPECT_EQ(t.params.cores_per_llc, 2u);
  EXPECT_FALSE(t.notes.empty());  // says it assumed the LLC
  EXPECT_TRUE(find_pair(t, hw::Distance::kLlc).has_value());
  EXPECT_FALSE(find_pair(t, hw::Distance::kSmt).has_value());
  EXPECT_FALSE(find_pair(t, hw::Distance::kRemote).has_value());
}

TEST(HostTopology, TwoSocketsWithSmtNumberedX86Style) {
  FakeSysfs s("2s");
  s.write("online", "0-7");
  // x86 numbering: cpus 0-3 are the first threads of the 4 cores, 4-7 their siblings; 2 cores per socket.
  for (int c = 0; c < 8; ++c) {
    const int core = c % 4, pkg = core / 2;
    s.cpu(c, pkg, core % 2, pkg == 0 ? "0-1,4-5" : "2-3,6-7");
  }
  const HostTopology t = read_host_topology(s.path());
  EXPECT_EQ(t.params.sockets, 2u);
  EXPECT_EQ(t.params.cores_per_socket, 2u);
  EXPECT_EQ(t.params.threads_per_core, 2u);
  EXPECT_EQ(t.params.cores_per_llc, 2u);
  EXPECT_EQ(t.params.numbering, hw::CpuNumbering::kSmtLast);
  EXPECT_TRUE(t.notes.size() == 1);  // packages one hop apart
  EXPECT_EQ(find_pair(t, hw::Distance::kSmt), std::make_pair(0u, 4u));
  EXPECT_EQ(find_pair(t, hw::Distance::kLlc), std::make_pair(0u, 1u));
  EXPECT_EQ(find_pair(t, hw::Distance::kRemote), std::make_pair(0u, 2u));
  EXPECT_FALSE(find_pair(t, hw::Distance::kSocket).has_value());
  const auto sets = will_it_scale_cpusets(t, 5);
  ASSERT_EQ(sets.size(), 5u);
  EXPECT_EQ(sets[0], (std::vector<std::uint32_t>{0, 4}));
  EXPECT_EQ(sets[4], sets[0]);  // task 4 wraps to core 0
}

TEST(HostTopology, MissingSysfsFallsBackToOneCoreEachAndSaysSo) {
  const HostTopology t = read_host_topology("/nonexistent/tlbsim");
  EXPECT_GE(t.cpus.size(), 1u);
  EXPECT_EQ(t.params.threads_per_core, 1u);
  ASSERT_FALSE(t.notes.empty());
  EXPECT_NE(t.notes.front().find("no CPU topology"), std::string::npos);
}

}  // namespace
}  // namespace tlbsim::native
