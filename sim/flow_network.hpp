#pragma once
// Flow-level network: links are capacities (bytes/s), flows are routes (lists of links) with
// a byte count. Rates are max-min fair, computed by progressive filling (Bertsekas and
// Gallager, Data Networks, 2nd ed., sec. 6.5.2): raise every unfrozen flow's rate together
// until some link saturates, freeze the flows crossing it, repeat.
//
// Incremental recomputation: when flows start or end, only the flows transitively connected
// to them through shared links are re-solved. Flows that merely share a link with the changed
// flow are not enough in general: freeing capacity on link A lets flow f (on A and B) grow,
// which takes capacity on B from flow g that never touched A. Components are found by a
// breadth-first walk over link -> flows -> links, stamped with epochs (no clearing).
//
// Batching: all starts and ends at one instant are solved together, once (a "settle" event
// at the current time for starts, the completion timer for ends). Completions are grouped
// by finish time: one bucket per distinct finish time, the buckets in an indexed min-heap
// on that time, the flows of a bucket completed in flow-id order; the Simulator holds one
// timer event for the earliest. Collective steps finish many flows at one instant (a ring
// step: one per rank), which then cost O(1) each instead of a heap pop each. Finish times
// round up to the picosecond, so a flow never completes before its last byte. Route latency
// is not modelled here: callers delay start() by it.
//
// Layout (a 16,384-rank ring keeps 16k flows and 64k links live; every structure a flow
// touches is sized so that the working set stays in cache): a flow is one 64-byte line; its
// route is a slab of (link, position) pairs in one flat array with a fixed stride (the
// longest route started so far), not two vectors per flow. A link's flow list keeps a few
// ids inline (a ring on a torus puts one flow on each link), and the progressive-filling
// scratch sits apart from the capacity and the list.
//
// Clients (one contention system for everything in flight, as SimGrid's lmm::System): many
// users share one network, each registered as a client with its own batch completion handler
// (a CollectiveRun per collective in flight, DESIGN 8). A flow's tag carries its client in the
// bits above kTagBits; a completion batch is split by client with no extra event: each client
// with completions at that instant is called once, with its own tags (below kTagBits) in
// completion order, clients in the order of their first completion in the batch. One client
// alone sees exactly the calls and events of a network without clients. Client 0 (the default
// client) is always there: start() without a client and set_(batch_)completion_handler use it.
//
// Capacity changes (faults in time, issue 16): set_capacity() changes a link's capacity at the
// current time; the flows connected to it are re-solved from their remaining bytes at a settle
// at that instant, exactly as for a start (so a flow's bytes before the change went at the old
// rate, after it at the new). Capacity 0 takes the link down: each flow on it moves, keeping
// its id, tag and remaining bytes, to the route the rerouter (set_rerouter) gives over the
// links that are up, and a start() whose route crosses a down link is rerouted the same way.
// A moved flow pays no second route latency (its first byte is already on the wire), and a
// link back up leaves moved flows where they are (later starts use their own routes). With no
// link down, start() costs one extra compare and every result is that of a network without
// this feature.
//
// Complexity per change: O(component flows x route length + links x bottleneck levels); a
// link taken down: O(flows on it x (route length + rerouter)) more.
// Memory: O(links + peak concurrent flows x longest route + clients); flow slots and client
// ids are reused.
#include <algorithm>
#include <cstdint>
#include <deque>
#include <functional>
#include <span>
#include <unordered_map>
#include <vector>

#include "sim/simulator.hpp"
#include "sim/signal.hpp"

namespace shardsim::sim {

class FlowNetwork {
 public:
  using LinkIndex = std::uint32_t;
  using FlowId = std::uint32_t;
  /// Called once per completed flow with the tag given to start(), at its completion time.
  using CompletionHandler = std::function<void(std::uint64_t tag)>;
  /// Called once per completion instant with the tags of the flows completed then, in
  /// completion order: the same calls as a CompletionHandler, one indirect call per batch
  /// (a ring step completes one flow per rank at once). The span is valid during the call.
  using BatchCompletionHandler = std::function<void(std::span<const std::uint64_t> tags)>;

