#pragma once
// Self-describing topology builders (STYLE 4). Each builder registers a name, a one-line
// description, a parameter schema and a factory; this one table drives the JSON loader, the
// inline spec parser (`torus:dims=8x8,bw=100GB/s,lat=1us`) and `shardsim list topologies`.
//
// A builder reads its parameters through `Params`, which checks them against the schema:
// unknown keys, missing required keys and values of the wrong type are ConfigErrors naming
// the source (file or spec) and the JSON pointer of the key, e.g. "topo.json: /bw".
// Values are accepted as JSON values or as the strings of an inline spec; sizes, rates and
// times go through sim/units.hpp (a bare JSON number is not a rate or a time).
#include <nlohmann/json.hpp>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "sim/registry.hpp"
#include "topologies/topology.hpp"

namespace shardsim::topo {

enum class ParamType : std::uint8_t {
  integer,   ///< a whole number >= min ("8" or 8)
  rate,      ///< bytes per second with a unit ("100GB/s", "400Gb/s")
  time,      ///< seconds with a unit ("1us")
  boolean,   ///< true/false, 1/0
  choice,    ///< one of `choices`
  dims,      ///< torus dimensions: [32,32] or "32x32", each >= 1
  flags,     ///< one boolean for all dimensions or one per dimension: true, [1,0], "1x0"
  topology,  ///< a nested topology: a JSON object, or a preset name / inline spec / .json path
  json,      ///< raw JSON (arrays of custom nodes and links); JSON input only
};
const char* to_string(ParamType t);

struct ParamSpec {
  ParamSpec(std::string k, ParamType t, std::string u, std::optional<std::string> def, std::string d,
            std::vector<std::string> ch = {}, long minimum = 1)
      : key(std::move(k)), type(t), unit(std::move(u)), default_text(std::move(def)), doc(std::move(d)),
        min(minimum), choices(std::move(ch)) {}
  std::string key;
  ParamType type = ParamType::integer;
  std::string unit;                         ///< for docs: "B/s", "s", "GPUs", ...
  std::optional<std::string> default_text;  ///< inline-syntax default; nullopt = required
  std::string doc;
  long min = 1;                             ///< integers only
  std::vector<std::string> choices;         ///< choice only
};

/// Where a parameter object came from: `source` is a file path, a spec or a preset name;
/// `pointer` the JSON pointer of the object inside it ("" for the root).
struct ParamContext {
  std::string source;
  std::string pointer;
  /// "<source>: <pointer>/<key>"
  [[nodiscard]] std::string where(const std::string& key) const;
};

struct BuilderInfo;

/// Checked access to one builder's parameters. The constructor rejects unknown keys and
/// missing required ones; getters convert (defaults applied) and record the effective value
/// in `effective()`.
class Params {
 public:
  Params(const BuilderInfo& b, nlohmann::json obj, ParamContext ctx);

  [[nodiscard]] long integer(const std::string& key);
  [[nodiscard]] double rate_Bps(const std::string& key);
  [[nodiscard]] double seconds(const std::string& key);
  [[nodiscard]] bool boolean(const std::string& key);
  [[nodiscard]] std::string choice(const std::string& key);
  [[nodiscard]] std::vector<int> dims(const std::string& key);
  /// One flag per dimension (`n` of them); a single value applies to all.
  [[nodiscard]] std::vector<bool> flags(const std::string& key, std::size_t n);
  [[nodiscard]] Topology topology(const std::string& key);
  [[nodiscard]] const nlohmann::json& json(const std::string& key);
  [[nodiscard]] LinkClass link_class(const std::string& key);

  [[nodiscard]] const ParamContext& context() const { return ctx_; }
  [[nodiscard]] std::string where(const std::string& key) const { return ctx_.where(key); }
  /// The effective configuration: builder, the given values and the defaults used.
  [[nodiscard]] const nlohmann::json& effective() const { return effective_; }

 private:
  const ParamSpec& spec(const std::string& key) const;
  /// The given value, or the default as a JSON string; records it in effective_.
  nlohmann::json value(const std::string& key);

  const BuilderInfo& builder_;
  nlohmann::json obj_;
  ParamContext ctx_;
  nlohmann::json effective_;
};

/// Upper bound on every integer parameter and on the devices or links a builder creates (the
/// torus builder's device cap): a mistyped count is an error, not minutes of building and an
/// out-of-memory crash.
inline constexpr long kMaxBuilderCount = 1L << 22;

/// ConfigError(where, "<what> = <count>", "at most kMaxBuilderCount") when count exceeds it.
void check_builder_count(long count, const std::string& what, const std::string& where);

struct BuilderInfo {
  std::string name;
  std::string description;
  std::vector<ParamSpec> params;
  std::function<Topology(Params&)> build;
};

/// Keys every builder accepts besides its own: builder, name, description, device_model.
const std::vector<std::string>& common_keys();

/// All builders, in a fixed order (torus, nvswitch_node, fat_tree, rail_optimized, bus,
/// switch, hierarchical, custom).
const std::vector<BuilderInfo>& builders();
/// nullptr when unknown.
const BuilderInfo* find_builder(const std::string& name);
/// "torus, nvswitch_node, ..."
std::string builder_names();
/// The builders as a registry (sim/registry.hpp) with their parameter schemas: entry i
/// describes builders()[i].
const Registry& builder_registry();

/// Every LinkClass name, in enum order ("ici", "nvlink", ...), for messages and docs.
const std::vector<std::string>& link_class_names();

/// Builds from a JSON object holding "builder" and that builder's keys (strings or JSON
/// values). Sets name (the "name" key, else `default_name`), description, device_model and
/// config (effective), then validates the graph.
Topology build_from_object(const nlohmann::json& obj, const ParamContext& ctx, const std::string& default_name);

/// Parses "builder:key=value,key=value" into {"builder": ..., key: "value", ...}. Throws
/// ConfigError (where = `source`) for a missing '=', an empty or repeated key.
nlohmann::json parse_inline_spec(const std::string& spec, const std::string& source);

// Builder registration functions (one per builder file), called by builders().
void register_torus(std::vector<BuilderInfo>& r);
void register_star_builders(std::vector<BuilderInfo>& r);     // nvswitch_node, bus, switch
void register_fat_tree_builders(std::vector<BuilderInfo>& r); // fat_tree, rail_optimized
void register_composite_builders(std::vector<BuilderInfo>& r);  // hierarchical, custom

}  // namespace shardsim::topo
