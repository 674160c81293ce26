// A checker of Chrome trace-event JSON as chrome://tracing's loader reads it: the fields every event needs, B/E
// balanced and properly nested per track, X with dur >= 0, s/f flow pairs with matching ids, numeric counters and
// the thread/process name metadata.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace tlbsim::trace::testing {

struct ChromeCheck {
  std::vector<std::string> errors;
  std::size_t spans = 0, flows = 0, counters = 0, instants = 0;
  std::set<long long> tids;
};

inline ChromeCheck validate_chrome_trace(const nlohmann::json& doc) {
  ChromeCheck r;
  const auto fail = [&r](std::string what) {
    if (r.errors.size() < 20) r.errors.push_back(std::move(what));
  };
  if (!doc.is_object() || !doc.contains("traceEvents") || !doc["traceEvents"].is_array()) {
    fail("no traceEvents array");
    return r;
  }
  struct Track {
    std::vector<std::string> stack;
    double last_ts = -1;
  };
  std::map<std::pair<long long, long long>, Track> tracks;
  std::map<std::tuple<std::string, std::string, long long>, std::pair<int, int>> flow_ends;  // (cat, name, id)
  std::size_t i = 0;
  for (const auto& e : doc["traceEvents"]) {
    const std::string where = "event " + std::to_string(i++) + " " + e.dump().substr(0, 160);
    for (const char* key : {"ph", "ts", "pid", "tid", "name"}) {
      if (!e.contains(key)) fail(where + ": no " + key);
    }
    if (!e.contains("ph") || !e["ph"].is_string() || !e.contains("ts") || !e["ts"].is_number()) continue;
    if (!e.contains("pid") || !e.contains("tid") || !e.contains("name")) continue;  // reported above
    if (!e["pid"].is_number_integer() || !e["tid"].is_number_integer() || !e["name"].is_string()) {
      fail(where + ": pid/tid not integers or name not a string");
      continue;
    }
    const std::string ph = e["ph"];
    const double ts = e["ts"];
    const std::pair<long long, long long> key{e["pid"].get<long long>(), e["tid"].get<long long>()};
    if (ts < 0) fail(where + ": negative ts");
    if (ph == "B" || ph == "E") {
      Track& t = tracks[key];
      if (ts < t.last_ts) fail(where + ": B/E out of time order on its track");
      t.last_ts = ts;
      r.tids.insert(key.second);
      if (ph == "B") {
        t.stack.push_back(e["name"]);
        ++r.spans;
      } else if (t.stack.empty()) {
        fail(where + ": E without B");
      } else {
        if (t.stack.back() != e["name"].get<std::string>()) fail(where + ": E closes '" + t.stack.back() + "'");
        t.stack.pop_back();
      }
    } else if (ph == "X") {
      if (!e.contains("dur") || !e["dur"].is_number() || e["dur"].get<double>() < 0) fail(where + ": X dur");
    } else if (ph == "s" || ph == "f") {
      if (!e.contains("id") || !e.contains("cat")) {
        fail(where + ": flow without id or cat");
        continue;
      }
      auto& ends = flow_ends[{e["cat"].get<std::string>(), e["name"].get<std::string>(), e["id"].get<long long>()}];
      (ph == "s" ? ends.first : ends.second) += 1;
      if (ph == "f" && (!e.contains("bp") || e["bp"] != "e")) fail(where + ": f without bp e");
    } else if (ph == "C") {
      if (!e.contains("args") || !e["args"].is_object() || e["args"].empty()) fail(where + ": counter without args");
      for (const auto& [k, v] : e["args"].items()) {
        if (!v.is_number()) fail(where + ": counter arg " + k + " not numeric");
      }
      ++r.counters;
    } else if (ph == "M") {
      const std::string n = e["name"];
      if (n == "thread_name" || n == "process_name") {
        if (!e.contains("args") || !e["args"].contains("name") || !e["args"]["name"].is_string()) {
          fail(where + ": name metadata without args.name");
        }
      } else if (n != "thread_sort_index" && n != "process_sort_index") {
        fail(where + ": unknown metadata " + n);
      }
    } else if (ph == "i" || ph == "I") {
      ++r.instants;
    } else {
      fail(where + ": unknown ph " + ph);
    }
  }
  for (const auto& [key, t] : tracks) {
    if (!t.stack.empty()) fail("track tid " + std::to_string(key.second) + ": '" + t.stack.back() + "' never ends");
  }
  for (const auto& [key, ends] : flow_ends) {
    if (ends.first != 1 || ends.second != 1)
      fail("flow id " + std::to_string(std::get<2>(key)) + " has " + std::to_string(ends.first) + " starts and " +
           std::to_string(ends.second) + " ends");
    ++r.flows;
  }
  return r;
}

}  // namespace tlbsim::trace::testing
