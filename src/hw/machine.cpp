#include "hw/machine.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "hw/machine_set.h"
#include "util/atomic_file.h"
#include "util/param_reader.h"

namespace tlbsim::hw {

const char* to_string(TlbTag t) {
  switch (t) {
    case TlbTag::kNone: return "none";
    case TlbTag::kPcid: return "pcid";
    case TlbTag::kPid: return "pid";
    case TlbTag::kAsid:
      return "asid";
  }
  return "?";
}

namespace {

constexpr std::uint32_t kMaxCpus = 8192;

class LatencyCollector {
 public:
  explicit LatencyCollector(Machine& m) : m_(m) {}
  sim::Duration take(ParamReader& r, std::string_view section, std::string_view key) {
    Latency l = r.latency(key);
    record(section, key, l);
    return l.value;
  }
  sim::Duration take_if(bool required, ParamReader& r, std::string_view section, std::string_view key,
                        const char* why_required) {
    if (required) {
      if (!r.optional_latency(key)) r.fail(key, fmt::format("is required because {}", why_required));
      return take(r, section, key);
    }
    if (auto l = r.optional_latency(key)) {
      record(section, key, *l);
      return l->value;
    }
    return sim::Duration{0};
  }
  void record(std::string_view section, std::string_view key, const Latency& l) {
    m_.latencies.push_back({fmt::format("{}.{}", section, key), sim::to_nanoseconds(l.value), l.source});
  }

