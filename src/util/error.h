// Errors that mean "the user's input is wrong": the CLI prints them and exits with status 2.
#pragma once

#include <stdexcept>
#include <string>

namespace tlbsim {

// Bad input: an unknown name, a malformed file, an absurd parameter. The message says where and what.
class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace tlbsim
