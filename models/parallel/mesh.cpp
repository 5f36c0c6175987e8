#include "models/parallel/mesh.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <limits>

#include "sim/error.hpp"

namespace shardsim::parallel {

const char* to_string(Axis a) {
  switch (a) {
    case Axis::tp: return "tp";
    case Axis::cp: return "cp";
    case Axis::ep: return "ep";
    case Axis::dp: return "dp";
    case Axis::pp: return "pp";
  }
  return "?";
}

std::uint64_t MeshSizes::get(Axis a) const {
  switch (a) {
    case Axis::tp: return tp;
    case Axis::cp: return cp;
    case Axis::ep: return ep;
    case Axis::dp: return dp;
    case Axis::pp: return pp;
  }
  return 1;
}

void MeshSizes::set(Axis a, std::uint64_t v) {
  switch (a) {
    case Axis::tp: tp = v; break;
    case Axis::cp: cp = v; break;
    case Axis::ep: ep = v; break;
    case Axis::dp: dp = v; break;
    case Axis::pp: pp = v; break;
  }
}

std::string MeshSizes::str() const {
  std::string s = fmt::format("dp={}", dp);
  for (Axis a : {Axis::tp, Axis::pp, Axis::cp, Axis::ep}) {
    if (get(a) > 1) s += fmt::format(",{}={}", to_string(a), get(a));
  }
  return s;
}

namespace {

std::size_t idx(Axis a) { return static_cast<std::size_t>(a); }

std::string join(const std::vector<Axis>& axes) {
  std::string s;
  for (Axis a : axes) s += (s.empty() ? "" : "-") + std::string(to_string(a));
  return s;
}

bool axis_from_name(std::string_view n, Axis& out) {
  for (Axis a : kAxes) {
    if (n == to_string(a)) {
      out = a;
      return true;
    }
  }
  return false;
}

}  // namespace

std::vector<Axis> Mesh::default_order() { return {Axis::tp, Axis::cp, Axis::ep, Axis::dp, Axis::pp}; }

Mesh::Mesh(MeshSizes sizes, std::vector<Axis> order, const std::string& where) : sizes_(sizes), order_(std::move(order)) {
  std::array<bool, 5> seen{};
  for (Axis a : order_) {
    if (seen[idx(a)]) throw ConfigError(where, fmt::format("order '{}' repeats {}", join(order_), to_string(a)), "each axis once");
    seen[idx(a)] = true;
  }
  if (order_.size() != 5) {
    throw ConfigError(where, fmt::format("order '{}'", join(order_)), "all five axes tp, cp, ep, dp, pp");
  }
  std::uint64_t s = 1;
  for (Axis a : order_) {
    const std::uint64_t n = sizes_.get(a);
    if (n == 0) throw ConfigError(where, fmt::format("{}=0", to_string(a)), "a positive size");
    stride_[idx(a)] = s;
    if (s > (std::uint64_t{1} << 31) / n) {
      throw ConfigError(where, fmt::format("a mesh of more than 2^31 devices ({})", sizes_.str()), "at most 2^31 devices");
    }
    s *= n;
  }
  devices_ = s;
}

std::uint64_t Mesh::stride(Axis a) const { return stride_[idx(a)]; }

std::string Mesh::order_str() const { return join(order_); }

std::uint64_t Mesh::coord(std::uint64_t rank, Axis a) const { return (rank / stride_[idx(a)]) % sizes_.get(a); }

std::uint64_t Mesh::rank(const std::array<std::uint64_t, 5>& coords) const {
  std::uint64_t r = 0;
  for (Axis a : kAxes) r += coords[idx(a)] * stride_[idx(a)];
  return r;
}

std::uint64_t Mesh::group_count(const std::vector<Axis>& axes) const {
  std::uint64_t g = 1;
  for (Axis a : axes) g *= sizes_.get(a);
  return devices_ / g;
}

ProcessGroup Mesh::group(const std::vector<Axis>& axes, std::uint64_t index) const {
  std::array<bool, 5> in{};
  for (Axis a : axes) {
    if (in[idx(a)]) throw ConfigError("mesh group", fmt::format("axis {} listed twice", to_string(a)), "distinct axes");
    in[idx(a)] = true;
  }
  if (axes.empty()) throw ConfigError("mesh group", "no axis", "at least one axis");
  const std::uint64_t n = group_count(axes);
  if (index >= n) {
    throw ConfigError("mesh group", fmt::format("group {} over {}", index, join(axes)), fmt::format("an index below {}", n));
  }
  // Megatron's generate_masked_orthogonal_rank_groups: the group index decomposes over the
  // unmasked axes (fastest first), the position in the group over the masked axes.
  std::uint64_t base = 0, rest = index;
  std::vector<Axis> masked;
  std::uint32_t mask = 0;
  for (Axis a : order_) {
    if (in[idx(a)]) {
      masked.push_back(a);
      mask |= 1U << idx(a);
    } else {
      base += (rest % sizes_.get(a)) * stride_[idx(a)];
      rest /= sizes_.get(a);
    }
  }
  ProcessGroup g;
  g.id = (static_cast<std::uint64_t>(mask) << 32) | index;
  g.axes = join(masked);
  const std::uint64_t m = devices_ / n;
  g.ranks.reserve(m);
  for (std::uint64_t k = 0; k < m; ++k) {
    std::uint64_t r = base, q = k;
    for (Axis a : masked) {
      r += (q % sizes_.get(a)) * stride_[idx(a)];
      q /= sizes_.get(a);
    }
    g.ranks.push_back(static_cast<std::uint32_t>(r));
  }
  return g;
}

ProcessGroup Mesh::group_of(const std::vector<Axis>& axes, std::uint64_t rank) const {
  if (rank >= devices_) {
    throw ConfigError("mesh group", fmt::format("rank {}", rank), fmt::format("a rank below {}", devices_));
  }
  std::uint64_t index = 0, scale = 1;
  for (Axis a : order_) {
    if (std::find(axes.begin(), axes.end(), a) != axes.end()) continue;
    index += coord(rank, a) * scale;
    scale *= sizes_.get(a);
  }
  return group(axes, index);
}

std::vector<ProcessGroup> Mesh::groups(const std::vector<Axis>& axes) const {
  std::vector<ProcessGroup> v;
  const std::uint64_t n = group_count(axes);
  v.reserve(n);
  for (std::uint64_t i = 0; i < n; ++i) v.push_back(group(axes, i));
  return v;
}

namespace {

struct Gspmd {
  const char* name;
  Axis axis;
};
constexpr std::array<Gspmd, 5> kGspmd = {
    {{"data", Axis::dp}, {"model", Axis::tp}, {"expert", Axis::ep}, {"seq", Axis::cp}, {"stage", Axis::pp}}};

std::uint64_t parse_size(const std::string& key, const std::string& value, const std::string& where) {
  std::uint64_t v = 0;
  const auto* end = value.data() + value.size();
  const auto r = std::from_chars(value.data(), end, v);
  if (value.empty() || r.ec != std::errc() || r.ptr != end || v == 0) {
    throw ConfigError(where, fmt::format("{}={}", key, value), fmt::format("{} as a positive integer", key));
  }
  return v;
}

}  // namespace

std::vector<Axis> parse_order(const std::string& text, const MeshSizes& sizes, const std::string& where) {
  std::vector<Axis> order;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t dash = text.find('-', start);
    const std::string tok = text.substr(start, dash == std::string::npos ? std::string::npos : dash - start);
    Axis a{};
    if (!axis_from_name(tok, a)) {
      throw ConfigError(where, fmt::format("order '{}' has '{}'", text, tok), "axes tp, cp, ep, dp, pp joined by '-'");
    }
    if (std::find(order.begin(), order.end(), a) != order.end()) {
      throw ConfigError(where, fmt::format("order '{}' repeats {}", text, tok), "each axis once");
    }
    order.push_back(a);
    if (dash == std::string::npos) break;
    start = dash + 1;
  }
  for (Axis a : Mesh::default_order()) {
    if (std::find(order.begin(), order.end(), a) != order.end()) continue;
    if (sizes.get(a) != 1) {
      throw ConfigError(where, fmt::format("order '{}' leaves out {}={}", text, to_string(a), sizes.get(a)),
                        "every axis larger than 1 in the order");
    }
    order.push_back(a);
  }
  return order;
}

