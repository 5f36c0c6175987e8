// OpenMPI 4.1 algorithm schedules (models/collectives/ompi_tuned.hpp): per-connection byte
// counts derived by hand from the coll/base functions, for power-of-two and other n, the
// volume bounds of DESIGN 2, and flow times on a switch against closed forms.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <map>
#include <string>
#include <utility>

#include "models/collectives/flow_eval.hpp"
#include "models/collectives/ompi_tuned.hpp"
#include "sim/error.hpp"
#include "topologies/load.hpp"

using namespace shardsim;
using coll::OpKind;

namespace {

using Pair = std::pair<std::uint32_t, std::uint32_t>;

coll::CollectiveOp op_of(OpKind k, std::size_t n, double S) {
  coll::CollectiveOp op;
  op.kind = k;
  op.size_bytes = static_cast<std::uint64_t>(S);
  for (std::size_t i = 0; i < n; ++i) op.group.push_back(static_cast<int>(i));
  return op;
}

// Bytes per (src, dst) over the whole schedule, repeats counted.
std::map<Pair, double> bytes_by_pair(const coll::Schedule& s) {
  std::map<Pair, double> m;
  for (const auto& st : s.steps) {
    for (const auto& x : st.transfers) m[{x.src, x.dst}] += x.bytes * st.repeat;
  }
  return m;
}

std::vector<double> sent_by_rank(const coll::Schedule& s, std::size_t n) {
  std::vector<double> v(n, 0);
  for (const auto& e : bytes_by_pair(s)) v[e.first.first] += e.second;
  return v;
}

std::vector<double> received_by_rank(const coll::Schedule& s, std::size_t n) {
  std::vector<double> v(n, 0);
  for (const auto& e : bytes_by_pair(s)) v[e.first.second] += e.second;
  return v;
}

std::map<std::uint32_t, std::uint32_t> parents(const coll::Schedule& s) {
  std::map<std::uint32_t, std::uint32_t> p;
  for (const auto& st : s.steps) {
    for (const auto& x : st.transfers) {
      CHECK(p.count(x.dst) == 0);
      p[x.dst] = x.src;
    }
  }
  return p;
}

constexpr double S = 6.0 * 8 * 1024 * 1024;  // divisible into 6 and 8 blocks

}  // namespace

TEST_CASE("ompi ring all-reduce, reduce-scatter, all-gather: only rank -> rank + 1") {
  for (std::size_t n : {4u, 6u, 8u}) {
    CAPTURE(n);
    const double nn = static_cast<double>(n);
    const std::vector<std::pair<OpKind, double>> kinds{
        {OpKind::allreduce, 2.0}, {OpKind::reducescatter, 1.0}, {OpKind::allgather, 1.0}};
    for (const auto& kf : kinds) {
      const auto m = bytes_by_pair(coll::ompi_schedule(op_of(kf.first, n, S), "ring"));
      CHECK(m.size() == n);
      for (std::uint32_t r = 0; r < n; ++r) {
        CHECK(m.at({r, static_cast<std::uint32_t>((r + 1) % n)}) == doctest::Approx(kf.second * (nn - 1) / nn * S).scale(0));
      }
    }
    CHECK(bytes_by_pair(coll::ompi_schedule(op_of(OpKind::allreduce, n, S), "segmented_ring")) ==
          bytes_by_pair(coll::ompi_schedule(op_of(OpKind::allreduce, n, S), "ring")));
  }
}

