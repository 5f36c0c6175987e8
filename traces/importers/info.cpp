#include "traces/importers/info.hpp"

#include <fmt/format.h>

#include "sim/error.hpp"
#include "sim/units.hpp"
#include "traces/importers/astra_v1.hpp"
#include "traces/importers/chakra.hpp"
#include "traces/importers/kineto.hpp"

namespace shardsim::importers {

namespace {

void chakra_info(TraceInfo& info, const ChakraTrace& t) {
  std::map<ChakraNodeType, std::uint64_t> by_type;
  std::uint64_t cpu = 0;
  for (const auto& n : t.nodes) {
    ++by_type[n.type];
    if (n.is_cpu_op.value_or(false)) ++cpu;
    if (n.type == ChakraNodeType::comp && !n.is_cpu_op.value_or(false)) info.compute_time_s += n.duration_us.value_or(0) * 1e-6;
    if (n.type == ChakraNodeType::comm_coll) ++info.collectives[to_string(*n.comm_kind)][n.comm_size_bytes.value_or(0)];
    if (n.type == ChakraNodeType::comm_send || n.type == ChakraNodeType::comm_recv) {
      ++info.collectives[n.type == ChakraNodeType::comm_send ? "send" : "recv"][n.comm_size_bytes.value_or(0)];
    }
  }
  info.ops = t.nodes.size();
  info.counts.emplace_back("nodes", t.nodes.size());
  for (const auto& [type, n] : by_type) info.counts.emplace_back(to_string(type), n);
  info.counts.emplace_back("cpu ops", cpu);
  info.counts.emplace_back("dropped external deps", t.dropped_deps);
}

void kineto_info(TraceInfo& info, const KinetoTrace& t) {
  info.ops = t.gpu_ops.size();
  info.counts = {{"events", t.events},
                 {"cpu ops", t.cpu_ops},
                 {"annotations", t.annotations},
                 {"launches", t.launches.size()},
                 {"kernels", t.count("kernel")},
                 {"nccl kernels", t.nccl_kernels()},
                 {"memcpy", t.count("gpu_memcpy")},
                 {"memset", t.count("gpu_memset")},
                 {"flow pairs", t.flow_pairs},
                 {"linked by flow", t.linked_by_flow},
                 {"linked by correlation", t.linked_by_correlation}};
  if (t.world_size) info.counts.emplace_back("world size", static_cast<std::uint64_t>(*t.world_size));
  for (const auto& op : t.gpu_ops) {
    if (op.collective) {
      ++info.collectives[to_string(op.collective->kind)][op.collective->size_bytes.value_or(0)];
    } else {
      info.compute_time_s += op.dur_us * 1e-6;
    }
  }
}

void astra_info(TraceInfo& info, const AstraWorkload& w) {
  info.ops = w.layers.size() * 3;
  info.counts.emplace_back("layers", w.layers.size());
  std::uint64_t cycles = 0;
  for (const auto& l : w.layers) {
    for (const auto* p : {&l.forward, &l.input_grad, &l.weight_grad}) {
      cycles += p->compute_cycles;
      if (p->comm) ++info.collectives[to_string(*p->comm)][p->comm_bytes];
    }
    cycles += l.update_cycles;
  }
  info.counts.emplace_back("compute cycles", cycles);
  info.compute_time_s = static_cast<double>(cycles) * 1e-9;
}

}  // namespace

TraceInfo trace_info(const std::string& path, std::optional<Format> format) {
  const std::string data = read_input(path);
  if (!format) format = detect_format(data);
  if (!format) {
    throw ConfigError(path, "not a recognised trace", "Chakra ET or JSON, a Kineto Chrome trace or an ASTRA-sim 1.0 workload");
  }
  TraceInfo info;
  info.file = path;
  info.format = *format;
  switch (*format) {
    case Format::chakra: chakra_info(info, decode_chakra_et(data, path)); break;
    case Format::chakra_json: chakra_info(info, decode_chakra_json(data, path)); break;
    case Format::kineto: kineto_info(info, decode_kineto(data, path)); break;
    case Format::astra_v1: astra_info(info, decode_astra_v1(data, path)); break;
  }
  return info;
}

nlohmann::json TraceInfo::to_json() const {
  nlohmann::json j;
  j["file"] = file;
  j["format"] = to_string(format);
  j["ops"] = ops;
  nlohmann::json c = nlohmann::json::object();
  for (const auto& [k, v] : counts) c[k] = v;
  j["counts"] = c;
  nlohmann::json coll = nlohmann::json::array();
  for (const auto& [kind, sizes] : collectives) {
    for (const auto& [size, n] : sizes) coll.push_back({{"kind", kind}, {"size_bytes", size}, {"count", n}});
  }
  j["collectives"] = coll;
  j["compute_time_s"] = compute_time_s;
  return j;
}

std::string TraceInfo::to_text() const {
  std::string s = fmt::format("{} ({})\n", file, to_string(format));
  for (const auto& [k, v] : counts) s += fmt::format("  {:<24}{}\n", k, v);
  s += fmt::format("  {:<24}{}\n", "compute time", units::format_seconds(compute_time_s));
  if (collectives.empty()) s += "  collectives             none\n";
  for (const auto& [kind, sizes] : collectives) {
    for (const auto& [size, n] : sizes) {
      s += fmt::format("  {:<24}{} x {}\n", kind, n, size == 0 ? std::string("size not given") : units::format_bytes(size));
    }
  }
  return s;
}

}  // namespace shardsim::importers
