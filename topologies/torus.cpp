// The `torus` builder: N-dimensional torus/mesh with dimension-order routing.
#include <fmt/format.h>

#include <limits>
#include <numeric>
#include <stdexcept>

#include "sim/error.hpp"
#include "topologies/registry.hpp"
#include "topologies/torus.hpp"

namespace shardsim::topo {
namespace {

constexpr LinkId kNoLink = std::numeric_limits<LinkId>::max();

// Dimension-order routing (DOR) on a torus whose devices are nodes 0..N-1 in row-major order
// (last dimension fastest). Per dimension, in order 0..n-1, it takes the shorter direction;
// a tie (k even, distance k/2) goes the positive way, so routes are deterministic.
// Cost: O(hops) per route; the tables are O(N x dims).
class TorusRouter final : public Router {
 public:
  TorusRouter(std::vector<int> dims, std::vector<bool> wrap, std::vector<LinkId> plus, std::vector<LinkId> minus)
      : dims_(std::move(dims)), wrap_(std::move(wrap)), plus_(std::move(plus)), minus_(std::move(minus)) {
    std::size_t s = 1;
    stride_.resize(dims_.size());
    for (std::size_t d = dims_.size(); d-- > 0;) {
      stride_[d] = s;
      s *= static_cast<std::size_t>(dims_[d]);
    }
    count_ = s;
  }

  void route(const Topology& t, NodeId src, NodeId dst, std::vector<LinkId>& out) const override {
    if (src >= count_ || dst >= count_) {
      throw std::runtime_error(fmt::format("torus routing between non-torus nodes {} and {}", src, dst));
    }
    const std::size_t nd = dims_.size();
    std::size_t cur = src;
    for (std::size_t d = 0; d < nd; ++d) {
      const auto k = static_cast<long>(dims_[d]);
      const auto cs = static_cast<long>((cur / stride_[d]) % static_cast<std::size_t>(k));
      const auto cd = static_cast<long>((dst / stride_[d]) % static_cast<std::size_t>(k));
      if (cs == cd) continue;
      long steps = 0;
      bool positive = true;
      if (wrap_[d]) {
        const long fwd = ((cd - cs) % k + k) % k;
        positive = fwd <= k - fwd;
        steps = positive ? fwd : k - fwd;
      } else {
        positive = cd > cs;
        steps = positive ? cd - cs : cs - cd;
      }
      const auto& table = positive ? plus_ : minus_;
      for (long s = 0; s < steps; ++s) {
        const LinkId l = table[cur * nd + d];
        out.push_back(l);
        cur = t.link(l).dst;
      }
    }
  }
  [[nodiscard]] std::string name() const override { return "torus-dimension-order"; }

