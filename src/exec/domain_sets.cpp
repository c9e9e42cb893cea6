// The exact and ordered value domains (see domain.hpp, domain_sets.hpp).
//
// An item is an interned set (exact: a sorted multiset; ordered: a sequence) of values held as
// runs of consecutive values, factored by element: the item of element e whose contributions
// come from the ranks of set s is (s << ebits) | e, so every element of a buffer that the
// algorithm treats alike shares one set, and a combine is a union of sets memoised once for all
// elements. A set of a few rank intervals is a few runs, whatever p. An item mixing elements
// (x0.0 + x1.1) is a "general" set whose values are contribution ids (node * elems + elem), held
// as item (s << ebits) | 0. Items are equal exactly when their values are: sets are interned by
// content (canonical runs), and an item mixing elements is never a factored one.
#include "exec/domain_sets.hpp"

#include <algorithm>
#include <unordered_map>

#include <fmt/format.h>

#include "util/error.hpp"

namespace collv {

namespace {

struct Run {
  std::uint32_t lo, len;  // the values lo, lo + 1, ..., lo + len - 1
  bool operator==(const Run&) const = default;
};

std::uint64_t mix64(std::uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  return x ^ (x >> 33);
}

// Appends value run r to the canonical runs `out` (greedy: a run grows while the next value is
// one more than its last).
void append_run(std::vector<Run>& out, Run r) {
  if (r.len == 0) return;
  if (!out.empty() && static_cast<std::uint64_t>(out.back().lo) + out.back().len == r.lo) {
    out.back().len += r.len;
  } else {
    out.push_back(r);
  }
}

// Whether some value is in two runs (or twice in one sequence).
bool runs_repeat(std::span<const Run> runs, std::vector<Run>& scratch) {
  scratch.assign(runs.begin(), runs.end());
  std::sort(scratch.begin(), scratch.end(), [](Run a, Run b) { return a.lo < b.lo; });
  std::uint64_t end = 0;
  for (std::size_t k = 0; k < scratch.size(); ++k) {
    if (k > 0 && scratch[k].lo < end) return true;
    end = std::max<std::uint64_t>(end, std::uint64_t{scratch[k].lo} + scratch[k].len);
  }
  return false;
}

class SetDomain : public Domain {
 public:
  SetDomain(DomainKind kind, std::uint32_t p, std::uint32_t elems)
      : Domain(p, elems), kind_(kind), leaf_set_(p, 0) {
    while ((std::uint64_t{1} << ebits_) < elems) ++ebits_;
    emask_ = (Item{1} << ebits_) - 1;
    sets_.push_back(Set{});  // set 0: empty (item 0, the identity; never interned again)
    recent_.assign(kRecent, Recent{});
  }
  DomainKind kind() const override { return kind_; }

  Item leaf(std::uint32_t node, std::uint32_t elem) override {
    COLLV_ASSERT(node < p_ && elem < elems_);
    std::uint32_t& s = leaf_set_[node];
    if (s == 0) {
      const Run r{node, 1};
      s = intern({&r, 1}, false, 1, false, 0, 0);
    }
    return item_of(s, elem);
  }

  Item combine(Item a, Item b) override {
    if (a == 0) return b;
    if (b == 0) return a;
    const std::uint64_t sa = set_of(a), sb = set_of(b);
    if (!sets_[sa].general && !sets_[sb].general && (a & emask_) == (b & emask_))
      return item_of(union_sets(sa, sb), a & emask_);
    return combine_general(a, b);
  }

  Item from_terms(std::vector<std::uint32_t> terms) override {
    if (terms.empty()) return 0;
    if (kind_ == DomainKind::Exact) std::sort(terms.begin(), terms.end());
    const std::uint32_t e = terms[0] % elems_;
    bool one_elem = true;
    for (auto c : terms) one_elem = one_elem && c % elems_ == e;
    scratch_.clear();
    for (auto c : terms) append_run(scratch_, {one_elem ? c / elems_ : c, 1});
    const bool general = !one_elem;
    const std::uint32_t s = intern(scratch_, general, terms.size(), repeats(scratch_), 0, 0);
    return general ? item_of(s, 0) : item_of(s, e);
  }

