// QEMU validation: the initramfs format always; the guest boot only where /dev/kvm is usable.
#include "native/qemu.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "util/atomic_file.h"

namespace tlbsim::native {
namespace {

namespace fs = std::filesystem;

TEST(Qemu, InitramfsIsANewcArchiveWithInitAndConsole) {
  const fs::path dir = fs::temp_directory_path() / "tlbsim-qemu-test";
  fs::create_directories(dir);
  write_file_atomic((dir / "busybox").string(), "BB");
  write_file_atomic((dir / "runner").string(), "RUN");
  QemuSetup s;
  s.busybox = (dir / "busybox").string();
  s.runner = (dir / "runner").string();
  write_initramfs((dir / "i.cpio").string(), s, "#!/bin/busybox sh\n");
  const std::string a = read_file((dir / "i.cpio").string());
  fs::remove_all(dir);
  EXPECT_EQ(a.substr(0, 6), "070701");
  EXPECT_EQ(a.size() % 4, 0u);
  for (const char* name : {"dev/console", "init", "bin/busybox", "tlbsim-native", "TRAILER!!!"}) {
    EXPECT_NE(a.find(std::string(name) + '\0'), std::string::npos) << name;
  }
}

TEST(Qemu, GuestRunsTlbFlush1AndCountsShootdowns) {
  const QemuSetup s = find_qemu_setup();
  if (!s.missing.empty()) GTEST_SKIP() << "QEMU validation not available: " << s.missing.front();
  if (!s.kvm) GTEST_SKIP() << "/dev/kvm is not usable: a TCG guest takes too long for a unit test";
  const QemuRuns q = run_in_qemu(s, 2, {{"tlb_flush1", 2}}, 0.2);
  ASSERT_EQ(q.runs.size(), 1u);
  EXPECT_GT(q.runs[0].ops, 0u);
  ASSERT_TRUE(q.runs[0].after.tlb_shootdowns.has_value());
  EXPECT_GT(*q.runs[0].after.tlb_shootdowns, *q.runs[0].before.tlb_shootdowns);
}

}  // namespace
}  // namespace tlbsim::native