 private:
  std::vector<int> dims_;
  std::vector<bool> wrap_;
  std::vector<LinkId> plus_, minus_;  // [rank * dims + d]: link to the +1 / -1 neighbour
  std::vector<std::size_t> stride_;
  std::size_t count_ = 0;
};

// Boustrophedon Hamiltonian path over `dims` (reflected mixed-radix order): consecutive
// entries differ by one step in one dimension. Entries are row-major ranks.
std::vector<int> snake_path(const std::vector<int>& dims) {
  std::vector<int> path{0};
  int stride = 1;
  for (std::size_t d = dims.size(); d-- > 0;) {
    // Prepend dimension d: repeat the path for each coordinate, reversed on odd ones.
    std::vector<int> next;
    next.reserve(path.size() * static_cast<std::size_t>(dims[d]));
    for (int c = 0; c < dims[d]; ++c) {
      if (c % 2 == 0) {
        for (int r : path) next.push_back(c * stride + r);
      } else {
        for (auto it = path.rbegin(); it != path.rend(); ++it) next.push_back(c * stride + *it);
      }
    }
    stride *= dims[d];
    path = std::move(next);
  }
  return path;
}

}  // namespace

std::vector<int> torus_ring_order(const std::vector<int>& dims_in, const std::vector<bool>& wrap_in) {
  // Dimensions of size 1 do not change ranks or neighbourhoods: drop them.
  std::vector<int> dims;
  std::vector<bool> wrap;
  for (std::size_t d = 0; d < dims_in.size(); ++d) {
    if (dims_in[d] > 1) {
      dims.push_back(dims_in[d]);
      wrap.push_back(wrap_in[d]);
    }
  }
  if (dims.size() <= 1) {
    const int n = dims.empty() ? 1 : dims[0];
    std::vector<int> r(static_cast<std::size_t>(n));
    std::iota(r.begin(), r.end(), 0);
    return r;
  }
  // View the torus as R "rows" (the snake path P over all dimensions but the last) times
  // C columns (the last dimension); consecutive rows of P are neighbours.
  const int cols = dims.back();
  const std::vector<int> head(dims.begin(), dims.end() - 1);
  const std::vector<int> rows = snake_path(head);
  const int nrows = static_cast<int>(rows.size());
  std::vector<int> ring;
  ring.reserve(static_cast<std::size_t>(nrows * cols));
  auto at = [&](int row, int col) { return rows[static_cast<std::size_t>(row)] * cols + col; };
  if (nrows % 2 == 0) {
    // Row 0 left to right, then rows 1..R-1 snake over columns 1..C-1 (R-1 odd rows end at
    // column 1), then back up column 0 from row R-1 to row 1; closes to row 0 column 0.
    for (int c = 0; c < cols; ++c) ring.push_back(at(0, c));
    for (int r = 1; r < nrows; ++r) {
      if (r % 2 == 1) {
        for (int c = cols - 1; c >= 1; --c) ring.push_back(at(r, c));
      } else {
        for (int c = 1; c < cols; ++c) ring.push_back(at(r, c));
      }
    }
    for (int r = nrows - 1; r >= 1; --r) ring.push_back(at(r, 0));
  } else if (cols % 2 == 0) {
    // Row 0 left to right, then columns C-1..0 snake over rows 1..R-1 (C even: column 0 is
    // walked upwards and ends at row 1); closes to row 0 column 0.
    for (int c = 0; c < cols; ++c) ring.push_back(at(0, c));
    for (int c = cols - 1; c >= 0; --c) {
      if ((cols - 1 - c) % 2 == 0) {
        for (int r = 1; r < nrows; ++r) ring.push_back(at(r, c));
      } else {
        for (int r = nrows - 1; r >= 1; --r) ring.push_back(at(r, c));
      }
    }
  } else {
    // Odd number of devices: a mesh has no Hamiltonian cycle (it is bipartite), so take the
    // boustrophedon path; its closing edge is not a single link.
    for (int r = 0; r < nrows; ++r) {
      for (int c = 0; c < cols; ++c) ring.push_back(at(r, r % 2 == 0 ? c : cols - 1 - c));
    }
  }
  return ring;
}

void register_torus(std::vector<BuilderInfo>& r) {
  BuilderInfo b;
  b.name = "torus";
  b.description = "N-dimensional torus (or mesh), devices row-major (last dimension fastest), dimension-order routing";
  b.params = {
      {"dims", ParamType::dims, "devices", std::nullopt, "size of each dimension, e.g. 32x32 or [4,4,4]"},
      {"bw", ParamType::rate, "B/s", std::nullopt, "bandwidth of each link, per direction"},
      {"lat", ParamType::time, "s", std::nullopt, "latency of each link"},
      {"wrap", ParamType::flags, "", "1", "wraparound per dimension (one flag for all, or 1x0...); a dimension of 2 has one link"},
      {"class", ParamType::choice, "", "ici", "link class", {"ici", "nvlink", "pcie", "ib", "ethernet", "loopback"}},
  };
  b.build = [](Params& p) {
    const auto dims = p.dims("dims");
    const double bw = p.rate_Bps("bw");
    const double lat = p.seconds("lat");
    auto wrap = p.flags("wrap", dims.size());
    const LinkClass cls = link_class_from_string(p.choice("class"), p.where("class"));
    constexpr std::size_t kMaxDevices = std::size_t{1} << 22;
    std::size_t n = 1;
    for (int k : dims) {
      n *= static_cast<std::size_t>(k);
      if (n > kMaxDevices) {
        throw ConfigError(p.where("dims"), fmt::format("more than {} devices", kMaxDevices),
                          fmt::format("at most {} devices", kMaxDevices));
      }
    }
    // A wraparound link in a dimension of 1 or 2 would duplicate an existing neighbour.
    for (std::size_t d = 0; d < dims.size(); ++d) wrap[d] = wrap[d] && dims[d] > 2;

    Topology t;
    const std::size_t nd = dims.size();
    std::vector<std::size_t> stride(nd);
    std::size_t s = 1;
    for (std::size_t d = nd; d-- > 0;) {
      stride[d] = s;
      s *= static_cast<std::size_t>(dims[d]);
    }
    for (std::size_t rank = 0; rank < n; ++rank) {
      Node node;
      node.coords.resize(nd);
      std::string name = "chip[";
      for (std::size_t d = 0; d < nd; ++d) {
        node.coords[d] = static_cast<int>((rank / stride[d]) % static_cast<std::size_t>(dims[d]));
        name += (d ? "," : "") + std::to_string(node.coords[d]);
      }
      node.name = name + "]";
      t.add_device(std::move(node));
    }
    std::vector<LinkId> plus(n * nd, kNoLink), minus(n * nd, kNoLink);
    for (std::size_t rank = 0; rank < n; ++rank) {
      for (std::size_t d = 0; d < nd; ++d) {
        const auto k = static_cast<std::size_t>(dims[d]);
        const std::size_t c = (rank / stride[d]) % k;
        std::size_t nb = 0;
        if (c + 1 < k) {
          nb = rank + stride[d];
        } else if (wrap[d]) {
          nb = rank - (k - 1) * stride[d];
        } else {
          continue;
        }
        const LinkId l = t.add_duplex(static_cast<NodeId>(rank), static_cast<NodeId>(nb), bw, lat, cls);
        plus[rank * nd + d] = l;
        minus[nb * nd + d] = l + 1;
      }
    }
    t.set_router(std::make_shared<TorusRouter>(dims, wrap, std::move(plus), std::move(minus)));
    t.set_ring_order(torus_ring_order(dims, wrap));
    t.set_torus(dims, wrap);
    t.set_devices_forward(true);
    return t;
  };
  r.push_back(std::move(b));
}

}  // namespace shardsim::topo
