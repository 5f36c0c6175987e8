#include "models/step/timed_faults.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <set>
#include <utility>

#include "models/collectives/collective_run.hpp"
#include "models/step/variation.hpp"
#include "sim/error.hpp"
#include "sim/text/strings.hpp"
#include "sim/units.hpp"
#include "topologies/faults.hpp"

namespace shardsim::step {

namespace {

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (true) {
    const auto next = s.find(sep, at);
    out.push_back(s.substr(at, next == std::string::npos ? std::string::npos : next - at));
    if (next == std::string::npos) return out;
    at = next + 1;
  }
}

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& x : v) out += (out.empty() ? "" : ";") + x;
  return out;
}

}  // namespace

FaultPlan parse_fault_plan(const topo::Topology& t, const std::string& spec, const std::string& where) {
  FaultPlan plan;
  std::vector<std::string> fixed;
  for (const std::string& item : split(spec, ';')) {
    if (item.empty()) continue;
    if (item.rfind("random:", 0) == 0) {
      const auto parts = split(item, ':');
      if (parts.size() < 2 || parts.size() > 4) {
        throw ConfigError(where, fmt::format("'{}'", item), "random:RATE[:FRACTION[:DURATION]]");
      }
      if (plan.random) throw ConfigError(where, fmt::format("a second fault process '{}'", item), "one random: item");
      RandomFaults r;
      r.item = item;
      const auto rate = text::to_double(parts[1]);
      if (!rate || !(*rate > 0) || !std::isfinite(*rate)) {
        throw ConfigError(where, fmt::format("rate '{}' in '{}'", parts[1], item), "a rate of faults per step > 0");
      }
      r.rate = *rate;
      if (parts.size() > 2) {
        const auto f = text::to_double(parts[2]);
        if (parts[2] == "down") {
          r.fraction = 0;
        } else if (!f || !(*f > 0) || *f > 1) {
          throw ConfigError(where, fmt::format("fraction '{}' in '{}'", parts[2], item),
                            "a fraction of the rate in (0, 1] or 'down'");
        } else {
          r.fraction = *f;
        }
      }
      if (parts.size() > 3) {
        r.duration_s = units::parse_seconds(parts[3], where);
        if (!(*r.duration_s > 0)) throw ConfigError(where, fmt::format("duration '{}' in '{}'", parts[3], item), "a positive time");
      }
      plan.random = r;
      continue;
    }
    const auto at = item.find('@');
    if (at == std::string::npos) {
      fixed.push_back(item);
      continue;
    }
    TimedFault f;
    f.item = item.substr(0, at);
    const std::string when = item.substr(at + 1);
    const auto plus = when.find('+');
    f.begin_s = units::parse_seconds(when.substr(0, plus), where);
    if (!(f.begin_s >= 0)) throw ConfigError(where, fmt::format("start '{}' in '{}'", when.substr(0, plus), item), "a time >= 0");
    if (plus != std::string::npos) {
      const double d = units::parse_seconds(when.substr(plus + 1), where);
      if (!(d > 0)) throw ConfigError(where, fmt::format("duration '{}' in '{}'", when.substr(plus + 1), item), "a positive time");
      f.end_s = f.begin_s + d;
    }
    topo::parse_faults(t, f.item, where);  // checks the item
    plan.timed.push_back(std::move(f));
  }
  plan.fixed = join(fixed);
  topo::parse_faults(t, plan.fixed, where);
  return plan;
}