TEST_CASE("ompi rabenseifner all-reduce at n = 6: halves-exchange fold, the even ranks go on, unfold") {
  // ompi_coll_base_allreduce_intra_redscat_allgather, pof2 = 4, rem = 2. Fold: pairs (0,1) and
  // (2,3) exchange halves (S/2 each way), then the odd rank sends its reduced right half (S/2)
  // to the even one; the EVEN ranks go on: virtual ranks 0..3 = real 0, 2, 4, 5 (dest = vdest <
  // rem ? 2 vdest : vdest + rem). Halving: distance 1 (0<->2, 4<->5) S/2, distance 2 (0<->4,
  // 2<->5) S/4; doubling mirrors it; Step 4: the even rank sends the whole S to the odd one.
  const auto s = coll::ompi_schedule(op_of(OpKind::allreduce, 6, S), "rabenseifner");
  const auto m = bytes_by_pair(s);
  CHECK(m.at({0, 1}) == doctest::Approx(S / 2 + S).scale(0));
  CHECK(m.at({2, 3}) == doctest::Approx(S / 2 + S).scale(0));
  CHECK(m.at({1, 0}) == doctest::Approx(S / 2 + S / 2).scale(0));
  CHECK(m.at({3, 2}) == doctest::Approx(S / 2 + S / 2).scale(0));
  CHECK(m.at({0, 2}) == doctest::Approx(S / 2 + S / 2).scale(0));
  CHECK(m.at({2, 0}) == doctest::Approx(S / 2 + S / 2).scale(0));
  CHECK(m.at({4, 5}) == doctest::Approx(S).scale(0));
  CHECK(m.at({0, 4}) == doctest::Approx(S / 4 + S / 4).scale(0));
  CHECK(m.at({5, 2}) == doctest::Approx(S / 2).scale(0));
  CHECK(m.count({1, 3}) == 0);  // the odd ranks drop out after the fold
  CHECK(m.count({3, 5}) == 0);
  CHECK(m.size() == 4 + 8);
  // Step by step: the halves exchange, then the odd ranks' reduced halves, first.
  REQUIRE(s.steps.size() >= 2);
  const auto step0 = bytes_by_pair(coll::Schedule{"", {s.steps[0]}, 1, 6});
  CHECK(step0 == std::map<Pair, double>{{{0, 1}, S / 2}, {{1, 0}, S / 2}, {{2, 3}, S / 2}, {{3, 2}, S / 2}});
  const auto step1 = bytes_by_pair(coll::Schedule{"", {s.steps[1]}, 1, 6});
  CHECK(step1 == std::map<Pair, double>{{{1, 0}, S / 2}, {{3, 2}, S / 2}});
  const auto last = bytes_by_pair(coll::Schedule{"", {s.steps.back()}, 1, 6});
  CHECK(last == std::map<Pair, double>{{{0, 1}, S}, {{2, 3}, S}});
  // n = 8: step k pairs r with r xor 2^k, S/2^(k+1) each way, then mirrored.
  const auto m8 = bytes_by_pair(coll::ompi_schedule(op_of(OpKind::allreduce, 8, S), "rabenseifner"));
  CHECK(m8.at({0, 1}) == doctest::Approx(2 * S / 2).scale(0));
  CHECK(m8.at({0, 2}) == doctest::Approx(2 * S / 4).scale(0));
  CHECK(m8.at({0, 4}) == doctest::Approx(2 * S / 8).scale(0));
  CHECK(m8.size() == 8 * 3);
}

TEST_CASE("ompi recursive doubling all-reduce at n = 6: the whole vector every step") {
  const auto s = coll::ompi_schedule(op_of(OpKind::allreduce, 6, S), "recursive_doubling");
  const auto m = bytes_by_pair(s);
  CHECK(m.at({0, 1}) == doctest::Approx(S).scale(0));
  CHECK(m.at({1, 3}) == doctest::Approx(S).scale(0));
  CHECK(m.at({1, 4}) == doctest::Approx(S).scale(0));
  CHECK(m.at({3, 5}) == doctest::Approx(S).scale(0));
  CHECK(m.at({3, 2}) == doctest::Approx(S).scale(0));
  CHECK(sent_by_rank(s, 6)[0] == doctest::Approx(S).scale(0));  // rank 0 only folds
}

TEST_CASE("ompi linear all-reduce: n-1 vectors into rank 0, n-1 out") {
  const auto m = bytes_by_pair(coll::ompi_schedule(op_of(OpKind::allreduce, 6, S), "basic_linear"));
  CHECK(m.size() == 10);
  for (std::uint32_t r = 1; r < 6; ++r) {
    CHECK(m.at({r, 0}) == doctest::Approx(S).scale(0));
    CHECK(m.at({0, r}) == doctest::Approx(S).scale(0));
  }
}

