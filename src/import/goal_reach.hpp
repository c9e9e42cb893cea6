// Private to src/import: who hears whom in a GOAL file (goal.cpp builds the event graph,
// goal_flow.cpp computes the sets and asks the collective's question of them).
//
// A rank's set is a sorted list of disjoint rank intervals [lo, hi): the schedules GOAL files
// hold (recursive doubling, trees, dissemination) give every event a few intervals, where a
// bit set would cost p bits an event (p x events: 560 Gbit for 65,536 ranks).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace collv {

struct RankInterval {
  std::uint32_t lo, hi;  // ranks lo .. hi-1
  bool operator==(const RankInterval&) const = default;
};

// What the flow question needs of a GOAL file (import.hpp): heard(r) is the set of ranks some op
// of r depends on (r included), hears_all[r] whether one op of r depends on every rank's ops.
struct GoalReach {
  std::uint32_t p = 0;
  bool computed = false;  // false: the sets did not fit --max-memory (why_not says so)
  std::string why_not;
  std::vector<std::uint64_t> off;  // p + 1: rank r's intervals are heard[off[r], off[r+1])
  std::vector<RankInterval> heard;
  std::vector<bool> hears_all;
};

namespace goal_detail {

// The event graph: event 2i is op i's start, 2i+1 its end; edge e of u, edges[off[u] + k], is
// (to << 1 | w): time(to) >= time(u) + w.
struct EventGraph {
  std::vector<std::uint32_t> off;    // events + 1
  std::vector<std::uint32_t> edges;  // to << 1 | w
};

// The sets of every event in topological `order` (events marked `never` hear and pass on
// nothing), folded per rank; rank r's ops are ops [rank_ops[r].first, rank_ops[r].second).
// Over --max-memory the result is not computed (why_not), never a wrong set.
std::shared_ptr<GoalReach> goal_reach(
    const EventGraph& g, const std::vector<std::uint32_t>& order, const std::vector<bool>& never,
    const std::vector<std::pair<std::uint32_t, std::uint32_t>>& rank_ops, std::uint32_t p,
    const std::string& source);

}  // namespace goal_detail
}  // namespace collv
