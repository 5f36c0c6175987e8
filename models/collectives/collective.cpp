#include "models/collectives/collective.hpp"

#include <fmt/format.h>

#include <array>
#include <cctype>

#include "sim/enum_names.hpp"
#include "sim/error.hpp"

namespace shardsim::coll {

namespace {
constexpr std::array<EnumName<OpKind>, 7> kOpKinds{{{OpKind::allreduce, "allreduce"},
                                                    {OpKind::reducescatter, "reducescatter"},
                                                    {OpKind::allgather, "allgather"},
                                                    {OpKind::broadcast, "broadcast"},
                                                    {OpKind::alltoall, "alltoall"},
                                                    {OpKind::reduce, "reduce"},
                                                    {OpKind::sendrecv, "sendrecv"}}};
}  // namespace

const char* to_string(OpKind k) { return enum_name(kOpKinds, k); }

std::vector<std::string> op_kind_names() { return enum_names(kOpKinds); }

OpKind op_from_string(const std::string& s, const std::string& where) {
  // Case and '-' / '_' do not matter ("all-reduce", "AllReduce"); an unknown name reports the
  // name as given.
  std::string k;
  for (char c : s) {
    if (c != '-' && c != '_') k.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  }
  for (const auto& e : kOpKinds) {
    if (k == e.name) return e.value;
  }
  throw_unknown("collective", s, where, op_kind_names());
}

double busbw_factor(OpKind k, std::size_t n) {
  const double nn = static_cast<double>(n);
  switch (k) {
    case OpKind::allreduce: return 2.0 * (nn - 1) / nn;
    case OpKind::reducescatter:
    case OpKind::allgather:
    case OpKind::alltoall: return (nn - 1) / nn;
    case OpKind::broadcast:
    case OpKind::reduce:
    case OpKind::sendrecv: return 1.0;
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
