#include "traces/importers/astra_v1.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>

#include "sim/error.hpp"
#include "sim/text/json_text.hpp"

namespace shardsim::importers {

namespace {

constexpr std::array<std::string_view, 13> kPolicies{
    "DATA", "MODEL", "HYBRID_DATA_MODEL", "HYBRID_MODEL_DATA", "HYBRID_CUSTOMIZED",
    "HYBRID_TRANSFORMER", "HYBRID_TRANSFORMER_FWD_IN_BCKWD", "HYBRID_DLRM",
    "HYBRID_DLRM_ENHANCED", "MICRO", "TRANSFORMER", "TRANSFORMER_FWD_IN_BCKWD",
    "DISTRIBUTED_INFERENCE"};

std::vector<std::string_view> split_ws(std::string_view line) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    const std::size_t b = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
    if (i > b) out.push_back(line.substr(b, i - b));
  }
  return out;
}

std::optional<std::int64_t> to_int(std::string_view s) {
  std::int64_t v = 0;
  const auto* end = s.data() + s.size();
  const auto r = std::from_chars(s.data(), end, v);
  if (r.ec != std::errc() || r.ptr != end) return std::nullopt;
  return v;
}

struct Lines {
  std::string_view text;
  std::size_t pos = 0;
  std::size_t number = 0;
  /// Next line without its '\n' / "\r\n"; false at the end of the text.
  bool next(std::string_view& line) {
    if (pos >= text.size()) return false;
    auto e = text.find('\n', pos);
    if (e == std::string_view::npos) e = text.size();
    line = text.substr(pos, e - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    pos = e + 1;
    ++number;
    return true;
  }
};

}  // namespace

bool astra_v1_is_policy(std::string_view word) {
  for (auto p : kPolicies) {
    if (word == p) return true;
  }
  return false;
}