  using ClientId = std::uint32_t;
  /// A client's tags are below 2^kTagBits; the network tag (on_flow_done) is
  /// client << kTagBits | tag.
  static constexpr unsigned kTagBits = 40;
  static constexpr std::uint64_t kMaxTag = (std::uint64_t{1} << kTagBits) - 1;
  static constexpr ClientId kDefaultClient = 0;
  [[nodiscard]] static constexpr ClientId client_of(std::uint64_t network_tag) {
    return static_cast<ClientId>(network_tag >> kTagBits);
  }
  [[nodiscard]] static constexpr std::uint64_t tag_of(std::uint64_t network_tag) { return network_tag & kMaxTag; }

  explicit FlowNetwork(Simulator& sim);
  FlowNetwork(const FlowNetwork&) = delete;
  FlowNetwork& operator=(const FlowNetwork&) = delete;

  /// Adds a link; throws std::invalid_argument unless capacity > 0 and finite.
  LinkIndex add_link(double capacity_Bps);
  [[nodiscard]] std::size_t link_count() const { return links_.size(); }
  [[nodiscard]] double capacity(LinkIndex l) const { return links_[l].capacity; }

  /// Gives the route of a flow that must leave a down link (header comment): `route` is its
  /// route now, `tag` its network tag (client_of / tag_of); it writes the new route into `out`
  /// (empty on entry), or throws (no path left: the rerouter knows what to name).
  using Rerouter = std::function<void(std::span<const LinkIndex> route, std::uint64_t tag, std::vector<LinkIndex>& out)>;
  void set_rerouter(Rerouter r) { rerouter_ = std::move(r); }
  /// Changes link `l`'s capacity now (header comment); 0 takes it down, moving its flows onto
  /// the rerouter's routes, in the order of the link's flow list. Throws std::out_of_range for
  /// a link that does not exist, std::invalid_argument for a capacity < 0 or not finite,
  /// std::logic_error when a flow must move and there is no rerouter, or the route it gives is
  /// empty, names a link that does not exist or crosses a down link; whatever the rerouter
  /// throws passes through.
  void set_capacity(LinkIndex l, double capacity_Bps);
  /// Links whose capacity is 0.
  [[nodiscard]] std::size_t down_links() const { return down_links_; }

  /// The default client's handler; replaces any handler set before (either kind).
  void set_completion_handler(CompletionHandler h);
  void set_batch_completion_handler(BatchCompletionHandler h) { clients_[kDefaultClient].handler = std::move(h); }

  /// Registers a client whose flows' completions come to `h` (may be empty: completions are
  /// dropped). Ids of removed clients are reused once their flows are done.
  ClientId add_client(BatchCompletionHandler h);
  /// Unregisters a client: its flows still in flight run on (they hold their share of the
  /// links) but their completions are dropped. Safe inside any handler, its own included.
  /// Throws std::out_of_range for the default client or an id that is not a live client.
  void remove_client(ClientId c);
  /// Live clients, the default client included.
  [[nodiscard]] std::size_t client_count() const { return clients_.size() - free_clients_.size() - zombies_; }

  /// Starts a flow of `bytes` over `route` now for the default client (the route is copied).
  /// An empty route or zero bytes completes at the current time (after the events already due
  /// now). Throws std::out_of_range for a link index that is not a link or a tag above kMaxTag.
  FlowId start(std::span<const LinkIndex> route, double bytes, std::uint64_t tag) {
    return start(kDefaultClient, route, bytes, tag);
  }
  /// start() for client `c`; also throws std::out_of_range when `c` is not a live client.
  FlowId start(ClientId c, std::span<const LinkIndex> route, double bytes, std::uint64_t tag);

  /// What start() takes, for starting many flows at once.
  struct StartRequest {
    std::span<const LinkIndex> route;
    double bytes = 0;
    std::uint64_t tag = 0;
  };
  /// Starts the flows in order, exactly as one start() call each would (same ids, same
  /// events), in one call (a collective step starts one flow per rank at one instant).
  void start(std::span<const StartRequest> flows) { start(kDefaultClient, flows); }
  void start(ClientId c, std::span<const StartRequest> flows);

  [[nodiscard]] std::size_t active_flows() const { return active_; }
  /// Current rate of an active flow (bytes/s); 0 until the next settle.
  [[nodiscard]] double rate(FlowId f) const { return flows_[f].rate; }

  struct Stats {
    std::uint64_t flows_started = 0;
    std::uint64_t flows_completed = 0;
    std::uint64_t solves = 0;          ///< component solves (progressive filling runs)
    std::uint64_t flows_resolved = 0;  ///< flow rate assignments, summed over solves
    std::uint64_t flows_rerouted = 0;  ///< flows moved off a down link (or started around one)
  };
  [[nodiscard]] const Stats& stats() const { return stats_; }

