// GOAL's flow question one rank at a time (goal_reach.hpp, RankSearch): when the rank sets of
// every event do not fit, the events an event depends on are walked from it, exactly, for the
// ranks the question needs, within a budget of visits.
#include <algorithm>
#include <cstdint>
#include <vector>

#include <fmt/format.h>

#include "import/goal_reach.hpp"
#include "util/deadline.hpp"
#include "util/error.hpp"
#include "util/memory.hpp"

namespace collv::goal_detail {

RankSearch::RankSearch(const GoalReach& g, const std::string& source) : g_(g), source_(source) {
  const EventGraph& eg = g.graph;
  const std::uint64_t ne = eg.off.size() - 1, nedges = eg.edges.size();
  // Predecessor lists, each event's last walk, each op's rank, two stamps a rank.
  require_memory((ne + 1) * 4 + nedges * 4 + ne * 4 + ne / 2 * 4 + std::uint64_t{g.p} * 8,
                 fmt::format("{}: the predecessor lists of {} events", source, ne));
  pred_off_.assign(ne + 1, 0);
  for (std::uint32_t e : eg.edges) ++pred_off_[(e >> 1) + 1];
  for (std::uint64_t v = 0; v < ne; ++v) pred_off_[v + 1] += pred_off_[v];
  pred_.resize(nedges);
  std::vector<std::uint32_t> fill(pred_off_.begin(), pred_off_.end() - 1);
  for (std::uint64_t u = 0; u < ne; ++u)
    for (std::uint32_t k = eg.off[u]; k < eg.off[u + 1]; ++k)
      pred_[fill[eg.edges[k] >> 1]++] = static_cast<std::uint32_t>(u);
  op_rank_.assign(ne / 2, 0);
  for (std::uint32_t r = 0; r < g.p; ++r)
    for (std::uint32_t i = g.rank_ops[r].first; i < g.rank_ops[r].second; ++i) op_rank_[i] = r;
  seen_.assign(ne, 0);
  met_.assign(g.p, 0);
  covered_.assign(g.p, 0);
  // Enough for the few ranks a failing question names on any file, and for every rank on a
  // file whose events each depend on few others; past it the question is undecided.
  budget_ = 16 * (ne + nedges) + (std::uint64_t{1} << 24);
}

std::int64_t RankSearch::walk(const std::vector<std::uint32_t>& from, bool forward,
                              std::uint32_t mark, std::uint32_t all_mark) {
  if (++epoch_ == 0) {  // wrapped: clear the events' marks
    std::fill(seen_.begin(), seen_.end(), 0);
    epoch_ = 1;
  }
  std::int64_t count = 0;
  stack_.clear();
  for (std::uint32_t f : from)
    if (seen_[f] != epoch_) seen_[f] = epoch_, stack_.push_back(f);
  const EventGraph& eg = g_.graph;
  DeadlineTick tick;
  while (!stack_.empty()) {
    tick([&] { return fmt::format("judging the flow of {} rank by rank", source_); });
    if (budget_ == 0) {
      spent_ = true;
      return -1;
    }
    --budget_;
    const std::uint32_t v = stack_.back();
    stack_.pop_back();
    const std::uint32_t q = op_rank_[v / 2];
    if (met_[q] != mark) met_[q] = mark, ++count;
    covered_[q] = all_mark;
    // An event that never happens hears and passes on nothing (goal_reach): a forward walk
    // stops at it; a backward walk never meets one (what it precedes never happens either).
    if (forward) {
      for (std::uint32_t k = eg.off[v]; k < eg.off[v + 1]; ++k) {
        const std::uint32_t u = eg.edges[k] >> 1;
        if (!g_.never[u] && seen_[u] != epoch_) seen_[u] = epoch_, stack_.push_back(u);
      }
    } else {
      for (std::uint32_t k = pred_off_[v]; k < pred_off_[v + 1]; ++k) {
        const std::uint32_t u = pred_[k];
        if (seen_[u] != epoch_) seen_[u] = epoch_, stack_.push_back(u);
      }
    }
  }
  return count;
}

void RankSearch::intervals(std::uint32_t all_mark, std::vector<RankInterval>& out) const {
  out.clear();
  for (std::uint32_t q = 0; q < g_.p; ++q) {
    if (covered_[q] != all_mark) continue;
    if (!out.empty() && out.back().hi == q)
      ++out.back().hi;
    else
      out.push_back({q, q + 1});
  }
}

bool RankSearch::heard(std::uint32_t r, std::vector<RankInterval>& out) {
  out.clear();
  const std::uint32_t p = g_.p;
  const std::uint32_t all_mark = ++stamp_;
  covered_[r] = all_mark;  // a rank hears itself, with or without ops
  const std::uint32_t first_walk = epoch_ + 1;
  std::vector<std::uint32_t> from(1);
  // Latest ops first: an event that an earlier walk of r met depends on no rank that walk did
  // not count, so it is skipped (its walk found no op hearing everyone, or r would be judged).
  for (std::uint32_t i = g_.rank_ops[r].second; i-- > g_.rank_ops[r].first;)
    for (std::uint32_t v : {2 * i + 1, 2 * i}) {
      if (g_.never[v] || seen_[v] >= first_walk) continue;
      from[0] = v;
      const std::int64_t n = walk(from, false, ++stamp_, all_mark);
      if (n < 0) return false;
      if (n == p) {
        out.push_back({0, p});
        return true;
      }
    }
  intervals(all_mark, out);
  return p == 1;
}

bool RankSearch::from_rank(std::uint32_t r, bool forward, std::vector<RankInterval>& out) {
  out.clear();
  const std::uint32_t all_mark = ++stamp_;
  covered_[r] = all_mark;
  std::vector<std::uint32_t> from;
  for (std::uint32_t i = g_.rank_ops[r].first; i < g_.rank_ops[r].second; ++i)
    for (std::uint32_t v : {2 * i, 2 * i + 1})
      if (!g_.never[v]) from.push_back(v);
  if (walk(from, forward, ++stamp_, all_mark) < 0) return false;
  intervals(all_mark, out);
  return true;
}

}  // namespace collv::goal_detail
