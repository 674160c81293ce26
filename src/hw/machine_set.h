// `--set KEY=VALUE`: one machine parameter replaced for one command, to ask what a figure depends on: the send of an
// IPI without the hypervisor's exit, a faster page allocator, noisier kernel steps (docs/usage.md, "Changing one
// machine parameter").
// Contract: a setting names a latency that the machine file gives, as `tlbsim machine show` lists it
// (kernel.page_alloc, ipi.send, idle.HLT.exit_latency), or timing.step_spread (which a machine without [timing] gains);
// the value replaces the file's before the file is checked, so every range and consistency rule of a machine file
// holds for it too, and the parameter's source says that the command line set it and what the file gave.
#pragma once

#include <string>
#include <vector>

namespace toml {
inline namespace v3 {
class table;
}  // namespace v3
}  // namespace toml

namespace tlbsim::hw {

struct MachineSetting {
  std::string key;   // e.g. "kernel.page_alloc"
  std::string text;  // e.g. "400ns"; for timing.step_spread a plain number
};

// Splits each KEY=VALUE argument. Throws InputError naming the argument when it has no '=', an empty side, or a key
// given twice.
std::vector<MachineSetting> parse_machine_settings(const std::vector<std::string>& args);

// Replaces each setting's value in a machine file's table. Throws InputError when the file has no such latency
// (listing the keys it does have) or the value is not a duration (a number, for the step spread).
void apply_machine_settings(toml::table& root, const std::vector<MachineSetting>& settings);

}  // namespace tlbsim::hw
