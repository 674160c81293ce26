// Writing output files atomically: readers see the old file or the whole new one, never a torn write.
#pragma once

#include <string>
#include <string_view>

namespace tlbsim {

// Writes `content` to a temporary file beside `path`, flushes it to disk, and renames it over `path`.
// Throws InputError naming the path and the system's reason when the directory is missing, unwritable or full.
void write_file_atomic(const std::string& path, std::string_view content);

// Creates a directory and its parents unless they exist; throws InputError naming it when it cannot.
void make_directories(const std::string& dir);

// Reads a whole file; throws InputError naming the path when it cannot.
std::string read_file(const std::string& path);

}  // namespace tlbsim
