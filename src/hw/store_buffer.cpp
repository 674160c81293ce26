#include "hw/store_buffer.h"

namespace tlbsim::hw {

std::string to_string(MemoryModel m) {
  for (const MemoryModelInfo& i : kMemoryModels) {
    if (i.model == m) return i.name;
  }
  return "?";
}

std::optional<MemoryModel> memory_model_from_string(const std::string& name) {
  for (const MemoryModelInfo& i : kMemoryModels) {
    if (name == i.name) return i.model;
  }
  return std::nullopt;
}

void StoreBuffers::enabled(std::vector<sim::Action>& out) const {
  for (std::uint32_t c = 0; c < buffers_.size(); ++c) {
    if (!buffers_[c].empty())
      out.push_back(sim::Action{sim::Action::Kind::kDrain, CpuId{c}, 0, sim::SimTime{}, nullptr, 0});
  }
}

void StoreBuffers::commit_oldest(CpuId cpu) {
  auto& b = buffers_[cpu.get()];
  if (b.empty()) return;
  // Pop first: the commit may wake spinners, whose code may buffer stores of its own CPU (another deque).
  BufferedStore s = std::move(b.front());
  b.pop_front();
  s.commit();
}

void StoreBuffers::drain(CpuId cpu) {
  while (pending(cpu)) commit_oldest(cpu);
}

void StoreBuffers::drain_through(CpuId cpu, const void* addr) {
  if (newest_for(cpu, addr) == nullptr) return;
  while (newest_for(cpu, addr) != nullptr) commit_oldest(cpu);
}

const BufferedStore* StoreBuffers::newest_for(CpuId cpu, const void* addr) const {
  const auto& b = buffers_[cpu.get()];
  for (auto it = b.rbegin(); it != b.rend(); ++it) {
    if (it->addr == addr) return &*it;
  }
  return nullptr;
}

}  // namespace tlbsim::hw