AstraWorkload decode_astra_v1(std::string_view text, const std::string& source) {
  AstraWorkload w;
  w.source = source;
  // Names and parameters go into the native trace's JSON, which must be UTF-8.
  if (const auto bad = first_invalid_utf8(text); bad != std::string_view::npos) {
    const auto nl = text.rfind('\n', bad);  // text[bad] itself is not '\n'
    const auto line = 1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(bad), '\n');
    throw ConfigError(fmt::format("{}: line {}", source, line),
                      fmt::format("byte 0x{:02x} at column {} is not UTF-8", static_cast<unsigned char>(text[bad]),
                                  nl == std::string_view::npos ? bad + 1 : bad - nl),
                      "ASCII or UTF-8 text");
  }
  Lines lines{text};
  std::string_view line;
  auto where = [&] { return fmt::format("{}: line {}", source, lines.number); };
  // Line 1: policy and parameters.
  if (!lines.next(line)) throw ConfigError(source, "empty file", "an ASTRA-sim 1.0 workload (policy on line 1)");
  auto head = split_ws(line);
  if (head.empty() || !astra_v1_is_policy(head[0])) {
    throw ConfigError(where(), fmt::format("'{}' is not a parallelism policy", head.empty() ? "" : head[0]),
                      "DATA, MODEL, MICRO, HYBRID_DATA_MODEL, HYBRID_MODEL_DATA, HYBRID_CUSTOMIZED, "
                      "HYBRID_TRANSFORMER, HYBRID_DLRM, TRANSFORMER, ...");
  }
  w.policy = std::string(head[0]);
  for (std::size_t i = 1; i < head.size(); ++i) {
    const auto tok = head[i];
    if (i == 1 && w.policy.starts_with("HYBRID_DLRM")) {
      if (auto v = to_int(tok)) {
        w.dlrm_last_bottom_layer = *v;
        continue;
      }
    }
    if (tok.size() > 1 && tok.back() == ':' && i + 1 < head.size()) {
      w.params.emplace_back(std::string(tok.substr(0, tok.size() - 1)), std::string(head[i + 1]));
      ++i;
      continue;
    }
    throw ConfigError(where(), fmt::format("unexpected header token '{}'", tok), "\"key: value\" pairs after the policy");
  }
  // Line 2: layer count.
  if (!lines.next(line)) throw ConfigError(source, "file ends after line 1", "the number of layers on line 2");
  auto count_tok = split_ws(line);
  const auto count = count_tok.size() == 1 ? to_int(count_tok[0]) : std::nullopt;
  if (!count || *count < 0 || *count > 10'000'000) {
    throw ConfigError(where(), fmt::format("'{}' is not a layer count", line), "one integer 0..10000000");
  }
  const std::size_t fields = w.policy == "HYBRID_CUSTOMIZED" ? 13 : 12;
  // A layer line has at least 12 one-byte fields and their separators: a count the text
  // cannot hold must not reserve gigabytes before the "file ends" error.
  w.layers.reserve(std::min(static_cast<std::size_t>(*count), text.size() / 24));
  while (w.layers.size() < static_cast<std::size_t>(*count)) {
    if (!lines.next(line)) {
      throw ConfigError(source, fmt::format("file ends after {} of {} layers", w.layers.size(), *count),
                        "one line per declared layer");
    }
    const auto tok = split_ws(line);
    if (tok.empty()) continue;
    if (tok.size() != fields) {
      throw ConfigError(where(), fmt::format("{} fields", tok.size()),
                        fmt::format("{} fields: name reserved fwd_compute fwd_comm fwd_bytes ig_compute ig_comm "
                                    "ig_bytes wg_compute wg_comm wg_bytes update_delay{}",
                                    fields, fields == 13 ? " policy" : ""));
    }
    AstraLayer l;
    l.line = lines.number;
    l.name = std::string(tok[0]);
    const auto reserved = to_int(tok[1]);
    if (!reserved) throw ConfigError(where(), fmt::format("field 2 '{}' is not an integer", tok[1]), "an integer (-1)");
    l.reserved = *reserved;
    auto count_field = [&](std::size_t k, const char* what) -> std::uint64_t {
      const auto v = to_int(tok[k]);
      if (!v) throw ConfigError(where(), fmt::format("{} (field {}) '{}' is not an integer", what, k + 1, tok[k]), "an integer >= 0");
      if (*v < 0) throw ConfigError(where(), fmt::format("negative {} {} (field {})", what, *v, k + 1), "an integer >= 0");
      return static_cast<std::uint64_t>(*v);
    };
    auto pass = [&](std::size_t k, const char* phase) {
      AstraPass p;
      p.compute_cycles = count_field(k, fmt::format("{} compute time", phase).c_str());
      std::string_view type = tok[k + 1];
      for (std::string_view suffix : {"_DP_EP", "_DP", "_EP"}) {
        if (type.size() > suffix.size() && type.substr(type.size() - suffix.size()) == suffix) {
          p.comm_group = std::string(suffix.substr(1));
          type.remove_suffix(suffix.size());
          break;
        }
      }
      if (type == "ALLREDUCE") {
        p.comm = CommKind::all_reduce;
      } else if (type == "ALLGATHER") {
        p.comm = CommKind::all_gather;
      } else if (type == "REDUCESCATTER") {
        p.comm = CommKind::reduce_scatter;
      } else if (type == "ALLTOALL") {
        p.comm = CommKind::all_to_all;
      } else if (type != "NONE" || !p.comm_group.empty()) {
        throw ConfigError(where(), fmt::format("unknown {} communication type '{}' (field {})", phase, tok[k + 1], k + 2),
                          "NONE, ALLREDUCE, ALLGATHER, REDUCESCATTER or ALLTOALL");
      }
      p.comm_bytes = count_field(k + 2, fmt::format("{} communication size", phase).c_str());
      return p;
    };
    l.forward = pass(2, "forward");
    l.input_grad = pass(5, "input-gradient");
    l.weight_grad = pass(8, "weight-gradient");
    l.update_cycles = count_field(11, "update delay");
    if (fields == 13) l.specific_policy = std::string(tok[12]);
    w.layers.push_back(std::move(l));
  }
  while (lines.next(line)) {
    if (!split_ws(line).empty()) {
      throw ConfigError(where(), fmt::format("text after the {} declared layers", *count), "exactly the declared number of layer lines");
    }
  }
  return w;
}

}  // namespace shardsim::importers
