#include "traces/importers/comm_kind.hpp"

#include <array>
#include <cctype>
#include <string>
#include <utility>

namespace shardsim::importers {

const char* to_string(CommKind k) {
  switch (k) {
    case CommKind::all_reduce: return "all_reduce";
    case CommKind::reduce: return "reduce";
    case CommKind::all_gather: return "all_gather";
    case CommKind::gather: return "gather";
    case CommKind::scatter: return "scatter";
    case CommKind::broadcast: return "broadcast";
    case CommKind::all_to_all: return "all_to_all";
    case CommKind::reduce_scatter: return "reduce_scatter";
    case CommKind::reduce_scatter_block: return "reduce_scatter_block";
    case CommKind::barrier: return "barrier";
    case CommKind::send: return "send";
    case CommKind::recv: return "recv";
    case CommKind::send_recv: return "send_recv";
  }
  return "?";
}

std::optional<CommKind> comm_kind_from_chakra(std::int64_t v) {
  // Order of et_def.proto CollectiveCommType.
  static constexpr std::array kinds{CommKind::all_reduce, CommKind::reduce, CommKind::all_gather,
                                    CommKind::gather, CommKind::scatter, CommKind::broadcast,
                                    CommKind::all_to_all, CommKind::reduce_scatter,
                                    CommKind::reduce_scatter_block, CommKind::barrier};
  if (v < 0 || v >= static_cast<std::int64_t>(kinds.size())) return std::nullopt;
  return kinds[static_cast<std::size_t>(v)];
}

namespace {

std::string squash(std::string_view s) {
  std::string k;
  for (char c : s) {
    if (c != '_' && c != '-' && c != ' ') k.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  }
  return k;
}

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::optional<CommKind> from_squashed(std::string k) {
  for (std::string_view suffix : {"coalesced", "base", "tensor", "into"}) {
    if (ends_with(k, suffix)) k.resize(k.size() - suffix.size());
  }
  static const std::array<std::pair<const char*, CommKind>, 14> table{{
      {"allreduce", CommKind::all_reduce},       {"reduce", CommKind::reduce},
      {"allgather", CommKind::all_gather},       {"gather", CommKind::gather},
      {"scatter", CommKind::scatter},            {"broadcast", CommKind::broadcast},
      {"alltoall", CommKind::all_to_all},        {"alltoallv", CommKind::all_to_all},
      {"reducescatter", CommKind::reduce_scatter}, {"barrier", CommKind::barrier},
      {"send", CommKind::send},                  {"recv", CommKind::recv},
      {"sendrecv", CommKind::send_recv},         {"reducescatterblock", CommKind::reduce_scatter_block},
  }};
  for (const auto& [n, kind] : table) {
    if (k == n) return kind;
  }
  return std::nullopt;
}

}  // namespace

std::optional<CommKind> comm_kind_from_pytorch(std::string_view name) {
  if (name.substr(0, 5) == "nccl:") name.remove_prefix(5);
  if (name.substr(0, 6) == "c10d::") name.remove_prefix(6);
  std::string k = squash(name);
  while (!k.empty() && k.back() == '_') k.pop_back();
  return from_squashed(k);
}

std::optional<CommKind> comm_kind_from_nccl_kernel(std::string_view name) {
  std::string_view rest;
  for (std::string_view prefix : {"ncclKernel_", "ncclDevKernel_"}) {
    if (name.substr(0, prefix.size()) == prefix) rest = name.substr(prefix.size());
  }
  if (rest.empty()) return std::nullopt;
  const auto end = rest.find_first_of("_(");
  return from_squashed(squash(rest.substr(0, end)));
}

}  // namespace shardsim::importers