std::vector<TimedFault> draw_faults(const topo::Topology& t, const RandomFaults& r, double horizon_s, std::uint64_t seed) {
  // Physical links: one per unordered pair of nodes joined by a non-loopback link, in order
  // of the pair (so the draw does not depend on link numbering within a pair).
  std::set<std::pair<topo::NodeId, topo::NodeId>> pairs;
  for (const auto& l : t.links()) {
    if (l.cls == topo::LinkClass::loopback || l.src == l.dst) continue;
    pairs.emplace(std::min(l.src, l.dst), std::max(l.src, l.dst));
  }
  const std::vector<std::pair<topo::NodeId, topo::NodeId>> links(pairs.begin(), pairs.end());
  std::vector<TimedFault> out;
  if (links.empty() || !(horizon_s > 0)) return out;
  // A stream of its own (step and rank slots no compute jitter uses: 2^64 - 1).
  Rng rng = stream_rng(seed, ~std::uint64_t{0}, ~std::uint64_t{0});
  const double gap = horizon_s / r.rate;  // mean of the exponential gaps
  double at = 0;
  while (true) {
    at += -std::log(1.0 - rng.uniform()) * gap;  // inversion (uniform < 1: finite)
    if (!(at < horizon_s)) break;
    const auto k = static_cast<std::size_t>(rng.uniform() * static_cast<double>(links.size()));
    const auto& [a, b] = links[std::min(k, links.size() - 1)];
    const std::string name = t.node(a).name + "-" + t.node(b).name;
    TimedFault f;
    f.item = r.fraction == 0 ? "down:" + name : fmt::format("link:{}:{}", name, r.fraction);
    f.begin_s = at;
    if (r.duration_s) f.end_s = at + *r.duration_s;
    out.push_back(std::move(f));
  }
  return out;
}

struct TimedFaultComm::State {
  Time begin;
  std::string active;  // the items in force, for errors
  std::unique_ptr<topo::Topology> topology;
  std::unique_ptr<TopologyComm> comm;
  std::vector<double> capacity;  // flow fidelity: per link, bytes/s; 0 where down
};

namespace {

// The network's capacity of each link in a state: its bandwidth there (a degraded link's is
// FRACTION x its own, faults.hpp), 0 where down (the last item naming a link wins, as
// topo::apply_faults).
std::vector<double> state_capacity(const topo::Topology& t) {
  std::vector<double> cap(t.num_links());
  for (topo::LinkId l = 0; l < t.num_links(); ++l) cap[l] = t.link(l).bandwidth_Bps;
  if (const auto* f = topo::faults_of(t)) {
    std::vector<double> fraction(t.num_links(), 1.0);
    for (const auto& x : f->faults) {
      for (const topo::LinkId l : x.links) fraction[l] = x.fraction;
    }
    for (topo::LinkId l = 0; l < t.num_links(); ++l) {
      if (fraction[l] == 0) cap[l] = 0;
    }
  }
  return cap;
}

std::string instant(Time t) { return fmt::format("at {:.9g} s", t.to_seconds()); }

}  // namespace

TimedFaultComm::TimedFaultComm(const topo::Topology& intact, const std::string& fixed, const std::vector<TimedFault>& timed,
                               Fidelity f, const std::string& algorithm, std::uint32_t element_bytes, coll::CostParams p)
    : fidelity_(f), cost_(p) {
  std::set<std::int64_t> instants{0};
  for (const auto& x : timed) {
    instants.insert(Time::from_seconds(x.begin_s).ps());
    if (x.end_s) instants.insert(Time::from_seconds(*x.end_s).ps());
  }
  for (const std::int64_t ps : instants) {
    const Time at = Time::from_ps(ps);
    std::vector<std::string> items;
    if (!fixed.empty()) items.push_back(fixed);
    for (const auto& x : timed) {  // in spec order: a link named twice takes the last item
      if (Time::from_seconds(x.begin_s) <= at && (!x.end_s || at < Time::from_seconds(*x.end_s))) items.push_back(x.item);
    }
    auto s = std::make_unique<State>();
    s->begin = at;
    s->active = join(items);
    s->topology = std::make_unique<topo::Topology>(topo::apply_faults(intact, topo::parse_faults(intact, s->active, "--faults")));
    s->comm = std::make_unique<TopologyComm>(*s->topology, f, algorithm, p, element_bytes);
    if (f == Fidelity::flow) s->capacity = state_capacity(*s->topology);
    states_.push_back(std::move(s));
  }
}

TimedFaultComm::~TimedFaultComm() = default;

double TimedFaultComm::time_s(coll::OpKind kind, std::uint64_t size_bytes, const std::vector<int>& group) {
  return states_.front()->comm->time_s(kind, size_bytes, group);
}

