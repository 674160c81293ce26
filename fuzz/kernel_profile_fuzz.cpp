// Fuzzes the kernel-profile reader: any input must parse or raise InputError, never crash or throw otherwise.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "model/profile.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const tlbsim::kernel::KernelProfile p = tlbsim::kernel::parse_kernel_profile(text, "fuzz", "fuzz.toml");
    (void)p;
  } catch (const tlbsim::InputError&) {
  }
  return 0;
}
