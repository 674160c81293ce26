// The typed JSON reader: type and range checks with messages naming the file and the field.
#include "util/json_reader.h"

#include <fmt/format.h>

#include <cmath>

namespace tlbsim {

nlohmann::json parse_json_text(std::string_view text, const std::string& origin, const std::string& component) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    // A syntax error (parse_error) or a number too large for a double (out_of_range.406). nlohmann's text is
    // "[json.exception.parse_error.101] parse error at line 1, column 2: ..."; keep what follows its tag.
    std::string what = e.what();
    if (const auto tag = what.find("] "); what.rfind("[json.exception", 0) == 0 && tag != std::string::npos) {
      what = what.substr(tag + 2);
    }
    throw InputError(fmt::format("{}: {}: not JSON: {}", origin, component, what));
  }
}

std::string json_type_name(const nlohmann::json& v) {
  switch (v.type()) {
    case nlohmann::json::value_t::null:
      return "null";
    case nlohmann::json::value_t::object:
      return "an object";
    case nlohmann::json::value_t::array:
      return "an array";
    case nlohmann::json::value_t::string:
      return "a string";
    case nlohmann::json::value_t::boolean:
      return v.get<bool>() ? "true" : "false";
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned:
    case nlohmann::json::value_t::number_float:
      return v.dump();
    default:
      return "a binary value";
  }
}

JsonReader::JsonReader(const nlohmann::json& value, std::string origin, std::string component, std::string path)
    : value_(value), origin_(std::move(origin)), component_(std::move(component)), path_(std::move(path)) {
  if (!value_.is_object()) {
    if (path_.empty()) {
      throw InputError(
          fmt::format("{}: {}: expected a JSON object, got {}", origin_, component_, json_type_name(value_)));
    }
    throw InputError(
        fmt::format("{}: {}: '{}': expected an object, got {}", origin_, component_, path_, json_type_name(value_)));
  }
}

std::string JsonReader::qualified(std::string_view key) const {
  if (path_.empty()) return std::string(key);
  return path_ + "." + std::string(key);
}

void JsonReader::fail(std::string_view key, const std::string& message) const {
  throw InputError(fmt::format("{}: {}: '{}': {}", origin_, component_, qualified(key), message));
}

bool JsonReader::has(std::string_view key) const { return value_.find(key) != value_.end(); }

const nlohmann::json& JsonReader::require(std::string_view key) {
  const auto it = value_.find(key);
  if (it == value_.end()) {
    throw InputError(fmt::format("{}: {}: missing required field '{}'", origin_, component_, qualified(key)));
  }
  read_.emplace(key);
  return *it;
}

JsonReader JsonReader::object(std::string_view key) {
  return JsonReader(require(key), origin_, component_, qualified(key));
}

std::vector<JsonReader> JsonReader::object_array(std::string_view key) {
  const nlohmann::json& v = require(key);
  if (!v.is_array()) fail(key, fmt::format("expected an array of objects, got {}", json_type_name(v)));
  std::vector<JsonReader> out;
  out.reserve(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    out.emplace_back(v[i], origin_, component_, qualified(key) + fmt::format("[{}]", i));
  }
  return out;
}

namespace {

// Checks one integer element; returns an error message, or "" when it is an integer within [min, max].
std::string unsigned_problem(const nlohmann::json& v, std::uint64_t min, std::uint64_t max, std::uint64_t* out) {
  const std::string expected = fmt::format("expected an integer from {} to {}", min, max);
  if (!v.is_number_integer()) return fmt::format("{}, got {}", expected, json_type_name(v));
  if (!v.is_number_unsigned()) return fmt::format("{}, got {}", expected, v.get<std::int64_t>());
  const std::uint64_t u = v.get<std::uint64_t>();
  if (u < min || u > max) return fmt::format("{}, got {}", expected, u);
  *out = u;
  return "";
}

}  // namespace

std::uint64_t JsonReader::unsigned_integer(std::string_view key, std::uint64_t min, std::uint64_t max) {
  std::uint64_t out = 0;
  if (const std::string why = unsigned_problem(require(key), min, max, &out); !why.empty()) fail(key, why);
  return out;
}

double JsonReader::number(std::string_view key) {
  const nlohmann::json& v = require(key);
  if (!v.is_number()) fail(key, fmt::format("expected a number, got {}", json_type_name(v)));
  const double d = v.get<double>();
  if (!std::isfinite(d)) fail(key, fmt::format("expected a finite number, got {}", v.dump()));
  return d;
}

std::string JsonReader::string(std::string_view key) {
  const nlohmann::json& v = require(key);
  if (!v.is_string()) fail(key, fmt::format("expected a string, got {}", json_type_name(v)));
  return v.get<std::string>();
}

std::vector<std::string> JsonReader::string_list(std::string_view key) {
  const nlohmann::json& v = require(key);
  if (!v.is_array()) fail(key, fmt::format("expected an array of strings, got {}", json_type_name(v)));
  std::vector<std::string> out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (!v[i].is_string()) {
      fail(fmt::format("{}[{}]", key, i), fmt::format("expected a string, got {}", json_type_name(v[i])));
    }
    out.push_back(v[i].get<std::string>());
  }
  return out;
}

std::vector<std::uint64_t> JsonReader::unsigned_list(std::string_view key, std::uint64_t min, std::uint64_t max) {
  const nlohmann::json& v = require(key);
  if (!v.is_array()) fail(key, fmt::format("expected an array of integers, got {}", json_type_name(v)));
  std::vector<std::uint64_t> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (const std::string why = unsigned_problem(v[i], min, max, &out[i]); !why.empty()) {
      fail(fmt::format("{}[{}]", key, i), why);
    }
  }
  return out;
}

void JsonReader::finish() const {
  for (const auto& [key, v] : value_.items()) {
    if (read_.find(key) == read_.end()) {
      std::vector<std::string> known(read_.begin(), read_.end());
      throw InputError(fmt::format("{}: {}: unknown field '{}' (known fields here: {})", origin_, component_,
                                   qualified(key), fmt::join(known, ", ")));
    }
  }
}

}  // namespace tlbsim
