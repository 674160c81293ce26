// Every schedule of a small exploring-scheduler run, depth first: re-run from the start with the choices so far, an
// odometer over the choice indices (for layer tests that enumerate the hardware's orders exhaustively).
#pragma once

#include <utility>
#include <vector>

#include "sim/exploring_scheduler.h"

namespace tlbsim::hw::testing {

class EverySchedule final : public sim::Chooser {
 public:
  std::size_t choose(const std::vector<sim::Action>& actions) override {
    if (depth_ == path_.size()) path_.push_back({0, actions.size()});
    return path_[depth_++].first;
  }
  // Moves to the next schedule; false after the last.
  bool next() {
    path_.resize(depth_);
    while (!path_.empty() && path_.back().first + 1 >= path_.back().second) path_.pop_back();
    if (path_.empty()) return false;
    ++path_.back().first;
    depth_ = 0;
    return true;
  }

 private:
  std::vector<std::pair<std::size_t, std::size_t>> path_;
  std::size_t depth_ = 0;
};

}  // namespace tlbsim::hw::testing
