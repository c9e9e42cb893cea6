// The dataflow and match checks (see dataflow.hpp).
//
// Nodes are processed one at a time: what node v may send at step s depends only on its input and
// the transfers it received before step s, so v's incoming transfers (in step order) are merged
// with its outgoing ones, and only one node's holdings are alive at a time. Each item is first
// looked up among the held items (a copy); only items that are not held are decomposed:
//   exact:    an exact cover of the item's multiset of contributions by pairwise disjoint held
//             items (a combination counts no contribution twice; a held item that already counts
//             one twice may still be copied), each held occurrence used at most once
//             (backtracking over the smallest uncovered contribution, budgeted);
//   ordered:  the item's sequence as a concatenation of held sequences (word-break DP; a
//             budgeted search when a contribution repeats, so no occurrence is used twice);
//   fingerprint: a run's items: membership only (a combination cannot be decomposed; not
//             checked). A schedule file's items (Trace::from_file): a sum of held values, each
//             held occurrence used at most once (meet in the middle over the node's held values,
//             budgeted): equal 64-bit sums, so probabilistic, and blind to overlapping parts.
#include "check/dataflow.hpp"

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <new>
#include <numeric>
#include <optional>
#include <span>
#include <type_traits>
#include <unordered_map>

#include <fmt/format.h>

#include "check/dataflow_held.hpp"
#include "check/dataflow_sets.hpp"
#include "exec/domain_sets.hpp"

namespace collv {

namespace {

constexpr std::uint64_t kItemBudget = 200000;     // fit tests per item
constexpr std::uint64_t kTotalBudget = 50000000;  // fit tests per trace
constexpr std::size_t kHeldShown = 8;             // held items listed in a counterexample

std::uint64_t mix(std::uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  return x;
}

struct Held {
  Item item;
  HeldRef ref;
};

// An array of all-zero-bytes values from calloc: the pages of a large one are mapped when first
// written, so a table indexed by sparse ids (the ring's items: set << bits | element, 16.8
// million slots at p = count = 1,024, a few in use) costs what is touched, not its size.
template <class T>
class ZeroedArray {
  static_assert(std::is_trivially_copyable_v<T>);

 public:
  void assign(std::size_t n) {
    data_.reset(n ? static_cast<T*>(std::calloc(n, sizeof(T))) : nullptr);
    if (n && !data_) throw std::bad_alloc();
    size_ = n;
  }
  std::size_t size() const { return size_; }
  T& operator[](std::size_t i) { return data_.get()[i]; }
  const T& operator[](std::size_t i) const { return data_.get()[i]; }

 private:
  struct Free {
    void operator()(T* q) const { std::free(q); }
  };
  std::unique_ptr<T, Free> data_;
  std::size_t size_ = 0;
};

enum class Outcome { Derived, NotDerivable, OutOfBudget, Undecidable };

class Analyzer {
 public:
  Analyzer(const Trace& t, const CheckOptions& o, bool record)
      : t_(t), o_(o), d_(*t.domain), record_(record), total_budget_(o.dataflow_total_budget) {
    // A direct map from contribution to its place in the target, when the universe is small.
    std::uint64_t universe = static_cast<std::uint64_t>(d_.p()) * d_.elems();
    // Made at the first search (cover_exact): most runs derive every item by its combine
    // history and never search (at p = count = 4,096, 128 MiB not taken).
    if (d_.kind() == DomainKind::Exact && universe <= (1u << 24)) pos_universe_ = universe;
    // Items of an exact or ordered domain are small ids: a node's held and derived items are
    // stamped in one slot per id (8 bytes), not hashed, up to a few slots per item occurrence
    // (item_table_slots); an item past the table goes to the hash table.
    dense_.assign(item_table_slots(t_));
    ops_ = d_.operand_table();
    others_ = !record_ && d_.elem_bits() >= 0;
  }

