// GOAL's flow check (docs/formats.md, "GOAL"): for every event of the event graph, the ranks
// with an op it depends on, as rank intervals (goal_reach.hpp); from them, which rank's ops some
// op of which rank depends on, and the question of the collective the user names.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "import/goal_reach.hpp"
#include "import/import.hpp"
#include "util/deadline.hpp"
#include "util/error.hpp"
#include "util/memory.hpp"
#include "util/text.hpp"

namespace collv {

namespace {

using import_detail::add_violation;
using import_detail::make_check;

// Intervals an event may hold on average before the sets give way to RankSearch: the schedules
// whose sets merge (trees, joined recursive doubling) stay at one or two.
constexpr std::uint64_t kIntervalsPerEvent = 2;
std::optional<std::uint64_t> interval_cap_override;

// A set of ranks as a message names it: how many, and the first 16 (the rest are counted, not
// listed, so a question over 65,536 ranks costs what its answer prints).
struct Ranks {
  std::vector<std::uint32_t> first;
  std::uint64_t count = 0;
  void add(std::uint32_t r) {
    if (first.size() < 16) first.push_back(r);
    ++count;
  }
  void add_range(std::uint32_t lo, std::uint32_t hi) {
    for (std::uint32_t r = lo; r < hi && first.size() < 16; ++r) first.push_back(r);
    if (hi > lo) count += hi - lo;
  }
  bool empty() const { return count == 0; }
  std::uint64_t size() const { return count; }
  std::string list() const {
    std::string o;
    for (std::size_t k = 0; k < first.size(); ++k)
      o += fmt::format("{}{}", k ? ", " : "", first[k]);
    if (count > 16) o += fmt::format(", ... ({} in all)", count);
    return o;
  }
};

// Interval sets in one pool: set 0 is empty; set s is pool[at[s], at[s] + len[s]). Sets are
// never freed: a union that equals one of its operands returns it, so chains of events that
// hear no one new share one set.
class SetPool {
 public:
  // At most `cap` intervals in all (LimitError past it, as past --max-memory).
  // The arrays are reserved at the cap (address space; pages are touched as sets are added), so
  // they never double: a doubling held the old and the new array together, near twice the cap.
  SetPool(std::string what, std::uint64_t cap) : watch_(std::move(what)), cap_(cap) {
    pool_.reserve(cap);
    at_.reserve(cap + 1);
    len_.reserve(cap + 1);
    at_.push_back(0);
    len_.push_back(0);
  }
  std::uint32_t singleton(std::uint32_t r) { return add({RankInterval{r, r + 1}}); }
  // The union of sets a and b: one of them when it holds the other, else a new set.
  std::uint32_t unite(std::uint32_t a, std::uint32_t b) {
    if (a == b || b == 0) return a;
    if (a == 0) return b;
    const RankInterval* x = &pool_[at_[a]];
    const RankInterval* y = &pool_[at_[b]];
    const std::uint32_t nx = len_[a], ny = len_[b];
    scratch_.clear();
    std::uint32_t i = 0, j = 0;
    while (i < nx || j < ny) {
      RankInterval n = (j == ny || (i < nx && x[i].lo <= y[j].lo)) ? x[i++] : y[j++];
      if (!scratch_.empty() && n.lo <= scratch_.back().hi)
        scratch_.back().hi = std::max(scratch_.back().hi, n.hi);
      else
        scratch_.push_back(n);
    }
    if (scratch_.size() == nx && std::equal(scratch_.begin(), scratch_.end(), x)) return a;
    if (scratch_.size() == ny && std::equal(scratch_.begin(), scratch_.end(), y)) return b;
    return add(scratch_);
  }
  const RankInterval* data(std::uint32_t s) const { return pool_.data() + at_[s]; }
  std::uint32_t size(std::uint32_t s) const { return len_[s]; }

