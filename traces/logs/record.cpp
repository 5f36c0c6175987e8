#include "traces/logs/record.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <array>
#include <cctype>
#include <chrono>
#include <cmath>
#include <ctime>
#include <fstream>
#include <istream>
#include <ostream>

#include "sim/error.hpp"
#include "sim/text/json_text.hpp"

namespace shardsim::logs {
namespace {

struct CollectiveName {
  const char* canonical;
  double (*factor)(int n);
};

// nccl-tests doc/PERFORMANCE.md: busbw = algbw x 2(n-1)/n (all-reduce), (n-1)/n
// (reduce-scatter, all-gather, all-to-all), 1 (broadcast, reduce, sendrecv).
double f_allreduce(int n) { return 2.0 * (n - 1) / n; }
double f_nm1(int n) { return static_cast<double>(n - 1) / n; }
double f_one(int) { return 1.0; }

constexpr std::array<CollectiveName, 10> kCollectives{{
    {"allreduce", f_allreduce}, {"reducescatter", f_nm1}, {"allgather", f_nm1},
    {"broadcast", f_one},       {"reduce", f_one},        {"alltoall", f_nm1},
    {"pingpong", f_one},        {"exchange", f_one},      {"sendrecv", f_one},
    {"stream", f_one},
}};

const std::array<const char*, 14> kKeys{{"source", "host", "date", "backend", "collective", "algorithm",
                                         "ranks", "ranks_per_node", "bytes", "dtype", "time_us",
                                         "algbw_GBps", "busbw_GBps", "topology"}};

std::string json_type(const nlohmann::json& v) {
  if (v.is_null()) return "null";
  return v.type_name();
}

const nlohmann::json& at(const nlohmann::json& j, const char* key, const std::string& where) {
  if (!j.contains(key)) throw ConfigError(where, fmt::format("missing key '{}'", key), "every record key (DESIGN 6)");
  return j.at(key);
}

std::string get_string(const nlohmann::json& j, const char* key, const std::string& where) {
  const auto& v = at(j, key, where);
  if (!v.is_string()) throw ConfigError(where + "/" + key, "a " + json_type(v), "a string");
  return v.get<std::string>();
}

double get_number(const nlohmann::json& j, const char* key, const std::string& where) {
  const auto& v = at(j, key, where);
  if (!v.is_number()) throw ConfigError(where + "/" + key, "a " + json_type(v), "a finite number >= 0");
  const double d = v.get<double>();
  if (!std::isfinite(d) || d < 0) throw ConfigError(where + "/" + key, fmt::format("{}", d), "a finite number >= 0");
  return d;
}

std::optional<int> get_opt_int(const nlohmann::json& j, const char* key, const std::string& where, int min) {
  if (!j.contains(key) || j.at(key).is_null()) return std::nullopt;
  const auto& v = j.at(key);
  if (!v.is_number_integer() || v.get<long long>() < min || v.get<long long>() > 1'000'000'000) {
    throw ConfigError(where + "/" + key, v.dump(), fmt::format("an integer >= {} or null", min));
  }
  return static_cast<int>(v.get<long long>());
}

}  // namespace

std::optional<std::string> canonical_collective(const std::string& name) {
  std::string k;
  for (char c : name) {
    if (c != '-' && c != '_' && c != ' ') k.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  }
  if (k == "bibw" || k == "bidirectional") k = "exchange";
  if (k == "latency" || k == "ping") k = "pingpong";
  if (k == "unidirectional" || k == "uni") k = "stream";
  for (const auto& c : kCollectives) {
    if (k == c.canonical) return std::string(c.canonical);
  }
  return std::nullopt;
}

const char* valid_collectives() {
  return "allreduce, reducescatter, allgather, broadcast, reduce, alltoall, pingpong, exchange, sendrecv, stream";
}

bool is_point_to_point(const std::string& collective) {
  return collective == "pingpong" || collective == "exchange" || collective == "sendrecv" || collective == "stream";
}

double busbw_factor(const std::string& collective, int ranks) {
  for (const auto& c : kCollectives) {
    if (collective == c.canonical) return c.factor(ranks);
  }
  throw ConfigError("collective", fmt::format("unknown collective '{}'", collective), std::string("one of ") + valid_collectives());
}

nlohmann::json to_json(const BenchRecord& r) {
  nlohmann::json j = nlohmann::json::object();
  j["source"] = r.source;
  j["host"] = r.host;
  j["date"] = r.date;
  j["backend"] = r.backend;
  j["collective"] = r.collective;
  j["algorithm"] = r.algorithm ? nlohmann::json(*r.algorithm) : nlohmann::json(nullptr);
  j["ranks"] = r.ranks;
  j["ranks_per_node"] = r.ranks_per_node ? nlohmann::json(*r.ranks_per_node) : nlohmann::json(nullptr);
  j["bytes"] = r.bytes;
  j["dtype"] = r.dtype;
  j["time_us"] = r.time_us;
  j["algbw_GBps"] = r.algbw_GBps;
  j["busbw_GBps"] = r.busbw_GBps;
  j["topology"] = r.topology;
  if (r.peer) j["peer"] = *r.peer;
  if (r.gpus_per_thread) j["gpus_per_thread"] = *r.gpus_per_thread;
  return j;
}

BenchRecord record_from_json(const nlohmann::json& j, const std::string& where) {
  if (!j.is_object()) throw ConfigError(where, "a " + json_type(j), "a JSON object (one record)");
  for (const auto& [key, value] : j.items()) {
    bool known = key == "peer" || key == "gpus_per_thread";
    for (const char* k : kKeys) known = known || key == k;
    if (!known) throw ConfigError(where + "/" + key, fmt::format("unknown key '{}'", key), "a record key (DESIGN 6)");
  }
  BenchRecord r;
  r.source = get_string(j, "source", where);
  r.host = get_string(j, "host", where);
  r.date = get_string(j, "date", where);
  r.backend = get_string(j, "backend", where);
  const std::string coll = get_string(j, "collective", where);
  const auto canon = canonical_collective(coll);
  if (!canon || *canon != coll) {
    throw ConfigError(where + "/collective", fmt::format("unknown collective '{}'", coll),
                      std::string("one of ") + valid_collectives());
  }
  r.collective = coll;
  const auto& alg = at(j, "algorithm", where);
  if (!alg.is_null() && !alg.is_string()) throw ConfigError(where + "/algorithm", "a " + json_type(alg), "a string or null");
  if (alg.is_string()) r.algorithm = alg.get<std::string>();
  const auto ranks = get_opt_int(j, "ranks", where, 1);
  if (!ranks) throw ConfigError(where + "/ranks", "null", "an integer >= 1");
  r.ranks = *ranks;
  (void)at(j, "ranks_per_node", where);
  r.ranks_per_node = get_opt_int(j, "ranks_per_node", where, 1);
  const auto& bytes = at(j, "bytes", where);
  if (!bytes.is_number_unsigned() && !(bytes.is_number_integer() && bytes.get<long long>() >= 0)) {
    throw ConfigError(where + "/bytes", bytes.dump(), "an integer >= 0");
  }
  r.bytes = bytes.get<std::uint64_t>();
  r.dtype = get_string(j, "dtype", where);
  r.time_us = get_number(j, "time_us", where);
  r.algbw_GBps = get_number(j, "algbw_GBps", where);
  r.busbw_GBps = get_number(j, "busbw_GBps", where);
  r.topology = at(j, "topology", where);
  if (!r.topology.is_null() && !r.topology.is_object() && !r.topology.is_string()) {
    throw ConfigError(where + "/topology", "a " + json_type(r.topology), "a topology JSON object, a topology spec string or null");
  }
  r.peer = get_opt_int(j, "peer", where, 1);
  r.gpus_per_thread = get_opt_int(j, "gpus_per_thread", where, 1);
  if (r.peer && *r.peer >= r.ranks) {
    throw ConfigError(where + "/peer", std::to_string(*r.peer), fmt::format("a rank below ranks ({})", r.ranks));
  }
  return r;
}

std::vector<BenchRecord> read_jsonl(std::istream& in, const std::string& name) {
  std::vector<BenchRecord> out;
  std::string line;
  int lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    bool blank = true;
    for (char c : line) blank = blank && std::isspace(static_cast<unsigned char>(c));
    if (blank) continue;
    const std::string where = fmt::format("{}:{}", name, lineno);
    out.push_back(record_from_json(parse_json_text(line, where, "one JSON record per line"), where));
  }
  return out;
}

std::vector<BenchRecord> read_jsonl_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw ConfigError(path, "cannot open the file", "a readable JSON Lines file of records");
  return read_jsonl(in, path);
}

void write_jsonl(std::ostream& out, const std::vector<BenchRecord>& records) {
  for (const auto& r : records) out << to_json(r).dump() << '\n';
}

void write_jsonl_file(const std::string& path, const std::vector<BenchRecord>& records) {
  std::ofstream out(path, std::ios::trunc);
  if (!out) throw ConfigError(path, "cannot open the file for writing", "a writable path");
  write_jsonl(out, records);
  if (!out) throw ConfigError(path, "write failed", "a writable path");
}

std::string local_host_name() {
  std::array<char, 256> buf{};
  if (gethostname(buf.data(), buf.size() - 1) != 0) return "";
  return std::string(buf.data());
}

std::string utc_now_iso8601() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  std::array<char, 32> buf{};
  std::strftime(buf.data(), buf.size(), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return std::string(buf.data());
}

}  // namespace shardsim::logs
