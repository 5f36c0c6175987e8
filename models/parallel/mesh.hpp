#pragma once
// The device mesh (DESIGN 8): five named parallel axes and the rank layout over them.
//
// Axes: tp (tensor), cp (context), ep (expert), dp (data), pp (pipeline). Their product is
// the number of devices used. Every axis is a real factor of the device count here: ep is
// not carved out of dp, so the data-parallel group of the dense (non-expert) weights is the
// ep x dp (x cp) product, and Megatron-LM's `data_parallel_size` equals dp x ep of this mesh.
//
// Rank order (Megatron-LM, megatron/core/parallel_state.py: initialize_model_parallel(...,
// order="tp-cp-ep-dp-pp") and RankGenerator / generate_masked_orthogonal_rank_groups): the
// order lists axes fastest first, so with the default
//     rank = tp_i + tp (cp_i + cp (ep_i + ep (dp_i + dp pp_i)))
// tp neighbours are adjacent ranks (inside one NVSwitch node), pp is the slowest axis.
// Megatron's docstring example (16 GPUs, tp=2, pp=4, hence dp=2) gives tp groups [0,1],
// [2,3], ...; dp groups [0,2], [1,3], [4,6], ...; pp groups [0,4,8,12], [1,5,9,13], ...
// (tests/models/parallel/test_mesh.cpp checks exactly these). Newer Megatron-Core builds the
// expert groups with a second generator ("tp-ep-dp-pp" over the expert sizes); with cp = 1
// it yields the same ep groups as this order.
//
// Groups: a group over a set of axes holds the ranks that differ only in those axes. Groups
// are numbered as Megatron numbers them (the other axes' coordinates, fastest first); a
// group's ranks are listed fastest axis first. ProcessGroup::id = (axis mask << 32) | index:
// stable for a given mesh and unique among all its groups.
//
// GSPMD-style meshes (Xu et al. 2021, "GSPMD"; JAX `Mesh(devices.reshape(64, 16),
// ("data", "model"))`): names are written slowest first, the last one fastest (row-major
// reshape). Known names map onto the axes: data -> dp, model -> tp, expert -> ep,
// seq -> cp, stage -> pp.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace shardsim::parallel {

enum class Axis : std::uint8_t { tp, cp, ep, dp, pp };
inline constexpr std::array<Axis, 5> kAxes = {Axis::tp, Axis::cp, Axis::ep, Axis::dp, Axis::pp};
const char* to_string(Axis a);

/// Sizes of the five axes (each >= 1).
struct MeshSizes {
  std::uint64_t dp = 1, tp = 1, pp = 1, cp = 1, ep = 1;
  [[nodiscard]] std::uint64_t get(Axis a) const;
  void set(Axis a, std::uint64_t v);
  [[nodiscard]] std::uint64_t product() const { return dp * tp * pp * cp * ep; }
  /// "dp=16,tp=8,pp=8" (axes of size 1 other than dp left out; dp always shown).
  [[nodiscard]] std::string str() const;
  friend bool operator==(const MeshSizes&, const MeshSizes&) = default;
};

struct ProcessGroup {
  std::uint64_t id = 0;
  std::string axes;                  ///< "tp", "ep-dp", ... (mesh order, fastest first)
  std::vector<std::uint32_t> ranks;  ///< fastest axis first
};

class Mesh {
 public:
  /// Megatron-LM's default order "tp-cp-ep-dp-pp".
  static std::vector<Axis> default_order();

  /// `order` lists all five axes, fastest first (a permutation). Throws ConfigError (naming
  /// `where`) for a zero size, a product above 2^31 or an order that is not a permutation.
  explicit Mesh(MeshSizes sizes, std::vector<Axis> order = default_order(), const std::string& where = "mesh");

  [[nodiscard]] const MeshSizes& sizes() const { return sizes_; }
  [[nodiscard]] std::uint64_t size(Axis a) const { return sizes_.get(a); }
  [[nodiscard]] std::uint64_t devices() const { return devices_; }
  [[nodiscard]] const std::vector<Axis>& order() const { return order_; }
  /// Distance in ranks between neighbours along `a`.
  [[nodiscard]] std::uint64_t stride(Axis a) const;
  /// "tp-cp-ep-dp-pp".
  [[nodiscard]] std::string order_str() const;

