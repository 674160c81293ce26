// A typed reader over a parsed JSON value, as ParamReader is over TOML: every missing, unknown, wrong-typed or
// out-of-range field is an InputError naming the file, the kind of file and the field's path, e.g.
// "cx.json: counterexample file: 'decisions[3].step': expected an integer from 0 to 19999, got -5".
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "util/error.h"

namespace tlbsim {

// Parses JSON text. Throws InputError "ORIGIN: COMPONENT: not JSON: WHAT" (with the line and column of the error).
nlohmann::json parse_json_text(std::string_view text, const std::string& origin, const std::string& component);

// Reads one JSON object. Contract: each key read is remembered; finish() rejects keys that were never read.
// Every accessor throws InputError naming origin, component and the qualified key.
class JsonReader {
 public:
  // Throws InputError when `value` is not an object (`path` is its own name, "" for the whole document).
  JsonReader(const nlohmann::json& value, std::string origin, std::string component, std::string path = "");

  bool has(std::string_view key) const;
  JsonReader object(std::string_view key);
  // An array of objects, one reader each (named "key[i]").
  std::vector<JsonReader> object_array(std::string_view key);
  // Integers only (2.0 and 1e30 are refused), within [min, max].
  std::uint64_t unsigned_integer(std::string_view key, std::uint64_t min, std::uint64_t max);
  // Any finite number.
  double number(std::string_view key);
  std::string string(std::string_view key);
  std::vector<std::string> string_list(std::string_view key);
  // An array of integers, each within [min, max].
  std::vector<std::uint64_t> unsigned_list(std::string_view key, std::uint64_t min, std::uint64_t max);

  // Rejects keys never read.
  void finish() const;
  [[noreturn]] void fail(std::string_view key, const std::string& message) const;
  // "path.key", for messages about a valid value that is wrong in context.
  std::string qualified(std::string_view key) const;
  const std::string& origin() const { return origin_; }
  const std::string& component() const { return component_; }

 private:
  const nlohmann::json& require(std::string_view key);

  const nlohmann::json& value_;
  std::string origin_;
  std::string component_;
  std::string path_;
  std::set<std::string, std::less<>> read_;
};

// A JSON value's type in messages: "a string", "an array", "a fractional number", ...
std::string json_type_name(const nlohmann::json& v);

}  // namespace tlbsim
