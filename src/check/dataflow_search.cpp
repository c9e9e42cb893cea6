// The dataflow check's searches (dataflow_analyzer.hpp): an item the walk over the combine
// history does not derive is decomposed into what its node holds, within a budget. Exact: an
// exact cover of its multiset of contributions by pairwise disjoint held items. Ordered: its
// sequence as a concatenation of held sequences. A schedule file's fingerprints: a sum of held
// values, each used at most once (meet in the middle).
#include <algorithm>

#include "check/dataflow_analyzer.hpp"

namespace collv::dataflow_detail {

Outcome Analyzer::cover_exact(Item target) {
  const auto ts = terms(target);
  distinct_.clear();
  count_.clear();
  for (auto c : ts) {
    if (!distinct_.empty() && distinct_.back() == c) {
      ++count_.back();
    } else {
      distinct_.push_back(c);
      count_.push_back(1);
    }
  }
  if (pos_universe_ && pos_.empty()) {
    pos_.assign(pos_universe_, 0);
    pos_stamp_.assign(pos_universe_, 0);
  }
  if (!pos_.empty()) {
    if (++target_stamp_ == 0) {
      std::fill(pos_stamp_.begin(), pos_stamp_.end(), 0);
      target_stamp_ = 1;
    }
    for (std::size_t k = 0; k < distinct_.size(); ++k) {
      pos_stamp_[distinct_[k]] = target_stamp_;
      pos_[distinct_[k]] = static_cast<std::uint32_t>(k);
    }
  }
  full_ = count_;
  // used_ is all zero between searches: a search that fails gives every item back, and one
  // that succeeds or runs out of budget leaves exactly parts_ marked, cleared here after.
  if (used_.size() < held_.size()) used_.resize(held_.size(), 0);
  remaining_ = ts.size();
  exhausted_ = false;
  bool ok = dfs_exact(0);
  for (auto h : parts_) used_[h] = 0;
  if (ok) return Outcome::Derived;
  return exhausted_ ? Outcome::OutOfBudget : Outcome::NotDerivable;
}

// Where contribution c sits in distinct_, or SIZE_MAX if the target does not contain it.
std::size_t Analyzer::pos_of(std::uint32_t c) const {
  if (!pos_.empty()) {
    return c < pos_.size() && pos_stamp_[c] == target_stamp_ ? pos_[c] : SIZE_MAX;
  }
  auto it = std::lower_bound(distinct_.begin(), distinct_.end(), c);
  return it != distinct_.end() && *it == c ? static_cast<std::size_t>(it - distinct_.begin())
                                           : SIZE_MAX;
}

// Takes held terms hs out of what is left of the target, if they fit (else changes nothing).
bool Analyzer::take(std::span<const std::uint32_t> hs) {
  // A combination counts no contribution twice: the parts are pairwise disjoint, so a part
  // holds all of a contribution's occurrences in the target or none of them (hs is sorted).
  for (std::size_t k = 0; k < hs.size();) {
    std::size_t e = k;
    while (e < hs.size() && hs[e] == hs[k]) ++e;
    std::size_t at = pos_of(hs[k]);
    if (at == SIZE_MAX || e - k != full_[at]) return false;
    k = e;
  }
  for (std::size_t k = 0; k < hs.size(); ++k) {
    std::size_t at = pos_of(hs[k]);
    if (at == SIZE_MAX || count_[at] == 0) {
      for (std::size_t u = 0; u < k; ++u) ++count_[pos_of(hs[u])];
      return false;
    }
    --count_[at];
  }
  remaining_ -= hs.size();
  return true;
}

void Analyzer::give_back(std::span<const std::uint32_t> hs) {
  for (auto c : hs) ++count_[pos_of(c)];
  remaining_ += hs.size();
}

bool Analyzer::dfs_exact(std::size_t ptr) {
  while (ptr < distinct_.size() && count_[ptr] == 0) ++ptr;
  if (ptr == distinct_.size()) return true;
  auto f = by_first_.find(distinct_[ptr]);
  if (f == by_first_.end()) return false;
  Item tried_last = 0;
  for (auto h : f->second) {
    if (used_[h]) continue;
    Item it = held_[h].item;
    if (it == tried_last) continue;  // another occurrence of an item that did not work
    if (d_.weight(it) > remaining_) continue;
    if (!spend()) {
      exhausted_ = true;
      return false;
    }
    const auto hs = terms(it);
    if (!take(hs)) continue;
    used_[h] = 1;
    parts_.push_back(h);
    if (dfs_exact(ptr)) return true;
    if (exhausted_) return false;
    parts_.pop_back();
    used_[h] = 0;
    give_back(hs);
    tried_last = it;
  }
  return false;
}

// Whether `target` is the sum (mod 2^64, as the fingerprint domain combines) of some of the
// held values, each occurrence used at most once: both halves of the held values are
// enumerated and one half's sums looked up for the other's. Decided exactly when the 2^(k/2)
// sums of each half fit in the budget; otherwise out of budget (never a pass).
Outcome Analyzer::held_sum(Item target) {
  std::vector<std::uint32_t> idx;
  for (std::uint32_t i = 0; i < held_.size(); ++i)
    if (held_[i].item != 0) idx.push_back(i);
  const std::size_t k = idx.size(), a = k / 2, b = k - a;
  if (k > 40) return Outcome::OutOfBudget;
  const std::uint64_t cost = (1ULL << a) + (1ULL << b);
  if (cost > item_budget_now() || cost > total_budget_) return Outcome::OutOfBudget;
  total_budget_ -= cost;
  std::vector<std::pair<Item, std::uint64_t>> left(1ULL << a);
  for (std::uint64_t m = 0; m < left.size(); ++m) {
    Item sum = 0;
    for (std::size_t q = 0; q < a; ++q)
      if (m >> q & 1) sum += held_[idx[q]].item;
    left[m] = {sum, m};
  }
  std::sort(left.begin(), left.end());
  for (std::uint64_t m = 0; m < (1ULL << b); ++m) {
    Item sum = 0;
    for (std::size_t q = 0; q < b; ++q)
      if (m >> q & 1) sum += held_[idx[a + q]].item;
    Item need = target - sum;
    auto f = std::lower_bound(left.begin(), left.end(), std::make_pair(need, std::uint64_t{0}));
    if (f == left.end() || f->first != need) continue;
    for (std::size_t q = 0; q < a; ++q)
      if (f->second >> q & 1) parts_.push_back(idx[q]);
    for (std::size_t q = 0; q < b; ++q)
      if (m >> q & 1) parts_.push_back(idx[a + q]);
    return Outcome::Derived;
  }
  return Outcome::NotDerivable;
}

bool Analyzer::matches_at(const std::vector<std::uint32_t>& seq, std::size_t i,
                          std::span<const std::uint32_t> hs) {
  return i + hs.size() <= seq.size() && std::equal(hs.begin(), hs.end(), seq.begin() + i);
}

Outcome Analyzer::cover_ordered(Item target) {
  seq_ = d_.terms(target);
  std::vector<std::uint32_t> sorted = seq_;
  std::sort(sorted.begin(), sorted.end());
  bool repeats = std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end();
  exhausted_ = false;
  if (repeats) {
    // A contribution repeats: search with each held occurrence used at most once.
    used_.assign(held_.size(), 0);
    bool ok = dfs_ordered(0);
    for (auto h : parts_) used_[h] = 0;
    if (ok) return Outcome::Derived;
    return exhausted_ ? Outcome::OutOfBudget : Outcome::NotDerivable;
  }
  // No repeats: no held item can be used twice in a concatenation, so a word-break DP decides.
  std::size_t n = seq_.size();
  std::vector<std::uint32_t> back(n + 1, UINT32_MAX);  // held index that ends a prefix
  std::vector<std::uint8_t> reach(n + 1, 0);
  reach[0] = 1;
  for (std::size_t i = 0; i < n && !reach[n]; ++i) {
    if (!reach[i]) continue;
    auto f = by_first_.find(seq_[i]);
    if (f == by_first_.end()) continue;
    Item tried_last = 0;
    for (auto h : f->second) {
      Item it = held_[h].item;
      if (it == tried_last) continue;
      tried_last = it;
      std::size_t len = d_.weight(it);
      if (i + len > n || reach[i + len]) continue;
      if (!spend()) return Outcome::OutOfBudget;
      if (!matches_at(seq_, i, terms(it))) continue;
      reach[i + len] = 1;
      back[i + len] = h;
    }
  }
  if (!reach[n]) return Outcome::NotDerivable;
  for (std::size_t e = n; e > 0;) {
    std::uint32_t h = back[e];
    parts_.push_back(h);
    e -= d_.weight(held_[h].item);
  }
  std::reverse(parts_.begin(), parts_.end());
  return Outcome::Derived;
}

bool Analyzer::dfs_ordered(std::size_t i) {
  if (i == seq_.size()) return true;
  auto f = by_first_.find(seq_[i]);
  if (f == by_first_.end()) return false;
  Item tried_last = 0;
  for (auto h : f->second) {
    if (used_[h]) continue;
    Item it = held_[h].item;
    if (it == tried_last) continue;
    if (!spend()) {
      exhausted_ = true;
      return false;
    }
    const auto hs = terms(it);
    if (!matches_at(seq_, i, hs)) continue;
    used_[h] = 1;
    parts_.push_back(h);
    if (dfs_ordered(i + hs.size())) return true;
    if (exhausted_) return false;
    parts_.pop_back();
    used_[h] = 0;
    tried_last = it;
  }
  return false;
}

}  // namespace collv::dataflow_detail