MeshSpec parse_mesh(const std::string& text, std::uint64_t devices, const std::string& where) {
  MeshSpec spec;
  std::array<bool, 5> given{};
  std::string order_text;
  bool megatron_names = false;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = text.find(',', start);
    const std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    const std::size_t eq = item.find('=');
    if (eq == std::string::npos) {
      throw ConfigError(where, fmt::format("'{}' in '{}'", item, text), "axis=size items such as dp=16,tp=8,pp=8");
    }
    const std::string key = item.substr(0, eq), value = item.substr(eq + 1);
    Axis a{};
    if (key == "order") {
      if (!order_text.empty()) throw ConfigError(where, "order given twice", "one order");
      order_text = value.empty() ? "?" : value;
    } else if (axis_from_name(key, a)) {
      megatron_names = true;
      if (given[idx(a)]) throw ConfigError(where, fmt::format("{} given twice in '{}'", key, text), "each axis once");
      given[idx(a)] = true;
      spec.sizes.set(a, parse_size(key, value, where));
    } else {
      const auto* g = std::find_if(kGspmd.begin(), kGspmd.end(), [&](const Gspmd& x) { return key == x.name; });
      if (g == kGspmd.end()) {
        throw ConfigError(where, fmt::format("unknown axis '{}' in '{}'", key, text),
                          "dp, tp, pp, cp, ep (and order=...), or GSPMD names data, model, expert, seq, stage");
      }
      if (given[idx(g->axis)]) throw ConfigError(where, fmt::format("{} given twice in '{}'", key, text), "each axis once");
      given[idx(g->axis)] = true;
      spec.sizes.set(g->axis, parse_size(key, value, where));
      spec.gspmd_names.emplace_back(key, g->axis);
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (megatron_names && !spec.gspmd_names.empty()) {
    throw ConfigError(where, fmt::format("'{}' mixes dp/tp/pp/cp/ep with GSPMD names", text), "one naming scheme");
  }
  if (!spec.gspmd_names.empty() && !order_text.empty()) {
    throw ConfigError(where, fmt::format("order with GSPMD names in '{}'", text),
                      "GSPMD axes in their written order (slowest first), without order=");
  }
  spec.dp_given = given[idx(Axis::dp)];
  const MeshSizes& z = spec.sizes;
  if (devices == 0) {
    if (!spec.dp_given) {
      throw ConfigError(where, fmt::format("'{}' without dp and without a device count", text),
                        "dp in the mesh, or a topology (--hardware) to derive it from");
    }
    devices = z.product();
  }
  if (!spec.dp_given) {
    const std::uint64_t model = z.tp * z.pp * z.cp * z.ep;
    if (devices % model != 0) {
      throw ConfigError(where,
                        fmt::format("tp x pp x cp x ep = {} x {} x {} x {} = {} does not divide the {} devices", z.tp,
                                    z.pp, z.cp, z.ep, model, devices),
                        "sizes whose product divides the device count (dp is derived from it)");
    }
    spec.sizes.dp = devices / model;
  } else if (z.product() != devices) {
    throw ConfigError(where,
                      fmt::format("dp x tp x pp x cp x ep = {} x {} x {} x {} x {} = {} devices", z.dp, z.tp, z.pp, z.cp,
                                  z.ep, z.product()),
                      fmt::format("the device count {}", devices));
  }
  if (!spec.gspmd_names.empty()) {
    // Written slowest first: the fastest is the last one; axes not named have size 1.
    spec.order.clear();
    for (auto it = spec.gspmd_names.rbegin(); it != spec.gspmd_names.rend(); ++it) spec.order.push_back(it->second);
    if (!spec.dp_given) spec.order.push_back(Axis::dp);
    for (Axis a : Mesh::default_order()) {
      if (std::find(spec.order.begin(), spec.order.end(), a) == spec.order.end()) spec.order.push_back(a);
    }
  } else if (!order_text.empty()) {
    spec.order = parse_order(order_text, spec.sizes, where);
  }
  (void)spec.mesh(where);  // checks the size limit
  return spec;
}

namespace {

std::vector<std::uint64_t> divisors(std::uint64_t n) {
  std::vector<std::uint64_t> small, large;
  for (std::uint64_t d = 1; d * d <= n; ++d) {
    if (n % d != 0) continue;
    small.push_back(d);
    if (d * d != n) large.push_back(n / d);
  }
  small.insert(small.end(), large.rbegin(), large.rend());
  return small;
}

bool ok(std::uint64_t v, std::uint64_t max, std::uint64_t must_divide) {
  if (max != 0 && v > max) return false;
  return must_divide == 0 || must_divide % v == 0;
}

}  // namespace

std::vector<MeshSizes> enumerate_factorizations(std::uint64_t devices, const FactorConstraints& c) {
  std::vector<MeshSizes> out;
  if (devices == 0) return out;
  const auto ds = divisors(devices);
  for (std::uint64_t tp : ds) {
    if (!ok(tp, c.max_tp, c.heads) || !ok(tp, 0, c.kv_heads)) continue;
    const std::uint64_t r1 = devices / tp;
    for (std::uint64_t pp : ds) {
      if (r1 % pp != 0 || !ok(pp, c.max_pp, c.layers)) continue;
      const std::uint64_t r2 = r1 / pp;
      for (std::uint64_t cp : ds) {
        if (r2 % cp != 0 || !ok(cp, c.max_cp, c.seq)) continue;
        const std::uint64_t r3 = r2 / cp;
        for (std::uint64_t ep : ds) {
          if (r3 % ep != 0 || !ok(ep, c.max_ep, 0)) continue;
          if (c.experts == 0 ? ep != 1 : c.experts % ep != 0) continue;
          out.push_back(MeshSizes{r3 / ep, tp, pp, cp, ep});
        }
      }
    }
  }
  return out;
}

}  // namespace shardsim::parallel
