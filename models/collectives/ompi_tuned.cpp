// OpenMPI 4.1 coll/base algorithms as schedules (see ompi_tuned.hpp). Each builder names the
// OpenMPI function it follows (ompi/mca/coll/base/coll_base_<collective>.c, v4.1.x) and what
// of it the schedule keeps: who sends how many bytes to whom, and what must have arrived
// before a rank sends. Local copies and reductions are free here (CostParams gamma applies as
// for every schedule); segment size 0 (forced algorithms, default MCA) = one message each.
#include "models/collectives/ompi_tuned.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>

#include "models/collectives/detail.hpp"
#include "sim/error.hpp"

namespace shardsim::coll {
namespace {

using U = std::uint32_t;
using detail::xfer;

struct Builder {
  Schedule s;
  Step& step(const char* label, double reduce_bytes = 0) {
    Step st;
    st.label = label;
    st.reduce_bytes = reduce_bytes;
    s.steps.push_back(std::move(st));
    return s.steps.back();
  }
};

std::vector<U> identity(std::size_t n) {
  std::vector<U> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<U>(i);
  return v;
}

// Largest power of two <= n, and the ranks folded away (n - pof2).
std::size_t pof2_of(std::size_t n) { return std::bit_floor(n); }

// Fold used by recursive doubling and recursive halving (Rabenseifner has its own) for n not a power of
// two: the first 2 rem ranks pair up, even rank 2i sends its whole vector to 2i + 1, which
// reduces it and takes virtual rank i; rank r >= 2 rem is virtual rank r - rem.
U real_rank(std::size_t v, std::size_t rem) { return static_cast<U>(v < rem ? 2 * v + 1 : v + rem); }

void fold(Builder& b, std::size_t rem, double bytes) {
  if (rem == 0) return;
  auto& st = b.step("fold to a power of two", bytes);
  for (std::size_t i = 0; i < rem; ++i) st.transfers.push_back(xfer(static_cast<U>(2 * i), static_cast<U>(2 * i + 1), bytes));
}

void unfold(Builder& b, std::size_t rem, double bytes) {
  if (rem == 0) return;
  auto& st = b.step("unfold");
  for (std::size_t i = 0; i < rem; ++i) st.transfers.push_back(xfer(static_cast<U>(2 * i + 1), static_cast<U>(2 * i), bytes));
}

// ompi_coll_base_allreduce_intra_ring (and _ring_segmented, which calls it when
// count < size x segcount, always so with segment size 0): n-1 reduce-scatter steps of one
// block to rank + 1, then n-1 all-gather steps of one block to rank + 1.
void ring_phase(Builder& b, std::size_t n, double block, bool reduce, const char* label) {
  b.s.steps.push_back(detail::ring_step(identity(n), +1, block, reduce ? block : 0.0, static_cast<U>(n - 1), label));
}

// ompi_coll_base_allreduce_intra_recursivedoubling: fold, log2(pof2) exchanges of the whole
// vector with virtual partner v xor 2^k (distance doubling), unfold.
void allreduce_recursive_doubling(Builder& b, std::size_t n, double S) {
  const std::size_t p = pof2_of(n), rem = n - p;
  fold(b, rem, S);
  for (std::size_t mask = 1; mask < p; mask <<= 1) {
    auto& st = b.step("recursive doubling", S);
    for (std::size_t v = 0; v < p; ++v) st.transfers.push_back(xfer(real_rank(v, rem), real_rank(v ^ mask, rem), S));
  }
  unfold(b, rem, S);
}

// ompi_coll_base_allreduce_intra_redscat_allgather (Rabenseifner). Its fold is not the one of
// recursive doubling: in each of the first rem pairs the even rank sends the right half to the
// odd one while the odd rank sends the left half back (ompi_coll_base_sendrecv), both reduce
// their half, then the odd rank sends its reduced right half to the even rank (PML send), and
// the EVEN rank goes on as virtual rank i (dest = vdest < rem ? 2 vdest : vdest + rem). Then
// reduce-scatter by recursive vector halving with distance DOUBLING (step k: partner v xor 2^k,
// S/2^(k+1)); all-gather by recursive vector doubling with distance halving; finally "Step 4":
// the even rank sends the whole result to the odd one.
U real_rank_even(std::size_t v, std::size_t rem) { return static_cast<U>(v < rem ? 2 * v : v + rem); }

void allreduce_rabenseifner(Builder& b, std::size_t n, double S) {
  const std::size_t p = pof2_of(n), rem = n - p;
  if (rem > 0) {
    auto& halves = b.step("fold: exchange halves", S / 2);
    for (std::size_t i = 0; i < rem; ++i) {
      halves.transfers.push_back(xfer(static_cast<U>(2 * i), static_cast<U>(2 * i + 1), S / 2));
      halves.transfers.push_back(xfer(static_cast<U>(2 * i + 1), static_cast<U>(2 * i), S / 2));
    }
    auto& back = b.step("fold: reduced half to the even rank", S / 2);
    for (std::size_t i = 0; i < rem; ++i) back.transfers.push_back(xfer(static_cast<U>(2 * i + 1), static_cast<U>(2 * i), S / 2));
  }
  double piece = S;
  for (std::size_t mask = 1; mask < p; mask <<= 1) {
    piece /= 2;
    auto& st = b.step("recursive halving", piece);
    for (std::size_t v = 0; v < p; ++v) st.transfers.push_back(xfer(real_rank_even(v, rem), real_rank_even(v ^ mask, rem), piece));
  }
  for (std::size_t mask = p >> 1; mask > 0; mask >>= 1) {
    auto& st = b.step("recursive doubling");
    for (std::size_t v = 0; v < p; ++v) st.transfers.push_back(xfer(real_rank_even(v, rem), real_rank_even(v ^ mask, rem), piece));
    piece *= 2;
  }
  if (rem > 0) {
    auto& st = b.step("unfold to the odd rank");
    for (std::size_t i = 0; i < rem; ++i) st.transfers.push_back(xfer(static_cast<U>(2 * i), static_cast<U>(2 * i + 1), S));
  }
}

// ompi_coll_base_allreduce_intra_basic_linear: ompi_coll_base_reduce_intra_basic_linear to
// rank 0 (every other rank sends its vector; the root reduces them in turn), then
// ompi_coll_base_bcast_intra_basic_linear (the root isends the result to every rank at once).
void allreduce_linear(Builder& b, std::size_t n, double S) {
  auto& in = b.step("linear reduce", S);
  for (std::size_t r = 1; r < n; ++r) in.transfers.push_back(xfer(static_cast<U>(r), 0, S));
  auto& out = b.step("linear bcast");
  for (std::size_t r = 1; r < n; ++r) out.transfers.push_back(xfer(0, static_cast<U>(r), S));
}

// ompi_coll_base_reduce_scatter_intra_basic_recursivehalving: fold (the whole vector), then
// with tmp_size = pof2 virtual ranks whose blocks are tmp_rcounts (a folded pair owns two
// blocks), mask = pof2/2 down to 1: exchange with virtual partner v xor mask; the lower one
// sends [send_index + mask, last_index), the upper one [send_index, recv_index); both
// reduce what they receive; finally the odd rank of a folded pair sends its partner's block.
void reducescatter_recursive_halving(Builder& b, std::size_t n, double S) {
  const std::size_t p = pof2_of(n), rem = n - p;
  const double block = S / static_cast<double>(n);
  fold(b, rem, S);
  std::vector<double> counts(p);
  for (std::size_t i = 0; i < p; ++i) counts[i] = (i < rem ? 2.0 : 1.0) * block;
  const auto sum = [&](std::size_t from, std::size_t to) {
    double x = 0;
    for (std::size_t i = from; i < to; ++i) x += counts[i];
    return x;
  };
  std::vector<std::size_t> send_index(p, 0), recv_index(p, 0), last_index(p, p);
  for (std::size_t mask = p >> 1; mask > 0; mask >>= 1) {
    auto& st = b.step("recursive halving");
    double most = 0;
    for (std::size_t v = 0; v < p; ++v) {
      const std::size_t peer = v ^ mask;
      double send = 0;
      if (v < peer) {
        send_index[v] = recv_index[v] + mask;
        send = sum(send_index[v], last_index[v]);
        most = std::max(most, sum(recv_index[v], send_index[v]));
      } else {
        recv_index[v] = send_index[v] + mask;
        send = sum(send_index[v], recv_index[v]);
        most = std::max(most, sum(recv_index[v], last_index[v]));
      }
      st.transfers.push_back(xfer(real_rank(v, rem), real_rank(peer, rem), send));
      send_index[v] = recv_index[v];
      last_index[v] = recv_index[v] + mask;
    }
    st.reduce_bytes = most;
  }
  unfold(b, rem, block);
}

// ompi_coll_base_allgather_intra_bruck: step k (distance 2^k): send to rank - 2^k, receive from
// rank + 2^k, min(2^k, n - 2^k) blocks (then a local rotation, free here).
void allgather_bruck(Builder& b, std::size_t n, double block) {
  for (std::size_t d = 1; d < n; d <<= 1) {
    auto& st = b.step("bruck");
    const double bytes = static_cast<double>(std::min(d, n - d)) * block;
    for (std::size_t r = 0; r < n; ++r) st.transfers.push_back(xfer(static_cast<U>(r), static_cast<U>((r + n - d) % n), bytes));
  }
}

// ompi_coll_base_allgather_intra_recursivedoubling: power-of-two n only (else OpenMPI calls
// the bruck algorithm): step k exchanges the 2^k blocks held with rank xor 2^k.
void allgather_recursive_doubling(Builder& b, std::size_t n, double block) {
  if (!detail::is_power_of_two(n)) return allgather_bruck(b, n, block);
  for (std::size_t mask = 1; mask < n; mask <<= 1) {
    auto& st = b.step("recursive doubling");
    for (std::size_t r = 0; r < n; ++r) {
      st.transfers.push_back(xfer(static_cast<U>(r), static_cast<U>(r ^ mask), static_cast<double>(mask) * block));
    }
  }
}

// ompi_coll_base_allgather_intra_neighborexchange: odd n calls the ring. Even n: neighbor[0] =
// rank + 1 for even ranks (rank - 1 for odd ones), neighbor[1] the other side; step 0
// exchanges one block with neighbor[0], steps i = 1 .. n/2 - 1 two blocks with
// neighbor[i % 2].
void allgather_neighbor(Builder& b, std::size_t n, double block) {
  if (n % 2 != 0) return ring_phase(b, n, block, false, "ring (neighbor exchange, odd n)");
  const auto neighbor = [n](std::size_t r, std::size_t side) {
    const bool even = r % 2 == 0;
    const bool up = (side == 0) == even;
    return static_cast<U>(up ? (r + 1) % n : (r + n - 1) % n);
  };
  for (std::size_t i = 0; i < n / 2; ++i) {
    auto& st = b.step("neighbor exchange");
    for (std::size_t r = 0; r < n; ++r) st.transfers.push_back(xfer(static_cast<U>(r), neighbor(r, i % 2), i == 0 ? block : 2 * block));
  }
}

// A broadcast tree (root 0, no segmentation): ompi_coll_base_bcast_intra_generic receives
// the message from the parent, then isends it to every child at once and waits for all. So
// the step of a send is the depth of its sender.
void tree_bcast(Builder& b, const std::vector<std::vector<U>>& children, double S, const char* label) {
  std::vector<U> level{0};
  while (!level.empty()) {
    std::vector<U> next;
    Step st;
    st.label = label;
    for (U v : level) {
      for (U c : children[v]) {
        st.transfers.push_back(xfer(v, c, S));
        next.push_back(c);
      }
    }
    if (!st.transfers.empty()) b.s.steps.push_back(std::move(st));
    level = std::move(next);
  }
}

// ompi_coll_base_topo_build_chain(fanout, comm, root 0): the n-1 other ranks in `fanout`
// chains of consecutive ranks, the first (n-1) % fanout chains one longer; the root sends to
// every chain head.
std::vector<std::vector<U>> chain_tree(std::size_t n, std::size_t fanout) {
  std::vector<std::vector<U>> ch(n);
  const std::size_t chains = std::min(fanout, n - 1);
  const std::size_t len = (n - 1) / chains, mark = (n - 1) % chains;
  U next = 1;
  for (std::size_t c = 0; c < chains; ++c) {
    U prev = 0;
    for (std::size_t k = 0; k < len + (c < mark ? 1 : 0); ++k) {
      ch[prev].push_back(next);
      prev = next++;
    }
  }
  return ch;
}

// ompi_coll_base_topo_build_tree(fanout, comm, root 0): rank r at level L (level 0 = {0},
// level L has fanout^L ranks) has children r + fanout^L x (i + 1), i < fanout, below n.
std::vector<std::vector<U>> kary_tree(std::size_t n, std::size_t fanout) {
  std::vector<std::vector<U>> ch(n);
  for (std::size_t r = 0; r < n; ++r) {
    std::size_t level_start = 0, width = 1, delta = 1;
    while (r >= level_start + width) {
      level_start += width;
      width *= fanout;
      delta *= fanout;
    }
    for (std::size_t i = 0; i < fanout; ++i) {
      const std::size_t c = r + delta * (i + 1);
      if (c >= n) break;
      ch[r].push_back(static_cast<U>(c));
    }
  }
  return ch;
}

// ompi_coll_base_topo_build_bmtree (root 0): the children of v are v xor m for the powers of
// two m from next_poweroftwo(v) (1 for the root) below n.
std::vector<std::vector<U>> binomial_tree(std::size_t n) {
  std::vector<std::vector<U>> ch(n);
  for (std::size_t v = 0; v < n; ++v) {
    std::size_t m = v == 0 ? 1 : std::bit_ceil(v + 1);
    for (; m < n; m <<= 1) {
      if ((v ^ m) < n) ch[v].push_back(static_cast<U>(v ^ m));
    }
  }
  return ch;
}

// ompi_coll_base_topo_build_kmtree(radix): k-nomial tree (root 0): v's parent is
// v - v mod (radix m) for the smallest m = radix^j with v mod (radix m) != 0; its children are
// v + i m' for i = 1 .. radix-1 and the powers m' of radix below that m.
std::vector<std::vector<U>> knomial_tree(std::size_t n, std::size_t radix) {
  std::vector<std::vector<U>> ch(n);
  for (std::size_t v = 0; v < n; ++v) {
    std::size_t m = 1;
    while (m < n && v % (radix * m) == 0) m *= radix;
    for (std::size_t mm = 1; mm < m; mm *= radix) {
      for (std::size_t i = 1; i < radix; ++i) {
        const std::size_t c = v + i * mm;
        if (c < n) ch[v].push_back(static_cast<U>(c));
      }
    }
  }
  return ch;
}

// ompi_coll_base_bcast_intra_scatter_allgather_ring: binomial scatter of the n blocks from
// the root (a holder v sends to v + m the blocks [v + m, min(v + 2m, n)), largest m first,
// one blocking send after the other), then a ring all-gather of one block per step.
void bcast_scatter_allgather_ring(Builder& b, std::size_t n, double S) {
  const double block = S / static_cast<double>(n);
  for (std::size_t m = std::bit_floor(n - 1); m > 0; m >>= 1) {
    auto& st = b.step("binomial scatter");
    for (std::size_t v = 0; v + m < n; v += 2 * m) {
      const std::size_t blocks = std::min(v + 2 * m, n) - (v + m);
      st.transfers.push_back(xfer(static_cast<U>(v), static_cast<U>(v + m), static_cast<double>(blocks) * block));
    }
  }
  ring_phase(b, n, block, false, "ring all-gather");
}

// ompi_coll_base_alltoall_intra_basic_linear: every rank posts all its irecvs and isends at
// once. ompi_coll_base_alltoall_intra_linear_sync with the default
// coll_tuned_alltoall_max_requests = 0 keeps every request in flight too: the same schedule.
void alltoall_linear(Builder& b, std::size_t n, double block) {
  auto& st = b.step("linear");
  for (std::size_t r = 0; r < n; ++r) {
    for (std::size_t k = 1; k < n; ++k) st.transfers.push_back(xfer(static_cast<U>(r), static_cast<U>((r + k) % n), block));
  }
}

// ompi_coll_base_alltoall_intra_pairwise: step k = 1 .. n-1: sendrecv of one block to rank + k
// from rank - k.
void alltoall_pairwise(Builder& b, std::size_t n, double block) {
  for (std::size_t k = 1; k < n; ++k) {
    auto& st = b.step("pairwise");
    for (std::size_t r = 0; r < n; ++r) st.transfers.push_back(xfer(static_cast<U>(r), static_cast<U>((r + k) % n), block));
  }
}

// ompi_coll_base_alltoall_intra_bruck (modified Bruck): step k (distance 2^k): send to
// rank + 2^k the blocks whose index has bit k set, receive as many from rank - 2^k.
void alltoall_bruck(Builder& b, std::size_t n, double block) {
  for (std::size_t d = 1; d < n; d <<= 1) {
    std::size_t blocks = 0;
    for (std::size_t i = 0; i < n; ++i) blocks += (i & d) != 0 ? 1 : 0;
    auto& st = b.step("modified bruck");
    for (std::size_t r = 0; r < n; ++r) {
      st.transfers.push_back(xfer(static_cast<U>(r), static_cast<U>((r + d) % n), static_cast<double>(blocks) * block));
    }
  }
}

struct Entry {
  OpKind kind;
  const char* name;
  const char* unmodelled;  // nullptr: modelled
};

// OpenMPI 4.1 ids (analysis/backends/mpi/launch.cpp lists them with their MCA values).
constexpr Entry kEntries[] = {
    {OpKind::allreduce, "basic_linear", nullptr},
    {OpKind::allreduce, "nonoverlapping", "a tuned reduce then a tuned bcast, each by its own fixed decision"},
    {OpKind::allreduce, "recursive_doubling", nullptr},
    {OpKind::allreduce, "ring", nullptr},
    {OpKind::allreduce, "segmented_ring", nullptr},
    {OpKind::allreduce, "rabenseifner", nullptr},
    {OpKind::reducescatter, "non_overlapping", "a tuned reduce then a scatterv, each by its own decision"},
    {OpKind::reducescatter, "recursive_halving", nullptr},
    {OpKind::reducescatter, "ring", nullptr},
    {OpKind::reducescatter, "butterfly", "not modelled yet (issue 14)"},
    {OpKind::allgather, "linear", "a tuned gather then a tuned bcast, each by its own fixed decision"},
    {OpKind::allgather, "bruck", nullptr},
    {OpKind::allgather, "recursive_doubling", nullptr},
    {OpKind::allgather, "ring", nullptr},
    {OpKind::allgather, "neighbor", nullptr},
    {OpKind::allgather, "two_proc", "two ranks only"},
    {OpKind::broadcast, "basic_linear", nullptr},
    {OpKind::broadcast, "chain", nullptr},
    {OpKind::broadcast, "pipeline", nullptr},
    {OpKind::broadcast, "split_binary_tree", "not modelled yet (issue 14)"},
    {OpKind::broadcast, "binary_tree", nullptr},
    {OpKind::broadcast, "binomial", nullptr},
    {OpKind::broadcast, "knomial", nullptr},
    {OpKind::broadcast, "scatter_allgather", "not modelled yet (issue 14)"},
    {OpKind::broadcast, "scatter_allgather_ring", nullptr},
    {OpKind::alltoall, "linear", nullptr},
    {OpKind::alltoall, "pairwise", nullptr},
    {OpKind::alltoall, "modified_bruck", nullptr},
    {OpKind::alltoall, "linear_sync", nullptr},
    {OpKind::alltoall, "two_proc", "two ranks only"},
};

}  // namespace

std::vector<std::string> ompi_algorithms(OpKind kind) {
  std::vector<std::string> out;
  for (const auto& e : kEntries) {
    if (e.kind == kind && e.unmodelled == nullptr) out.emplace_back(e.name);
  }
  return out;
}

std::string ompi_algorithm_name(OpKind kind, int id, const std::string& where) {
  int k = 0;
  for (const auto& e : kEntries) {
    if (e.kind == kind && ++k == id) return e.name;
  }
  throw ConfigError(where, fmt::format("OpenMPI {} algorithm id {}", to_string(kind), id),
                    fmt::format("an id from 1 to {}", k));
}

std::optional<std::string> ompi_unmodelled(OpKind kind, const std::string& algorithm, std::size_t n) {
  for (const auto& e : kEntries) {
    if (e.kind != kind || algorithm != e.name) continue;
    if (e.unmodelled != nullptr) return fmt::format("OpenMPI {} '{}': {}", to_string(kind), algorithm, e.unmodelled);
    if (n < 2) return fmt::format("OpenMPI {} '{}' needs at least 2 ranks, got {}", to_string(kind), algorithm, n);
    return std::nullopt;
  }
  return fmt::format("'{}' is not an OpenMPI 4.1 {} algorithm", algorithm, to_string(kind));
}

Schedule ompi_schedule(const CollectiveOp& op, const std::string& algorithm) {
  const std::size_t n = op.group.size();
  if (auto why = ompi_unmodelled(op.kind, algorithm, n)) {
    std::string names;
    for (const auto& a : ompi_algorithms(op.kind)) names += (names.empty() ? "" : ", ") + a;
    throw ConfigError("--algorithm", *why, "one of " + names);
  }
  if (op.kind == OpKind::broadcast && op.root != 0) {
    throw ConfigError("collective root", std::to_string(op.root), "root 0 (shardsim-mpi-bench broadcasts from rank 0)");
  }
  Builder b;
  b.s.algorithm = "ompi:" + algorithm;
  b.s.ranks = n;
  const double S = static_cast<double>(op.size_bytes), block = S / static_cast<double>(n);
  const std::string& a = algorithm;
  switch (op.kind) {
    case OpKind::allreduce:
      if (a == "ring" || a == "segmented_ring") {
        ring_phase(b, n, block, true, "ring reduce-scatter");
        ring_phase(b, n, block, false, "ring all-gather");
      } else if (a == "recursive_doubling") {
        allreduce_recursive_doubling(b, n, S);
      } else if (a == "rabenseifner") {
        allreduce_rabenseifner(b, n, S);
      } else {
        allreduce_linear(b, n, S);
      }
      break;
    case OpKind::reducescatter:
      // ompi_coll_base_reduce_scatter_intra_ring: n-1 steps, block to rank + 1, reduced.
      if (a == "ring") ring_phase(b, n, block, true, "ring reduce-scatter");
      else reducescatter_recursive_halving(b, n, S);
      break;
    case OpKind::allgather:
      // ompi_coll_base_allgather_intra_ring: n-1 steps, block to rank + 1.
      if (a == "ring") ring_phase(b, n, block, false, "ring all-gather");
      else if (a == "bruck") allgather_bruck(b, n, block);
      else if (a == "recursive_doubling") allgather_recursive_doubling(b, n, block);
      else allgather_neighbor(b, n, block);
      break;
    case OpKind::broadcast:
      if (a == "basic_linear") tree_bcast(b, chain_tree(n, n - 1), S, "linear");
      // ompi_coll_base_bcast_intra_chain with coll_tuned_bcast_algorithm_chain_fanout = 4
      // (ompi_coll_tuned_init_chain_fanout); _pipeline is the chain of fanout 1.
      else if (a == "chain") tree_bcast(b, chain_tree(n, 4), S, "chain");
      else if (a == "pipeline") tree_bcast(b, chain_tree(n, 1), S, "pipeline");
      else if (a == "binary_tree") tree_bcast(b, kary_tree(n, 2), S, "binary tree");
      else if (a == "binomial") tree_bcast(b, binomial_tree(n), S, "binomial tree");
      // coll_tuned_bcast_algorithm_knomial_radix = 4 (default).
      else if (a == "knomial") tree_bcast(b, knomial_tree(n, 4), S, "knomial tree");
      else bcast_scatter_allgather_ring(b, n, S);
      break;
    case OpKind::alltoall:
      if (a == "linear" || a == "linear_sync") alltoall_linear(b, n, block);
      else if (a == "pairwise") alltoall_pairwise(b, n, block);
      else alltoall_bruck(b, n, block);
      break;
    case OpKind::reduce:
    case OpKind::sendrecv:
      break;  // no OpenMPI entry has these kinds: ompi_unmodelled rejected them
  }
  return b.s;
}

}  // namespace shardsim::coll