  Dataflow run() {
    Dataflow df;
    df.dataflow.name = "dataflow";
    df.dataflow.verdict = Verdict::Pass;
    // Recorded derivations are kept per slot (payload_slots): transfers that share payload
    // items are sent by different nodes, each with a derivation of its own.
    std::vector<std::uint32_t> slot;
    if (record_) {
      std::uint64_t slots = 0;
      slot = payload_slots(t_, &slots);
      df.slot = slot;
      df.payload.resize(slots);
      df.final_output.resize(t_.final_output.size());
      for (std::size_t v = 0; v < t_.final_output.size(); ++v)
        df.final_output[v].resize(t_.final_output[v].size());
    }
    auto p = static_cast<std::uint32_t>(t_.topology.num_processors());
    std::vector<std::uint8_t> lost(t_.transfers.size(), 0);
    for (auto i : t_.unreceived)
      if (i < lost.size()) lost[i] = 1;
    // Incoming (received) and outgoing transfers per node, each in step order: one pass counts
    // both sides, one fills both (an executor's trace is already in step order and is read as
    // it is; another is put in step order by a counting sort first).
    const bool in_step_order =
        std::is_sorted(t_.transfers.begin(), t_.transfers.end(),
                       [](const Transfer& a, const Transfer& b) { return a.step < b.step; });
    std::vector<std::uint32_t> order;
    if (!in_step_order) {
      order.resize(t_.transfers.size());
      std::uint32_t maxs = 0;
      for (const auto& x : t_.transfers) maxs = std::max(maxs, x.step);
      std::vector<std::uint32_t> start(maxs + 2, 0);
      for (const auto& x : t_.transfers) ++start[x.step + 1];
      for (std::size_t s = 1; s < start.size(); ++s) start[s] += start[s - 1];
      for (std::uint32_t i = 0; i < t_.transfers.size(); ++i)
        order[start[t_.transfers[i].step]++] = i;
    }
    const auto n = static_cast<std::uint32_t>(t_.transfers.size());
    auto nth = [&](std::uint32_t k) { return in_step_order ? k : order[k]; };
    std::vector<std::uint32_t> in_first(p + 1, 0), out_first(p + 1, 0);
    for (std::uint32_t k = 0; k < n; ++k) {
      const std::uint32_t i = nth(k);
      const Transfer& x = t_.transfers[i];
      if (x.dst < p && !lost[i]) ++in_first[x.dst + 1];
      if (x.src < p) ++out_first[x.src + 1];
    }
    for (std::uint32_t v = 0; v < p; ++v) {
      in_first[v + 1] += in_first[v];
      out_first[v + 1] += out_first[v];
    }
    std::vector<std::uint32_t> in_list(in_first[p]), out_list(out_first[p]);
    {
      std::vector<std::uint32_t> in_fill(in_first.begin(), in_first.end() - 1),
          out_fill(out_first.begin(), out_first.end() - 1);
      for (std::uint32_t k = 0; k < n; ++k) {
        const std::uint32_t i = nth(k);
        const Transfer& x = t_.transfers[i];
        if (x.dst < p && !lost[i]) in_list[in_fill[x.dst]++] = i;
        if (x.src < p) out_list[out_fill[x.src]++] = i;
      }
    }

    // Without derivations to record, a node whose buffers share their sets element by element
    // is replayed once per set (dataflow_sets.hpp); the others, item by item below.
    // A run in the fingerprint domain is judged by membership alone (dataflow_held.hpp).
    std::optional<SetFlow> sets;
    std::optional<HeldFlow> members;
    if (!record_) {
      sets.emplace(t_);
      members.emplace(t_);
    }
    for (NodeId v = 0; v < p; ++v) {
      const std::span<const std::uint32_t> in_v{in_list.data() + in_first[v],
                                                in_list.data() + in_first[v + 1]};
      const std::span<const std::uint32_t> out_v{out_list.data() + out_first[v],
                                                 out_list.data() + out_first[v + 1]};
      if (members && members->usable()) {
        undecidable_ += members->replay(v, in_v, out_v);
        continue;
      }
      if (sets && sets->usable() && sets->replay(v, in_v, out_v)) continue;
      begin_node(v);
      std::uint32_t j = in_first[v];
      auto take_until = [&](std::uint32_t step) {  // receive every transfer of a step < `step`
        while (j < in_first[v + 1] && t_.transfers[in_list[j]].step < step) {
          const Transfer& x = t_.transfers[in_list[j]];
          for (std::uint32_t k = 0; k < x.payload_len; ++k)
            add_held(t_.payload[x.payload_begin + k],
                     {HeldRef::Kind::Received, record_ ? slot[in_list[j]] + k : 0});
          ++j;
        }
      };
      for (std::uint32_t k = out_first[v]; k < out_first[v + 1]; ++k) {
        std::uint32_t xi = out_list[k];
        const Transfer& x = t_.transfers[xi];
        take_until(x.step);
        for (std::uint32_t q = 0; q < x.payload_len; ++q) {
          Derivation* out = record_ ? &df.payload[slot[xi] + q] : nullptr;
          Outcome r = derive(t_.payload[x.payload_begin + q], out);
          if (r != Outcome::Derived) report(df.dataflow, r, v, &x, xi, q);
        }
      }
      take_until(UINT32_MAX);
      if (v < t_.final_output.size()) {
        for (std::uint32_t q = 0; q < t_.final_output[v].size(); ++q) {
          Derivation* out = record_ ? &df.final_output[v][q] : nullptr;
          Outcome r = derive(t_.final_output[v][q], out);
          if (r != Outcome::Derived) report(df.dataflow, r, v, nullptr, 0, q);
        }
      }
    }
    finish(df.dataflow);
    df.match = check_match();
    return df;
  }

