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
// step: one per rank), which then cost O(1) each instead of a heap pop each. Finish times round up to the picosecond, so a flow never completes
// before its last byte. Route latency is not modelled here: callers delay start() by it.
//
// Complexity per change: O(component flows x route length + links x bottleneck levels).
// Memory: O(links + peak concurrent flows); flow slots and their vectors are reused.
#include <cstdint>
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

  explicit FlowNetwork(Simulator& sim) : sim_(sim) {}
  FlowNetwork(const FlowNetwork&) = delete;
  FlowNetwork& operator=(const FlowNetwork&) = delete;

  /// Adds a link; throws std::invalid_argument unless capacity > 0 and finite.
  LinkIndex add_link(double capacity_Bps);
  [[nodiscard]] std::size_t link_count() const { return links_.size(); }
  [[nodiscard]] double capacity(LinkIndex l) const { return links_[l].capacity; }

  void set_completion_handler(CompletionHandler h) { on_complete_ = std::move(h); }

  /// Starts a flow of `bytes` over `route` now. An empty route or zero bytes completes at the
  /// current time (after the events already due now). Link indices must be valid.
  FlowId start(std::span<const LinkIndex> route, double bytes, std::uint64_t tag);

  [[nodiscard]] std::size_t active_flows() const { return active_; }
  /// Current rate of an active flow (bytes/s); 0 until the next settle.
  [[nodiscard]] double rate(FlowId f) const { return flows_[f].rate; }

  struct Stats {
    std::uint64_t flows_started = 0;
    std::uint64_t flows_completed = 0;
    std::uint64_t solves = 0;          ///< component solves (progressive filling runs)
    std::uint64_t flows_resolved = 0;  ///< flow rate assignments, summed over solves
  };
  [[nodiscard]] const Stats& stats() const { return stats_; }

  /// Emitted at completion: tag, start time, end time, bytes. For timelines and statistics.
  Signal<std::uint64_t, Time, Time, double> on_flow_done;

 private:
  struct Flow {
    std::vector<LinkIndex> route;
    std::vector<std::uint32_t> pos;  // index of this flow in links_[route[i]].flows
    double remaining = 0;
    double bytes = 0;
    double rate = 0;
    Time last;         // when `remaining` was last brought up to date
    Time start;
    std::int64_t finish_ps = 0;
    std::uint64_t tag = 0;
    std::uint32_t bucket = kNone;  // completion bucket, kNone while unrated
    std::uint32_t bucket_pos = 0;
    std::uint32_t epoch = 0;
    bool active = false;
  };
  struct Link {
    double capacity = 0;
    std::vector<FlowId> flows;
    std::uint32_t epoch = 0;
    // scratch for progressive filling
    double cap_left = 0;
    std::uint32_t unfrozen = 0;
  };
  static constexpr std::uint32_t kNone = 0xffffffffu;

  void mark_dirty(LinkIndex l);
  void request_settle();
  void settle();
  /// Re-solves every flow transitively connected to dirty_links_.
  void solve_components();
  void arm_timer();
  void on_timer();
  void detach(FlowId f);
  // completion buckets: flows sharing a finish time; an indexed min-heap of buckets on it
  struct Bucket {
    std::int64_t finish_ps = 0;
    std::vector<FlowId> flows;
    std::uint32_t heap_pos = kNone;
  };
  void schedule_completion(FlowId f);  // puts f in the bucket of f.finish_ps
  void unschedule(FlowId f);           // takes f out of its bucket
  void release_bucket(std::uint32_t b);
  void heap_sift_up(std::uint32_t i);
  void heap_sift_down(std::uint32_t i);

  Simulator& sim_;
  std::vector<Link> links_;
  std::vector<Flow> flows_;
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
  CompletionHandler on_complete_;
  Stats stats_;
};

}  // namespace shardsim::sim
