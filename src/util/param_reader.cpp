#include "util/param_reader.h"

#include <algorithm>

#include <cmath>
#include <limits>

#include <fmt/format.h>
#include <toml++/toml.h>

namespace tlbsim {

namespace {
const char* type_name(const toml::node& n) {
  switch (n.type()) {
    case toml::node_type::table: return "a table";
    case toml::node_type::array: return "an array";
    case toml::node_type::string: return "a string";
    case toml::node_type::integer: return "an integer";
    case toml::node_type::floating_point: return "a float";
    case toml::node_type::boolean: return "a boolean";
    case toml::node_type::date: return "a date";
    case toml::node_type::time: return "a time";
    case toml::node_type::date_time: return "a date-time";
    default: return "nothing";
  }
}
}  // namespace

TomlDocument::TomlDocument(std::unique_ptr<toml::table> root, std::string origin)
    : root_(std::move(root)), origin_(std::move(origin)) {}
TomlDocument::~TomlDocument() = default;
TomlDocument::TomlDocument(TomlDocument&&) noexcept = default;

TomlDocument TomlDocument::parse(std::string_view text, std::string origin) {
  try {
    auto table = std::make_unique<toml::table>(toml::parse(text, origin));
    return TomlDocument(std::move(table), std::move(origin));
  } catch (const toml::parse_error& e) {
    const auto& b = e.source().begin;
    throw InputError(fmt::format("{}:{}:{}: TOML syntax error: {}", origin, b.line, b.column, e.description()));
  }
}

ParamReader::ParamReader(const toml::table& table, std::string origin, std::string component, std::string path)
    : table_(table), origin_(std::move(origin)), component_(std::move(component)), path_(std::move(path)) {}

std::string ParamReader::qualified(std::string_view key) const {
  return path_.empty() ? std::string(key) : fmt::format("{}.{}", path_, key);
}

std::string ParamReader::where(const toml::node* node) const {
  if (node != nullptr && node->source().begin.line > 0) {
    return fmt::format("{}:{}:{}", origin_, node->source().begin.line, node->source().begin.column);
  }
  if (table_.source().begin.line > 0) return fmt::format("{}:{}", origin_, table_.source().begin.line);
  return origin_;
}

void ParamReader::fail(std::string_view key, const std::string& message) const {
  const toml::node* n = table_.get(key);
  throw InputError(fmt::format("{}: {}: '{}': {}", where(n), component_, qualified(key), message));
}

const toml::node* ParamReader::get(std::string_view key) {
  read_.emplace(key);
  return table_.get(key);
}

const toml::node* ParamReader::require(std::string_view key) {
  const toml::node* n = get(key);
  if (n == nullptr) {
    throw InputError(fmt::format("{}: {}: missing required key '{}'", where(nullptr), component_, qualified(key)));
  }
  return n;
}

ParamReader ParamReader::section(std::string_view key) {
  const toml::node* n = require(key);
  if (!n->is_table()) fail(key, fmt::format("expected a table, got {}", type_name(*n)));
  return ParamReader(*n->as_table(), origin_, component_, qualified(key));
}

std::optional<ParamReader> ParamReader::optional_section(std::string_view key) {
  if (table_.get(key) == nullptr) {
    read_.emplace(key);
    return std::nullopt;
  }
  return section(key);
}

std::vector<ParamReader> ParamReader::table_array(std::string_view key) {
  std::vector<ParamReader> out;
  const toml::node* n = get(key);
  if (n == nullptr) return out;
  if (!n->is_array_of_tables()) fail(key, fmt::format("expected an array of tables ([[{}]]), got {}", qualified(key), type_name(*n)));
  std::size_t i = 0;
  for (const toml::node& e : *n->as_array()) {
    out.emplace_back(*e.as_table(), origin_, component_, fmt::format("{}[{}]", qualified(key), i++));
  }
  return out;
}

std::int64_t ParamReader::integer(std::string_view key, std::int64_t min, std::int64_t max) {
  const toml::node* n = require(key);
  if (!n->is_integer()) fail(key, fmt::format("expected an integer from {} to {}, got {}", min, max, type_name(*n)));
  const std::int64_t v = n->as_integer()->get();
  if (v < min || v > max) fail(key, fmt::format("expected an integer from {} to {}, got {}", min, max, v));
  return v;
}

std::optional<std::int64_t> ParamReader::optional_integer(std::string_view key, std::int64_t min, std::int64_t max) {
  if (table_.get(key) == nullptr) {
    read_.emplace(key);
    return std::nullopt;
  }
  return integer(key, min, max);
}

double ParamReader::number(std::string_view key, double min, double max) {
  const toml::node* n = require(key);
  double v;
  if (n->is_floating_point()) v = n->as_floating_point()->get();
  else if (n->is_integer()) v = static_cast<double>(n->as_integer()->get());
  else fail(key, fmt::format("expected a number from {} to {}, got {}", min, max, type_name(*n)));
  if (!std::isfinite(v) || v < min || v > max) fail(key, fmt::format("expected a number from {} to {}, got {}", min, max, v));
  return v;
}

bool ParamReader::boolean(std::string_view key) {
  const toml::node* n = require(key);
  if (!n->is_boolean()) fail(key, fmt::format("expected true or false, got {}", type_name(*n)));
  return n->as_boolean()->get();
}

std::optional<bool> ParamReader::optional_boolean(std::string_view key) {
  if (table_.get(key) == nullptr) {
    read_.emplace(key);
    return std::nullopt;
  }
  return boolean(key);
}

std::string ParamReader::string(std::string_view key) {
  const toml::node* n = require(key);
  if (!n->is_string()) fail(key, fmt::format("expected a string, got {}", type_name(*n)));
  return n->as_string()->get();
}

std::optional<std::string> ParamReader::optional_string(std::string_view key) {
  if (table_.get(key) == nullptr) {
    read_.emplace(key);
    return std::nullopt;
  }
  return string(key);
}

std::string ParamReader::choice(std::string_view key, const std::vector<std::string>& choices) {
  std::string v = string(key);
  for (const auto& c : choices) {
    if (c == v) return v;
  }
  fail(key, fmt::format("expected one of {}, got \"{}\"", fmt::join(choices, ", "), v));
}

std::vector<std::string> ParamReader::string_list(std::string_view key) {
  const toml::node* n = require(key);
  if (!n->is_array()) fail(key, fmt::format("expected an array of strings, got {}", type_name(*n)));
  std::vector<std::string> out;
  for (const toml::node& e : *n->as_array()) {
    if (!e.is_string()) fail(key, fmt::format("expected an array of strings, but an element is {}", type_name(e)));
    out.push_back(e.as_string()->get());
  }
  return out;
}

std::vector<std::int64_t> ParamReader::integer_list(std::string_view key, std::int64_t min, std::int64_t max) {
  const toml::node* n = require(key);
  const std::string expected = fmt::format("expected an array of integers from {} to {}", min, max);
  if (!n->is_array()) fail(key, fmt::format("{}, got {}", expected, type_name(*n)));
  std::vector<std::int64_t> out;
  for (const toml::node& e : *n->as_array()) {
    if (!e.is_integer()) fail(key, fmt::format("{}, but an element is {}", expected, type_name(e)));
    const std::int64_t v = e.as_integer()->get();
    if (v < min || v > max) fail(key, fmt::format("{}, but an element is {}", expected, v));
    out.push_back(v);
  }
  return out;
}

Latency ParamReader::latency(std::string_view key, double max_ns) {
  const toml::node* n = require(key);
  const std::string expected =
      fmt::format("expected an inline table {{ ns = <number in [0.001, {}]>, source = \"<public source>\" }}", max_ns);
  if (!n->is_table()) fail(key, fmt::format("{}, got {}", expected, type_name(*n)));
  const toml::table& t = *n->as_table();
  for (const auto& [k, v] : t) {
    if (k.str() != "ns" && k.str() != "source") fail(key, fmt::format("unknown field '{}'; {}", k.str(), expected));
  }
  const toml::node* ns = t.get("ns");
  const toml::node* src = t.get("source");
  if (ns == nullptr || !(ns->is_floating_point() || ns->is_integer())) fail(key, expected);
  if (src == nullptr || !src->is_string() || src->as_string()->get().empty()) {
    fail(key, "every latency needs a non-empty 'source' naming where the figure comes from");
  }
  const double v = ns->is_integer() ? static_cast<double>(ns->as_integer()->get()) : ns->as_floating_point()->get();
  if (!std::isfinite(v) || v <= 0 || v > max_ns) fail(key, fmt::format("{}, got ns = {}", expected, v));
  // The clock counts whole picoseconds: a smaller latency would round to a step that costs no time, and a spin
  // loop of such steps would never let simulated time advance.
  if (v < kMinLatencyNs) {
    fail(key, fmt::format("{}, got ns = {}: below one picosecond, the simulated clock's resolution", expected, v));
  }
  return Latency{sim::from_nanoseconds(v), src->as_string()->get()};
}

std::optional<Latency> ParamReader::optional_latency(std::string_view key, double max_ns) {
  if (table_.get(key) == nullptr) {
    read_.emplace(key);
    return std::nullopt;
  }
  return latency(key, max_ns);
}

bool ParamReader::is_string(std::string_view key) const {
  const toml::node* n = table_.get(key);
  return n != nullptr && n->is_string();
}

std::vector<std::string> ParamReader::keys() const {
  std::vector<std::pair<std::pair<std::uint32_t, std::uint32_t>, std::string>> ordered;
  for (const auto& [k, v] : table_) ordered.push_back({{v.source().begin.line, v.source().begin.column}, std::string(k.str())});
  std::sort(ordered.begin(), ordered.end());
  std::vector<std::string> out;
  for (auto& o : ordered) out.push_back(std::move(o.second));
  return out;
}

std::string ParamReader::where_key(std::string_view key) const {
  return fmt::format("{}: {}: {}", where(table_.get(key)), component_, qualified(key));
}

void ParamReader::finish() {
  for (const auto& [k, v] : table_) {
    if (!read_.contains(k.str())) {
      std::string known;
      for (const auto& r : read_) known += (known.empty() ? "" : ", ") + r;
      throw InputError(fmt::format("{}: {}: unknown key '{}' (known keys here: {})", where(&v), component_,
                                   qualified(k.str()), known));
    }
  }
}

}  // namespace tlbsim