  std::string describe(Item a) const override { return describe_terms(terms(a), kind_, elems_); }

  bool inspectable() const override { return true; }
  std::vector<std::uint32_t> terms(Item a) const override {
    std::vector<std::uint32_t> out;
    terms_into(a, out);
    return out;
  }
  std::span<const std::uint32_t> terms_into(Item a,
                                            std::vector<std::uint32_t>& out) const override {
    const Set& st = sets_.at(checked_set(a));
    out.resize(st.weight);
    std::uint32_t* o = out.data();
    if (st.general || elems_ == 1) {
      for (const Run& r : runs(st))
        for (std::uint32_t k = 0; k < r.len; ++k) *o++ = r.lo + k;
    } else {
      const auto e = static_cast<std::uint32_t>(a & emask_);
      for (const Run& r : runs(st))
        for (std::uint32_t k = 0, c = r.lo * elems_ + e; k < r.len; ++k, c += elems_) *o++ = c;
    }
    return out;
  }
  std::size_t num_items() const override { return sets_.size() << ebits_; }
  std::optional<std::pair<Item, Item>> operands(Item a) const override {
    const Set& st = sets_.at(checked_set(a));
    if (st.op1 == 0 && st.op2 == 0) return std::nullopt;
    if (st.general) return std::pair<Item, Item>{st.op1, st.op2};
    return std::pair<Item, Item>{item_of(st.op1, a & emask_), item_of(st.op2, a & emask_)};
  }
  std::size_t other_operands(Item a, std::vector<std::pair<Item, Item>>& out,
                             std::size_t max) const {
    out.clear();
    const std::uint64_t s = checked_set(a);
    if (sets_[s].general) return 0;
    const auto head = other_head_.find(static_cast<std::uint32_t>(s));
    if (head == other_head_.end()) return 0;
    std::size_t n = 0;
    for (std::uint32_t k = head->second; k != kNone; k = others_[k].next, ++n)
      if (out.size() < max)
        out.push_back({item_of(others_[k].a, a & emask_), item_of(others_[k].b, a & emask_)});
    return n;
  }
  std::uint64_t weight(Item a) const override { return sets_.at(checked_set(a)).weight; }
  bool counts_twice(Item a) const override { return sets_.at(checked_set(a)).repeats; }
  int elem_bits() const override { return static_cast<int>(ebits_); }
  SetInfo set_info(std::uint64_t s) const override {
    const Set& st = sets_.at(s);
    return {st.op1, st.op2, st.general, st.repeats};
  }
  std::size_t memory_bytes() const override {
    return runs_.capacity() * sizeof(Run) + sets_.capacity() * sizeof(Set) +
           index_.capacity() * sizeof(std::uint64_t) + memo_.capacity() * sizeof(MemoSlot) +
           general_memo_.size() * 40 + others_.capacity() * sizeof(Other) +
           other_head_.size() * 24 + leaf_set_.capacity() * 4 + recent_.size() * sizeof(Recent);
  }

 private:
  struct Set {
    std::uint64_t at = 0;      // its first run in runs_
    std::uint64_t weight = 0;  // values counted with repetition
    std::uint64_t hash = 0;
    std::uint64_t op1 = 0, op2 = 0;  // the first combine that made it: set ids (factored) or
                                     // items (general); both 0: none
    std::uint32_t nruns = 0;
    bool general = false;  // values are contribution ids (an item mixing elements), not ranks
    bool repeats = false;  // some value occurs twice
  };
  struct Recent {  // a direct-mapped cache in front of memo_
    std::uint64_t key = 0;
    std::uint32_t value = 0;
  };
  static constexpr std::size_t kRecent = 4096;
  // The memo of unions: open addressing, linear probing, at most half full; key 0 (no pair of
  // sets, both at least 1) marks an empty slot.
  struct MemoSlot {
    std::uint64_t key = 0;
    std::uint32_t value = 0;
  };
  // Another pair of sets whose union made a set (the first is its op1, op2): the ring's full
  // set is made once a node, from a different pair at each.
  static constexpr std::uint32_t kNone = UINT32_MAX;
  struct Other {
    std::uint32_t a, b, next;
  };

