// The dataflow check's walk (dataflow.cpp, dataflow_search.cpp, dataflow_report.cpp): one
// Analyzer replays a trace node by node. Its parts by concern: the holdings of the node at hand
// and the walk over the combine history (dataflow.cpp), the searches for items no walk derives
// (dataflow_search.cpp: exact cover, ordered concatenation, sums of fingerprints), the reports
// and the match check (dataflow_report.cpp). Internal to those files: dataflow.hpp is the API.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>
#include <span>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "check/dataflow.hpp"

namespace collv::dataflow_detail {

constexpr std::uint64_t kItemBudget = 200000;     // fit tests per item
constexpr std::uint64_t kTotalBudget = 50000000;  // fit tests per trace
constexpr std::size_t kHeldShown = 8;             // held items listed in a counterexample

inline std::uint64_t mix(std::uint64_t x) {
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

  Dataflow run();

 private:
  // ---- one node's holdings ----
  void begin_node(NodeId v);

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

  void grow();

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

  void index_held();

  Outcome derive(Item it, Derivation* out);

  bool made_of_held(Item target);
  bool dup_free(Item it) const { return !d_.counts_twice(it); }
  bool held_or_derived(Item it) const { return it == 0 || find_slot(it) != kAbsent; }
  void push_operands(Item x, std::pair<Item, Item> ops);

  bool spend() {
    if (item_budget_ == 0 || total_budget_ == 0) return false;
    --item_budget_;
    --total_budget_;
    return true;
  }

  // ---- exact: an exact cover of the multiset ----
  Outcome cover_exact(Item target);

  std::size_t pos_of(std::uint32_t c) const;

  bool take(std::span<const std::uint32_t> hs);
  void give_back(std::span<const std::uint32_t> hs);

  bool dfs_exact(std::size_t ptr);

  // ---- fingerprint (schedule files): a sum of held values ----
  Outcome held_sum(Item target);
  std::uint64_t item_budget_now() const { return o_.dataflow_item_budget; }

  // ---- ordered: a concatenation of held sequences ----
  bool matches_at(const std::vector<std::uint32_t>& seq, std::size_t i,
                  std::span<const std::uint32_t> hs);

  Outcome cover_ordered(Item target);

  bool dfs_ordered(std::size_t i);

  // ---- reports ----
  std::string label(NodeId v) const { return t_.topology.label(v); }

  std::string held_text() const;

  std::string why_not(Item it);

  void report(CheckResult& r, Outcome oc, NodeId v, const Transfer* x, std::uint32_t xi,
              std::uint32_t q);

  void finish(CheckResult& r);

 public:
  CheckResult check_match();

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

}  // namespace collv::dataflow_detail