 private:
  std::uint32_t add(const std::vector<RankInterval>& v) {
    if (at_.size() == std::numeric_limits<std::uint32_t>::max())
      throw LimitError("more than 2^32 distinct rank sets");
    // A set holds at least one interval, so the sets are at most the cap too.
    if (pool_.size() + v.size() > cap_)
      throw LimitError(fmt::format("the rank sets of the events passed {} intervals", cap_));
    watch_.charge(v.size() * sizeof(RankInterval) + 12);
    at_.push_back(pool_.size());
    len_.push_back(static_cast<std::uint32_t>(v.size()));
    pool_.insert(pool_.end(), v.begin(), v.end());
    return static_cast<std::uint32_t>(at_.size() - 1);
  }
  MemoryWatch watch_;
  std::uint64_t cap_;
  std::vector<RankInterval> pool_, scratch_;
  std::vector<std::uint64_t> at_;
  std::vector<std::uint32_t> len_;
};

}  // namespace

namespace goal_detail {

void set_interval_cap_for_tests(std::optional<std::uint64_t> cap) { interval_cap_override = cap; }

std::shared_ptr<GoalReach> goal_reach(
    EventGraph&& g, const std::vector<std::uint32_t>& order, const std::vector<bool>& never,
    const std::vector<std::pair<std::uint32_t, std::uint32_t>>& rank_ops, std::uint32_t p,
    const std::string& source) {
  auto reach = std::make_shared<GoalReach>();
  reach->p = p;
  const std::size_t ne = g.off.size() - 1;
  try {
    require_memory(ne * 4 + std::uint64_t{p} * 24,
                   fmt::format("{}: the rank sets of {} events", source, ne));
    // The sets are kept for every event; past kIntervalsPerEvent intervals an event on average they
    // stop, and the question is asked rank by rank (RankSearch) instead.
    SetPool pool(
        fmt::format("the rank sets of {}'s {} events", source, ne),
        interval_cap_override.value_or(kIntervalsPerEvent * ne + (std::uint64_t{1} << 20)));
    std::vector<std::uint32_t> set(ne, 0);
    for (std::uint32_t r = 0; r < p; ++r) {
      if (rank_ops[r].first == rank_ops[r].second) continue;
      std::uint32_t own = pool.singleton(r);
      for (std::uint32_t i = rank_ops[r].first; i < rank_ops[r].second; ++i) set[2 * i] = own;
    }
    DeadlineTick tick;
    auto where = [&] { return fmt::format("judging the flow of {}", source); };
    for (std::uint32_t u : order) {
      tick(where);
      if (never[u]) continue;
      for (std::uint32_t k = g.off[u]; k < g.off[u + 1]; ++k) {
        std::uint32_t to = g.edges[k] >> 1;
        set[to] = pool.unite(set[to], set[u]);
      }
    }
    // Per rank: the union of its events' sets and the rank itself (a rank with no op still
    // "hears" itself), and whether one of its events hears every rank.
    reach->off.assign(std::size_t{p} + 1, 0);
    reach->hears_all.assign(p, p == 1);
    MemoryWatch watch(fmt::format("the heard sets of {}'s {} ranks", source, p));
    std::vector<RankInterval> all;
    for (std::uint32_t r = 0; r < p; ++r) {
      tick(where);
      all.clear();
      all.push_back({r, r + 1});
      for (std::uint32_t i = rank_ops[r].first; i < rank_ops[r].second; ++i)
        for (std::uint32_t v = 2 * i; v <= 2 * i + 1; ++v) {
          if (never[v]) continue;
          const RankInterval* d = pool.data(set[v]);
          std::uint32_t n = pool.size(set[v]);
          if (n == 1 && d[0].lo == 0 && d[0].hi == p) reach->hears_all[r] = true;
          all.insert(all.end(), d, d + n);
        }
      std::sort(all.begin(), all.end(),
                [](const RankInterval& a, const RankInterval& b) { return a.lo < b.lo; });
      std::size_t kept = 0;
      for (const RankInterval& iv : all) {
        if (kept && iv.lo <= all[kept - 1].hi)
          all[kept - 1].hi = std::max(all[kept - 1].hi, iv.hi);
        else
          all[kept++] = iv;
      }
      if (reach->heard.size() + kept > reach->heard.capacity())
        watch.charge((reach->heard.capacity() + kept) * 2 * sizeof(RankInterval));
      reach->heard.insert(reach->heard.end(), all.begin(), all.begin() + kept);
      reach->off[r + 1] = reach->heard.size();
    }
    reach->computed = true;
  } catch (const LimitError& e) {
    // Over the limits: the sets are dropped (never guessed) and the graph is kept, for the
    // question asked rank by rank (judge_goal_flow).
    reach->computed = false;
    reach->why_not = e.what();
    reach->off.clear();
    reach->heard.clear();
    reach->hears_all.clear();
    reach->graph = std::move(g);
    reach->never = never;
    reach->rank_ops = rank_ops;
  }
  return reach;
}

}  // namespace goal_detail

void judge_goal_flow(ImportedSchedule& s, const std::string& collective,
                     std::optional<std::uint32_t> root) {
  auto it = std::find_if(s.checks.begin(), s.checks.end(),
                         [](const CheckResult& r) { return r.name == "flow"; });
  if (s.format != ScheduleFormat::Goal || it == s.checks.end())
    throw UsageError("--collective names the collective of a GOAL file; other formats declare it");
  enum class Q { Default, ToRoot, FromRoot, Everyone, AllPairs, Prefix };
  Q q = Q::Default;
  std::string what;
  if (collective.empty()) {
    q = Q::Default;
  } else if (collective == "reduce" || collective == "gather" || collective == "incast") {
    q = Q::ToRoot;
  } else if (collective == "broadcast" || collective == "scatter" || collective == "outcast") {
    q = Q::FromRoot;
  } else if (collective == "allreduce" || collective == "barrier" || collective == "allgather") {
    q = Q::Everyone;
  } else if (collective == "alltoall" || collective == "reduce-scatter") {
    q = Q::AllPairs;
  } else if (collective == "scan") {
    q = Q::Prefix;
  } else {
    throw UsageError(
        "--collective: GOAL flow knows broadcast, scatter, outcast, reduce, gather, "
        "incast, allreduce, allgather, barrier, alltoall, reduce-scatter and scan, "
        "not '" +
        printable(collective, 40) + "'");
  }
  CheckResult flow = make_check("flow");
  if (!s.goal_reach) {  // a deadlock: nothing to ask
    flow.verdict = Verdict::NotChecked;
    flow.note = "the schedule deadlocks (see deadlock)";
    *it = flow;
    return;
  }
  const GoalReach& g = *s.goal_reach;
  const std::uint32_t p = g.p;
  if (root && *root >= p)
    throw UsageError(
        fmt::format("--source {} is not a rank of the GOAL file (0..{})", *root, p - 1));
  const std::uint32_t R = root.value_or(0);
  // Rank r's heard set (and whether one op of r hears every rank): from the sets when they were
  // computed, else walked for r alone (RankSearch); false when the walks' budget is spent.
  std::optional<goal_detail::RankSearch> search;
  if (!g.computed) {
    std::string why;
    if (q == Q::Default)
      why = "; without --collective the question needs every rank's set";
    else if (g.graph.off.empty())
      why = "";
    else
      try {
        search.emplace(g, "the GOAL file");
      } catch (const LimitError& e) {
        why = std::string("; ") + e.what();
      }
    if (!search) {
      flow.verdict = Verdict::Unknown;
      flow.note = "not decided: " + g.why_not + why;
      *it = flow;
      return;
    }
  }
  std::vector<RankInterval> iv;  // the last rank's intervals
  bool iv_all = false;
  auto heard_of = [&](std::uint32_t r) {
    if (!search) {
      iv.assign(g.heard.begin() + static_cast<std::ptrdiff_t>(g.off[r]),
                g.heard.begin() + static_cast<std::ptrdiff_t>(g.off[r + 1]));
      iv_all = g.hears_all[r];
      return true;
    }
    if (q == Q::Everyone) {
      iv_all = search->heard(r, iv);
    } else {
      search->from_rank(r, false, iv);
      iv_all = false;
    }
    return !search->spent();
  };
  // Ranks below `below` that the last rank never depends on: the gaps between its intervals.
  auto unheard = [&](std::uint32_t below) {
    Ranks v;
    std::uint32_t at = 0;
    for (std::size_t k = 0; k < iv.size() && at < below; ++k) {
      v.add_range(at, std::min(iv[k].lo, below));
      at = iv[k].hi;
    }
    if (at < below) v.add_range(at, below);
    return v;
  };
  // hears(r, src): some op of r depends on an op of src (or r == src).
  auto hears = [&](std::uint32_t r, std::uint32_t src) {
    auto b = g.heard.begin() + static_cast<std::ptrdiff_t>(g.off[r]);
    auto e = g.heard.begin() + static_cast<std::ptrdiff_t>(g.off[r + 1]);
    auto at = std::upper_bound(b, e, src,
                               [](std::uint32_t x, const RankInterval& iv) { return x < iv.lo; });
    return at != b && src < (at - 1)->hi;
  };
  auto deaf_to = [&](std::uint32_t src) {  // ranks that never depend on src
    Ranks v;
    if (search) {  // the gaps of what src's ops reach (a forward walk)
      search->from_rank(src, true, iv);
      return unheard(p);
    }
    for (std::uint32_t r = 0; r < p; ++r)
      if (!hears(r, src)) v.add(r);
    return v;
  };
  auto unheard_by = [&](std::uint32_t r, std::uint32_t below) {
    heard_of(r);
    return unheard(below);
  };
  auto fail = [&](const std::vector<std::uint32_t>& nodes, std::string msg) {
    Counterexample c;
    c.nodes.assign(nodes.begin(), nodes.end());
    c.message = std::move(msg);
    add_violation(flow, std::move(c));
  };
  // Rank by rank, the question stops at the first kMaxFailing failing ranks (a failure is
  // decided by one) or when the walks' budget is spent; `judged` counts the ranks asked.
  constexpr std::size_t kMaxFailing = 8;
  std::uint32_t judged = 0;
  auto more = [&] { return !search || (!search->spent() && flow.violation_count < kMaxFailing); };
  const std::string via = "(through requires, irequires and messages)";
  switch (q) {
    case Q::FromRoot: {
      auto v = deaf_to(R);
      judged = search && search->spent() ? 0 : p;
      if (judged && !v.empty())
        fail(v.first, fmt::format("{} of {} ranks never depend on root {} {}: rank(s) {}", v.size(),
                                  p, R, via, v.list()));
      what = fmt::format("{} from root {}: every rank depends on the root", collective, R);
      break;
    }
    case Q::ToRoot: {
      auto v = unheard_by(R, p);
      judged = search && search->spent() ? 0 : p;
      if (judged && !v.empty())
        fail({R}, fmt::format("root {} never depends on {} of {} ranks {}: rank(s) {}", R, v.size(),
                              p, via, v.list()));
      what = fmt::format("{} to root {}: the root depends on every rank", collective, R);
      break;
    }
    case Q::Everyone: {
      for (std::uint32_t r = 0; r < p && more(); ++r) {
        if (!heard_of(r)) break;
        ++judged;
        if (iv_all) continue;
        auto v = unheard(p);
        fail({r}, v.empty()
                      ? fmt::format("rank {} has no op that depends on every rank's ops (each "
                                    "rank reaches some op of it, none reaches one op)",
                                    r)
                      : fmt::format("rank {} never depends on rank(s) {} {}", r, v.list(), via));
      }
      what = collective + ": every rank has an op that depends on every rank's ops";
      break;
    }
    case Q::AllPairs:
    case Q::Prefix: {
      for (std::uint32_t r = 0; r < p && more(); ++r) {
        if (!heard_of(r)) break;
        ++judged;
        auto v = unheard(q == Q::Prefix ? r : p);
        if (!v.empty())
          fail({r}, fmt::format("rank {} never depends on rank(s) {} {}", r, v.list(), via));
      }
      what = q == Q::Prefix ? "scan: every rank depends on every lower rank"
                            : collective + ": every rank depends on every rank";
      break;
    }
    case Q::Default: {
      // Some rank reaches every rank (a broadcast shape) or every rank reaches some rank (a
      // reduce shape); with -s, that rank is the root.
      // heard_by[s]: how many ranks depend on s (a difference array over every rank's intervals).
      std::vector<std::uint32_t> heard_by(std::size_t{p} + 1, 0);
      for (std::uint32_t r = 0; r < p; ++r)
        for (std::uint64_t k = g.off[r]; k < g.off[r + 1]; ++k) {
          ++heard_by[g.heard[k].lo];
          --heard_by[g.heard[k].hi];
        }
      for (std::uint32_t s = 1; s <= p; ++s) heard_by[s] += heard_by[s - 1];
      auto hears_every = [&](std::uint32_t r) {
        return g.off[r + 1] - g.off[r] == 1 && g.heard[g.off[r]].lo == 0 &&
               g.heard[g.off[r]].hi == p;
      };
      std::optional<std::uint32_t> found;
      bool out_shape = false;
      for (std::uint32_t r = root.value_or(0); r < (root ? R + 1 : p) && !found; ++r) {
        if (heard_by[r] == p)
          found = r, out_shape = true;
        else if (hears_every(r))
          found = r;
      }
      if (!found) {
        if (root) {
          auto a = deaf_to(R), b = unheard_by(R, p);
          fail({R},
               fmt::format("root {} neither reaches every rank ({} never depend on it: {}) nor "
                           "is reached by every rank (it never depends on {})",
                           R, a.size(), a.list(), b.list()));
        } else {
          std::uint32_t best = 0;
          std::size_t most = 0;
          for (std::uint32_t r = 0; r < p; ++r)
            if (heard_by[r] > most) most = heard_by[r], best = r;
          auto a = deaf_to(best);
          fail(a.first,
               fmt::format("no rank reaches every rank and no rank is reached by every rank {}; "
                           "rank {} reaches the most, {} of {} (never: {})",
                           via, best, most, p, a.list()));
        }
      } else {
        what = fmt::format("rank {} {}", *found,
                           out_shape ? "reaches every rank" : "is reached by every rank");
      }
      std::string asked =
          root ? fmt::format("root {} reaches every rank or every rank reaches it", R)
               : "some rank reaches every rank, or every rank reaches some rank";
      what = "GOAL names no collective (give --collective): " + asked +
             (what.empty() ? std::string() : "; " + what);
      break;
    }
  }
  flow.note = "question asked: " + what;
  if (search) {
    const std::string how = fmt::format(
        "asked rank by rank, walking the events each op depends on ({} of {} ranks judged), as "
        "the sets of every event did not fit: {}",
        judged, p, g.why_not);
    if (flow.verdict == Verdict::Fail) {
      flow.note += "; " + how;
    } else if (judged < p) {
      flow.verdict = Verdict::Unknown;
      flow.note = "not decided: the walks' budget was spent; " + how;
    } else {
      flow.note += "; " + how;
    }
  }
  *it = flow;
}

}  // namespace collv
