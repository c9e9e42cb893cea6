// What the invariant checkers share (internal to src/check; checks.hpp is the interface): a
// result and its violations, transfers grouped by step, items compared as multisets.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "check/checks.hpp"

namespace collv {

// `v = {a, b}` for a counterexample's nodes or transfers, written item by item: GCC 12 warned
// (-Wnonnull, from its own header) about the memmove of vector's initializer-list assignment.
template <class T>
void set_list(std::vector<T>& v, std::initializer_list<std::type_identity_t<T>> xs) {
  v.clear();
  for (T x : xs) v.push_back(x);
}

inline CheckResult make(const char* name) {
  CheckResult r;
  r.name = name;
  r.verdict = Verdict::Pass;
  return r;
}

inline void add_violation(CheckResult& r, const CheckOptions& o, Counterexample c) {
  r.verdict = Verdict::Fail;
  c.invariant = r.name;
  ++r.violation_count;
  if (r.violations.size() < o.max_violations) r.violations.push_back(std::move(c));
}

inline std::string xfer_text(const Trace& t, const Transfer& x) {
  return fmt::format("{} -> {} {}", t.topology.label(x.src), t.topology.label(x.dst),
                     payload_to_string(t, x));
}

// Transfer indices grouped by step: result[s] lists the transfers of step s (index 0 unused).
// One flat list (ordered_transfers' order) with each step's start: no vector per step.
struct StepIndex {
  std::vector<std::uint32_t> first, list;
  std::span<const std::uint32_t> operator[](std::uint32_t s) const {
    return {list.data() + first[s], first[s + 1] - first[s]};
  }
};
inline StepIndex by_step(const Trace& t) {
  StepIndex ix;
  ix.list = t.ordered_transfers();
  ix.first.assign(t.steps + 2, 0);
  for (const Transfer& x : t.transfers) ++ix.first[std::min(x.step, t.steps) + 1];
  for (std::uint32_t s = 1; s < ix.first.size(); ++s) ix.first[s] += ix.first[s - 1];
  // ordered_transfers sorts by step first, so each step's transfers are already together.
  return ix;
}

inline std::vector<Item> sorted_items(const Buffer& b) {
  std::vector<Item> v(b.begin(), b.end());
  std::sort(v.begin(), v.end());
  return v;
}

struct ItemPairHash {
  std::size_t operator()(const std::pair<Item, Item>& k) const {
    return std::hash<Item>{}(k.first * 0x9E3779B97F4A7C15ULL ^ k.second);
  }
};

// Items as multisets of contributions (sorted terms), for comparisons that ignore operand order.
inline std::vector<std::vector<std::uint32_t>> term_multisets(const Domain& d, const Buffer& b,
                                                              bool sort_items) {
  std::vector<std::vector<std::uint32_t>> out;
  for (Item it : b) {
    auto ts = d.terms(it);
    std::sort(ts.begin(), ts.end());
    out.push_back(std::move(ts));
  }
  if (sort_items) std::sort(out.begin(), out.end());
  return out;
}

// single-port, route and congestion in one pass over the steps (checks_links.cpp); a null
// result is not computed.
void link_checks(const Trace& t, const CheckOptions& o, const StepIndex& steps, CheckResult* sp,
                 CheckResult* route, CheckResult* cong);

// nodup (checks_nodup.cpp) over a step index made once for every check that reads the steps
// (empty when nodup does not apply).
CheckResult nodup_check(const Trace& t, const CheckOptions& o, const StepIndex& steps);

}  // namespace collv
