#include "models/collectives/collective.hpp"

#include <fmt/format.h>

#include "sim/error.hpp"

namespace shardsim::coll {

const char* to_string(OpKind k) {
  switch (k) {
    case OpKind::allreduce: return "allreduce";
    case OpKind::reducescatter: return "reducescatter";
    case OpKind::allgather: return "allgather";
    case OpKind::broadcast: return "broadcast";
    case OpKind::alltoall: return "alltoall";
    case OpKind::reduce: return "reduce";
  }
  return "?";
}

OpKind op_from_string(const std::string& s, const std::string& where) {
  std::string k;
  for (char c : s) {
    if (c != '-' && c != '_') k.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  }
  for (auto op : {OpKind::allreduce, OpKind::reducescatter, OpKind::allgather, OpKind::broadcast,
                  OpKind::alltoall, OpKind::reduce}) {
    if (k == to_string(op)) return op;
  }
  throw ConfigError(where, fmt::format("unknown collective '{}'", s),
                    "one of allreduce, reducescatter, allgather, broadcast, alltoall, reduce");
}

double busbw_factor(OpKind k, std::size_t n) {
  const double nn = static_cast<double>(n);
  switch (k) {
    case OpKind::allreduce: return 2.0 * (nn - 1) / nn;
    case OpKind::reducescatter:
    case OpKind::allgather:
    case OpKind::alltoall: return (nn - 1) / nn;
    case OpKind::broadcast:
    case OpKind::reduce: return 1.0;
  }
  return 1.0;
}

std::uint64_t Schedule::total_steps() const {
  std::uint64_t n = 0;
  for (const auto& s : steps) n += s.repeat;
  return n;
}

double Schedule::total_bytes() const {
  double b = 0;
  for (const auto& s : steps) {
    double per = 0;
    for (const auto& t : s.transfers) per += t.bytes;
    b += per * s.repeat;
  }
  return b;
}

}  // namespace shardsim::coll