std::optional<std::size_t> TimedFaultComm::devices() const { return states_.front()->comm->devices(); }

std::size_t TimedFaultComm::evaluations() const {
  std::size_t n = 0;
  for (const auto& s : states_) n += s->comm->evaluations();
  return n;
}

Time TimedFaultComm::end(coll::OpKind kind, std::uint64_t size_bytes, const std::vector<int>& group,
                         const std::string& group_name, Time start) {
  std::size_t k = state_at(start);
  double left = 1.0;  // fraction of the collective's work still to do
  Time at = start;
  for (;; ++k) {
    double T = 0;
    try {
      T = states_[k]->comm->time_s(kind, size_bytes, group);
    } catch (const topo::RouteCutError& e) {
      throw topo::group_cut_error(e, group_name, group, instant(std::max(at, states_[k]->begin)));
    }
    if (!(T > 0)) return at;
    const Time done = at + Time::ceil_seconds(left * T);
    if (k + 1 == states_.size() || done <= states_[k + 1]->begin) return done;
    const Time next = states_[k + 1]->begin;
    left = std::max(0.0, left - (next - at).to_seconds() / T);
    at = next;
  }
}

std::size_t TimedFaultComm::state_at(Time t) const {
  std::size_t k = 0;
  while (k + 1 < states_.size() && states_[k + 1]->begin <= t) ++k;
  return k;
}

namespace {

std::string p2p_name(const TaskNode& send) { return fmt::format("p2p {}->{}", send.rank, send.peer); }

// A runner under timed faults: a collective on its group, a send/recv pair as a broadcast over
// its two ranks (the point-to-point time of the mesh step), both through run().
class TimedRunner : public CollectiveRunner {
 public:
  [[nodiscard]] bool time_varying() const override { return true; }
  void start(sim::Simulator& sim, const TaskGraph& g, NodeId n, std::function<void(Time)> done) override {
    const auto& node = g.node(n);
    const auto& group = g.groups()[node.group];
    run(sim, node.op, node.size_bytes, group.ranks, group.name, std::move(done));
  }
  bool start_p2p(sim::Simulator& sim, const TaskGraph& g, NodeId send, std::function<void(Time)>& done) override {
    const auto& node = g.node(send);
    run(sim, coll::OpKind::broadcast, node.size_bytes, {node.rank, node.peer}, p2p_name(node), std::move(done));
    return true;
  }

 protected:
  virtual void run(sim::Simulator& sim, coll::OpKind kind, std::uint64_t bytes, const std::vector<int>& ranks,
                   const std::string& name, std::function<void(Time)> done) = 0;
};

// The progress rule as the executor's collective runner: a timer to the end end() gives.
class ProgressRunner final : public TimedRunner {
 public:
  explicit ProgressRunner(TimedFaultComm& c) : c_(c) {}

 private:
  void run(sim::Simulator& sim, coll::OpKind kind, std::uint64_t bytes, const std::vector<int>& ranks,
           const std::string& name, std::function<void(Time)> done) override {
    const Time e = ranks.size() <= 1 || bytes == 0 ? sim.now() : c_.end(kind, bytes, ranks, name, sim.now());
    sim.schedule_at(e, [d = std::move(done), e] { d(e); });
  }
  TimedFaultComm& c_;
};

}  // namespace

// Flow fidelity: every collective (and send/recv pair) in flight as a coll::CollectiveRun on
// one network of the topology's links, whose capacities follow the states: at each state's
// instant the links whose capacity changes are set (sim::FlowNetwork::set_capacity), those
// that come up first, then those that go down, whose flows move to the state's routes (its
// FaultRouter). A collective is planned (algorithm, schedule, routes) on the topology of the
// state in force when it starts. A flow with no route left is the error of its process group,
// naming the down links and the instant.
class TimedFlowRunner final : public TimedRunner {
 public:
  explicit TimedFlowRunner(TimedFaultComm& c) : c_(c) {}

 private:
  struct Group {
    std::string name;
    std::vector<int> ranks;
  };

