// A data file compiled into the binary (configs/machines/*.toml, configs/kernels/*.toml) by cmake/EmbedFiles.cmake.
#pragma once

#include <string_view>

namespace tlbsim {

struct EmbeddedFile {
  std::string_view name;  // the file's stem
  std::string_view text;
};

}  // namespace tlbsim