  Item item_of(std::uint64_t s, Item e) const { return (s << ebits_) | e; }
  std::uint64_t set_of(Item a) const {
    const std::uint64_t s = a >> ebits_;
    COLLV_ASSERT(s < sets_.size());
    return s;
  }
  std::uint64_t checked_set(Item a) const {
    const std::uint64_t s = a >> ebits_;
    if (s >= sets_.size() || (sets_[s].general && (a & emask_) != 0) || (s == 0 && a != 0))
      throw std::out_of_range(fmt::format("no item {}", a));
    return s;
  }
  std::span<const Run> runs(const Set& s) const { return {runs_.data() + s.at, s.nruns}; }

  static std::uint64_t hash_runs(std::span<const Run> rs, bool general) {
    std::uint64_t h = general ? 0x51ED270B27A5D3C1ULL : 0x2545F4914F6CDD1DULL;
    for (const Run& r : rs) h = mix64(h ^ ((std::uint64_t{r.lo} << 32) | r.len)) + h;
    return h;
  }
  bool repeats(std::span<const Run> rs) {
    if (kind_ == DomainKind::Exact) {  // sorted: a repeat starts a run below the last one's end
      for (std::size_t k = 1; k < rs.size(); ++k)
        if (rs[k].lo < std::uint64_t{rs[k - 1].lo} + rs[k - 1].len) return true;
      return false;
    }
    return runs_repeat(rs, sort_scratch_);
  }

  std::uint32_t intern(std::span<const Run> rs, bool general, std::uint64_t weight, bool rep,
                       std::uint64_t op1, std::uint64_t op2) {
    const std::uint64_t h = hash_runs(rs, general);
    if (2 * (sets_.size() + 1) > index_.size()) grow_index();
    const std::size_t mask = index_.size() - 1;
    const std::uint64_t tag = h & kTagMask;
    std::size_t k = slot_of(h) & mask;
    for (; index_[k] != kEmptySlot; k = (k + 1) & mask) {
      if ((index_[k] & kTagMask) != tag) continue;
      const auto id = static_cast<std::uint32_t>(index_[k]);
      Set& s = sets_[id];
      if (s.hash != h || s.general != general || s.nruns != rs.size()) continue;
      if (!std::equal(rs.begin(), rs.end(), runs_.begin() + static_cast<std::ptrdiff_t>(s.at)))
        continue;
      if (s.op1 == 0 && s.op2 == 0) {  // made by a combine now: remember how
        s.op1 = op1;
        s.op2 = op2;
      }
      return id;
    }
    if (watch_) watch_->charge(rs.size() * sizeof(Run) + sizeof(Set) + 80);
    if (sets_.size() >= UINT32_MAX ||
        (std::uint64_t{sets_.size()} << ebits_) >> ebits_ != std::uint64_t{sets_.size()})
      throw LimitError("the exact/ordered domain ran out of set ids (2^32)");
    const auto id = static_cast<std::uint32_t>(sets_.size());
    Set s;
    s.at = runs_.size();
    s.nruns = static_cast<std::uint32_t>(rs.size());
    s.weight = weight;
    s.hash = h;
    s.op1 = op1;
    s.op2 = op2;
    s.general = general;
    s.repeats = rep;
    runs_.insert(runs_.end(), rs.begin(), rs.end());
    sets_.push_back(s);
    index_[k] = tag | id;
    return id;
  }
  static std::size_t slot_of(std::uint64_t h) {
    return static_cast<std::size_t>((h * 0xD6E8FEB86659FD93ULL) >> 17);
  }
  void grow_index() {
    std::vector<std::uint64_t> old(std::max<std::size_t>(1024, 2 * index_.size()), kEmptySlot);
    old.swap(index_);
    const std::size_t mask = index_.size() - 1;
    for (const std::uint64_t e : old) {
      if (e == kEmptySlot) continue;
      std::size_t k = slot_of(sets_[static_cast<std::uint32_t>(e)].hash) & mask;
      while (index_[k] != kEmptySlot) k = (k + 1) & mask;
      index_[k] = e;
    }
  }
  void grow_memo() {
    std::vector<MemoSlot> old(std::max<std::size_t>(1024, 2 * memo_.size()));
    old.swap(memo_);
    const std::size_t mask = memo_.size() - 1;
    for (const MemoSlot& e : old) {
      if (e.key == 0) continue;
      std::size_t k = slot_of(mix64(e.key)) & mask;
      while (memo_[k].key != 0) k = (k + 1) & mask;
      memo_[k] = e;
    }
  }