TEST_CASE("ompi recursive halving reduce-scatter: (n-1)/n S per rank at n = 8; the fold at n = 6") {
  const auto s8 = coll::ompi_schedule(op_of(OpKind::reducescatter, 8, S), "recursive_halving");
  for (double b : sent_by_rank(s8, 8)) CHECK(b == doctest::Approx(7.0 / 8 * S).scale(0));
  const auto m8 = bytes_by_pair(s8);
  CHECK(m8.at({0, 4}) == doctest::Approx(S / 2).scale(0));  // distance n/2 first
  CHECK(m8.at({0, 1}) == doctest::Approx(S / 8).scale(0));
  // n = 6, blocks b = S/6: virtual 0 = {0,1} owns 2 blocks, virtual 1 = {2,3} 2, then 4, 5 one.
  // mask 2: v0 (rank 1) sends v2, v3's blocks (2) to v2 (rank 4), which sends v0, v1's (4).
  const auto m6 = bytes_by_pair(coll::ompi_schedule(op_of(OpKind::reducescatter, 6, S), "recursive_halving"));
  const double b = S / 6;
  CHECK(m6.at({0, 1}) == doctest::Approx(S).scale(0));
  CHECK(m6.at({1, 4}) == doctest::Approx(2 * b).scale(0));
  CHECK(m6.at({4, 1}) == doctest::Approx(4 * b).scale(0));
  CHECK(m6.at({1, 3}) == doctest::Approx(2 * b).scale(0));  // mask 1: v0 sends v1's 2 blocks
  CHECK(m6.at({3, 1}) == doctest::Approx(2 * b).scale(0));
  CHECK(m6.at({4, 5}) == doctest::Approx(b).scale(0));
  CHECK(m6.at({1, 0}) == doctest::Approx(b).scale(0));  // unfold: rank 0's block
}

TEST_CASE("ompi all-gather bruck, recursive doubling, neighbor exchange, ring: (n-1)/n S per rank") {
  for (std::size_t n : {4u, 6u, 8u}) {
    CAPTURE(n);
    const double nn = static_cast<double>(n);
    for (const std::string a : {"bruck", "recursive_doubling", "neighbor", "ring"}) {
      CAPTURE(a);
      const auto s = coll::ompi_schedule(op_of(OpKind::allgather, n, S), a);
      for (double x : sent_by_rank(s, n)) CHECK(x == doctest::Approx((nn - 1) / nn * S).scale(0));
      for (double x : received_by_rank(s, n)) CHECK(x == doctest::Approx((nn - 1) / nn * S).scale(0));
    }
  }
  // bruck n = 6: to rank - 1 one block, rank - 2 two, rank - 4 two (min(4, 6 - 4)).
  const auto m = bytes_by_pair(coll::ompi_schedule(op_of(OpKind::allgather, 6, S), "bruck"));
  CHECK(m.at({0, 5}) == doctest::Approx(S / 6).scale(0));
  CHECK(m.at({0, 4}) == doctest::Approx(2 * S / 6).scale(0));
  CHECK(m.at({0, 2}) == doctest::Approx(2 * S / 6).scale(0));
  // recursive doubling at n = 6 is bruck (OpenMPI falls back for non-powers of two).
  CHECK(bytes_by_pair(coll::ompi_schedule(op_of(OpKind::allgather, 6, S), "recursive_doubling")) == m);
  // neighbor n = 6: 0 <-> 1 one block, then 0 <-> 5 two, 0 <-> 1 two.
  const auto nb = bytes_by_pair(coll::ompi_schedule(op_of(OpKind::allgather, 6, S), "neighbor"));
  CHECK(nb.at({0, 1}) == doctest::Approx(3 * S / 6).scale(0));
  CHECK(nb.at({0, 5}) == doctest::Approx(2 * S / 6).scale(0));
  CHECK(nb.size() == 12);
}

