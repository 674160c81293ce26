#include "native/qemu.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "native/proc_counters.h"
#include "util/atomic_file.h"

#if defined(__linux__)
#include <fcntl.h>
#include <unistd.h>
#endif

namespace tlbsim::native {

namespace {

namespace fs = std::filesystem;

std::string on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::stringstream ss(path != nullptr ? path : "/usr/bin:/bin");
  for (std::string dir; std::getline(ss, dir, ':');) {
    const fs::path p = fs::path(dir) / name;
    if (!dir.empty() && access(p.c_str(), X_OK) == 0) return p.string();
  }
  return "";
}

std::string self_dir() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? "." : exe.parent_path().string();
}

// One newc cpio entry.
void cpio_entry(std::string& out, std::uint32_t ino, const std::string& name, std::uint32_t mode,
                const std::string& data, std::uint32_t rdev_major = 0, std::uint32_t rdev_minor = 0) {
  out += fmt::format("070701{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}", ino, mode,
                     0, 0, 1, 0, data.size(), 0, 0, rdev_major, rdev_minor, name.size() + 1, 0);
  out += name;
  out += '\0';
  out.append((4 - out.size() % 4) % 4, '\0');
  out += data;
  out.append((4 - out.size() % 4) % 4, '\0');
}

std::string quote(const std::string& s) { return "'" + s + "'"; }

}  // namespace

QemuSetup find_qemu_setup() {
  QemuSetup s;
  s.qemu = on_path("qemu-system-x86_64");
  if (s.qemu.empty()) s.missing.push_back("qemu-system-x86_64 (Debian package qemu-system-x86)");
  std::vector<std::string> kernels;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/boot", ec)) {
    if (e.path().filename().string().starts_with("vmlinuz-")) kernels.push_back(e.path().string());
  }
  std::sort(kernels.begin(), kernels.end());
  if (kernels.empty())
    s.missing.push_back("a kernel /boot/vmlinuz-* (Debian package linux-image-amd64)");
  else
    s.kernel = kernels.back();
  for (const char* b : {"/bin/busybox", "/usr/bin/busybox"}) {
    if (access(b, X_OK) == 0 && s.busybox.empty()) s.busybox = b;
  }
  if (s.busybox.empty()) s.missing.push_back("a static busybox (Debian package busybox-static)");
  s.runner = (fs::path(self_dir()) / "tlbsim-native").string();
  if (access(s.runner.c_str(), X_OK) != 0) {
    s.missing.push_back(
        "tlbsim-native beside the tlbsim executable (built by the default preset, not by sanitizer builds)");
  }
#if defined(__linux__)
  const int fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
  s.kvm = fd >= 0;
  if (fd >= 0) close(fd);
#endif
  return s;
}

void write_initramfs(const std::string& path, const QemuSetup& s, const std::string& init_script) {
  std::string out;
  std::uint32_t ino = 1;
  for (const char* d : {"bin", "dev", "proc", "sys", "tmp"}) cpio_entry(out, ino++, d, 0040755, "");
  cpio_entry(out, ino++, "dev/console", 0020600, "", 5, 1);
  cpio_entry(out, ino++, "init", 0100755, init_script);
  cpio_entry(out, ino++, "bin/busybox", 0100755, read_file(s.busybox));
  cpio_entry(out, ino++, "tlbsim-native", 0100755, read_file(s.runner));
  cpio_entry(out, ino++, "TRAILER!!!", 0, "");
  write_file_atomic(path, out);
}

QemuRuns run_in_qemu(const QemuSetup& s, std::uint32_t smp,
                     const std::vector<std::pair<std::string, std::uint32_t>>& runs, double seconds) {
  std::string args;
  for (const auto& [w, t] : runs) args += fmt::format(" {}:{}", w, t);
  const std::string init = fmt::format(
      "#!/bin/busybox sh\n"
      "/bin/busybox mount -t proc proc /proc\n"
      "/bin/busybox mount -t sysfs sys /sys\n"
      "/bin/busybox mount -t devtmpfs dev /dev 2>/dev/null\n"
      "/bin/busybox mount -t tmpfs -o size=90% tmp /tmp\n"  // the default half of RAM is too small at 8 threads
      "/bin/busybox mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null\n"
      "/tlbsim-native {}{}\n"
      "echo TLBSIM-DONE\n"
      "/bin/busybox poweroff -f\n",
      seconds, args);
  const fs::path dir = fs::temp_directory_path() / fmt::format("tlbsim-qemu-{}", getpid());
  fs::create_directories(dir);
  const std::string initrd = (dir / "initramfs.cpio").string();
  write_initramfs(initrd, s, init);
  // tlb_flush1 keeps a 128 MiB tmpfs file per thread: room for all of them besides the kernel.
  std::uint32_t max_threads = 1;
  for (const auto& r : runs) max_threads = std::max(max_threads, r.second);
  const std::uint32_t memory_mib = 512 + 160 * max_threads;
  const double limit = 180 + static_cast<double>(runs.size()) * seconds * 1.5 * (s.kvm ? 1 : 4);
  const std::string cmd = fmt::format(
      "timeout {:.0f} {} -nographic -no-reboot -m {} -smp {} {} -kernel {} -initrd {} "
      "-append 'console=ttyS0 panic=-1 quiet' </dev/null 2>&1",
      limit, quote(s.qemu), memory_mib, smp, s.kvm ? "-accel kvm -cpu host" : "-accel tcg,thread=multi -cpu max",
      quote(s.kernel), quote(initrd));
  QemuRuns out;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) throw std::runtime_error("qemu: popen failed");
  char buf[4096];
  std::string line;
  bool done = false;
  std::string error;
  while (fgets(buf, sizeof buf, p) != nullptr) {
    line += buf;
    if (line.empty() || line.back() != '\n') continue;
    out.console += line;
    if (const auto at = line.find("TLBSIM-ROW "); at != std::string::npos) {
      const auto j = nlohmann::json::parse(line.substr(at + 11));
      NativeRun r;
      r.workload = j["workload"].get<std::string>();
      r.threads = j["threads"].get<std::uint32_t>();
      r.seconds = j["seconds"].get<double>();
      r.ops = j["ops"].get<std::uint64_t>();
      r.before = counters_from_json(j["before"]);
      r.after = counters_from_json(j["after"]);
      out.release = j["release"].get<std::string>();
      out.runs.push_back(std::move(r));
    } else if (const auto e = line.find("TLBSIM-ERROR "); e != std::string::npos) {
      error = line.substr(e + 13);
    } else if (line.find("TLBSIM-DONE") != std::string::npos) {
      done = true;
    }
    line.clear();
  }
  const int status = pclose(p);
  fs::remove_all(dir);
  if (!error.empty()) throw std::runtime_error("qemu guest: " + error);
  if (!done || out.runs.size() != runs.size()) {
    const std::string tail = out.console.size() > 2000 ? out.console.substr(out.console.size() - 2000) : out.console;
    throw std::runtime_error(
        fmt::format("qemu: the guest did not finish (exit status {}); its console ended:\n{}", status, tail));
  }
  return out;
}

}  // namespace tlbsim::native
