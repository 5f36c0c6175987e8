#include "analysis/validation/validate.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>

#include "analysis/backends/mpi/launch.hpp"
#include "models/collectives/algorithm.hpp"
#include "models/collectives/nccl_model.hpp"
#include "models/collectives/ompi_decision.hpp"
#include "models/collectives/ompi_tuned.hpp"
#include "models/collectives/flow_eval.hpp"
#include "sim/error.hpp"
#include "topologies/load.hpp"

namespace shardsim::validation {
namespace {

std::string topology_label(const nlohmann::json& t) {
  if (t.is_string()) return t.get<std::string>();
  if (t.is_object() && t.contains("builder")) {
    std::string s = t.at("builder").get<std::string>();
    if (t.contains("n")) s += fmt::format(" n={}", t.at("n").dump());
    if (t.contains("hosts")) s += fmt::format(" hosts={}", t.at("hosts").dump());
    if (t.contains("bw")) s += " bw=" + t.at("bw").get<std::string>();
    if (t.contains("uplink_bw")) s += " up=" + t.at("uplink_bw").get<std::string>();
    return s;
  }
  return "?";
}

}  // namespace

std::optional<ModelAlgorithm> mpi_algorithm_to_model(const std::string& collective, const std::string& algorithm) {
  if (algorithm == "ring" || algorithm == "segmented_ring") return ModelAlgorithm{"ring", false};
  if ((collective == "allreduce" && algorithm == "rabenseifner") ||
      (collective == "reducescatter" && algorithm == "recursive_halving") ||
      (collective == "allgather" && algorithm == "recursive_doubling")) {
    return ModelAlgorithm{"rabenseifner", true};
  }
  for (const auto& a : coll::algorithms()) {
    if (a->name() == algorithm) return ModelAlgorithm{algorithm, false};
  }
  return std::nullopt;
}

std::vector<int> bit_reversed_group(int n) {
  std::vector<int> g(static_cast<size_t>(n));
  int bits = 0;
  while ((1 << bits) < n) ++bits;
  const bool pow2 = n > 0 && (1 << bits) == n;
  for (int r = 0; r < n; ++r) {
    int q = 0;
    for (int b = 0; b < bits; ++b) q |= ((r >> b) & 1) << (bits - 1 - b);
    g[static_cast<size_t>(r)] = pow2 ? q : r;
  }
  // g maps rank r -> position q; the group lists, for each position q, its rank.
  std::vector<int> group(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) group[static_cast<size_t>(g[static_cast<size_t>(r)])] = r;
  return group;
}

namespace {

// OpenMPI's coll/base algorithms send with a blocking MCA_PML send (ompi_coll_base_sendrecv_actual:
// irecv, send, wait; the reduce-scatter and fold/unfold loops alike), and ob1's send of a message
// under btl_tcp_eager_limit returns once the message is in the socket buffer: the rank goes on
// to its next step when its receives are done while its data still drains. `bench emulate` sets
// the eager limit above every message (emulate.cpp), so its records get buffered sends up to
// the socket buffer's ceiling, net.ipv4.tcp_wmem's maximum (4 MiB, Linux's default; 2 MiB
// sends measured returning within 0.2-6 ms, docs/measurements.md "Buffered sends"). Other MPI
// records (default 64 KiB eager limit: larger messages wait for the receiver's rendezvous
// reply) keep Step's rule.
double buffered_send_bytes(const logs::BenchRecord& r) {
  constexpr double kTcpWmemMax = 4194304;
  return r.source.rfind("shardsim bench emulate", 0) == 0 ? kTcpWmemMax : 0.0;
}

}  // namespace

std::vector<Row> predict(const std::vector<logs::BenchRecord>& records, const Options& o) {
  std::vector<Row> rows;
  std::map<std::string, calib::AppliedProfile> cache;
  for (const auto& r : records) {
    // Point-to-point records are the calibration's fit; nccl-tests sendrecv (a ring shift of S,
    // coll::OpKind::sendrecv) is predicted like a collective when the NCCL model is asked for.
    if (logs::is_point_to_point(r.collective) && !(r.collective == "sendrecv" && o.algorithm == "auto")) continue;
    // A zero-byte collective is no work for NCCL or MPI (nccl-tests prints S = 0 where the count
    // rounds to 0 elements per rank): the record times the harness, not a collective.
    if (r.bytes == 0) continue;
    const std::string where = fmt::format("{} ({} {} B)", r.source, r.collective, r.bytes);
    const nlohmann::json tj = o.topology ? nlohmann::json(*o.topology) : r.topology;
    if (tj.is_null()) throw ConfigError(where, "a record without a topology", "records that name one, or --topology");
    const std::string key = tj.dump();
    auto it = cache.find(key);
    if (it == cache.end()) {
      topo::Topology t = calib::record_topology(tj, where);
      calib::AppliedProfile applied{t, coll::CostParams{}};
      if (o.profile) applied = calib::apply_profile(t, *o.profile, {}, "--profile");
      it = cache.emplace(key, std::move(applied)).first;
    }
    const topo::Topology& t = it->second.topology;
    if (static_cast<std::size_t>(r.ranks) > t.num_devices()) {
      throw ConfigError(where, fmt::format("{} ranks on a topology of {} devices", r.ranks, t.num_devices()),
                        "no more ranks than devices");
    }
    // MPI records with an OpenMPI algorithm the schedules of ompi_tuned.hpp model: that
    // schedule on ranks 0..n-1, at flow fidelity (it has no closed form). A record without
    // one ran OpenMPI's own choice: its fixed decision rule (ompi_decision.hpp) picks it.
    if (r.backend == "mpi" && !o.analytical && !o.algorithm) {
      const coll::OpKind kind = coll::op_from_string(r.collective, where);
      const auto n = static_cast<std::size_t>(r.ranks);
      std::string name, label;
      if (r.algorithm) {
        name = *r.algorithm;
      } else {
        const auto d = coll::ompi_fixed_decision(kind, n, r.bytes, where);
        if (auto why = coll::ompi_unmodelled(kind, d.schedule, n)) {
          throw ConfigError(where,
                            fmt::format("OpenMPI's fixed decision for {} on {} ranks at total_dsize {} B is '{}' (id "
                                        "{}): {}",
                                        r.collective, n, d.total_dsize, d.algorithm, d.id, *why),
                            "a record whose algorithm shardsim models, or --algorithm");
        }
        name = d.schedule;
        label = "ompi-decision:" + d.schedule + (d.schedule != d.algorithm ? "(" + d.algorithm + ")" : "");
      }
      if (!coll::ompi_unmodelled(kind, name, n)) {
        coll::CollectiveOp op;
        op.kind = kind;
        op.size_bytes = r.bytes;
        op.element_bytes = 4;
        for (int i = 0; i < r.ranks; ++i) op.group.push_back(i);
        const coll::Schedule s = coll::ompi_schedule(op, name);
        Row row;
        row.record = r;
        row.topology = topology_label(tj);
        row.model_algorithm = label.empty() ? s.algorithm : label;
        row.min_message = UINT64_MAX;
        for (const auto& st : s.steps) {
          for (const auto& tr : st.transfers) {
            const auto b = static_cast<std::uint64_t>(std::llround(tr.bytes));
            row.min_message = std::min(row.min_message, b);
            row.max_message = std::max(row.max_message, b);
          }
        }
        coll::FlowOptions fo;
        fo.cost = it->second.cost;
        fo.buffered_send_bytes = buffered_send_bytes(r);
        row.predicted_us = coll::evaluate_flow(t, op, s, fo).time_s * 1e6;
        row.error = (row.predicted_us - r.time_us) / r.time_us;
        if (o.profile) {
          const auto [bw, cls] = calib::route_bottleneck(t, 0, 1);
          (void)bw;
          if (const auto* k = o.profile->find(cls)) {
            row.outside_range = row.min_message < k->min_bytes || row.max_message > k->max_bytes;
          }
        }
        rows.push_back(std::move(row));
        continue;
      }
    }
    std::optional<ModelAlgorithm> ma;
    if (r.algorithm) {
      ma = mpi_algorithm_to_model(r.collective, *r.algorithm);
      if (!ma) {
        throw ConfigError(where, fmt::format("algorithm '{}' has no model counterpart", *r.algorithm),
                          "ring, segmented_ring, rabenseifner (allreduce), recursive_halving (reducescatter), "
                          "recursive_doubling (allgather) or a registered model algorithm");
      }
    } else if (o.algorithm) {
      ma = ModelAlgorithm{*o.algorithm, false};
    } else {
      throw ConfigError(where, "a record without an algorithm", "records naming theirs, or --algorithm");
    }
    coll::CollectiveOp op;
    op.kind = coll::op_from_string(r.collective, where);
    op.size_bytes = r.bytes;
    op.element_bytes = 4;
    op.group = ma->bit_reversed ? bit_reversed_group(r.ranks) : std::vector<int>{};
    // A record's own ranks_per_node places it only on GPU topologies with nodes (nccl-tests
    // logs); MPI records keep the first `ranks` hosts, as before.
    std::optional<int> rpn = o.ranks_per_node;
    if (!rpn && r.ranks_per_node && !t.device_groups().empty()) {
      coll::CollectiveOp first = op;
      first.group.clear();
      for (int i = 0; i < r.ranks; ++i) first.group.push_back(i);
      if (!coll::nccl_unsupported(t, first)) rpn = r.ranks_per_node;
    }
    if (ma->bit_reversed && o.ranks_per_node) {
      throw ConfigError("--ranks-per-node", "with a bit-reversed rank order", "records of an algorithm without one");
    }
    if (!ma->bit_reversed && rpn) {
      op.group = coll::placed_group(t, static_cast<std::size_t>(r.ranks), static_cast<std::size_t>(*rpn),
                                    o.ranks_per_node ? "--ranks-per-node" : where + " ranks_per_node");
    } else if (!ma->bit_reversed) {
      for (int i = 0; i < r.ranks; ++i) op.group.push_back(i);
    }
    const coll::CostParams cost = it->second.cost;
    Row row;
    row.record = r;
    row.topology = topology_label(tj);
    const coll::Algorithm* algp = nullptr;
    std::optional<double> nccl_us;  // NCCL's own time (auto on a GPU topology, analytical)
    if (ma->name == "auto") {
      if (!coll::nccl_unsupported(t, op)) {
        const auto pred = coll::nccl_predict(t, op);
        algp = &coll::find_algorithm(pred.schedule, op.kind, where);
        if (algp->unsupported(t, op)) algp = &coll::find_algorithm(op.kind == coll::OpKind::alltoall ? "direct" : "ring", op.kind, where);
        nccl_us = pred.time_s * 1e6;
        row.model_algorithm = "nccl:" + pred.name + (o.analytical ? "" : " (flow: " + algp->name() + ")");
      } else {
        const auto c = coll::choose_auto(t, op, cost, !o.analytical);
        algp = c.algorithm;
        row.model_algorithm = "auto: " + algp->name();
      }
    } else {
      algp = &coll::find_algorithm(ma->name, op.kind, where);
      if (auto why = algp->unsupported(t, op)) {
        throw ConfigError(where, fmt::format("--algorithm {} cannot run here: {}", ma->name, *why),
                          "an algorithm that applies to this topology and group, or --algorithm auto");
      }
      row.model_algorithm = ma->name + (ma->bit_reversed ? " (bit-reversed ranks)" : "");
    }
    const coll::Algorithm& alg = *algp;
    const coll::Schedule s = alg.build(t, op, cost);
    row.min_message = UINT64_MAX;
    for (const auto& st : s.steps) {
      for (const auto& tr : st.transfers) {
        const auto b = static_cast<std::uint64_t>(std::llround(tr.bytes / std::max<std::uint32_t>(1, s.chunks)));
        row.min_message = std::min(row.min_message, b);
        row.max_message = std::max(row.max_message, b);
      }
    }
    if (o.analytical && nccl_us) {
      row.predicted_us = *nccl_us;
    } else if (o.analytical) {
      row.predicted_us = alg.analytical(t, op, cost).time_s * 1e6;
    } else {
      coll::FlowOptions fo;
      fo.cost = cost;
      row.predicted_us = coll::evaluate_flow(t, op, s, fo).time_s * 1e6;
    }
    // nccl-tests' one-thread launches (-g G) bound NCCL's time from below (nccl_model.hpp).
    if (const auto g = r.gpus_per_thread ? r.gpus_per_thread : o.gpus_per_thread; nccl_us && g) {
      row.predicted_us = with_launch_floor(row.predicted_us, *g, row.model_algorithm);
    }
    row.error = (row.predicted_us - r.time_us) / r.time_us;
    if (o.profile && t.num_devices() >= 2) {
      const auto [bw, cls] = calib::route_bottleneck(t, 0, 1);
      (void)bw;
      if (const auto* k = o.profile->find(cls)) {
        row.outside_range = row.min_message < k->min_bytes || row.max_message > k->max_bytes;
      }
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

double with_launch_floor(double predicted_us, int gpus_per_thread, std::string& label) {
  const double floor_us = coll::nccl_tests_launch_floor_s(gpus_per_thread) * 1e6;
  if (floor_us <= predicted_us) return predicted_us;
  label += fmt::format(" (-g {} launch floor)", gpus_per_thread);
  return floor_us;
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const auto k = static_cast<size_t>(std::ceil(p * static_cast<double>(v.size())));
  return v[std::min(v.size() - 1, k == 0 ? 0 : k - 1)];
}

std::vector<Summary> summarize(const std::vector<Row>& rows, std::uint64_t min_bytes) {
  std::map<std::tuple<std::string, std::string, std::string>, std::vector<double>> groups;
  for (const auto& r : rows) {
    if (r.record.bytes < min_bytes) continue;
    groups[{r.topology, r.record.collective, r.record.algorithm.value_or(r.model_algorithm)}].push_back(std::fabs(r.error));
  }
  std::vector<Summary> out;
  for (const auto& [k, errs] : groups) {
    Summary s;
    std::tie(s.topology, s.collective, s.algorithm) = k;
    s.count = static_cast<int>(errs.size());
    s.median_abs_error = percentile(errs, 0.5);
    s.p90_abs_error = percentile(errs, 0.9);
    out.push_back(s);
  }
  return out;
}

void print_report(const std::vector<Row>& rows, const std::vector<Summary>& sums) {
  fmt::print("# {:<34} {:<10} {:<18} {:>10} {:>12} {:>12} {:>8}\n", "topology", "collective", "algorithm", "bytes",
             "measured_us", "predicted_us", "error");
  for (const auto& r : rows) {
    fmt::print("  {:<34} {:<10} {:<18} {:>10} {:>12.1f} {:>12.1f} {:>+7.1f}%{}\n", r.topology, r.record.collective,
               r.record.algorithm.value_or("-"), r.record.bytes, r.record.time_us, r.predicted_us, 100 * r.error,
               r.outside_range ? "  (outside the calibrated range)" : "");
  }
  std::size_t outside = 0;
  for (const auto& r : rows) outside += r.outside_range ? 1 : 0;
  if (outside > 0) {
    fmt::print("warning: {} record(s) have message sizes outside the calibrated range: extrapolated\n", outside);
  }
  fmt::print("\n# {:<34} {:<10} {:<18} {:>5} {:>12} {:>12}\n", "topology", "collective", "algorithm", "n",
             "median |err|", "p90 |err|");
  for (const auto& s : sums) {
    fmt::print("  {:<34} {:<10} {:<18} {:>5} {:>11.1f}% {:>11.1f}%\n", s.topology, s.collective, s.algorithm, s.count,
               100 * s.median_abs_error, 100 * s.p90_abs_error);
  }
}

void write_csv(const std::vector<Row>& rows, const std::string& path) {
  std::ofstream out(path, std::ios::trunc);
  if (!out) throw ConfigError(path, "cannot open the file for writing", "a writable path");
  out << "source,topology,collective,algorithm,model_algorithm,ranks,bytes,measured_us,predicted_us,error_pct,outside_range\n";
  for (const auto& r : rows) {
    out << fmt::format("\"{}\",\"{}\",{},{},\"{}\",{},{},{:.3f},{:.3f},{:.3f},{}\n", r.record.source, r.topology,
                       r.record.collective, r.record.algorithm.value_or(""), r.model_algorithm, r.record.ranks,
                       r.record.bytes, r.record.time_us, r.predicted_us, 100 * r.error, r.outside_range ? 1 : 0);
  }
}

std::string write_plot(const std::string& csv, const std::string& dir) {
  const std::string gp = dir + "/validation.gp";
  const std::string svg = dir + "/validation.svg";
  std::ofstream out(gp, std::ios::trunc);
  if (!out) throw ConfigError(gp, "cannot open the file for writing", "a writable directory");
  // Predicted against measured time, one point per record; the diagonal is a perfect model.
  out << "set terminal svg size 800,600\nset output '" << svg << "'\nset datafile separator ','\n"
      << "set logscale xy\nset xlabel 'measured time (us)'\nset ylabel 'predicted time (us)'\nset key top left\n"
      << "set title 'shardsim validate: predicted vs measured'\n"
      << "plot '" << csv << "' every ::1 using 8:9 with points pt 7 title 'records', x with lines title 'predicted = measured'\n";
  out.close();
  if (!backends::find_in_path("gnuplot")) return "";
  const auto r = backends::run_process({"gnuplot", gp}, 60);
  return r.exit_code == 0 ? svg : "";
}

}  // namespace shardsim::validation
