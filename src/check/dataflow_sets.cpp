// The dataflow walk over sets (see dataflow_sets.hpp). Each step here mirrors a step of
// Analyzer::derive and Analyzer::made_of_held in dataflow.cpp for all elements of a run at
// once; where the elements of a run could go different ways, the node is handed back.
#include "check/dataflow_sets.hpp"

#include <algorithm>
#include <cstdlib>
#include <new>
#include <type_traits>

#include "exec/domain_sets.hpp"

namespace collv {

namespace {
constexpr std::size_t kTryNodes = 16;  // nodes tried before handing back can turn it off
}

SetFlow::SetFlow(const Trace& t) : t_(t), d_(*t.domain) {
  const int bits = d_.elem_bits();
  if (t.from_file || bits < 0 || bits >= 32) return;
  usable_ = true;
  ebits_ = static_cast<unsigned>(bits);
  emask_ = (Item{1} << ebits_) - 1;
  num_sets_ = d_.num_items() >> ebits_;
  static_assert(std::is_trivially_copyable_v<Cover>);
  cover_.reset(static_cast<Cover*>(std::calloc(num_sets_ ? num_sets_ : 1, sizeof(Cover))));
  if (!cover_) throw std::bad_alloc();
}

void SetFlow::FreeCovers::operator()(Cover* c) const { std::free(c); }

// Splits items into runs of consecutive elements of one set; item 0 (the identity, held by no
// one and derived from nothing) is left out. False on an item that is no factored item.
bool SetFlow::runs_of(const Item* items, std::size_t n, std::vector<Run>& out) const {
  for (std::size_t k = 0; k < n; ++k) {
    const Item it = items[k];
    if (it == 0) continue;
    const std::uint64_t s = it >> ebits_;
    const auto e = static_cast<std::uint32_t>(it & emask_);
    if (s == 0 || s >= num_sets_) return false;
    if (!out.empty() && k > 0 && items[k - 1] + 1 == it && e != 0 && out.back().set == s &&
        out.back().e0 + out.back().len == e) {
      ++out.back().len;
    } else {
      out.push_back({s, e, 1});
    }
  }
  return true;
}

std::span<const SetFlow::Run> SetFlow::payload_runs(const Transfer& x) {
  const Item* items = t_.payload.data() + x.payload_begin;
  if (!t_.payload_shared) {
    scratch_.clear();
    if (!runs_of(items, x.payload_len, scratch_)) return {};
    return scratch_;
  }
  const std::uint64_t key = (std::uint64_t{x.payload_begin} << 16) | x.payload_len;
  auto [it, fresh] = memo_.try_emplace(key, 0, 0);
  if (fresh) {
    const auto at = static_cast<std::uint32_t>(memo_runs_.size());
    // A payload with an item that is not factored is memoised as no runs: handed back below.
    if (!runs_of(items, x.payload_len, memo_runs_)) memo_runs_.resize(at);
    it->second = {at, static_cast<std::uint32_t>(memo_runs_.size()) - at};
  }
  return {memo_runs_.data() + it->second.first, it->second.second};
}

SetFlow::Has SetFlow::has(const Run& r) const {
  const Cover& c = cover_[r.set];
  if (c.gen != gen_) return Has::None;
  if (c.broken) return Has::Some;
  const std::uint64_t lo = r.e0, hi = std::uint64_t{r.e0} + r.len;
  if ((c.lo <= lo && hi <= c.hi) || (c.lo2 <= lo && hi <= c.hi2)) return Has::All;
  if ((hi <= c.lo || c.hi <= lo) && (hi <= c.lo2 || c.hi2 <= lo || c.lo2 == c.hi2))
    return Has::None;
  return Has::Some;
}

// The elements of r become held or derived at this node; false if r is no set item.
bool SetFlow::add(const Run& r) {
  Cover& c = cover_[r.set];
  const std::uint32_t lo = r.e0, hi = r.e0 + r.len;
  if (c.gen != gen_) {
    c = {gen_, lo, hi, 0, 0, false};
    return true;
  }
  if (c.broken) return true;
  // The intervals held and the new one, merged where they meet or overlap, in order.
  std::pair<std::uint32_t, std::uint32_t> iv[3] = {{c.lo, c.hi}, {lo, hi}, {c.lo2, c.hi2}};
  const std::size_t n = c.lo2 == c.hi2 ? 2 : 3;
  std::sort(iv, iv + n);
  std::size_t m = 0;
  for (std::size_t k = 1; k < n; ++k) {
    if (iv[k].first <= iv[m].second) {
      iv[m].second = std::max(iv[m].second, iv[k].second);
    } else {
      iv[++m] = iv[k];
    }
  }
  if (m >= 2) {
    c.broken = true;  // three intervals: not answered for this node
    return true;
  }
  c.lo = iv[0].first;
  c.hi = iv[0].second;
  c.lo2 = m == 1 ? iv[1].first : 0;
  c.hi2 = m == 1 ? iv[1].second : 0;
  return true;
}

// Analyzer::derive for every item of r: held or derived already, or made of held items by the
// walk over the combine history (the walk's sets then derived for r's elements).
bool SetFlow::derive(const Run& r) {
  const Has h = has(r);
  if (h == Has::All) return true;
  if (h == Has::Some) return false;
  // made_of_held: a target that counts a contribution twice goes to the search.
  const Domain::SetInfo top = d_.set_info(r.set);
  if (top.repeats) return false;
  stack_.assign(1, r.set);
  expanded_.clear();
  other_budget_ = kMaxOtherOperands;
  std::size_t visits = 0;
  while (!stack_.empty()) {
    const std::uint64_t s = stack_.back();
    stack_.pop_back();
    if (++visits > kMaxDagVisits) return false;
    if (s == 0) return false;  // no set-0 operand is an item (only item 0 is, with element 0)
    const Has hs = has({s, r.e0, r.len});
    if (hs == Has::All) continue;  // held or derived: a part of the combination
    if (hs == Has::Some) return false;
    const Domain::SetInfo info = d_.set_info(s);
    // A set mixing elements has items as operands, not sets; one operand only is no combine.
    if (info.general || info.op1 == 0 || info.op2 == 0) return false;
    if (info.op1 >= num_sets_ || info.op2 >= num_sets_) return false;
    std::uint64_t op1 = info.op1, op2 = info.op2;
    if (!other_pair(s, r, op1, op2)) return false;
    expanded_.push_back(s);
    stack_.push_back(op2);
    stack_.push_back(op1);
  }
  // Every item the walk went through is made of held items too (and counts nothing twice).
  for (const std::uint64_t s : expanded_) add({s, r.e0, r.len});
  return true;
}

// Analyzer::push_operands for every element of r: where set s's recorded operands op1, op2 are
// not both held, the first other pair of s held at every element of r replaces them. False
// (hand back) where the elements could go different ways: an operand or a pair held at some
// elements only.
bool SetFlow::other_pair(std::uint64_t s, const Run& r, std::uint64_t& op1, std::uint64_t& op2) {
  const Has h1 = has({op1, r.e0, r.len}), h2 = has({op2, r.e0, r.len});
  if (h1 == Has::Some || h2 == Has::Some) return false;
  if ((h1 == Has::All && h2 == Has::All) || other_budget_ == 0) return true;
  if (other_operands(d_, (s << ebits_) | r.e0, others_, other_budget_) == 0) return true;
  other_budget_ -= others_.size();
  for (const auto& [x, y] : others_) {
    const std::uint64_t sx = x >> ebits_, sy = y >> ebits_;
    if (sx == 0 || sy == 0 || sx >= num_sets_ || sy >= num_sets_) return false;
    const Has hx = has({sx, r.e0, r.len}), hy = has({sy, r.e0, r.len});
    if (hx == Has::Some || hy == Has::Some) return false;
    if (hx == Has::All && hy == Has::All) {
      op1 = sx;
      op2 = sy;
      return true;
    }
  }
  return true;
}

bool SetFlow::hold(const Item* items, std::size_t n) {
  scratch_.clear();
  if (!runs_of(items, n, scratch_)) return false;
  for (const Run& r : scratch_) add(r);
  return true;
}

bool SetFlow::derive_all(const Item* items, std::size_t n) {
  scratch_.clear();
  if (!runs_of(items, n, scratch_)) return false;
  for (const Run& r : scratch_)
    if (!derive(r)) return false;
  return true;
}

bool SetFlow::replay(NodeId v, std::span<const std::uint32_t> in,
                     std::span<const std::uint32_t> out) {
  if (!usable_) return false;
  if (++gen_ == 0) {  // after 2^32 nodes: every stamp is stale again
    std::fill(cover_.get(), cover_.get() + num_sets_, Cover{});
    gen_ = 1;
  }
  auto attempt = [&]() {
    if (v < t_.initial_input.size() &&
        !hold(t_.initial_input[v].data(), t_.initial_input[v].size()))
      return false;
    std::size_t j = 0;
    auto take_until = [&](std::uint32_t step) {  // receive every transfer of a step < `step`
      for (; j < in.size() && t_.transfers[in[j]].step < step; ++j) {
        const Transfer& x = t_.transfers[in[j]];
        if (x.payload_len == 0) continue;
        const auto rs = payload_runs(x);
        if (rs.empty()) return false;  // an item that is no set item (or none but identities)
        for (const Run& r : rs) add(r);
      }
      return true;
    };
    for (const std::uint32_t xi : out) {
      const Transfer& x = t_.transfers[xi];
      if (!take_until(x.step)) return false;
      if (x.payload_len == 0) continue;
      const auto rs = payload_runs(x);
      if (rs.empty()) return false;
      for (const Run& r : rs)
        if (!derive(r)) return false;
    }
    if (!take_until(UINT32_MAX)) return false;
    if (v < t_.final_output.size() &&
        !derive_all(t_.final_output[v].data(), t_.final_output[v].size()))
      return false;
    return true;
  };
  if (attempt()) {
    ++replayed_;
    return true;
  }
  // Handed back: after kTryNodes nodes, stop trying once more than half were.
  if (++handed_back_ > kTryNodes && handed_back_ > replayed_) usable_ = false;
  return false;
}

}  // namespace collv
