// The mesh: Megatron-LM's rank order, groups, --mesh parsing, placement and the factor
// enumerator, each against a closed form or Megatron's own documented example.
#include <doctest/doctest.h>

#include <algorithm>
#include <set>

#include "models/parallel/mesh.hpp"
#include "models/parallel/placement.hpp"
#include "sim/error.hpp"
#include "helpers.hpp"
#include "topologies/load.hpp"

using namespace shardsim;
using namespace shardsim::parallel;

namespace {

using Groups = std::vector<std::vector<std::uint32_t>>;

Groups ranks_of(const Mesh& m, const std::vector<Axis>& axes) {
  Groups g;
  for (const auto& pg : m.groups(axes)) g.push_back(pg.ranks);
  return g;
}

using shardsim::parallel::test::error_of;

}  // namespace

TEST_CASE("Megatron's docstring example: 16 GPUs, tp=2, pp=4 (dp=2)") {
  // megatron/core/parallel_state.py, initialize_model_parallel docstring.
  const auto spec = parse_mesh("tp=2,pp=4", 16);
  CHECK(spec.sizes == MeshSizes{2, 2, 4, 1, 1});
  const Mesh m = spec.mesh();
  CHECK(ranks_of(m, {Axis::dp}) == Groups{{0, 2}, {1, 3}, {4, 6}, {5, 7}, {8, 10}, {9, 11}, {12, 14}, {13, 15}});
  CHECK(ranks_of(m, {Axis::tp}) == Groups{{0, 1}, {2, 3}, {4, 5}, {6, 7}, {8, 9}, {10, 11}, {12, 13}, {14, 15}});
  CHECK(ranks_of(m, {Axis::pp}) == Groups{{0, 4, 8, 12}, {1, 5, 9, 13}, {2, 6, 10, 14}, {3, 7, 11, 15}});
}

TEST_CASE("tp=2, pp=2, dp=2 on 8 ranks: rank = tp_i + 2 (dp_i + 2 pp_i)") {
  const Mesh m(MeshSizes{2, 2, 2, 1, 1});
  CHECK(m.order_str() == "tp-cp-ep-dp-pp");
  CHECK(ranks_of(m, {Axis::tp}) == Groups{{0, 1}, {2, 3}, {4, 5}, {6, 7}});
  CHECK(ranks_of(m, {Axis::dp}) == Groups{{0, 2}, {1, 3}, {4, 6}, {5, 7}});
  CHECK(ranks_of(m, {Axis::pp}) == Groups{{0, 4}, {1, 5}, {2, 6}, {3, 7}});
  // Megatron's generate_masked_orthogonal_rank_groups docstring: order tp-pp-dp, sizes 2-2-2,
  // dp groups [[0, 4], [1, 5], [2, 6], [3, 7]].
  const auto spec = parse_mesh("tp=2,pp=2,dp=2,order=tp-pp-dp", 8);
  CHECK(ranks_of(spec.mesh(), {Axis::dp}) == Groups{{0, 4}, {1, 5}, {2, 6}, {3, 7}});
  // The same docstring: parallel_size [tp, dp, pp] = [2, 3, 4], dp_group[7] = [19, 21, 23].
  const Mesh m2(MeshSizes{3, 2, 4, 1, 1}, {Axis::tp, Axis::dp, Axis::pp, Axis::cp, Axis::ep});
  CHECK(m2.group(Axis::dp, 7).ranks == std::vector<std::uint32_t>{19, 21, 23});
  CHECK(m2.group(Axis::dp, 0).ranks == std::vector<std::uint32_t>{0, 2, 4});
}