  void run(sim::Simulator& sim, coll::OpKind kind, std::uint64_t bytes, const std::vector<int>& ranks,
           const std::string& name, std::function<void(Time)> done) override {
    if (ranks.size() <= 1 || bytes == 0) {
      sim.schedule_at(sim.now(), [d = std::move(done), t = sim.now()] { d(t); });
      return;
    }
    attach(sim);
    to_state(c_.state_at(sim.now()));  // an event at a fault instant may run before the fault's
    auto& st = *c_.states_[cur_];
    const TopologyComm::FlowPlan* plan = nullptr;
    try {
      plan = &st.comm->flow_plan(kind, bytes, ranks);
    } catch (const topo::RouteCutError& e) {
      throw topo::group_cut_error(e, name, ranks, instant(sim.now()));
    }
    coll::FlowOptions fo;
    fo.cost = c_.cost_;
    runs_.push_back(std::make_unique<coll::CollectiveRun>(sim, *net_, *st.topology, plan->op, plan->schedule, fo));
    const auto client = runs_.back()->client();
    if (groups_.size() <= client) groups_.resize(client + 1);
    groups_[client] = Group{name, ranks};
    runs_.back()->start(sim.now(), std::move(done));
  }

  // The network, on the simulator of the first run, in the state in force then, and an event
  // at each later state's instant.
  void attach(sim::Simulator& sim) {
    if (net_) return;
    sim_ = &sim;
    net_ = std::make_unique<sim::FlowNetwork>(sim);
    const auto& first = *c_.states_.front();
    for (topo::LinkId l = 0; l < first.topology->num_links(); ++l) {
      net_->add_link(first.capacity[l] > 0 ? first.capacity[l] : first.topology->link(l).bandwidth_Bps);
    }
    cur_ = 0;
    apply(0);
    net_->set_rerouter([this](std::span<const sim::FlowNetwork::LinkIndex> route, std::uint64_t tag,
                              std::vector<sim::FlowNetwork::LinkIndex>& out) { reroute(route, tag, out); });
    for (std::size_t k = c_.state_at(sim.now()) + 1; k < c_.states_.size(); ++k) {
      sim.schedule_at(c_.states_[k]->begin, [this, k] { to_state(k); });
    }
  }

  void to_state(std::size_t k) {
    if (k <= cur_) return;
    cur_ = k;
    apply(k);
  }

  // Links that come up (or change rate) first, so that flows moved off links going down may
  // take them; then those that go down, in link order.
  void apply(std::size_t k) {
    const auto& cap = c_.states_[k]->capacity;
    for (const bool down : {false, true}) {
      for (sim::FlowNetwork::LinkIndex l = 0; l < cap.size(); ++l) {
        if ((cap[l] == 0) == down && net_->capacity(l) != cap[l]) net_->set_capacity(l, cap[l]);
      }
    }
  }

  // A flow on a link that is down: its route between the same two nodes in the state in force.
  void reroute(std::span<const sim::FlowNetwork::LinkIndex> route, std::uint64_t tag,
               std::vector<sim::FlowNetwork::LinkIndex>& out) {
    const auto& t = *c_.states_[cur_]->topology;
    const topo::NodeId src = t.link(route.front()).src, dst = t.link(route.back()).dst;
    try {
      const auto& r = t.route(src, dst);
      out.assign(r.links.begin(), r.links.end());
    } catch (const topo::RouteCutError& e) {
      const Group& g = groups_.at(sim::FlowNetwork::client_of(tag));
      throw topo::group_cut_error(e, g.name, g.ranks, instant(sim_->now()));
    }
  }

  TimedFaultComm& c_;
  sim::Simulator* sim_ = nullptr;
  std::unique_ptr<sim::FlowNetwork> net_;
  std::size_t cur_ = 0;               // the state whose capacities the network has
  std::vector<Group> groups_;         // by client id of the run
  std::vector<std::unique_ptr<coll::CollectiveRun>> runs_;
};

std::unique_ptr<CollectiveRunner> TimedFaultComm::concurrent_runner() {
  if (fidelity_ == Fidelity::flow) return std::make_unique<TimedFlowRunner>(*this);
  return std::make_unique<ProgressRunner>(*this);
}

}  // namespace shardsim::step