  // The runs of a + b into `out`: a sorted merge (exact) or a concatenation (ordered).
  void join(std::span<const Run> a, bool a_rep, std::span<const Run> b, bool b_rep,
            std::vector<Run>& out) {
    out.clear();
    if (kind_ == DomainKind::Ordered) {
      for (const Run& r : a) append_run(out, r);
      for (const Run& r : b) append_run(out, r);
      return;
    }
    if (!a_rep && !b_rep) {  // disjoint runs on both sides: merge them while they do not meet
      std::size_t i = 0, j = 0;
      bool meet = false;
      while (!meet && (i < a.size() || j < b.size())) {
        const Run r = j == b.size() || (i < a.size() && a[i].lo < b[j].lo) ? a[i++] : b[j++];
        meet = !out.empty() && r.lo < std::uint64_t{out.back().lo} + out.back().len;
        append_run(out, r);
      }
      if (!meet) return;
      out.clear();
    }
    // A value on both sides (or repeated on one): merge the values, then make runs of them.
    vals_a_.clear();
    vals_b_.clear();
    for (const Run& r : a)
      for (std::uint32_t k = 0; k < r.len; ++k) vals_a_.push_back(r.lo + k);
    for (const Run& r : b)
      for (std::uint32_t k = 0; k < r.len; ++k) vals_b_.push_back(r.lo + k);
    vals_.clear();
    std::merge(vals_a_.begin(), vals_a_.end(), vals_b_.begin(), vals_b_.end(),
               std::back_inserter(vals_));
    for (auto v : vals_) append_run(out, {v, 1});
  }

  std::uint32_t union_sets(std::uint64_t sa, std::uint64_t sb) {
    std::uint64_t key = (sa << 32) | sb;
    if (kind_ == DomainKind::Exact && sa > sb) key = (sb << 32) | sa;
    const std::uint64_t hk = mix64(key);
    Recent& c = recent_[hk & (kRecent - 1)];
    if (c.key == key) return c.value;
    if (2 * (memo_used_ + 1) > memo_.size()) grow_memo();
    const std::size_t mask = memo_.size() - 1;
    std::size_t k = slot_of(hk) & mask;
    while (memo_[k].key != 0 && memo_[k].key != key) k = (k + 1) & mask;
    std::uint32_t s;
    if (memo_[k].key == key) {
      s = memo_[k].value;
    } else {
      const Set& a = sets_[sa];
      const Set& b = sets_[sb];
      join(runs(a), a.repeats, runs(b), b.repeats, joined_);
      const std::uint64_t w = a.weight + b.weight;
      const bool rep = a.repeats || b.repeats || repeats(joined_);
      s = intern(joined_, false, w, rep, sa, sb);
      memo_[k] = {key, s};  // intern() does not touch memo_
      ++memo_used_;
      if (const Set& made = sets_[s]; made.op1 != sa || made.op2 != sb) add_other(s, sa, sb);
    }
    c = {key, s};
    return s;
  }