TEST_CASE("groups partition the ranks; coordinates, ranks and ids agree") {
  const Mesh m(MeshSizes{3, 2, 2, 2, 2});  // dp, tp, pp, cp, ep
  CHECK(m.devices() == 48);
  std::set<std::uint64_t> ids;
  for (const std::vector<Axis>& axes : std::vector<std::vector<Axis>>{
           {Axis::tp}, {Axis::cp}, {Axis::ep}, {Axis::dp}, {Axis::pp}, {Axis::ep, Axis::dp}, {Axis::cp, Axis::ep, Axis::dp}}) {
    std::uint64_t size = 1;
    for (Axis a : axes) size *= m.size(a);
    std::vector<int> seen(48, 0);
    for (const auto& g : m.groups(axes)) {
      CHECK(g.ranks.size() == size);
      CHECK(ids.insert(g.id).second);  // unique over every group of the mesh
      for (auto r : g.ranks) {
        ++seen[r];
        CHECK(m.group_of(axes, r).id == g.id);
        for (Axis a : kAxes) {  // members differ only along `axes`
          if (std::find(axes.begin(), axes.end(), a) == axes.end()) CHECK(m.coord(r, a) == m.coord(g.ranks[0], a));
        }
      }
    }
    CHECK(std::all_of(seen.begin(), seen.end(), [](int s) { return s == 1; }));
  }
  for (std::uint64_t r = 0; r < 48; ++r) {
    std::array<std::uint64_t, 5> c{};
    for (Axis a : kAxes) c[static_cast<std::size_t>(a)] = m.coord(r, a);
    CHECK(m.rank(c) == r);
  }
  // Strides of the default order: tp 1, cp 2, ep 4, dp 8, pp 24.
  CHECK(m.stride(Axis::tp) == 1);
  CHECK(m.stride(Axis::cp) == 2);
  CHECK(m.stride(Axis::ep) == 4);
  CHECK(m.stride(Axis::dp) == 8);
  CHECK(m.stride(Axis::pp) == 24);
  // A stable id: the same group twice has the same id; (mask << 32) | index.
  CHECK(m.group(Axis::pp, 5).id == ((std::uint64_t{1} << static_cast<int>(Axis::pp)) << 32 | 5));
  CHECK(error_of([&] { (void)m.group(Axis::pp, 24); }) == "mesh group: group 24 over pp; expected an index below 24");
}

