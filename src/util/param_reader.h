// A typed reader over a TOML table: every missing, unknown or wrong-typed parameter is an error that names the
// file, line, component, key and what was expected.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "sim/time.h"
#include "util/error.h"

namespace toml {
inline namespace v3 {
class table;
class node;
}  // namespace v3
}  // namespace toml

namespace tlbsim {

// The smallest latency a file may give: one picosecond, the resolution of the simulated clock (sim::Duration).
inline constexpr double kMinLatencyNs = 0.001;

// A latency as machine files give it: a value and the public source it comes from.
struct Latency {
  sim::Duration value{0};
  std::string source;
};

// A parsed TOML document. Contract: parse() throws InputError with file:line:column for syntax errors.
class TomlDocument {
 public:
  static TomlDocument parse(std::string_view text, std::string origin);
  ~TomlDocument();
  TomlDocument(TomlDocument&&) noexcept;
  const toml::table& root() const { return *root_; }
  toml::table& mutable_root() { return *root_; }
  const std::string& origin() const { return origin_; }

 private:
  TomlDocument(std::unique_ptr<toml::table> root, std::string origin);
  std::unique_ptr<toml::table> root_;
  std::string origin_;
};

// Reads one table. Contract: each key read is remembered; finish() rejects keys that were never read, so a
// misspelt parameter is an error rather than silently ignored.
class ParamReader {
 public:
  ParamReader(const toml::table& table, std::string origin, std::string component, std::string path = "");

  ParamReader section(std::string_view key);
  std::optional<ParamReader> optional_section(std::string_view key);
  // An array of tables ([[key]]); empty when the key is absent.
  std::vector<ParamReader> table_array(std::string_view key);

  std::int64_t integer(std::string_view key, std::int64_t min, std::int64_t max);
  std::optional<std::int64_t> optional_integer(std::string_view key, std::int64_t min, std::int64_t max);
  double number(std::string_view key, double min, double max);
  bool boolean(std::string_view key);
  std::optional<bool> optional_boolean(std::string_view key);
  std::string string(std::string_view key);
  std::optional<std::string> optional_string(std::string_view key);
  // A string that must be one of `choices`.
  std::string choice(std::string_view key, const std::vector<std::string>& choices);
  std::vector<std::string> string_list(std::string_view key);
  // An array of integers, each in min..max.
  std::vector<std::int64_t> integer_list(std::string_view key, std::int64_t min, std::int64_t max);
  // { ns = <number>, source = "<text>" } with 0 < ns <= max_ns.
  Latency latency(std::string_view key, double max_ns = 1e7);
  std::optional<Latency> optional_latency(std::string_view key, double max_ns = 1e7);

  // Whether `key` is present and a string (reads nothing: a value that may be a number or a name asks first).
  bool is_string(std::string_view key) const;

  // The keys of this table, in file order (for tables whose keys are names, such as a profile's [options]).
  std::vector<std::string> keys() const;
  // Where `key` is (origin:line:column), for messages about a valid value that is wrong in context.
  std::string where_key(std::string_view key) const;

  // Rejects keys never read.
  void finish();
  // Throws InputError about `key` (at the key's line when it exists).
  [[noreturn]] void fail(std::string_view key, const std::string& message) const;

 private:
  const toml::node* get(std::string_view key);
  const toml::node* require(std::string_view key);
  std::string where(const toml::node* node) const;
  std::string qualified(std::string_view key) const;

  const toml::table& table_;
  std::string origin_;
  std::string component_;
  std::string path_;
  std::set<std::string, std::less<>> read_;
};

}  // namespace tlbsim