  /// Emitted at completion: network tag (client_of / tag_of split it), start time, end time,
  /// bytes. For timelines and statistics.
  Signal<std::uint64_t, Time, Time, double> on_flow_done;

 private:
  static constexpr std::uint32_t kNone = 0xffffffffu;

  // A flow, in one cache line. Its finish time is its bucket's (buckets_[bucket].finish_ps).
  struct alignas(64) Flow {
    double remaining = 0;
    double rate = 0;
    Time last;  // when `remaining` was last brought up to date
    std::uint64_t tag = 0;
    Time start;
    double bytes = 0;
    std::uint32_t bucket = kNone;  // completion bucket, kNone while unrated
    std::uint32_t bucket_pos = 0;
    std::uint32_t epoch = 0;
    std::uint32_t hops = 0;  // route length; the route is route(id)
  };
  static_assert(sizeof(Flow) == 64);
  // One link of a route and the index of the flow in that link's flow list.
  struct Hop {
    LinkIndex link = 0;
    std::uint32_t pos = 0;
  };

  // The flows on a link: a vector of ids with kInline of them stored in place (no second
  // cache line while a link carries at most kInline flows). Order and swap-removal are those
  // of std::vector: the solve walks links' flows in this order, and keeping the order keeps
  // results bit-identical.
  class LinkFlows {
   public:
    LinkFlows() = default;
    LinkFlows(const LinkFlows&) = delete;
    LinkFlows& operator=(const LinkFlows&) = delete;
    LinkFlows(LinkFlows&& o) noexcept : size_(o.size_), cap_(o.cap_) {
      if (o.cap_ > kInline) {
        heap_ = o.heap_;
        o.cap_ = kInline;
        o.size_ = 0;
      } else {
        std::copy(o.inline_, o.inline_ + o.size_, inline_);
      }
    }
    LinkFlows& operator=(LinkFlows&&) = delete;
    ~LinkFlows() {
      if (cap_ > kInline) delete[] heap_;
    }
    [[nodiscard]] std::uint32_t size() const { return size_; }
    [[nodiscard]] bool empty() const { return size_ == 0; }
    FlowId* begin() { return cap_ > kInline ? heap_ : inline_; }
    FlowId* end() { return begin() + size_; }
    [[nodiscard]] const FlowId* begin() const { return cap_ > kInline ? heap_ : inline_; }
    [[nodiscard]] const FlowId* end() const { return begin() + size_; }
    FlowId& operator[](std::uint32_t i) { return begin()[i]; }
    FlowId back() const { return begin()[size_ - 1]; }
    void push_back(FlowId f) {
      if (size_ == cap_) grow();
      begin()[size_++] = f;
    }
    void pop_back() { --size_; }

   private:
    static constexpr std::uint32_t kInline = 4;
    void grow();
    std::uint32_t size_ = 0;
    std::uint32_t cap_ = kInline;
    union {
      FlowId inline_[kInline];
      FlowId* heap_;
    };
  };
  struct Link {
    double capacity = 0;
    LinkFlows flows;
  };
  // Per-link scratch of the component solve, apart from the links (the solve is the rare path
  // when flows are link-disjoint).
  struct LinkScratch {
    double cap_left = 0;
    std::uint32_t unfrozen = 0;
    std::uint32_t epoch = 0;
  };

  struct Client {
    BatchCompletionHandler handler;
    std::uint64_t flows = 0;  // in flight
    enum class State : std::uint8_t { live, zombie, free } state = State::free;
    std::vector<std::uint64_t> batch;  // dispatch scratch
  };