TEST_CASE("ompi broadcast trees: every rank receives S once, from its OpenMPI parent") {
  for (std::size_t n : {4u, 6u, 8u}) {
    CAPTURE(n);
    for (const auto& a : coll::ompi_algorithms(OpKind::broadcast)) {
      if (a == "scatter_allgather_ring") continue;
      CAPTURE(a);
      const auto s = coll::ompi_schedule(op_of(OpKind::broadcast, n, S), a);
      const auto rx = received_by_rank(s, n);
      CHECK(rx[0] == 0);
      for (std::size_t r = 1; r < n; ++r) CHECK(rx[r] == doctest::Approx(S).scale(0));
    }
  }
  using M = std::map<std::uint32_t, std::uint32_t>;
  // binomial (bmtree): 0 -> 1, 2, 4; 1 -> 3, 5; 2 -> 6; 3 -> 7.
  CHECK(parents(coll::ompi_schedule(op_of(OpKind::broadcast, 8, S), "binomial")) ==
        M{{1, 0}, {2, 0}, {4, 0}, {3, 1}, {5, 1}, {6, 2}, {7, 3}});
  // binary tree (build_tree fanout 2): 0 -> 1, 2; 1 -> 3, 5; 2 -> 4, 6; 3 -> 7.
  CHECK(parents(coll::ompi_schedule(op_of(OpKind::broadcast, 8, S), "binary_tree")) ==
        M{{1, 0}, {2, 0}, {3, 1}, {5, 1}, {4, 2}, {6, 2}, {7, 3}});
  // chain fanout 4 at n = 8: chains [1 2] [3 4] [5 6] [7]; pipeline: 0 -> 1 -> 2 -> 3.
  CHECK(parents(coll::ompi_schedule(op_of(OpKind::broadcast, 8, S), "chain")) ==
        M{{1, 0}, {2, 1}, {3, 0}, {4, 3}, {5, 0}, {6, 5}, {7, 0}});
  CHECK(parents(coll::ompi_schedule(op_of(OpKind::broadcast, 4, S), "pipeline")) == M{{1, 0}, {2, 1}, {3, 2}});
  // knomial radix 4 at n = 8: 0 -> 1, 2, 3, 4; 4 -> 5, 6, 7.
  CHECK(parents(coll::ompi_schedule(op_of(OpKind::broadcast, 8, S), "knomial")) ==
        M{{1, 0}, {2, 0}, {3, 0}, {4, 0}, {5, 4}, {6, 4}, {7, 4}});
  // scatter + ring all-gather: the ring passes every rank, the root included, n-1 blocks.
  const auto sa = coll::ompi_schedule(op_of(OpKind::broadcast, 6, S), "scatter_allgather_ring");
  CHECK(received_by_rank(sa, 6)[0] == doctest::Approx(5 * S / 6).scale(0));
  CHECK(bytes_by_pair(sa).at({0, 4}) == doctest::Approx(2 * S / 6).scale(0));  // blocks 4, 5 in the scatter
}

TEST_CASE("ompi all-to-all: every ordered pair one block (linear, pairwise); bruck forwards") {
  for (std::size_t n : {4u, 6u}) {
    const double b = S / static_cast<double>(n);
    for (const std::string a : {"linear", "pairwise", "linear_sync"}) {
      const auto m = bytes_by_pair(coll::ompi_schedule(op_of(OpKind::alltoall, n, S), a));
      CHECK(m.size() == n * (n - 1));
      for (const auto& e : m) CHECK(e.second == doctest::Approx(b).scale(0));
    }
  }
  // modified bruck n = 6: distance 1: blocks {1,3,5} (3), 2: {2,3} (2), 4: {4,5} (2).
  const auto m = bytes_by_pair(coll::ompi_schedule(op_of(OpKind::alltoall, 6, S), "modified_bruck"));
  CHECK(m.at({0, 1}) == doctest::Approx(3 * S / 6).scale(0));
  CHECK(m.at({0, 2}) == doctest::Approx(2 * S / 6).scale(0));
  CHECK(m.at({0, 4}) == doctest::Approx(2 * S / 6).scale(0));
}

