#include "traces/importers/kineto.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <map>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "sim/error.hpp"
#include "traces/importers/json_util.hpp"

namespace shardsim::importers {

const char* to_string(KinetoCollective::Source s) {
  switch (s) {
    case KinetoCollective::Source::kernel_args: return "kernel args";
    case KinetoCollective::Source::host_args: return "record_param_comms args";
    case KinetoCollective::Source::annotation: return "nccl annotation";
    case KinetoCollective::Source::kernel_name: return "kernel name";
  }
  return "?";
}

std::size_t KinetoTrace::count(std::string_view category) const {
  return static_cast<std::size_t>(std::count_if(gpu_ops.begin(), gpu_ops.end(), [&](const auto& o) { return o.category == category; }));
}

std::size_t KinetoTrace::nccl_kernels() const {
  return static_cast<std::size_t>(std::count_if(gpu_ops.begin(), gpu_ops.end(), [](const auto& o) {
    return o.category == "kernel" && comm_kind_from_nccl_kernel(o.name).has_value();
  }));
}

std::optional<std::uint32_t> dtype_bytes(std::string_view dtype) {
  // PyTorch ScalarType names (c10/core/ScalarType.h) as Kineto prints them: the "dtype" arg
  // uses the ScalarType name, "Input type" uses the C++ type name.
  static const std::array<std::pair<std::string_view, std::uint32_t>, 26> table{{
      {"float", 4}, {"double", 8}, {"half", 2}, {"c10::half", 2}, {"bfloat16", 2},
      {"c10::bfloat16", 2}, {"long", 8}, {"long int", 8}, {"int64", 8}, {"int", 4},
      {"int32", 4}, {"short", 2}, {"short int", 2}, {"char", 1}, {"signed char", 1},
      {"byte", 1}, {"unsigned char", 1}, {"bool", 1}, {"complexfloat", 8},
      {"c10::complex<float>", 8}, {"complexdouble", 16}, {"c10::complex<double>", 16},
      {"float8_e4m3fn", 1}, {"float8_e5m2", 1}, {"c10::float8_e4m3fn", 1}, {"c10::float8_e5m2", 1},
  }};
  std::string k;
  for (char c : dtype) k.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  for (const auto& [name, bytes] : table) {
    if (k == name) return bytes;
  }
  return std::nullopt;
}

namespace {

using nlohmann::json;
using SliceKey = std::tuple<std::string, std::string, double>;  // pid, tid, ts

std::string id_text(const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

std::string lower(std::string_view s) {
  std::string k;
  for (char c : s) k.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  return k;
}

/// A host event that may describe the collective its launches run.
struct HostComm {
  double ts = 0, end = 0;
  std::size_t event = 0;
};

void fill_size(KinetoCollective& c) {
  if (c.element_bytes == 0) return;
  std::optional<std::uint64_t> elems;
  if (size_is_output(c.kind)) {
    if (c.out_elems) {
      elems = c.out_elems;
    } else if (c.in_elems && c.group_size && *c.in_elems <= (std::uint64_t{1} << 56) / *c.group_size) {
      elems = *c.in_elems * *c.group_size;
    }
  } else if (c.kind == CommKind::recv) {
    elems = c.out_elems ? c.out_elems : c.in_elems;
  } else {
    elems = c.in_elems ? c.in_elems : c.out_elems;
  }
  if (elems && *elems <= (std::uint64_t{1} << 56) / c.element_bytes) c.size_bytes = *elems * c.element_bytes;
}

std::vector<std::int64_t> parse_rank_list(const json& v, const std::string& where) {
  std::vector<std::int64_t> ranks;
  if (v.is_array()) {
    for (std::size_t i = 0; i < v.size(); ++i) ranks.push_back(json_int(v[i], fmt::format("{}/{}", where, i)));
    return ranks;
  }
  if (!v.is_string()) throw ConfigError(where, v.dump(), "a rank list \"[0, 1, ...]\"");
  // Kineto writes the list as a string, "[0, 1]"; a long one may be cut with "...".
  const auto s = v.get<std::string>();
  std::int64_t cur = 0;
  bool in_num = false, neg = false;
  for (char c : s) {
    if (c >= '0' && c <= '9') {
      if (cur > (std::int64_t{1} << 40)) throw ConfigError(where, s, "a rank list of integers");
      cur = cur * 10 + (c - '0');
      in_num = true;
    } else {
      if (in_num) ranks.push_back(neg ? -cur : cur);
      in_num = false;
      neg = c == '-';
      cur = 0;
    }
  }
  if (in_num) ranks.push_back(neg ? -cur : cur);
  return ranks;
}

/// Collective from "Collective name"-style args (kernel or record_param_comms).
std::optional<KinetoCollective> from_comm_args(const json& args, const std::string& base, KinetoCollective::Source src) {
  if (!args.is_object() || !args.contains("Collective name")) return std::nullopt;
  const auto& name = args.at("Collective name");
  const std::string where = base + "/args";
  if (!name.is_string()) throw ConfigError(where + "/Collective name", name.dump(), "a string");
  KinetoCollective c;
  c.source = src;
  const auto kind = comm_kind_from_pytorch(name.get<std::string>());
  if (!kind) {
    throw ConfigError(where + "/Collective name", fmt::format("unknown collective '{}'", name.get<std::string>()),
                      "allreduce, allgather, reduce_scatter, all_to_all, broadcast, reduce, send, recv, barrier, ...");
  }
  c.kind = *kind;
  if (args.contains("In msg nelems")) c.in_elems = json_uint(args.at("In msg nelems"), where + "/In msg nelems");
  if (args.contains("Out msg nelems")) c.out_elems = json_uint(args.at("Out msg nelems"), where + "/Out msg nelems");
  if (args.contains("Group size")) {
    const auto g = json_uint(args.at("Group size"), where + "/Group size");
    if (g == 0 || g > (1u << 24)) throw ConfigError(where + "/Group size", std::to_string(g), "a group size 1..16777216");
    c.group_size = static_cast<std::uint32_t>(g);
  }
  if (args.contains("dtype")) {
    const auto& d = args.at("dtype");
    if (!d.is_string()) throw ConfigError(where + "/dtype", d.dump(), "a dtype name");
    c.dtype = d.get<std::string>();
    const auto b = dtype_bytes(c.dtype);
    if (!b) throw ConfigError(where + "/dtype", fmt::format("unknown dtype '{}'", c.dtype), "a PyTorch dtype (Float, Half, BFloat16, ...)");
    c.element_bytes = *b;
  }
  if (args.contains("Process Group Name") && args.at("Process Group Name").is_string()) {
    c.pg_name = args.at("Process Group Name").get<std::string>();
  }
  if (args.contains("Process Group Ranks")) c.ranks = parse_rank_list(args.at("Process Group Ranks"), where + "/Process Group Ranks");
  fill_size(c);
  return c;
}

/// Collective from a "nccl:<name>" annotation with "Input Dims" / "Input type".
std::optional<KinetoCollective> from_annotation(const json& ev, const std::string& base) {
  const auto kind = comm_kind_from_pytorch(ev.at("name").get<std::string>());
  if (!kind) return std::nullopt;
  KinetoCollective c;
  c.kind = *kind;
  c.source = KinetoCollective::Source::annotation;
  if (!ev.contains("args") || !ev.at("args").is_object()) return c;
  const auto& args = ev.at("args");
  const std::string where = base + "/args";
  if (args.contains("Input Dims") && args.at("Input Dims").is_array() && !args.at("Input Dims").empty()) {
    const auto& dims = args.at("Input Dims")[0];
    if (dims.is_array() && !dims.empty()) {
      std::uint64_t n = 1;
      for (std::size_t i = 0; i < dims.size(); ++i) {
        const auto d = json_uint(dims[i], fmt::format("{}/Input Dims/0/{}", where, i));
        if (d != 0 && n > (std::uint64_t{1} << 56) / d) throw ConfigError(where + "/Input Dims/0", dims.dump(), "a tensor shape under 2^56 elements");
        n *= d;
      }
      c.in_elems = n;
    }
  }
  if (args.contains("Input type") && args.at("Input type").is_array() && !args.at("Input type").empty() &&
      args.at("Input type")[0].is_string()) {
    c.dtype = args.at("Input type")[0].get<std::string>();
    c.element_bytes = dtype_bytes(c.dtype).value_or(0);
  }
  fill_size(c);
  return c;
}

double required_number(const json& ev, const char* key, const std::string& base) {
  if (!ev.contains(key)) throw ConfigError(base, fmt::format("\"X\" event without \"{}\"", key), "ts and dur on complete events");
  return json_number(ev.at(key), fmt::format("{}/{}", base, key));
}

}  // namespace

KinetoTrace decode_kineto(std::string_view text, const std::string& source) {
  const json doc = parse_json(text, source);
  const json* events = nullptr;
  std::string events_ptr = source + "/traceEvents";
  if (doc.is_array()) {
    events = &doc;  // the Chrome format also allows a bare event array
    events_ptr = source;
  } else if (doc.is_object() && doc.contains("traceEvents") && doc.at("traceEvents").is_array()) {
    events = &doc.at("traceEvents");
  } else {
    throw ConfigError(source, "no \"traceEvents\" array", "a Chrome trace (Kineto / PyTorch profiler JSON)");
  }
  KinetoTrace t;
  t.source = source;
  t.events = events->size();
  if (doc.is_object() && doc.contains("distributedInfo") && doc.at("distributedInfo").is_object()) {
    const auto& di = doc.at("distributedInfo");
    if (di.contains("rank")) t.rank = json_int(di.at("rank"), source + "/distributedInfo/rank");
    if (di.contains("world_size")) t.world_size = json_int(di.at("world_size"), source + "/distributedInfo/world_size");
  }
  std::map<SliceKey, std::size_t> launch_at, gpu_at;        // slice start -> index
  std::map<std::string, std::pair<std::optional<SliceKey>, std::optional<SliceKey>>> flows;  // id -> s, f
  std::map<std::string, std::vector<HostComm>> host_comm;   // thread -> candidates
  std::unordered_map<std::int64_t, std::size_t> launch_by_corr;
  std::vector<std::string> launch_thread;
  for (std::size_t i = 0; i < events->size(); ++i) {
    const json& ev = (*events)[i];
    const std::string base = fmt::format("{}/{}", events_ptr, i);
    if (!ev.is_object()) throw ConfigError(base, ev.type_name(), "an event object");
    if (!ev.contains("ph") || !ev.at("ph").is_string()) throw ConfigError(base, "event without a \"ph\" string", "a Chrome trace event");
    const auto ph = ev.at("ph").get<std::string>();
    const std::string cat = ev.contains("cat") && ev.at("cat").is_string() ? lower(ev.at("cat").get<std::string>()) : "";
    const std::string pid = ev.contains("pid") ? id_text(ev.at("pid")) : "";
    const std::string tid = ev.contains("tid") ? id_text(ev.at("tid")) : "";
    if (ev.contains("name") && !ev.at("name").is_string()) throw ConfigError(base + "/name", ev.at("name").dump(), "a string");
    const std::string name = ev.contains("name") ? ev.at("name").get<std::string>() : "";
    if ((ph == "s" || ph == "f") && cat == "ac2g") {
      if (!ev.contains("id")) throw ConfigError(base, "flow event without \"id\"", "an id pairing \"s\" and \"f\"");
      const double ts = required_number(ev, "ts", base);
      auto& slot = flows[id_text(ev.at("id"))];
      (ph == "s" ? slot.first : slot.second) = SliceKey{pid, tid, ts};
      continue;
    }
    if (ph != "X") continue;
    const double ts = required_number(ev, "ts", base);
    const double dur = required_number(ev, "dur", base);
    if (dur < 0) throw ConfigError(base + "/dur", fmt::format("negative duration {} us", dur), "a duration >= 0");
    const json empty = json::object();
    const json& args = ev.contains("args") && ev.at("args").is_object() ? ev.at("args") : empty;
    std::optional<std::int64_t> corr;
    if (args.contains("correlation")) corr = json_int(args.at("correlation"), base + "/args/correlation");
    if (cat == "kernel" || cat == "gpu_memcpy" || cat == "gpu_memset" || cat == "memcpy" || cat == "memset") {
      KinetoGpuOp op;
      op.name = name;
      op.category = cat == "kernel" ? cat : (cat.find("memcpy") != std::string::npos ? "gpu_memcpy" : "gpu_memset");
      op.device = args.contains("device") ? json_int(args.at("device"), base + "/args/device")
                                          : (ev.contains("pid") && ev.at("pid").is_number() ? json_int(ev.at("pid"), base + "/pid") : 0);
      op.stream = args.contains("stream") ? json_int(args.at("stream"), base + "/args/stream")
                                          : (ev.contains("tid") && ev.at("tid").is_number() ? json_int(ev.at("tid"), base + "/tid") : 0);
      op.ts_us = ts;
      op.dur_us = dur;
      op.correlation = corr;
      op.event = i;
      if (op.category == "kernel") {
        // Args win over the kernel name: NCCL's SendRecv kernel also runs all-to-all.
        op.collective = from_comm_args(args, base, KinetoCollective::Source::kernel_args);
      }
      gpu_at.emplace(SliceKey{pid, tid, ts}, t.gpu_ops.size());
      t.gpu_ops.push_back(std::move(op));
    } else if (cat == "cuda_runtime" || cat == "cuda_driver" || cat == "runtime") {
      launch_at.emplace(SliceKey{pid, tid, ts}, t.launches.size());
      if (corr) launch_by_corr.emplace(*corr, t.launches.size());
      launch_thread.push_back(pid + "/" + tid);
      t.launches.push_back({name, ts, dur, corr, i});
    } else if (cat == "cpu_op" || cat == "operator" || cat == "user_annotation") {
      (cat == "user_annotation" ? t.annotations : t.cpu_ops) += 1;
      if (args.contains("Collective name") || name.rfind("nccl:", 0) == 0) {
        host_comm[pid + "/" + tid].push_back({ts, ts + dur, i});
      }
    }
  }
  // Launch -> GPU op links: flows first, then correlation ids.
  for (const auto& [id, sf] : flows) {
    if (!sf.first || !sf.second) continue;
    ++t.flow_pairs;
    const auto l = launch_at.find(*sf.first);
    const auto g = gpu_at.find(*sf.second);
    if (l == launch_at.end() || g == gpu_at.end() || t.gpu_ops[g->second].launch) continue;
    t.gpu_ops[g->second].launch = l->second;
    ++t.linked_by_flow;
  }
  for (auto& op : t.gpu_ops) {
    if (op.launch || !op.correlation) continue;
    if (const auto it = launch_by_corr.find(*op.correlation); it != launch_by_corr.end()) {
      op.launch = it->second;
      ++t.linked_by_correlation;
    }
  }
  for (auto& [thread, v] : host_comm) {
    std::sort(v.begin(), v.end(), [](const HostComm& a, const HostComm& b) { return std::tie(a.ts, a.event) < std::tie(b.ts, b.event); });
  }
  // NCCL kernels without args: the innermost enclosing host event of the launch names the
  // collective and its size; else the kernel name alone gives the kind.
  for (auto& op : t.gpu_ops) {
    if (op.category != "kernel" || op.collective) continue;
    const auto kind = comm_kind_from_nccl_kernel(op.name);
    if (!kind) continue;
    if (op.launch) {
      const auto& l = t.launches[*op.launch];
      const auto it = host_comm.find(launch_thread[*op.launch]);
      if (it != host_comm.end()) {
        const auto& v = it->second;
        auto p = std::upper_bound(v.begin(), v.end(), l.ts_us, [](double ts, const HostComm& h) { return ts < h.ts; });
        // Innermost first: walk back over candidates that started before the launch.
        for (int steps = 0; p != v.begin() && steps < 16 && !op.collective; ++steps) {
          --p;
          if (p->end < l.ts_us + l.dur_us) continue;
          const json& hev = (*events)[p->event];
          const std::string hbase = fmt::format("{}/{}", events_ptr, p->event);
          if (hev.contains("args")) op.collective = from_comm_args(hev.at("args"), hbase, KinetoCollective::Source::host_args);
          if (!op.collective) op.collective = from_annotation(hev, hbase);
        }
      }
    }
    if (!op.collective) {
      KinetoCollective c;
      c.kind = *kind;
      c.source = KinetoCollective::Source::kernel_name;
      op.collective = c;
    }
  }
  std::stable_sort(t.gpu_ops.begin(), t.gpu_ops.end(), [](const KinetoGpuOp& a, const KinetoGpuOp& b) {
    return std::tie(a.ts_us, a.event) < std::tie(b.ts_us, b.event);
  });
  return t;
}

}  // namespace shardsim::importers
