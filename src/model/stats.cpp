#include "model/stats.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <numeric>

namespace tlbsim::kernel {

namespace {

using Json = nlohmann::json;

// The field as read now; durations as integer picoseconds, so that windows subtract exactly.
Json raw(const Stats::Stat& s) {
  switch (s.kind) {
    case StatKind::kCount:
      return *static_cast<const std::uint64_t*>(s.field);
    case StatKind::kPerCpu:
    case StatKind::kList:
      return *static_cast<const std::vector<std::uint64_t>*>(s.field);
    case StatKind::kDuration:
      return static_cast<const sim::Duration*>(s.field)->count();
    case StatKind::kDurationPerCpu: {
      const auto& v = *static_cast<const std::vector<sim::Duration>*>(s.field);
      return std::accumulate(v.begin(), v.end(), sim::Duration{0}).count();
    }
    case StatKind::kSource:
      return s.source();
  }
  return nullptr;
}

// `now - base`, member by member: integers exactly, other numbers (durations in ns) to the picosecond.
void subtract(Json& now, const Json& base) {
  if (now.is_number_unsigned() && base.is_number_unsigned()) {
    now = now.get<std::uint64_t>() - base.get<std::uint64_t>();
  } else if (now.is_number_integer() && base.is_number_integer()) {
    now = now.get<std::int64_t>() - base.get<std::int64_t>();
  } else if (now.is_number() && base.is_number()) {
    now = sim::to_nanoseconds(sim::Duration{std::llround((now.get<double>() - base.get<double>()) * 1e3)});
  } else if (now.is_array() && base.is_array()) {
    for (std::size_t i = 0; i < std::min(now.size(), base.size()); ++i) subtract(now[i], base[i]);
  } else if (now.is_object() && base.is_object()) {
    for (auto it = now.begin(); it != now.end(); ++it) {
      if (const auto b = base.find(it.key()); b != base.end()) subtract(it.value(), *b);
    }
  }
}

bool nonzero(const Json& v) {
  if (v.is_number()) return v.get<double>() != 0;
  return std::any_of(v.begin(), v.end(), [](const Json& x) { return nonzero(x); });
}

std::uint64_t sum(const Json& per_cpu) {
  std::uint64_t n = 0;
  for (const Json& v : per_cpu) n += v.get<std::uint64_t>();
  return n;
}

Json::json_pointer pointer(const std::string& name) { return Json::json_pointer("/" + name); }

std::string number(const Json& v) { return v.is_number_float() ? fmt::format("{:.0f}", v.get<double>()) : v.dump(); }

std::string label(std::string name) {
  std::replace(name.begin(), name.end(), '/', ' ');
  return name;
}

}  // namespace

Stats::Stats() = default;
Stats::~Stats() = default;

Stats::Registrar& Stats::Registrar::add(std::string_view name, std::string_view description, StatKind kind,
                                        const void* field, unsigned flags, Source f) {
  stats_.stats_.push_back(
      {std::string(name), std::string(description), kind, field, std::move(f), flags, section_, owner_});
  return *this;
}
Stats::Registrar& Stats::Registrar::count(std::string_view name, std::string_view description, const std::uint64_t& v,
                                          unsigned flags) {
  return add(name, description, StatKind::kCount, &v, flags);
}
Stats::Registrar& Stats::Registrar::per_cpu(std::string_view name, std::string_view description,
                                            const std::vector<std::uint64_t>& v, unsigned flags) {
  return add(name, description, StatKind::kPerCpu, &v, flags);
}
Stats::Registrar& Stats::Registrar::list(std::string_view name, std::string_view description,
                                         const std::vector<std::uint64_t>& v, unsigned flags) {
  return add(name, description, StatKind::kList, &v, flags);
}
Stats::Registrar& Stats::Registrar::duration(std::string_view name, std::string_view description,
                                             const sim::Duration& v, unsigned flags) {
  return add(name, description, StatKind::kDuration, &v, flags);
}
Stats::Registrar& Stats::Registrar::duration_per_cpu(std::string_view name, std::string_view description,
                                                     const std::vector<sim::Duration>& v, unsigned flags) {
  return add(name, description, StatKind::kDurationPerCpu, &v, flags);
}
Stats::Registrar& Stats::Registrar::source(std::string_view name, std::string_view description, Source f,
                                           unsigned flags) {
  return add(name, description, StatKind::kSource, nullptr, flags, std::move(f));
}

void Stats::drop(const void* owner) {
  for (std::size_t i = stats_.size(); i-- > 0;) {
    if (stats_[i].owner != owner) continue;
    stats_.erase(stats_.begin() + static_cast<std::ptrdiff_t>(i));
    if (i < base_.size()) base_.erase(base_.begin() + static_cast<std::ptrdiff_t>(i));
  }
}

void Stats::snapshot() {
  base_.clear();
  for (const Stat& s : stats_) base_.push_back(raw(s));
}

Json Stats::value(const Stat& s) const {
  Json v = raw(s);
  const auto i = static_cast<std::size_t>(&s - stats_.data());
  if (i < base_.size()) subtract(v, base_[i]);
  if (s.kind == StatKind::kDuration || s.kind == StatKind::kDurationPerCpu) {
    v = sim::to_nanoseconds(sim::Duration{v.get<std::int64_t>()});
  }
  return v;
}

bool Stats::shown(const Stat& s) const {
  if (s.section.empty()) return true;
  bool gated = false;
  for (const Stat& g : stats_) {
    if (g.section != s.section || (g.flags & kStatGate) == 0) continue;
    if (nonzero(raw(g))) return true;
    gated = true;
  }
  return !gated;
}

Json Stats::to_json() const {
  Json j = Json::object();
  for (const Stat& s : stats_) {
    if (!shown(s)) continue;
    Json v = value(s);
    if (s.kind == StatKind::kPerCpu) {
      j[pointer(s.name)] = sum(v);
      if ((s.flags & kStatPerCpuArray) != 0) j[pointer(s.name + " per cpu")] = std::move(v);
    } else {
      j[pointer(s.name)] = std::move(v);
    }
  }
  return j;
}

std::vector<Stats::Row> Stats::rows() const {
  std::vector<Row> out;
  for (const Stat& s : stats_) {
    if (!shown(s)) continue;
    const bool summary = (s.flags & kStatSummary) != 0;
    const Json v = value(s);
    if (s.kind == StatKind::kPerCpu) {
      out.push_back({label(s.name), std::to_string(sum(v)), s.description, summary});
    } else if (!v.is_object()) {
      out.push_back({label(s.name), v.is_array() ? v.dump() : number(v), s.description, summary});
    } else {
      for (const auto& [key, m] : v.items()) {
        std::string text;
        if (m.is_object()) {
          for (const auto& [what, n] : m.items())
            text += fmt::format("{}{} {}", text.empty() ? "" : " ", what, number(n));
        } else {
          text = m.is_array() ? m.dump() : number(m);
        }
        out.push_back({label(s.name) + " " + key, text, s.description, summary});
      }
    }
  }
  return out;
}

}  // namespace tlbsim::kernel