TEST_CASE("--mesh: dp derived, GSPMD names, and every error message") {
  CHECK(parse_mesh("dp=16,tp=8,pp=8", 1024).sizes == MeshSizes{16, 8, 8, 1, 1});
  CHECK(parse_mesh("tp=8,pp=8", 1024).sizes == MeshSizes{16, 8, 8, 1, 1});
  CHECK(parse_mesh("tp=4,cp=2,ep=2", 64).sizes == MeshSizes{4, 4, 1, 2, 2});
  CHECK(parse_mesh("dp=16,tp=8,pp=8", 1024).sizes.str() == "dp=16,tp=8,pp=8");
  // No device count known (no topology): the mesh as written is the count; dp is required.
  CHECK(parse_mesh("dp=4,tp=2", 0).sizes.product() == 8);
  CHECK(error_of([] { parse_mesh("tp=2", 0); }) ==
        "--mesh: 'tp=2' without dp and without a device count; expected dp in the mesh, or a topology (--hardware) to "
        "derive it from");

  CHECK(error_of([] { parse_mesh("dp=16,tp=8,pp=8", 512); }) ==
        "--mesh: dp x tp x pp x cp x ep = 16 x 8 x 8 x 1 x 1 = 1024 devices; expected the device count 512");
  CHECK(error_of([] { parse_mesh("tp=3", 64); }) ==
        "--mesh: tp x pp x cp x ep = 3 x 1 x 1 x 1 = 3 does not divide the 64 devices; expected sizes whose product "
        "divides the device count (dp is derived from it)");
  CHECK(error_of([] { parse_mesh("tp=0", 8); }) == "--mesh: tp=0; expected tp as a positive integer");
  CHECK(error_of([] { parse_mesh("tp=2x", 8); }) == "--mesh: tp=2x; expected tp as a positive integer");
  CHECK(error_of([] { parse_mesh("xp=2", 8); }) ==
        "--mesh: unknown axis 'xp' in 'xp=2'; expected dp, tp, pp, cp, ep (and order=...), or GSPMD names data, model, "
        "expert, seq, stage");
  CHECK(error_of([] { parse_mesh("tp=2,tp=4", 8); }) == "--mesh: tp given twice in 'tp=2,tp=4'; expected each axis once");
  CHECK(error_of([] { parse_mesh("tp", 8); }) == "--mesh: 'tp' in 'tp'; expected axis=size items such as dp=16,tp=8,pp=8");
  CHECK(error_of([] { parse_mesh("data=2,tp=4", 8); }) ==
        "--mesh: 'data=2,tp=4' mixes dp/tp/pp/cp/ep with GSPMD names; expected one naming scheme");
  CHECK(error_of([] { parse_mesh("tp=2,pp=2,order=tp-dp", 8); }) ==
        "--mesh: order 'tp-dp' leaves out pp=2; expected every axis larger than 1 in the order");
  CHECK(error_of([] { parse_mesh("tp=2,order=tp-xx", 8); }) ==
        "--mesh: order 'tp-xx' has 'xx'; expected axes tp, cp, ep, dp, pp joined by '-'");

  // GSPMD: written slowest first, the last name fastest (JAX reshape order).
  const auto g = parse_mesh("data=64,model=16", 1024);
  CHECK(g.sizes == MeshSizes{64, 16, 1, 1, 1});
  const Mesh gm = g.mesh();
  CHECK(gm.stride(Axis::tp) == 1);
  CHECK(gm.stride(Axis::dp) == 16);
  const auto g2 = parse_mesh("model=4,data=2", 8);  // model slowest now
  CHECK(g2.mesh().stride(Axis::dp) == 1);
  CHECK(g2.mesh().stride(Axis::tp) == 2);
}

TEST_CASE("placement: NVLink domains of DGX nodes and torus dimensions") {
  const auto dgx = topo::make_topology("dgx-h100-64", "test");
  const TopologyShape s = shape_of(dgx);
  CHECK(s.devices == 64);
  CHECK(s.domain_size == 8);
  {
    const Mesh m = parse_mesh("tp=8,pp=2", 64).mesh();
    const auto p = place(m, s);
    CHECK(p.front().axis == Axis::tp);
    CHECK(p.front().inside_domain);
    CHECK(p.front().where == "inside the NVLink domain of 8");
    const auto dp = std::find_if(p.begin(), p.end(), [](const AxisPlacement& x) { return x.axis == Axis::dp; });
    CHECK_FALSE(dp->inside_domain);
    CHECK(dp->where == "across NVLink domains of 8 (stride 8)");
    CHECK(placement_issues(m, s).empty());
  }
  CHECK(placement_issues(parse_mesh("tp=16", 64).mesh(), s) == std::vector<std::string>{"tp=16 leaves the NVLink domain of 8"});
  // Override: tp placed outermost leaves the node although it would fit.
  CHECK(placement_issues(parse_mesh("tp=2,order=dp-tp", 64).mesh(), s) ==
        std::vector<std::string>{"tp=2 (stride 32) leaves the NVLink domain of 8"});
  CHECK(error_of([&] { (void)place(parse_mesh("tp=8", 128).mesh(), s); }) ==
        "--mesh: a mesh of 128 devices (dp=16,tp=8); expected the topology's 64 devices");

  // TPU v3 pod, 32 x 32: data=64, model=16.
  const auto tpu = topo::make_topology("tpu-v3-1024", "test");
  const TopologyShape ts = shape_of(tpu);
  CHECK(ts.domain_size == 0);
  CHECK(ts.torus_dims == std::vector<int>{32, 32});
  const auto tp = place(parse_mesh("data=64,model=16", 1024).mesh(), ts);
  CHECK(tp[0].axis == Axis::tp);
  CHECK(tp[0].where == "torus dim 1 (16 of 32)");
  CHECK(tp[1].axis == Axis::dp);
  CHECK(tp[1].where == "torus dims 0 (32 of 32) x 1 (2 of 32)");
  CHECK(placement_issues(parse_mesh("data=64,model=16", 1024).mesh(), ts).empty());
  // tp with stride 16 (seq fastest): ranks 0, 16, 32, ... alternate between two rows.
  CHECK(placement_issues(parse_mesh("data=4,model=16,seq=16", 1024).mesh(), ts) ==
        std::vector<std::string>{"tp=16 spans 2 torus dimensions though one dimension could hold it"});
}