  // start() without its settle request and client checks; `tag` is the network tag; forced
  // inline into both start()s.
  [[gnu::always_inline]] inline FlowId start_one(std::span<const LinkIndex> route, double bytes, std::uint64_t tag);
  Client& live_client(ClientId c);  // throws std::out_of_range unless c is live
  // Puts flow `id` on the links of `route` (restriding first when it is the longest yet).
  void attach(FlowId id, std::span<const LinkIndex> route);
  // Takes flow f off its links; links left with flows are marked dirty. Forced inline (once
  // per completed flow, in detach).
  [[gnu::always_inline]] inline void unlink(FlowId f);
  // The rerouter's route for a flow on `route` (network tag `tag`), checked; in reroute_.
  std::span<const LinkIndex> reroute(std::span<const LinkIndex> route, std::uint64_t tag);
  // start_one's route when a link is down: `route`, or the rerouter's when it crosses one.
  std::span<const LinkIndex> route_around(std::span<const LinkIndex> route, std::uint64_t tag);
  // Moves an active flow off a down link (set_capacity).
  void move_flow(FlowId f);
  /// Hands a completion batch (network tags, completion order) to the clients; `one`: all
  /// tags are of one client (the callers see every tag first). May rewrite `tags` in place.
  void dispatch(std::vector<std::uint64_t>& tags, bool one);
  void call(Client& cl, std::span<const std::uint64_t> tags);
  void release_client(ClientId c);
  std::span<Hop> route(FlowId f) {
    return {hops_.data() + static_cast<std::size_t>(f) * stride_, flows_[f].hops};
  }
  /// Re-lays hops_ with a longer stride (a route longer than any before).
  void restride(std::uint32_t stride);

  void mark_dirty(LinkIndex l);
  void request_settle();
  void settle();
  /// Re-solves every flow transitively connected to dirty_links_.
  void solve_components();
  void arm_timer();
  void on_timer();
  // Forced inline where it is called (once per completed flow, on_timer only).
  [[gnu::always_inline]] inline void detach(FlowId f);
  // completion buckets: flows sharing a finish time; an indexed min-heap of buckets on it
  struct Bucket {
    std::int64_t finish_ps = 0;
    std::vector<FlowId> flows;
    std::uint32_t heap_pos = kNone;
  };
  // Puts f in the bucket of that time. Inline: it runs once per rating, and mostly finds the
  // bucket it used last (a step's flows finish together).
  [[gnu::always_inline]] void schedule_completion(FlowId f, std::int64_t finish_ps) {
    std::uint32_t b = last_bucket_;
    if (b == kNone || buckets_[b].heap_pos == kNone || buckets_[b].finish_ps != finish_ps) b = bucket_for(finish_ps);
    Flow& fl = flows_[f];
    fl.bucket = b;
    fl.bucket_pos = static_cast<std::uint32_t>(buckets_[b].flows.size());
    buckets_[b].flows.push_back(f);
  }
  std::uint32_t bucket_for(std::int64_t finish_ps);  // finds or makes it; it becomes last_bucket_
  void unschedule(FlowId f);           // takes f out of its bucket
  void release_bucket(std::uint32_t b);
  void heap_sift_up(std::uint32_t i);
  void heap_sift_down(std::uint32_t i);

  Simulator& sim_;
  std::deque<Client> clients_;  // a deque: handlers may add clients while one runs
  std::vector<ClientId> free_clients_;
  std::size_t zombies_ = 0;           // removed clients with flows still in flight
  std::vector<ClientId> touched_;     // dispatch scratch: clients of a batch, first-seen order
  std::vector<ClientId> removals_;    // remove_client() calls during a dispatch
  std::uint32_t dispatching_ = 0;
  std::vector<Link> links_;
  std::size_t down_links_ = 0;        // links at capacity 0
  Rerouter rerouter_;
  std::vector<LinkIndex> reroute_;    // the rerouter's output
  std::vector<LinkScratch> scratch_;  // per link
  std::vector<Flow> flows_;
  std::vector<Hop> hops_;             // flow f's route: hops_[f * stride_, f * stride_ + hops)
  std::uint32_t stride_ = 0;
  std::vector<FlowId> free_flows_;
  std::vector<Bucket> buckets_;
  std::vector<std::uint32_t> free_buckets_;
  std::vector<std::uint32_t> heap_;                            // bucket indices
  std::unordered_map<std::int64_t, std::uint32_t> bucket_at_;  // finish_ps -> bucket
  std::uint32_t last_bucket_ = kNone;                          // most recently used bucket
  std::vector<LinkIndex> dirty_links_;
  std::vector<FlowId> pending_new_;   // started since the last settle, not yet rated
  std::vector<FlowId> zero_flows_;    // empty route or zero bytes: complete at settle
  std::vector<FlowId> component_;     // scratch
  std::vector<LinkIndex> comp_links_; // scratch
  std::vector<std::uint64_t> done_tags_;  // scratch
  std::uint32_t epoch_ = 0;
  std::size_t active_ = 0;
  bool settle_pending_ = false;
  bool timer_armed_ = false;
  std::int64_t timer_ps_ = 0;
  EventId timer_{};
  Stats stats_;
};

}  // namespace shardsim::sim
