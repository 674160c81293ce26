// The x86-TSO store buffers of the checker's weak memory model (docs/model.md, "Memory ordering"): each CPU's
// plain stores wait in a FIFO, its own loads read the newest of them (store forwarding), and other CPUs see a
// store only when it commits to memory, oldest first.
//
// The model is the operational x86-TSO of Sewell, Sarkar, Owens, Zappa Nardelli and Myreen, "x86-TSO: A Rigorous
// and Usable Programmer's Model for x86 Multiprocessors" (CACM 53(7), 2010): a store buffer per hardware thread,
// commits as nondeterministic machine steps, and MFENCE and LOCK'd instructions that wait for an empty buffer.
#pragma once

#include <any>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "hw/coherence.h"
#include "sim/exploring_scheduler.h"
#include "sim/ids.h"

namespace tlbsim::hw {

// The memory model the checker runs the kernel under (tlbsim check --memory-model).
enum class MemoryModel : std::uint8_t {
  kSc,     // sequential consistency: every access takes effect when its step completes
  kTso,    // x86-TSO: plain stores are buffered per CPU
  kPower,  // POWER: writes propagate to each CPU separately, loads may be satisfied out of order (hw/power_memory.h)
  kArm,    // ARMv8: as kPower, but a write reaches every other CPU at once (other-multicopy atomic)
};
// Every memory model with its name and what it is (`tlbsim list memory-models`).
struct MemoryModelInfo {
  MemoryModel model;
  const char* name;
  const char* doc;
};
inline constexpr MemoryModelInfo kMemoryModels[] = {
    {MemoryModel::kSc, "sc", "sequential consistency: every access takes effect when its step completes"},
    {MemoryModel::kTso, "tso",
     "x86-TSO (Sewell et al., CACM 2010): plain stores wait in a per-CPU FIFO buffer; LOCK'd, MFENCE and "
     "serializing instructions drain it"},
    {MemoryModel::kPower, "power",
     "POWER, flat (after Sarkar et al., PLDI 2011): writes reach each CPU separately, unordered loads read any value "
     "visible since the last barrier, lwsync/sync cumulative; page-table entries too, read by the page walkers"},
    {MemoryModel::kArm, "arm",
     "ARMv8, flat and other-multicopy atomic (after Pulte et al., POPL 2018): as power, but a write reaches every "
     "other CPU at once; DMB ISH full, DMB ISHLD orders loads, DMB ISHST orders stores; DSB waits like DMB ISH"},
};
// "sc", "tso".
std::string to_string(MemoryModel m);
// nullopt for an unknown name.
std::optional<MemoryModel> memory_model_from_string(const std::string& name);

// One buffered store. Contract: `commit` writes the value to memory (and reports the access); `value` holds the
// written T for forwarding, or is empty for a partial store (store_part), whose value depends on memory.
struct BufferedStore {
  const void* addr = nullptr;
  LineId line{};
  std::any value;
  std::function<void()> commit;
  std::optional<std::uint64_t> shown;  // the value as a number, for the replay
};

// Contract: a CPU's stores commit in program order; drain() commits every one of them at once (an MFENCE, a LOCK'd
// instruction or a serializing one waits until the buffer is empty).
class StoreBuffers final : public sim::MemoryActions {
 public:
  explicit StoreBuffers(std::size_t cpus) : buffers_(cpus) {}

  bool pending(CpuId cpu) const { return !buffers_[cpu.get()].empty(); }
  void commit_oldest(CpuId cpu);
  // A drain action ("sb@cpuN") for every CPU with a buffered store; running one commits that CPU's oldest.
  void enabled(std::vector<sim::Action>& out) const override;
  void run(const sim::Action& a) override { commit_oldest(a.cpu); }
  void drain(CpuId cpu);
  // Commits the CPU's stores up to and including its newest one to `addr` (a load that cannot be forwarded waits
  // for the store to commit).
  void drain_through(CpuId cpu, const void* addr);
  void push(CpuId cpu, BufferedStore s) { buffers_[cpu.get()].push_back(std::move(s)); }
  // The CPU's newest buffered store to `addr`, or nullptr.
  const BufferedStore* newest_for(CpuId cpu, const void* addr) const;
  const std::deque<BufferedStore>& of(CpuId cpu) const { return buffers_[cpu.get()]; }

 private:
  std::vector<std::deque<BufferedStore>> buffers_;
};

}  // namespace tlbsim::hw
