// `tlbsim validate --qemu --smp N`: the native benchmarks inside a Linux guest booted by QEMU from the host's
// Debian kernel (linux-image-amd64), with an initramfs of busybox-static and the static tlbsim-native program.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "native/workloads.h"

namespace tlbsim::native {

struct QemuSetup {
  std::string qemu;                  // qemu-system-x86_64
  std::string kernel;                // /boot/vmlinuz-*
  std::string busybox;               // a static busybox
  std::string runner;                // tlbsim-native beside the tlbsim executable
  bool kvm = false;                  // /dev/kvm opens read-write (else TCG, software emulation)
  std::vector<std::string> missing;  // what is not there, in words; empty when QEMU validation can run
};

QemuSetup find_qemu_setup();

// Writes a newc cpio archive holding /init (`init_script`), /bin/busybox, /tlbsim-native and /dev/console.
void write_initramfs(const std::string& path, const QemuSetup& s, const std::string& init_script);

struct QemuRuns {
  std::string release;  // the guest kernel's uname -r
  std::vector<NativeRun> runs;
  std::string console;  // the guest's console output, for errors
};

// Boots the guest with `smp` CPUs and runs each (workload, threads) for `seconds`. Throws std::runtime_error when
// QEMU fails, times out or the guest reports an error.
QemuRuns run_in_qemu(const QemuSetup& s, std::uint32_t smp,
                     const std::vector<std::pair<std::string, std::uint32_t>>& runs, double seconds);

}  // namespace tlbsim::native
