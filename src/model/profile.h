// Kernel profiles: files (configs/kernels/*.toml, or a path) that name a kernel's architecture, release and options.
// Each seed has a "before" and an "after" profile; `--option NAME=on|off` overrides one.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "model/config.h"
#include "util/embedded_file.h"

namespace tlbsim::kernel {

struct KernelProfile {
  std::string name;         // the file's stem
  std::string description;  // one line
  std::string seed;         // "000".."004" when the profile is one side of a seed, else ""
  std::string role;         // "before", "after", "variant" (a reviewed or fixed form of the change), or "base"
  std::string origin;       // "builtin:NAME" or the path
  KernelConfig config;
};

// Parses a profile. Throws InputError with origin:line:column, naming the key and what was expected; unknown
// options and options that do not exist for the profile's arch and release are refused.
KernelProfile parse_kernel_profile(std::string_view text, const std::string& name, const std::string& origin);
// A built-in profile by name, or a profile file by path (anything containing '/' or ending in ".toml").
KernelProfile load_kernel_profile(std::string_view name_or_path);
// The profile a command runs when --kernel is not given: a kernel of the machine's architecture ("x86_64":
// linux-5.17, the release seed 000 measured; "powerpc64": linux-6.2-ppc, the newest radix release modeled; "aarch64":
// linux-6.6-arm64, the release of the arm64 batched reclaim flush).
std::string default_kernel_for(std::string_view machine_arch);
// Applies "NAME=on|off" (also true/false, 1/0). Throws InputError naming the --option argument.
void apply_option_override(KernelConfig& cfg, std::string_view assignment);
// Applies each --option in order; a name given twice (even with the same value) is refused, as --param is.
void apply_option_overrides(KernelConfig& cfg, const std::vector<std::string>& assignments);

std::span<const EmbeddedFile> builtin_kernel_files();
std::vector<std::string> builtin_kernel_names();

}  // namespace tlbsim::kernel