 private:
  // ---- one node's holdings ----
  void begin_node(NodeId v) {
    node_ = v;
    held_.clear();
    indexed_ = 0;
    by_first_.clear();
    views_.clear();
    ++gen_;
    occupied_ = 0;
    if (v < t_.initial_input.size())
      for (std::uint32_t k = 0; k < t_.initial_input[v].size(); ++k)
        add_held(t_.initial_input[v][k], {HeldRef::Kind::Input, k});
  }

  void add_held(Item it, HeldRef ref) {
    auto idx = static_cast<std::uint32_t>(held_.size());
    held_.push_back({it, ref});
    if (it == 0) return;
    if (it < dense_.size()) return insert_dense(it, idx);
    // Open addressing with generation stamps: no clearing between nodes.
    if ((occupied_ + 1) * 2 > slots_.size()) grow();
    insert_slot(it, idx);
  }
  // An item found made of held items (check_dataflow_and_match only, where no derivation is
  // recorded): later sends of it, and walks that reach it, stop there. It stays derivable for
  // the rest of the node: what a node holds only grows.
  void add_derived(Item it) {
    if (it < dense_.size()) return insert_dense(it, kDerived);
    if ((occupied_ + 1) * 2 > slots_.size()) grow();
    insert_slot(it, kDerived);
  }

  // A dense item's slot: held (the index of its first held occurrence) or derived, this node.
  struct Dense {
    std::uint32_t idx = 0;
    std::uint32_t gen = 0;
  };
  void insert_dense(Item it, std::uint32_t idx) {
    Dense& s = dense_[it];
    if (s.gen != gen_) {
      s = {idx, gen_};
    } else if (s.idx == kDerived) {  // keep the first held occurrence; held before derived
      s.idx = idx;
    }
  }

  struct Slot {
    Item key = 0;
    std::uint32_t idx = 0;
    std::uint32_t gen = 0;
  };

  static constexpr std::uint32_t kDerived = UINT32_MAX;  // Slot::idx of a derived item