namespace {
std::uint64_t binom(std::uint64_t n, std::uint64_t k) {
  std::uint64_t r = 1;
  for (std::uint64_t i = 1; i <= k; ++i) r = r * (n - k + i) / i;
  return r;
}
}  // namespace

TEST_CASE("factor enumeration: counts from the divisor closed form") {
  // Ordered factorizations of q^a into k factors: C(a + k - 1, k - 1); multiplicative over
  // primes. A dense model (ep = 1) has 4 free factors, an MoE model with 1024 experts 5.
  CHECK(enumerate_factorizations(1024).size() == binom(13, 3));  // 286
  CHECK(enumerate_factorizations(12).size() == binom(5, 3) * binom(4, 3));  // 2^2 x 3: 10 x 4
  FactorConstraints moe;
  moe.experts = 1024;
  const auto all = enumerate_factorizations(1024, moe);
  CHECK(all.size() == binom(14, 4));  // 1001
  moe.experts = 12;
  CHECK(enumerate_factorizations(12, moe).size() == binom(6, 4) * binom(5, 4));  // 15 x 5
  std::set<std::tuple<std::uint64_t, std::uint64_t, std::uint64_t, std::uint64_t, std::uint64_t>> distinct;
  for (const auto& f : all) {
    CHECK(f.product() == 1024);
    distinct.insert({f.dp, f.tp, f.pp, f.cp, f.ep});
  }
  CHECK(distinct.size() == all.size());
  // Dense model, no cp: three factors, C(10 + 2, 2) = 66; with tp <= 8: sum over tp = 2^e,
  // e = 0..3, of the (dp, pp) splits of 2^(10-e): 11 + 10 + 9 + 8 = 38.
  FactorConstraints c;
  c.max_cp = 1;
  CHECK(enumerate_factorizations(1024, c).size() == binom(12, 2));
  c.max_tp = 8;
  CHECK(enumerate_factorizations(1024, c).size() == 38);
  // GPT-3 175B on 64: tp | 96 and pp | 96 -> tp = 2^a (a <= 5), pp = 2^b (b <= min(5, 6 - a)):
  // 6 + 6 + 5 + 4 + 3 + 2 = 26.
  FactorConstraints g;
  g.heads = g.kv_heads = 96;
  g.layers = 96;
  g.max_cp = 1;
  const auto gpt = enumerate_factorizations(64, g);
  CHECK(gpt.size() == 26);
  CHECK(std::all_of(gpt.begin(), gpt.end(), [](const MeshSizes& z) { return 96 % z.tp == 0 && 96 % z.pp == 0; }));
  // MoE with 8 experts: ep in {1, 2, 4, 8} on 8 devices, cp = 1, tp = 1, pp = 1: 4.
  FactorConstraints e;
  e.experts = 8;
  e.max_cp = e.max_tp = e.max_pp = 1;
  CHECK(enumerate_factorizations(8, e).size() == 4);
  // Ordered by tp, then pp, cp, ep.
  CHECK(all.front() == MeshSizes{1024, 1, 1, 1, 1});
  CHECK(all.back() == MeshSizes{1, 1024, 1, 1, 1});
}
