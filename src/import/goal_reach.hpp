// Private to src/import: who hears whom in a GOAL file (goal.cpp builds the event graph,
// goal_flow.cpp computes the sets and asks the collective's question of them).
//
// A rank's set is a sorted list of disjoint rank intervals [lo, hi): the schedules GOAL files
// hold (recursive doubling, trees, dissemination) give every event a few intervals, where a
// bit set would cost p bits an event (p x events: 560 Gbit for 65,536 ranks).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace collv {

struct RankInterval {
  std::uint32_t lo, hi;  // ranks lo .. hi-1
  bool operator==(const RankInterval&) const = default;
};

namespace goal_detail {

// The event graph: event 2i is op i's start, 2i+1 its end; edge e of u, edges[off[u] + k], is
// (to << 1 | w): time(to) >= time(u) + w.
struct EventGraph {
  std::vector<std::uint32_t> off;    // events + 1
  std::vector<std::uint32_t> edges;  // to << 1 | w
};

}  // namespace goal_detail

// What the flow question needs of a GOAL file (import.hpp): heard(r) is the set of ranks some op
// of r depends on (r included), hears_all[r] whether one op of r depends on every rank's ops.
struct GoalReach {
  std::uint32_t p = 0;
  bool computed = false;  // false: the sets did not fit (why_not says so); `graph` is kept
  std::string why_not;
  std::vector<std::uint64_t> off;  // p + 1: rank r's intervals are heard[off[r], off[r+1])
  std::vector<RankInterval> heard;
  std::vector<bool> hears_all;
  // When the sets of every event did not fit: the event graph, which events never happen and
  // each rank's ops, so that the question is asked one rank at a time (goal_search.cpp).
  goal_detail::EventGraph graph;
  std::vector<bool> never;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> rank_ops;
};

namespace goal_detail {

// The sets of every event in topological `order` (events marked `never` hear and pass on
// nothing), folded per rank; rank r's ops are ops [rank_ops[r].first, rank_ops[r].second).
// Over --max-memory, or past a few intervals an event on average, the sets are not computed
// (why_not), never a wrong set, and the graph is kept in the result for RankSearch.
std::shared_ptr<GoalReach> goal_reach(
    EventGraph&& g, const std::vector<std::uint32_t>& order, const std::vector<bool>& never,
    const std::vector<std::pair<std::uint32_t, std::uint32_t>>& rank_ops, std::uint32_t p,
    const std::string& source);

// Tests only: the most intervals the sets may hold before the question is asked rank by rank
// (nullopt: the default, a few an event plus 2^20), so small files take that path too.
void set_interval_cap_for_tests(std::optional<std::uint64_t> cap);

// The flow question asked one rank at a time over a kept graph (goal_search.cpp), for when the
// sets of every event do not fit: each answer is exact, found by walking the events an event
// depends on (or that depend on it); the walks are counted against a budget of visits.
class RankSearch {
 public:
  // Builds the predecessor lists (checked against --max-memory first: LimitError).
  RankSearch(const GoalReach& g, const std::string& source);
  // The ranks some op of r depends on (r included) as sorted intervals into `heard`; returns
  // whether one op of r depends on every rank's ops. False with `heard` empty when the budget of
  // visits is spent (spent() is then true): r is not judged.
  bool heard(std::uint32_t r, std::vector<RankInterval>& heard);
  // One walk from all of r's events: backward, the ranks some op of r depends on; forward, the
  // ranks with an op that depends on some op of r (r included either way), as sorted intervals.
  // False when the budget is spent (r is not judged).
  bool from_rank(std::uint32_t r, bool forward, std::vector<RankInterval>& out);
  bool spent() const { return spent_; }

 private:
  // Walks from `from` along succ (forward) or pred (backward); marks each rank met in `met_`
  // with stamp `mark`; returns the number of distinct ranks met, or -1 when the budget is spent.
  std::int64_t walk(const std::vector<std::uint32_t>& from, bool forward, std::uint32_t mark,
                    std::uint32_t all_mark);
  void intervals(std::uint32_t all_mark, std::vector<RankInterval>& out) const;
  const GoalReach& g_;
  std::string source_;
  std::vector<std::uint32_t> pred_off_, pred_;  // predecessors, CSR
  std::vector<std::uint32_t> op_rank_;          // op -> rank
  std::vector<std::uint32_t> seen_;             // event -> epoch of the walk that saw it last
  std::vector<std::uint32_t> met_;              // rank -> stamp of the walk that met it last
  std::vector<std::uint32_t> covered_;          // rank -> stamp: met by some walk of the rank
  std::vector<std::uint32_t> stack_;
  std::uint32_t epoch_ = 0, stamp_ = 0;
  std::uint64_t budget_ = 0;  // visits left
  bool spent_ = false;
};

}  // namespace goal_detail
}  // namespace collv