  void insert_slot(Item it, std::uint32_t idx) {
    std::size_t mask = slots_.size() - 1;
    for (std::size_t h = mix(it) & mask;; h = (h + 1) & mask) {
      Slot& s = slots_[h];
      if (s.gen != gen_) {
        s = {it, idx, gen_};
        ++occupied_;
        return;
      }
      if (s.key == it) {  // keep the first held occurrence; held before derived
        if (s.idx == kDerived) s.idx = idx;
        return;
      }
    }
  }

  void grow() {
    std::size_t n = std::max<std::size_t>(1024, slots_.size() * 2);
    while (n < (held_.size() + 1) * 2) n *= 2;
    slots_.assign(n, Slot{});  // every generation stamp 0: below gen_ (which starts at 1)
    occupied_ = 0;
    for (std::uint32_t i = 0; i < held_.size(); ++i)
      if (held_[i].item != 0 && held_[i].item >= dense_.size()) insert_slot(held_[i].item, i);
  }

  // The held item's index into held_, kDerived for a derived item, kAbsent for neither.
  static constexpr std::uint32_t kAbsent = UINT32_MAX - 1;
  std::uint32_t find_slot(Item it) const {
    if (it < dense_.size()) {
      const Dense& s = dense_[it];
      return s.gen == gen_ ? s.idx : kAbsent;
    }
    const Slot* s = find_hashed(it);
    return s ? s->idx : kAbsent;
  }
  const Slot* find_hashed(Item it) const {
    if (slots_.empty()) return nullptr;
    std::size_t mask = slots_.size() - 1;
    for (std::size_t h = mix(it) & mask;; h = (h + 1) & mask) {
      const Slot& s = slots_[h];
      if (s.gen != gen_) return nullptr;
      if (s.key == it) return &s;
    }
  }

  // ---- terms of held items, cached while their node is replayed ----
  // Kept in views_ while the node is replayed (the searches hold several at once): cleared at
  // each node, and at a derive() past kViewBytes (no view is held between derives).
  std::span<const std::uint32_t> terms(Item it) { return views_(it); }

  // Index the held items not yet indexed by their first contribution (smallest for exact, first
  // in order for ordered). Lists are kept largest item first.
  void index_held() {
    for (; indexed_ < held_.size(); ++indexed_) {
      Item it = held_[indexed_].item;
      if (it == 0) continue;
      const auto ts = d_.terms_into(it, first_scratch_);  // only its first term is kept
      if (ts.empty()) continue;
      auto& lst = by_first_[ts.front()];
      lst.push_back(indexed_);
      for (std::size_t k = lst.size() - 1; k > 0; --k) {
        if (d_.weight(held_[lst[k - 1]].item) >= d_.weight(held_[lst[k]].item)) break;
        std::swap(lst[k - 1], lst[k]);
      }
    }
  }

  Outcome derive(Item it, Derivation* out) {
    if (views_.bytes() > kViewBytes) views_.clear();
    if (it == 0) {
      if (out) out->found = true;
      return Outcome::Derived;
    }
    if (const std::uint32_t s = find_slot(it); s != kAbsent) {
      if (s == kDerived) return Outcome::Derived;  // only without a derivation to record
      if (out) {
        out->parts = {held_[s].ref};
        out->found = true;
      }
      return Outcome::Derived;
    }
    if (!d_.inspectable()) {
      if (!t_.from_file) return Outcome::Undecidable;
      parts_.clear();
      Outcome r = held_sum(it);
      if (r == Outcome::Derived && out) {
        out->parts.clear();
        for (auto i : parts_) out->parts.push_back(held_[i].ref);
        out->found = true;
      }
      return r;
    }
    parts_.clear();
    if (made_of_held(it)) {
      if (out) {
        out->parts.clear();
        for (auto i : parts_) out->parts.push_back(held_[i].ref);
        out->found = true;
      }
      return Outcome::Derived;
    }
    index_held();
    parts_.clear();
    item_budget_ = o_.dataflow_item_budget;
    Outcome r = d_.kind() == DomainKind::Exact ? cover_exact(it) : cover_ordered(it);
    if (r == Outcome::Derived && out) {
      out->parts.clear();
      for (auto i : parts_) out->parts.push_back(held_[i].ref);
      out->found = true;
    }
    return r;
  }