 private:
  Machine& m_;
};

// One machine file being parsed: its root table, the machine filled in so far, and the latencies recorded.
struct MachineParse {
  ParamReader& root;
  Machine& m;
  LatencyCollector& lat;
  const std::string& origin;
};

// [machine]: the name, description, architecture and seeds.
void parse_machine_info(MachineParse& p) {
  Machine& m = p.m;
  ParamReader info = p.root.section("machine");
  m.name = info.string("name");
  if (m.name.empty() || m.name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-_.") != std::string::npos) {
    info.fail("name", "expected a name of lower-case letters, digits, '-', '_' or '.'");
  }
  m.description = info.string("description");
  m.arch = info.choice("arch", {"x86_64", "powerpc64", "aarch64"});
  m.seeds = info.string_list("seeds");
  info.finish();
}

// [topology]: sockets, cores, threads, LLCs, socket groups and the CPU numbering.
void parse_topology(MachineParse& p) {
  Machine& m = p.m;
  ParamReader topo = p.root.section("topology");
  TopologyParams& t = m.topology;
  t.sockets = static_cast<std::uint32_t>(topo.integer("sockets", 1, 64));
  t.cores_per_socket = static_cast<std::uint32_t>(topo.integer("cores_per_socket", 1, 1024));
  t.threads_per_core = static_cast<std::uint32_t>(topo.integer("threads_per_core", 1, 8));
  t.cores_per_llc = static_cast<std::uint32_t>(topo.integer("cores_per_llc", 1, 1024));
  if (t.cores_per_socket % t.cores_per_llc != 0) {
    topo.fail("cores_per_llc", fmt::format("must divide cores_per_socket ({})", t.cores_per_socket));
  }
  t.sockets_per_group = static_cast<std::uint32_t>(topo.integer("sockets_per_group", 1, 64));
  if (t.sockets % t.sockets_per_group != 0) {
    topo.fail("sockets_per_group", fmt::format("must divide sockets ({})", t.sockets));
  }
  t.numbering = topo.choice("cpu_numbering", {"smt-last", "smt-consecutive"}) == "smt-last"
                    ? CpuNumbering::kSmtLast
                    : CpuNumbering::kSmtConsecutive;
  if (m.cpu_count() > kMaxCpus) {
    topo.fail("sockets",
              fmt::format("the machine would have {} CPUs; at most {} are supported", m.cpu_count(), kMaxCpus));
  }
  topo.finish();
}

// [coherence]: the cache-line latencies; the transfer classes the topology has are required.
void parse_coherence(MachineParse& p) {
  const TopologyParams& t = p.m.topology;
  LatencyCollector& lat = p.lat;
  ParamReader coh = p.root.section("coherence");
  CoherenceLatencies& c = p.m.coherence;
  c.l1_hit = lat.take(coh, "coherence", "l1_hit");
  c.local_rmw = lat.take(coh, "coherence", "local_rmw");
  c.smt_transfer = lat.take_if(t.threads_per_core > 1, coh, "coherence", "smt_transfer", "threads_per_core > 1");
  c.llc_transfer = lat.take(coh, "coherence", "llc_transfer");
  c.socket_transfer = lat.take_if(t.cores_per_llc < t.cores_per_socket, coh, "coherence", "socket_transfer",
                                  "cores_per_llc < cores_per_socket");
  c.remote_transfer = lat.take_if(t.sockets > 1, coh, "coherence", "remote_transfer", "sockets > 1");
  c.far_transfer =
      lat.take_if(t.sockets_per_group < t.sockets, coh, "coherence", "far_transfer", "sockets_per_group < sockets");
  c.memory = lat.take(coh, "coherence", "memory");
  coh.finish();
}

// [ipi]: the APIC cluster size and the IPI latencies.
void parse_ipi(MachineParse& p) {
  Machine& m = p.m;
  const TopologyParams& t = m.topology;
  LatencyCollector& lat = p.lat;
  ParamReader ipi = p.root.section("ipi");
  m.ipi.cluster_size = static_cast<std::uint32_t>(ipi.integer("cluster_size", 1, 1024));
  m.ipi.send = lat.take(ipi, "ipi", "send");
  m.ipi.deliver_socket = lat.take(ipi, "ipi", "deliver_socket");
  m.ipi.deliver_remote = lat.take_if(t.sockets > 1, ipi, "ipi", "deliver_remote", "sockets > 1");
  m.ipi.handler_entry = lat.take(ipi, "ipi", "handler_entry");
  m.ipi.handler_exit = lat.take(ipi, "ipi", "handler_exit");
  ipi.finish();
}

// [kernel]: the costs of the kernel's own work.
void parse_kernel_costs(MachineParse& p) {
  Machine& m = p.m;
  LatencyCollector& lat = p.lat;
  ParamReader kern = p.root.section("kernel");
  m.kernel.syscall = lat.take(kern, "kernel", "syscall");
  m.kernel.page_fault = lat.take(kern, "kernel", "page_fault");
  m.kernel.page_alloc = lat.take(kern, "kernel", "page_alloc");
  m.kernel.page_copy = lat.take(kern, "kernel", "page_copy");
  m.kernel.page_zero = lat.take(kern, "kernel", "page_zero");
  m.kernel.pte_update = lat.take(kern, "kernel", "pte_update");
  m.kernel.memcg_charge = lat.take(kern, "kernel", "memcg_charge");
  m.kernel.lru_update = lat.take(kern, "kernel", "lru_update");
  m.kernel.rmap_update = lat.take(kern, "kernel", "rmap_update");
  m.kernel.fault_around_page = lat.take(kern, "kernel", "fault_around_page");
  m.kernel.fault_around_skip = lat.take(kern, "kernel", "fault_around_skip");
  m.kernel.mmap_region = lat.take(kern, "kernel", "mmap_region");
  m.kernel.munmap_vmas = lat.take(kern, "kernel", "munmap_vmas");
  m.kernel.unix_sendmsg = lat.take(kern, "kernel", "unix_sendmsg");
  m.kernel.unix_recvmsg = lat.take(kern, "kernel", "unix_recvmsg");
  m.kernel.context_switch = lat.take(kern, "kernel", "context_switch");
  m.kernel.try_to_wake_up = lat.take(kern, "kernel", "try_to_wake_up");
  m.kernel.pipe_write = lat.take(kern, "kernel", "pipe_write");
  m.kernel.pipe_read = lat.take(kern, "kernel", "pipe_read");
  for (auto [key, cost] : {std::pair{"swap_out", &m.kernel.swap_out}, std::pair{"swap_in", &m.kernel.swap_in}}) {
    if (kern.optional_latency(key)) *cost = lat.take(kern, "kernel", key);
  }
  kern.finish();
}

// [barrier], optional: the barrier instructions of the machine's arch.
void parse_barriers(MachineParse& p) {
  Machine& m = p.m;
  auto bar = p.root.optional_section("barrier");
  if (!bar) return;
  m.barrier.given = true;
  // Each key belongs to one architecture's barrier instructions.
  struct Key {
    const char* name;
    const char* arch;
    sim::Duration BarrierCosts::*field;
  };
  static constexpr Key kKeys[] = {
      {"mfence", "x86_64", &BarrierCosts::mfence},        {"sync", "powerpc64", &BarrierCosts::sync},
      {"lwsync", "powerpc64", &BarrierCosts::lwsync},     {"dmb_ish", "aarch64", &BarrierCosts::dmb_ish},
      {"dmb_ishld", "aarch64", &BarrierCosts::dmb_ishld}, {"dmb_ishst", "aarch64", &BarrierCosts::dmb_ishst},
  };
  for (const Key& k : kKeys) {
    if (m.arch != k.arch && bar->optional_latency(k.name)) {
      bar->fail(k.name, fmt::format("is for {} machines only", k.arch));
    }
  }
  for (const Key& k : kKeys) {
    if (m.arch == k.arch) m.barrier.*k.field = p.lat.take(*bar, "barrier", k.name);
  }
  bar->finish();
}

// [[idle.states]], optional: the cpuidle states, shallowest first.
void parse_idle_states(MachineParse& p) {
  Machine& m = p.m;
  LatencyCollector& lat = p.lat;
  const std::string& origin = p.origin;
  auto idle = p.root.optional_section("idle");
  if (!idle) return;
  for (ParamReader& st : idle->table_array("states")) {
    IdleState is;
    is.name = st.string("name");
    const std::string key = "idle." + is.name;
    Latency exit = st.latency("exit_latency", 1e8), residency = st.latency("target_residency", 1e9);
    is.exit_latency = exit.value;
    is.target_residency = residency.value;
    lat.record(key, "exit_latency", exit);
    lat.record(key, "target_residency", residency);
    const auto refuse = [&](const std::string& what) {
      return InputError(fmt::format("{}: machine file: idle state '{}'{}", origin, is.name, what));
    };
    const auto take = [&](sim::Duration& field, const char* name, const Latency& l) {
      field = l.value;
      lat.record(key, name, l);
    };
    const auto p10 = st.optional_latency("exit_latency_p10", 1e8), p90 = st.optional_latency("exit_latency_p90", 1e8);
    if (p10.has_value() != p90.has_value()) {
      throw refuse(
          fmt::format(" gives exit_latency_{} without exit_latency_{}", p10 ? "p10" : "p90", p10 ? "p90" : "p10"));
    }
    if (p10) {
      if (!(p10->value <= exit.value && exit.value <= p90->value)) {
        throw refuse(": exit_latency_p10 <= exit_latency <= exit_latency_p90 does not hold");
      }
      take(is.exit_latency_p10, "exit_latency_p10", *p10);
      take(is.exit_latency_p90, "exit_latency_p90", *p90);
    }
    const auto short_halt = st.optional_latency("short_halt", 1e10),
               exit_short = st.optional_latency("exit_latency_short", 1e8),
               long_halt = st.optional_latency("long_halt", 1e10);
    const int given = int{short_halt.has_value()} + int{exit_short.has_value()} + int{long_halt.has_value()};
    if (given != 0 && given != 3) {
      throw refuse(
          fmt::format(" gives {} of short_halt, exit_latency_short and long_halt: give all three or none", given));
    }
    if (given == 3) {
      if (!(short_halt->value < long_halt->value) || exit.value.count() <= 0) {
        throw refuse(": short_halt < long_halt and exit_latency > 0 must hold");
      }
      take(is.short_halt, "short_halt", *short_halt);
      take(is.exit_latency_short, "exit_latency_short", *exit_short);
      take(is.long_halt, "long_halt", *long_halt);
    }
    const auto brief_halt = st.optional_latency("brief_halt", 1e10),
               exit_brief = st.optional_latency("exit_latency_brief", 1e8);
    if (brief_halt.has_value() != exit_brief.has_value() || (brief_halt && given != 3)) {
      throw refuse(
          " gives brief_halt or exit_latency_brief without the other, or without short_halt, "
          "exit_latency_short and long_halt: give both with those three, or neither");
    }
    if (brief_halt) {
      if (!(brief_halt->value < short_halt->value)) throw refuse(": brief_halt < short_halt must hold");
      take(is.brief_halt, "brief_halt", *brief_halt);
      take(is.exit_latency_brief, "exit_latency_brief", *exit_brief);
    }
    is.flushes_tlb = st.boolean("flushes_tlb");
    is.polls = st.optional_boolean("polls").value_or(true);
    st.finish();
    if (!m.idle_states.empty() && is.target_residency < m.idle_states.back().target_residency) {
      throw InputError(
          fmt::format("{}: machine file: idle state '{}' is listed after a deeper one (order them "
                      "shallowest first by target_residency)",
                      origin, is.name));
    }
    m.idle_states.push_back(std::move(is));
  }
  idle->finish();
}

// [timing], optional: step_spread = { value = <0..0.5>, source = "<text>" }.
void parse_timing(MachineParse& p) {
  auto timing = p.root.optional_section("timing");
  if (!timing) return;
  ParamReader spread = timing->section("step_spread");
  p.m.timing.step_spread = spread.number("value", 0.0, 0.5);
  p.m.timing.source = spread.string("source");
  spread.finish();
  timing->finish();
}

// [tlb]: the TLB's geometry, tags and flush latencies; tlbie only on powerpc64, tlbi_is and dsb_ish only on aarch64.
void parse_tlb(MachineParse& p) {
  Machine& m = p.m;
  LatencyCollector& lat = p.lat;
  ParamReader tlb = p.root.section("tlb");
  TlbParams& b = m.tlb;
  b.entries = static_cast<std::uint32_t>(tlb.integer("entries", 1, 1 << 20));
  b.ways = static_cast<std::uint32_t>(tlb.integer("ways", 1, 1 << 20));
  if (b.entries % b.ways != 0) tlb.fail("ways", fmt::format("must divide entries ({})", b.entries));
  // 2 MiB entries: optional; without them the 4 KiB shape is used for both sizes.
  b.huge_entries = static_cast<std::uint32_t>(tlb.optional_integer("huge_entries", 1, 1 << 20).value_or(b.entries));
  b.huge_ways = static_cast<std::uint32_t>(tlb.optional_integer("huge_ways", 1, 1 << 20).value_or(b.ways));
  if (b.huge_entries % b.huge_ways != 0) {
    tlb.fail("huge_ways", fmt::format("must divide huge_entries ({})", b.huge_entries));
  }
  const std::string tag = tlb.choice("tag", {"none", "pcid", "pid", "asid"});
  b.tag = tag == "none" ? TlbTag::kNone : tag == "pcid" ? TlbTag::kPcid : tag == "pid" ? TlbTag::kPid : TlbTag::kAsid;
  b.tag_bits = static_cast<std::uint32_t>(tlb.integer("tag_bits", 0, 24));
  if ((b.tag == TlbTag::kNone) != (b.tag_bits == 0)) tlb.fail("tag_bits", "must be 0 exactly when tag = \"none\"");
  if (b.tag == TlbTag::kPid && m.arch != "powerpc64") tlb.fail("tag", "\"pid\" tags are for powerpc64 only");
  if (b.tag != TlbTag::kPid && m.arch == "powerpc64") {
    tlb.fail("tag", fmt::format("a powerpc64 machine tags its TLB entries by PID: expected \"pid\", got \"{}\"", tag));
  }
  if (b.tag == TlbTag::kAsid && m.arch != "aarch64") tlb.fail("tag", "\"asid\" tags are for aarch64 only");
  if (m.arch == "aarch64") {
    if (b.tag != TlbTag::kAsid) {
      tlb.fail("tag",
               fmt::format("an aarch64 machine tags its TLB entries by ASID: expected \"asid\", got \"{}\"", tag));
    }
    // ID_AA64MMFR0_EL1.ASIDBits: 8 or 16 (arm64 get_cpu_asid_bits).
    if (b.tag_bits != 8 && b.tag_bits != 16) tlb.fail("tag_bits", "an aarch64 ASID has 8 or 16 bits");
  }
  b.page_walk = lat.take(tlb, "tlb", "page_walk");
  b.invlpg = lat.take(tlb, "tlb", "invlpg");
  b.flush_tag = lat.take(tlb, "tlb", "flush_tag");
  b.flush_all = lat.take(tlb, "tlb", "flush_all");
  b.cr3_write = lat.take(tlb, "tlb", "cr3_write");
  b.cr3_write_flush = lat.take(tlb, "tlb", "cr3_write_flush");
  if (m.arch == "powerpc64") {
    b.tlbie = lat.take_if(true, tlb, "tlb", "tlbie", "arch = \"powerpc64\" (broadcast invalidation)");
    if (tlb.optional_latency("tlbiel_lpid")) b.tlbiel_lpid = lat.take(tlb, "tlb", "tlbiel_lpid");
  } else if (tlb.optional_latency("tlbie") || tlb.optional_latency("tlbiel_lpid")) {
    tlb.fail(tlb.optional_latency("tlbie") ? "tlbie" : "tlbiel_lpid", "is for powerpc64 machines only");
  }
  // TLBI ...IS and DSB ISH: aarch64 only, and required there.
  if (m.arch == "aarch64") {
    b.tlbi_is = lat.take_if(true, tlb, "tlb", "tlbi_is", "arch = \"aarch64\" (broadcast invalidation)");
    b.dsb_ish = lat.take_if(true, tlb, "tlb", "dsb_ish", "arch = \"aarch64\" (broadcast invalidation)");
  } else if (tlb.optional_latency("tlbi_is") || tlb.optional_latency("dsb_ish")) {
    tlb.fail(tlb.optional_latency("tlbi_is") ? "tlbi_is" : "dsb_ish", "is for aarch64 machines only");
  }
  // INVLPGB and TLBSYNC: x86_64 only, all three keys or none.
  const bool has_invlpgb = tlb.optional_latency("invlpgb").has_value();
  const bool has_tlbsync = tlb.optional_latency("tlbsync").has_value();
  const bool has_count = tlb.optional_integer("invlpgb_count_max", 1, 65536).has_value();
  if (m.arch != "x86_64" && (has_invlpgb || has_tlbsync || has_count)) {
    tlb.fail(has_invlpgb ? "invlpgb" : has_tlbsync ? "tlbsync" : "invlpgb_count_max", "is for x86_64 machines only");
  }
  if (has_invlpgb || has_tlbsync || has_count) {
    if (!has_invlpgb || !has_tlbsync || !has_count) {
      tlb.fail(!has_invlpgb   ? "invlpgb"
               : !has_tlbsync ? "tlbsync"
                              : "invlpgb_count_max",
               "is missing: a machine with INVLPGB gives invlpgb, tlbsync and invlpgb_count_max together");
    }
    if (b.tag != TlbTag::kPcid) tlb.fail("invlpgb", "broadcast invalidation by PCID needs tag = \"pcid\"");
    b.invlpgb = lat.take(tlb, "tlb", "invlpgb");
    b.tlbsync = lat.take(tlb, "tlb", "tlbsync");
    b.invlpgb_count_max = static_cast<std::uint32_t>(*tlb.optional_integer("invlpgb_count_max", 1, 65536));
  }
  tlb.finish();
}

Machine parse_machine_doc(const TomlDocument& doc, const std::string& origin) {
  Machine m;
  m.origin = origin;
  ParamReader root(doc.root(), origin, "machine file");
  LatencyCollector lat(m);
  MachineParse p{root, m, lat, origin};
  parse_machine_info(p);
  parse_topology(p);
  parse_coherence(p);
  parse_ipi(p);
  parse_kernel_costs(p);
  parse_barriers(p);
  parse_idle_states(p);
  parse_timing(p);
  parse_tlb(p);
  root.finish();
  return m;
}

}  // namespace

Machine parse_machine(std::string_view text, const std::string& origin, const std::vector<std::string>& settings) {
  TomlDocument doc = TomlDocument::parse(text, origin);
  apply_machine_settings(doc.mutable_root(), parse_machine_settings(settings));
  try {
    return parse_machine_doc(doc, origin);
  } catch (const InputError& e) {
    if (settings.empty()) throw;
    // The file's rules may have refused a value the command line gave: say which were given.
    throw InputError(fmt::format("{} (with --set {})", e.what(), fmt::join(settings, " --set ")));
  }
}

std::vector<std::string> builtin_machine_names() {
  std::vector<std::string> out;
  for (const auto& f : builtin_machine_files()) out.emplace_back(f.name);
  return out;
}

Machine load_machine(std::string_view name_or_path, const std::vector<std::string>& settings) {
  const std::string arg(name_or_path);
  if (arg.find('/') != std::string::npos || arg.ends_with(".toml")) return parse_machine(read_file(arg), arg, settings);
  for (const auto& f : builtin_machine_files()) {
    if (f.name == arg) return parse_machine(f.text, fmt::format("builtin:{}", f.name), settings);
  }
  throw InputError(fmt::format("unknown machine '{}' (known: {}; or give a path to a .toml machine file)", arg,
                               fmt::join(builtin_machine_names(), ", ")));
}

nlohmann::json to_json(const Machine& m) {
  nlohmann::json j;
  j["name"] = m.name;
  j["description"] = m.description;
  j["arch"] = m.arch;
  j["origin"] = m.origin;
  j["seeds"] = m.seeds;
  const auto& t = m.topology;
  j["topology"] = {{"sockets", t.sockets},
                   {"cores_per_socket", t.cores_per_socket},
                   {"threads_per_core", t.threads_per_core},
                   {"cores_per_llc", t.cores_per_llc},
                   {"sockets_per_group", t.sockets_per_group},
                   {"cpu_numbering", t.numbering == CpuNumbering::kSmtLast ? "smt-last" : "smt-consecutive"},
                   {"cpus", m.cpu_count()}};
  j["ipi"]["cluster_size"] = m.ipi.cluster_size;
  j["tlb"] = {{"entries", m.tlb.entries},     {"ways", m.tlb.ways},          {"huge_entries", m.tlb.huge_entries},
              {"huge_ways", m.tlb.huge_ways}, {"tag", to_string(m.tlb.tag)}, {"tag_bits", m.tlb.tag_bits}};
  nlohmann::json lat = nlohmann::json::object();
  for (const auto& p : m.latencies) lat[p.key] = {{"ns", p.ns}, {"source", p.source}};
  j["latencies"] = lat;
  if (m.timing.step_spread > 0)
    j["timing"]["step_spread"] = {{"value", m.timing.step_spread}, {"source", m.timing.source}};
  return j;
}

}  // namespace tlbsim::hw