  // Set s was made again, by another pair (each pair once: the memo answers it after).
  void add_other(std::uint32_t s, std::uint64_t sa, std::uint64_t sb) {
    if (watch_) watch_->charge(sizeof(Other) + 24);
    auto [head, fresh] = other_head_.try_emplace(s, kNone);
    others_.push_back(
        {static_cast<std::uint32_t>(sa), static_cast<std::uint32_t>(sb), head->second});
    head->second = static_cast<std::uint32_t>(others_.size() - 1);
  }

  // The runs of item a's contribution ids (node * elems + elem).
  void general_runs(Item a, std::vector<Run>& out) const {
    out.clear();
    const Set& s = sets_[set_of(a)];
    if (s.general || elems_ == 1) {
      for (const Run& r : runs(s)) append_run(out, r);
      return;
    }
    const auto e = static_cast<std::uint32_t>(a & emask_);
    for (const Run& r : runs(s))
      for (std::uint32_t k = 0; k < r.len; ++k) out.push_back({(r.lo + k) * elems_ + e, 1});
  }

  Item combine_general(Item a, Item b) {
    std::pair<Item, Item> key{a, b};
    if (kind_ == DomainKind::Exact && a > b) key = {b, a};
    auto it = general_memo_.find(key);
    if (it != general_memo_.end()) return it->second;
    general_runs(a, ga_);
    general_runs(b, gb_);
    const Set& x = sets_[set_of(a)];
    const Set& y = sets_[set_of(b)];
    join(ga_, x.repeats, gb_, y.repeats, joined_);
    const bool rep = x.repeats || y.repeats || repeats(joined_);
    const std::uint32_t s = intern(joined_, true, x.weight + y.weight, rep, a, b);
    const Item r = item_of(s, 0);
    general_memo_.emplace(key, r);
    return r;
  }

  struct PairHash {
    std::size_t operator()(const std::pair<Item, Item>& k) const {
      return mix64(k.first * 0x9E3779B97F4A7C15ULL ^ k.second);
    }
  };

  DomainKind kind_;
  unsigned ebits_ = 0;
  Item emask_ = 0;
  std::vector<Run> runs_;
  std::vector<Set> sets_;
  std::vector<std::uint32_t> leaf_set_;  // the set {node}, 0 until made
  // Sets by the hash of their runs: a slot is the hash's high half (compared before the set is
  // read) and the set id; kEmptySlot: empty (no set id is UINT32_MAX).
  static constexpr std::uint64_t kTagMask = 0xFFFFFFFF00000000ULL;
  static constexpr std::uint64_t kEmptySlot = ~std::uint64_t{0};
  std::vector<std::uint64_t> index_;
  std::vector<MemoSlot> memo_;  // (set, set) -> union
  std::size_t memo_used_ = 0;
  std::vector<Other> others_;                                    // other pairs, in lists by set:
  std::unordered_map<std::uint32_t, std::uint32_t> other_head_;  // set -> its last in others_
  std::unordered_map<std::pair<Item, Item>, Item, PairHash> general_memo_;
  std::vector<Recent> recent_;
  std::vector<Run> joined_, ga_, gb_, sort_scratch_, scratch_;
  std::vector<std::uint32_t> vals_, vals_a_, vals_b_;
};

}  // namespace

std::unique_ptr<Domain> make_set_domain(DomainKind kind, std::uint32_t p, std::uint32_t elems) {
  return std::make_unique<SetDomain>(kind, p, elems);
}

std::size_t other_operands(const Domain& d, Item a, std::vector<std::pair<Item, Item>>& out,
                           std::size_t max) {
  if (const auto* s = dynamic_cast<const SetDomain*>(&d)) return s->other_operands(a, out, max);
  out.clear();
  return 0;
}

}  // namespace collv