  // The fast way, for items a run made: follow how the domain combined the item (operands())
  // down to items the node holds. Sound because an item that counts no contribution twice is the
  // disjoint union of the leaves it was combined from (ordered: the walk meets the parts left to
  // right, so the item is their concatenation, each held occurrence used once); incomplete (the
  // node may have combined it another way, and schedule files carry no combines), so the search
  // below stays the judge. Without derivations to record, an item whose recorded operands are
  // not both held is first looked up among the domain's other combines of it (other_operands):
  // one whose operands the node both holds is taken instead (the ring's full sum is made at
  // every node from its own pair, and the domain records the first node's); sound for the same
  // reason. Derivations recorded for the SMT engine keep the first combine.
  bool made_of_held(Item target) {
    if (!dup_free(target)) return false;
    stack_.assign(1, target);
    expanded_.clear();
    other_budget_ = kMaxOtherOperands;
    std::size_t visits = 0;
    bool ok = true;
    while (ok && !stack_.empty()) {
      Item x = stack_.back();
      stack_.pop_back();
      if (x == 0) continue;
      if (++visits > kMaxDagVisits) {
        ok = false;
      } else if (const std::uint32_t s = find_slot(x); s != kAbsent) {
        if (s != kDerived) parts_.push_back(s);  // a derived item is made of held ones
      } else if (x < ops_.size() && (ops_[x].first | ops_[x].second) != 0) {
        if (!record_) expanded_.push_back(x);  // operands() without a call: the domain's table
        push_operands(x, ops_[x]);
      } else if (auto ops = x < ops_.size() ? std::nullopt : d_.operands(x)) {
        if (!record_) expanded_.push_back(x);
        push_operands(x, *ops);
      } else {
        ok = false;  // a leaf or a file's item the node does not hold: the search decides
      }
    }
    if (ok) {
      // Every item the walk went through is made of held items too (and counts nothing twice).
      for (Item x : expanded_) add_derived(x);
      return true;
    }
    parts_.clear();
    return false;
  }
  bool dup_free(Item it) const { return !d_.counts_twice(it); }
  bool held_or_derived(Item it) const { return it == 0 || find_slot(it) != kAbsent; }
  // Pushes x's operands for the walk: `ops`, or (no derivation recorded) another combine of x
  // whose operands are both held or derived when `ops`' are not.
  void push_operands(Item x, std::pair<Item, Item> ops) {
    if (others_ && other_budget_ > 0 &&
        !(held_or_derived(ops.first) && held_or_derived(ops.second)) &&
        other_operands(d_, x, other_ops_, other_budget_) > 0) {
      other_budget_ -= other_ops_.size();
      for (const auto& o : other_ops_) {
        if (held_or_derived(o.first) && held_or_derived(o.second)) {
          ops = o;
          break;
        }
      }
    }
    stack_.push_back(ops.second);
    stack_.push_back(ops.first);
  }

  bool spend() {
    if (item_budget_ == 0 || total_budget_ == 0) return false;
    --item_budget_;
    --total_budget_;
    return true;
  }