  /// Coordinate of `rank` on `a`. O(1).
  [[nodiscard]] std::uint64_t coord(std::uint64_t rank, Axis a) const;
  /// Rank of a coordinate (indexed by Axis value). O(5).
  [[nodiscard]] std::uint64_t rank(const std::array<std::uint64_t, 5>& coords) const;

  /// Number of groups over `axes` (= devices / product of their sizes).
  [[nodiscard]] std::uint64_t group_count(const std::vector<Axis>& axes) const;
  /// The `index`-th group over `axes` in Megatron's numbering. Throws ConfigError for an
  /// index out of range or an empty / repeated axis list. O(group size).
  [[nodiscard]] ProcessGroup group(const std::vector<Axis>& axes, std::uint64_t index) const;
  [[nodiscard]] ProcessGroup group(Axis a, std::uint64_t index) const { return group(std::vector<Axis>{a}, index); }
  /// The group over `axes` that holds `rank`.
  [[nodiscard]] ProcessGroup group_of(const std::vector<Axis>& axes, std::uint64_t rank) const;
  /// All groups over `axes`, by index. O(devices).
  [[nodiscard]] std::vector<ProcessGroup> groups(const std::vector<Axis>& axes) const;

 private:
  MeshSizes sizes_;
  std::vector<Axis> order_;
  std::array<std::uint64_t, 5> stride_{};  ///< by Axis value
  std::uint64_t devices_ = 1;
};

/// A parsed --mesh: sizes, order, and the GSPMD names when the mesh was written that way.
struct MeshSpec {
  MeshSizes sizes;
  std::vector<Axis> order = Mesh::default_order();
  bool dp_given = false;
  /// GSPMD names as written (slowest first) with their axes; empty for dp/tp/... meshes.
  std::vector<std::pair<std::string, Axis>> gspmd_names;
  [[nodiscard]] Mesh mesh(const std::string& where = "--mesh") const { return Mesh(sizes, order, where); }
};

/// Parses "dp=16,tp=8,pp=8[,cp=2,ep=4][,order=tp-cp-ep-dp-pp]" or a GSPMD mesh
/// "data=64,model=16" for `devices` devices. An omitted dp is devices / (tp pp cp ep).
/// devices = 0: no device count is known; the mesh as written is the count (dp required).
/// Errors (ConfigError naming `where`): unknown or repeated key, a size that is not a positive
/// integer, GSPMD names mixed with dp/tp/..., sizes that do not divide the device count when
/// dp is derived, a product that differs from the device count (both numbers named), a bad
/// order.
MeshSpec parse_mesh(const std::string& text, std::uint64_t devices, const std::string& where = "--mesh");

/// Parses an order "tp-cp-ep-dp-pp" (fastest first); axes of size 1 may be left out (they
/// are appended in default order), axes larger than 1 may not (as Megatron's RankGenerator).
std::vector<Axis> parse_order(const std::string& text, const MeshSizes& sizes, const std::string& where);

/// What the planner may choose: 0 means unconstrained.
struct FactorConstraints {
  std::uint64_t heads = 0;      ///< tp must divide it
  std::uint64_t kv_heads = 0;   ///< tp must divide it
  std::uint64_t layers = 0;     ///< pp must divide it
  std::uint64_t experts = 0;    ///< ep must divide it; 0 = dense model, ep = 1
  std::uint64_t seq = 0;        ///< cp must divide it
  std::uint64_t max_tp = 0, max_pp = 0, max_cp = 0, max_ep = 0;
};

/// Every (dp, tp, pp, cp, ep) with product `devices` that meets `c`, ordered by tp, then pp,
/// cp, ep (ascending; dp follows). With no limits, the count is prod over the prime powers
/// q^a of devices of C(a + 3, 3) for a dense model (ep = 1) and C(a + 4, 4) when `experts` is
/// a multiple of `devices` (ep free). O(d(devices)^4) divisor checks.
std::vector<MeshSizes> enumerate_factorizations(std::uint64_t devices, const FactorConstraints& c = {});

}  // namespace shardsim::parallel
