// Parsing integer lists as users type them: "1,2,4-8,10-50:10".
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tlbsim {

// Parses comma-separated items, each N, A-B or A-B:STEP (A..B is A-B), into a sorted list.
// Throws InputError naming `what` and the offending item when an item is malformed or outside [min, max], and
// naming the value when one is listed twice (as every repeated name or value on the command line is refused).
std::vector<std::uint32_t> parse_int_list(const std::string& text, const std::string& what, std::uint32_t min,
                                          std::uint32_t max);

}  // namespace tlbsim