  // ---- exact: an exact cover of the multiset ----
  Outcome cover_exact(Item target) {
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
  std::size_t pos_of(std::uint32_t c) const {
    if (!pos_.empty()) {
      return c < pos_.size() && pos_stamp_[c] == target_stamp_ ? pos_[c] : SIZE_MAX;
    }
    auto it = std::lower_bound(distinct_.begin(), distinct_.end(), c);
    return it != distinct_.end() && *it == c ? static_cast<std::size_t>(it - distinct_.begin())
                                             : SIZE_MAX;
  }

  // Takes held terms hs out of what is left of the target, if they fit (else changes nothing).
  bool take(std::span<const std::uint32_t> hs) {
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
  void give_back(std::span<const std::uint32_t> hs) {
    for (auto c : hs) ++count_[pos_of(c)];
    remaining_ += hs.size();
  }

  bool dfs_exact(std::size_t ptr) {
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

  // ---- fingerprint (schedule files): a sum of held values ----
  // Whether `target` is the sum (mod 2^64, as the fingerprint domain combines) of some of the
  // held values, each occurrence used at most once: both halves of the held values are
  // enumerated and one half's sums looked up for the other's. Decided exactly when the 2^(k/2)
  // sums of each half fit in the budget; otherwise out of budget (never a pass).
  Outcome held_sum(Item target) {
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
  std::uint64_t item_budget_now() const { return o_.dataflow_item_budget; }

  // ---- ordered: a concatenation of held sequences ----
  bool matches_at(const std::vector<std::uint32_t>& seq, std::size_t i,
                  std::span<const std::uint32_t> hs) {
    return i + hs.size() <= seq.size() && std::equal(hs.begin(), hs.end(), seq.begin() + i);
  }

  Outcome cover_ordered(Item target) {
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

  bool dfs_ordered(std::size_t i) {
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

  // ---- reports ----
  std::string label(NodeId v) const { return t_.topology.label(v); }

  std::string held_text() const {
    std::string s = "[";
    std::size_t shown = 0, n = held_.size();
    for (std::size_t i = 0; i < n && shown < kHeldShown; ++i, ++shown)
      s += (i ? ", " : "") + d_.describe(held_[i].item);
    if (n > shown) s += fmt::format(", ... ({} more)", n - shown);
    return s + "]";
  }

  // Why an item is not derivable, in the words of its contributions.
  std::string why_not(Item it) {
    if (!d_.inspectable())
      return t_.from_file ? ": no sum of the values it holds, each used at most once, equals it"
                          : "";
    std::vector<std::uint32_t> have;
    for (const auto& h : held_) {
      if (h.item == 0) continue;
      const auto ts = terms(h.item);
      have.insert(have.end(), ts.begin(), ts.end());
    }
    std::sort(have.begin(), have.end());
    have.erase(std::unique(have.begin(), have.end()), have.end());
    std::string missing;
    std::size_t count = 0;
    auto ts = d_.terms(it);
    std::sort(ts.begin(), ts.end());
    ts.erase(std::unique(ts.begin(), ts.end()), ts.end());
    for (auto c : ts) {
      if (std::binary_search(have.begin(), have.end(), c)) continue;
      if (count++ < 4)
        missing += (missing.empty() ? "" : ", ") +
                   (d_.elems() == 1 ? fmt::format("x{}", c)
                                    : fmt::format("x{}.{}", c / d_.elems(), c % d_.elems()));
    }
    if (count > 4) missing += fmt::format(" and {} more", count - 4);
    if (count) return fmt::format(": it holds nothing that contains {}", missing);
    return d_.kind() == DomainKind::Exact
               ? ": every contribution is held, but no held items add up to it without counting "
                 "one twice"
               : ": every contribution is held, but no held sequences, each used once, "
                 "concatenate to it";
  }

  void report(CheckResult& r, Outcome oc, NodeId v, const Transfer* x, std::uint32_t xi,
              std::uint32_t q) {
    if (oc == Outcome::Undecidable) {
      ++undecidable_;
      return;
    }
    if (oc == Outcome::OutOfBudget) {
      ++out_of_budget_;
      return;
    }
    r.verdict = Verdict::Fail;
    ++r.violation_count;
    // Nodes are replayed one by one; the violations kept are the earliest in schedule order
    // (step, then transfer; final buffers last).
    auto key = [&](const Counterexample& c) {
      return std::make_pair(c.step.value_or(UINT32_MAX),
                            c.transfers.empty() ? UINT32_MAX : c.transfers[0]);
    };
    std::pair<std::uint32_t, std::uint32_t> mine{x ? x->step : UINT32_MAX, x ? xi : UINT32_MAX};
    if (r.violations.size() >= o_.max_violations &&
        (r.violations.empty() || !(mine < key(r.violations.back()))))
      return;
    Counterexample c;
    c.invariant = r.name;
    Item it = x ? t_.payload[x->payload_begin + q] : t_.final_output[v][q];
    if (x) {
      c.step = x->step;
      c.nodes = {x->src, x->dst};
      c.transfers = {xi};
      c.buffers.push_back({v, "sent", d_.describe(it)});
      c.buffers.push_back({v, fmt::format("held before step {}", x->step), held_text()});
      std::string before =
          x->step <= 1 ? "its input"
                       : fmt::format("its input and what it received in steps 1..{}", x->step - 1);
      c.message = fmt::format(
          "step {}: transfer #{} ({} -> {}) carries {}, which {} cannot derive from what it holds "
          "before step {} ({} item(s): {}){}",
          x->step, xi, label(x->src), label(x->dst), d_.describe(it), label(v), x->step,
          held_.size(), before, why_not(it));
    } else {
      c.nodes = {v};
      c.buffers.push_back({v, "output", buffer_to_string(t_, t_.final_output[v])});
      c.buffers.push_back({v, "held at the end", held_text()});
      c.message = fmt::format(
          "node {} ends with {} in output[{}], which it cannot derive from what it holds at the "
          "end ({} item(s): its input and what it received){}",
          label(v), d_.describe(it), q, held_.size(), why_not(it));
    }
    auto at = std::upper_bound(r.violations.begin(), r.violations.end(), mine,
                               [&](const auto& k, const Counterexample& e) { return k < key(e); });
    r.violations.insert(at, std::move(c));
    if (r.violations.size() > o_.max_violations) r.violations.pop_back();
  }

  void finish(CheckResult& r) {
    std::vector<std::string> notes;
    if (out_of_budget_) {
      if (r.verdict == Verdict::Pass) r.verdict = Verdict::Unknown;
      notes.push_back(fmt::format(
          "{} item(s) could not be decided within the search budget (combinations of many held "
          "items)",
          out_of_budget_));
    }
    if (d_.kind() == DomainKind::Fingerprint && t_.from_file) {
      notes.push_back(
          "fingerprint domain: each item sent or kept is its node's held value or a sum of held "
          "values, each used once (equal 64-bit sums: probabilistic; overlapping parts are not "
          "seen: run the exact domain for that)");
    } else if (d_.kind() == DomainKind::Fingerprint) {
      if (undecidable_) {
        if (r.verdict == Verdict::Pass) r.verdict = Verdict::NotChecked;
        notes.push_back(fmt::format(
            "fingerprint domain: {} item(s) are not held as they are and a fingerprint cannot be "
            "decomposed into the held values it might combine; run the exact or ordered domain",
            undecidable_));
      } else {
        notes.push_back(
            "fingerprint domain: every item sent or kept is one its node holds (equal 64-bit "
            "fingerprints; probabilistic)");
      }
    }
    for (const auto& n : notes) r.note += (r.note.empty() ? "" : "; ") + n;
  }

 public:
  CheckResult check_match() {
    CheckResult r;
    r.name = "match";
    r.verdict = Verdict::Pass;
    const RunFailure& f = t_.failure;
    if (f.kind == RunFailure::Kind::RuntimeError) {
      r.verdict = Verdict::NotChecked;
      r.note = "the run stopped at a runtime error before its messages could all be received";
      return r;
    }
    if (f.kind == RunFailure::Kind::StepLimit || f.kind == RunFailure::Kind::OpLimit) {
      r.verdict = Verdict::Unknown;
      r.note = "the run stopped at a limit before its messages could all be received";
      return r;
    }
    auto add = [&](Counterexample c) {
      r.verdict = Verdict::Fail;
      c.invariant = r.name;
      ++r.violation_count;
      if (r.violations.size() < o_.max_violations) r.violations.push_back(std::move(c));
    };
    for (auto i : t_.unreceived) {
      if (i >= t_.transfers.size()) continue;
      const Transfer& x = t_.transfers[i];
      Counterexample c;
      c.step = x.step;
      c.nodes = {x.src, x.dst};
      c.transfers = {i};
      c.buffers.push_back({x.src, "sent", payload_to_string(t_, x)});
      c.message = fmt::format("step {}: transfer #{} sent by {} to {} ({}) is never received",
                              x.step, i, label(x.src), label(x.dst), payload_to_string(t_, x));
      add(std::move(c));
    }
    // A deadlock of the ports received every message: no receive waits.
    if (f.kind == RunFailure::Kind::Deadlock && !f.ports && !f.waiting.empty()) {
      // Receives that never happen: every waiting node waits for a message nobody sends.
      Counterexample c;
      c.nodes = f.waiting;
      std::string who;
      for (std::size_t k = 0; k < f.waiting.size() && k < 8; ++k)
        who += (k ? ", " : "") + label(f.waiting[k]);
      if (f.waiting.size() > 8) who += fmt::format(", ... ({} more)", f.waiting.size() - 8);
      c.message = fmt::format(
          "{} receive(s) never happen: node(s) {} wait for a message that is never sent (the "
          "deadlock check names the waiting chain)",
          f.waiting.size(), who);
      add(std::move(c));
    }
    return r;
  }

 private:
  const Trace& t_;
  const CheckOptions& o_;
  Domain& d_;
  bool record_;
  NodeId node_ = 0;
  std::vector<Held> held_;
  std::vector<Slot> slots_;
  ZeroedArray<Dense> dense_;                    // per domain item (exact, ordered)
  std::span<const std::pair<Item, Item>> ops_;  // Domain::operand_table
  bool others_ = false;                         // the walk may take other_operands
  std::vector<std::pair<Item, Item>> other_ops_;
  std::size_t other_budget_ = 0;  // of this walk
  std::uint32_t gen_ = 0;
  std::size_t indexed_ = 0;
  std::unordered_map<std::uint32_t, std::vector<std::uint32_t>> by_first_;
  static constexpr std::size_t kViewBytes = std::size_t{64} << 20;
  TermViews views_{d_};                       // terms() of this node's searches
  std::vector<std::uint32_t> first_scratch_;  // index_held's
  // search state
  std::vector<std::uint32_t> distinct_, count_, full_, seq_, parts_;
  std::vector<Item> stack_, expanded_;
  std::size_t occupied_ = 0;  // slots of this node's generation: held and derived items
  std::vector<std::uint8_t> used_;
  std::vector<std::uint32_t> pos_, pos_stamp_;
  std::uint64_t pos_universe_ = 0;  // pos_'s size once made; 0: the universe is too large
  std::uint32_t target_stamp_ = 0;
  std::size_t remaining_ = 0;
  bool exhausted_ = false;
  std::uint64_t item_budget_ = 0, total_budget_ = 0;
  std::size_t undecidable_ = 0, out_of_budget_ = 0;
};

}  // namespace

Dataflow analyze_dataflow(const Trace& t, const CheckOptions& o) {
  return Analyzer(t, o, true).run();
}

std::pair<CheckResult, CheckResult> check_dataflow_and_match(const Trace& t,
                                                             const CheckOptions& o) {
  Dataflow df = Analyzer(t, o, false).run();
  return {std::move(df.dataflow), std::move(df.match)};
}

CheckResult check_match(const Trace& t, const CheckOptions& o) {
  return Analyzer(t, o, false).check_match();
}

}  // namespace collv