TEST_CASE("ompi schedules on a switch: flow time = the closed form") {
  auto t = topo::make_topology("switch:n=8,bw=1GB/s,lat=0us", "test");
  coll::FlowOptions fo;
  const auto time = [&](OpKind k, std::size_t n, const char* a) {
    const auto op = op_of(k, n, S);
    return coll::evaluate_flow(t, op, coll::ompi_schedule(op, a), fo).time_s;
  };
  const double B = 1e9;
  CHECK(time(OpKind::allreduce, 6, "ring") == doctest::Approx(2.0 * 5 / 6 * S / B).epsilon(1e-6).scale(0));
  // Rabenseifner n = 8: halving S/2 + S/4 + S/8, doubling mirrored.
  CHECK(time(OpKind::allreduce, 8, "rabenseifner") == doctest::Approx(1.75 * S / B).epsilon(1e-6).scale(0));
  // n = 6: fold S/2 + S/2, halving S/2 + S/4, doubling S/4 + S/2, unfold S = 3.5 S/B if the
  // steps ran in lockstep; ranks 4 and 5 take no part in the fold and start halving at once, and
  // their S/4 to rank 0 (eager: sent without waiting for the receive) then shares rank 0's port
  // with the fold: slower, never faster.
  CHECK(time(OpKind::allreduce, 6, "rabenseifner") > 3.5 * S / B);
  // Linear: 5 vectors into rank 0's port, 5 out of it.
  CHECK(time(OpKind::allreduce, 6, "basic_linear") == doctest::Approx(10 * S / B).epsilon(1e-6).scale(0));
  // Binomial broadcast at 8: root sends 3 S at once (3 S / B), then 1 sends 2 (2 S / B), then 3 one.
  CHECK(time(OpKind::broadcast, 8, "binomial") == doctest::Approx(6 * S / B).epsilon(1e-6).scale(0));
  CHECK(time(OpKind::broadcast, 8, "pipeline") == doctest::Approx(7 * S / B).epsilon(1e-6).scale(0));
  CHECK(time(OpKind::alltoall, 8, "pairwise") == doctest::Approx(7.0 / 8 * S / B).epsilon(1e-6).scale(0));
}

TEST_CASE("ompi algorithms not modelled, unknown, or too few ranks: a clear error") {
  CHECK(coll::ompi_unmodelled(OpKind::allreduce, "nonoverlapping", 4).value().find("fixed decision") !=
        std::string::npos);
  CHECK(coll::ompi_unmodelled(OpKind::allreduce, "torus-2d", 4).value() ==
        "'torus-2d' is not an OpenMPI 4.1 allreduce algorithm");
  CHECK_FALSE(coll::ompi_unmodelled(OpKind::alltoall, "pairwise", 4).has_value());
  CHECK_THROWS_WITH_AS(coll::ompi_schedule(op_of(OpKind::broadcast, 4, S), "split_binary_tree"),
                       "--algorithm: OpenMPI broadcast 'split_binary_tree': not modelled yet (issue 14); expected one "
                       "of basic_linear, chain, pipeline, binary_tree, binomial, knomial, scatter_allgather_ring",
                       ConfigError);
  CHECK_THROWS_AS(coll::ompi_schedule(op_of(OpKind::allreduce, 1, S), "ring"), ConfigError);
}

