#include "models/parallel/placement.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "sim/error.hpp"

namespace shardsim::parallel {

TopologyShape shape_of(const topo::Topology& t) {
  TopologyShape s;
  s.devices = t.num_devices();
  s.torus_dims = t.torus_dims();
  if (t.device_groups().empty()) return s;
  const std::size_t g = t.device_groups().front().size();
  if (g == 0 || g * t.device_groups().size() != s.devices) return s;
  for (std::size_t i = 0; i < t.device_groups().size(); ++i) {
    const auto& grp = t.device_groups()[i];
    if (grp.size() != g) return s;
    for (std::size_t k = 0; k < g; ++k) {
      if (grp[k] != static_cast<int>(i * g + k)) return s;
    }
  }
  s.domain_size = g;
  return s;
}

namespace {

std::vector<int> torus_coords(std::uint64_t rank, const std::vector<int>& dims) {
  std::vector<int> c(dims.size());
  for (std::size_t d = dims.size(); d-- > 0;) {
    const auto k = static_cast<std::uint64_t>(dims[d]);
    c[d] = static_cast<int>(rank % k);
    rank /= k;
  }
  return c;
}

}  // namespace

std::vector<AxisPlacement> place(const Mesh& mesh, const TopologyShape& shape) {
  if (mesh.devices() != shape.devices) {
    throw ConfigError("--mesh", fmt::format("a mesh of {} devices ({})", mesh.devices(), mesh.sizes().str()),
                      fmt::format("the topology's {} devices", shape.devices));
  }
  std::vector<AxisPlacement> out;
  for (Axis a : mesh.order()) {
    AxisPlacement p;
    p.axis = a;
    p.name = to_string(a);
    p.size = mesh.size(a);
    p.stride = mesh.stride(a);
    if (p.size == 1) {
      p.where = "size 1";
      out.push_back(p);
      continue;
    }
    const auto groups = mesh.groups({a});
    if (shape.domain_size > 0) {
      std::uint64_t domains_touched = 0;
      for (const auto& g : groups) {
        const std::uint64_t d0 = g.ranks.front() / shape.domain_size;
        std::uint64_t distinct = 1;
        for (std::size_t k = 1; k < g.ranks.size(); ++k) {
          if (g.ranks[k] / shape.domain_size != d0) {
            p.inside_domain = false;
            ++distinct;
          }
        }
        domains_touched = std::max(domains_touched, distinct);
      }
      p.where = p.inside_domain ? fmt::format("inside the NVLink domain of {}", shape.domain_size)
                                : fmt::format("across NVLink domains of {} (stride {})", shape.domain_size, p.stride);
    }
    if (!shape.torus_dims.empty()) {
      const auto& g = groups.front();
      std::vector<std::vector<bool>> used(shape.torus_dims.size());
      for (std::size_t d = 0; d < used.size(); ++d) used[d].assign(static_cast<std::size_t>(shape.torus_dims[d]), false);
      for (auto r : g.ranks) {
        const auto c = torus_coords(r, shape.torus_dims);
        for (std::size_t d = 0; d < c.size(); ++d) used[d][static_cast<std::size_t>(c[d])] = true;
      }
      std::string w;
      for (std::size_t d = 0; d < used.size(); ++d) {
        const auto n = static_cast<int>(std::count(used[d].begin(), used[d].end(), true));
        if (n <= 1) continue;
        p.torus_dims.push_back(static_cast<int>(d));
        p.torus_extent.push_back(n);
        w += fmt::format("{}{} ({} of {})", w.empty() ? "" : " x ", d, n, shape.torus_dims[d]);
      }
      p.where = (p.torus_dims.size() == 1 ? "torus dim " : "torus dims ") + w;
    }
    if (p.where.empty()) p.where = fmt::format("stride {}", p.stride);
    out.push_back(p);
  }
  return out;
}

void name_gspmd_axes(std::vector<AxisPlacement>& placement, const MeshSpec& spec) {
  for (const auto& [name, axis] : spec.gspmd_names) {
    for (auto& p : placement) {
      if (p.axis == axis) p.name = name;
    }
  }
}

std::vector<std::string> placement_issues(const Mesh& mesh, const TopologyShape& shape) {
  std::vector<std::string> issues;
  for (const auto& p : place(mesh, shape)) {
    // Only tp: its all-reduces sit on the critical path of every layer. cp's ring exchange
    // overlaps the attention and runs across nodes in published runs (NeMo Llama 3.1 405B:
    // tp=8, cp=2 on DGX H100, tests/data/published/training/dgxc-megatron-tp-pp.json).
    if (p.axis != Axis::tp) continue;
    if (!p.inside_domain) {
      issues.push_back(p.size > shape.domain_size
                           ? fmt::format("{}={} leaves the NVLink domain of {}", to_string(p.axis), p.size, shape.domain_size)
                           : fmt::format("{}={} (stride {}) leaves the NVLink domain of {}", to_string(p.axis), p.size,
                                         p.stride, shape.domain_size));
    }
    if (p.axis == Axis::tp && p.torus_dims.size() > 1) {
      const bool fits_one = std::any_of(shape.torus_dims.begin(), shape.torus_dims.end(),
                                        [&](int k) { return static_cast<std::uint64_t>(k) >= p.size; });
      if (fits_one) {
        issues.push_back(fmt::format("tp={} spans {} torus dimensions though one dimension could hold it", p.size,
                                     p.torus_dims.size()));
      }
    }
  }
  return issues;
}

}  // namespace shardsim::parallel