TEST_CASE("buffered sends (OpenMPI eager over TCP): recursive doubling at n = 6 on a two-level tree; connection order") {
  // Three leaves of 2 hosts, host links B, uplinks B/2 (the emulated two-level cluster, 4:1).
  // ompi_coll_base_allreduce_intra_recursivedoubling at n = 6: fold 0->1, 2->3 (S); virtual
  // ranks 1, 3, 4, 5; distance 1: 1<->3 (leaf 0 <-> leaf 1), 4<->5 (in leaf 2); distance 2:
  // 1<->4, 3<->5 (both into leaf 2); unfold 1->0, 3->2. In units u = S/B:
  //  [0, 1]  fold and 4<->5 at B.
  //  [1, 5]  1<->3 and, early, 4->1 and 5->3 (ranks 4, 5 are done with distance 1): leaf 0's
  //          downlink carries 3->1 and 4->1, leaf 1's 1->3 and 5->3, leaf 2's uplink 4->1 and
  //          5->3: every flow B/4 (max-min), S each: 4 u.
  //  Step's rule (a rank waits for its sends too): 1->4 and 3->5 share leaf 2's downlink, B/4
  //  each: [5, 9]; only then the unfold, [9, 10]: 10 u.
  //  Buffered sends: ranks 1 and 3 have received 4->1 / 5->3 already, so they go on to the
  //  unfold at 5 while 1->4 and 3->5 drain: 1->0 takes what 1->4 leaves of host 1's link
  //  (3B/4, done at 5 + 4/3); 1->4 and 3->5 still end at 9: 9 u, rank 4 and 5 last.
  auto t = topo::make_topology("fat_tree:hosts=6,hosts_per_leaf=2,spines=1,bw=1GB/s,uplink_bw=500MB/s,lat=0us", "test");
  const auto op = op_of(OpKind::allreduce, 6, S);
  const auto s = coll::ompi_schedule(op, "recursive_doubling");
  const double u = S / 1e9;
  coll::FlowOptions strict;
  CHECK(coll::evaluate_flow(t, op, s, strict).time_s == doctest::Approx(10 * u).epsilon(1e-6).scale(0));
  coll::FlowOptions buffered;
  buffered.buffered_send_bytes = S;  // every message of the schedule (S) is buffered
  std::map<std::uint32_t, double> last_arrival;  // by receiving rank
  buffered.on_transfer = [&](const coll::TransferRecord& r) {
    last_arrival[r.dst] = std::max(last_arrival[r.dst], r.end.to_seconds());
  };
  CHECK(coll::evaluate_flow(t, op, s, buffered).time_s == doctest::Approx(9 * u).epsilon(1e-6).scale(0));
  CHECK(last_arrival.at(0) == doctest::Approx((5 + 4.0 / 3) * u).epsilon(1e-6).scale(0));
  CHECK(last_arrival.at(4) == doctest::Approx(9 * u).epsilon(1e-6).scale(0));
  // A threshold below the message size keeps Step's rule.
  coll::FlowOptions small;
  small.buffered_send_bytes = S / 2;
  CHECK(coll::evaluate_flow(t, op, s, small).time_s == doctest::Approx(10 * u).epsilon(1e-6).scale(0));
  // One connection per ordered pair, a byte stream: a second message to the same rank waits
  // for the first. Scatter + ring all-gather broadcast at n = 4 on a switch, blocks b = S/4, in
  // units v = b/B: rank 0 issues 0->2 (2b) and 0->1 (b) at once (B/2 each) and its first ring
  // block to 1 behind 0->1: [0, 2] 0->1; [2, 4] 0->2's second b, 0->1 (ring) and 1->2 (ring),
  // B/2 each (rank 0's port, rank 2's port); [4, 5] 2->3 (scatter) and 1->2; then rank 2's
  // ring blocks to 3 queue behind its scatter block, one per v: [5, 6], [6, 7], [7, 8]: 8 v.
  // Step's rule: 2 + 1 + 3 = 6 v. Without the connection order (flows of one pair side by side)
  // it would be 16 v.
  auto sw = topo::make_topology("switch:n=4,bw=1GB/s,lat=0us", "test");
  const auto bop = op_of(OpKind::broadcast, 4, S);
  const auto sag = coll::ompi_schedule(bop, "scatter_allgather_ring");
  const double v = S / 4 / 1e9;
  CHECK(coll::evaluate_flow(sw, bop, sag, strict).time_s == doctest::Approx(6 * v).epsilon(1e-6).scale(0));
  buffered.on_transfer = nullptr;
  CHECK(coll::evaluate_flow(sw, bop, sag, buffered).time_s == doctest::Approx(8 * v).epsilon(1e-6).scale(0));
  // A power of two in lockstep (n = 4 on a switch) is the same either way: 2 S/B.
  const auto op4 = op_of(OpKind::allreduce, 4, S);
  CHECK(coll::evaluate_flow(sw, op4, coll::ompi_schedule(op4, "recursive_doubling"), buffered).time_s ==
        doctest::Approx(2 * u).epsilon(1e-6).scale(0));
}
