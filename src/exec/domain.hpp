// Value domains: what a data item is while the executor runs.
//
//   auto dom = collv::make_domain(collv::DomainKind::Exact, /*p=*/8, /*elems=*/1, /*seed=*/1);
//   collv::Item a = dom->leaf(0, 0), b = dom->leaf(1, 0);
//   dom->describe(dom->combine(a, b));   // "x0+x1"
//
// exact: an item is a multiset of contributions (node, element); identical multisets are interned
//        and combines memoised, so regular algorithms cost little even at 40,320 nodes.
// ordered: an item is a sequence of contributions (the free monoid): a + b keeps operand order.
//        Both hold an item as its element and an interned set of rank runs shared by every
//        element (domain_sets.cpp): a union of a few rank intervals costs a few runs, once.
// fingerprint: an item is a sum of seeded random 64-bit weights; constant size, for very large p.
// Item 0 is the identity (the empty multiset / sequence / weight 0) in every domain.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "util/memory.hpp"

namespace collv {

using Item = std::uint64_t;

enum class DomainKind { Exact, Ordered, Fingerprint };
const char* domain_name(DomainKind k);
std::optional<DomainKind> domain_from_name(const std::string& s);

class Domain {
 public:
  virtual ~Domain() = default;
  virtual DomainKind kind() const = 0;
  // Node `node`'s input element `elem` (x[node] or x[node][elem]).
  virtual Item leaf(std::uint32_t node, std::uint32_t elem) = 0;
  // a + b, in operand order.
  virtual Item combine(Item a, Item b) = 0;
  // x[k] := x[k] + y[k] (x_left) or y[k] + x[k], for k = 0 .. n-1 in that order: what n calls
  // of combine give (the executor's `x := x + y` over whole buffers).
  virtual void combine_into(Item* x, const Item* y, std::size_t n, bool x_left) {
    if (x_left)
      for (std::size_t k = 0; k < n; ++k) x[k] = combine(x[k], y[k]);
    else
      for (std::size_t k = 0; k < n; ++k) x[k] = combine(y[k], x[k]);
  }
  // The item whose contributions are `terms` (contribution ids node * elems + elem, each below
  // p * elems), in operand order: what folding leaves with combine gives, built in one step.
  virtual Item from_terms(std::vector<std::uint32_t> terms) = 0;
  // Human-readable: "x0+x1+x2", "x3.1", "x0..x7" (runs), "2*x3" (multiplicity), "0" (identity).
  virtual std::string describe(Item a) const = 0;
  // Whether terms() is available (exact and ordered; not fingerprint).
  virtual bool inspectable() const = 0;
  // The contributions of an item as contribution ids (node * elems + elem): sorted with repetition
  // (exact) or in operand order (ordered). Empty for the identity.
  virtual std::vector<std::uint32_t> terms(Item a) const = 0;
  // The same for the checkers' inner loops, without an allocation: written into `buf` (its
  // contents replaced), or a view of the domain's own storage where it keeps term lists (count
  // 1). Valid until `buf` changes or the next combine or from_terms; empty for fingerprint.
  // Nothing is kept by the domain: a caller that holds several items' terms at once gives each
  // its own buffer, or uses TermViews (below). Safe to call from several threads at once, each
  // with its own buffer.
  virtual std::span<const std::uint32_t> terms_into(Item a,
                                                    std::vector<std::uint32_t>& buf) const = 0;
  // Whether the item counts some contribution twice (exact and ordered; false for fingerprint),
  // without listing its terms.
  virtual bool counts_twice(Item a) const;
  // A bound on the ids of the items made so far (ids are below num_items(); not every id below
  // it is an item: ids are a set's number and an element); 0 for fingerprint (items are hashes).
  virtual std::size_t num_items() const = 0;
  // The operands of the combine that first made item a (exact and ordered), or nullopt for a
  // leaf, an item made by from_terms, or a fingerprint. a = combine(first, second) holds for
  // the returned pair whichever way a was made later: items are interned by value.
  virtual std::optional<std::pair<Item, Item>> operands(Item a) const = 0;
  // The same for every item at once, for the checkers' walks (no call per item): entry a is
  // operands(a), {0, 0} where that is nullopt. Empty where the domain keeps no table
  // (fingerprint); items past its end are asked with operands(). Valid until the next combine
  // or from_terms.
  virtual std::span<const std::pair<Item, Item>> operand_table() const { return {}; }
  // Items factored by element (the exact and ordered domains at count > 1, domain_sets.cpp):
  // item (s << elem_bits()) | e is element e of set s, a set of ranks shared by every element
  // that was combined alike. -1 where items are not factored.
  virtual int elem_bits() const { return -1; }
  // What the checkers' walks need of a set s of a factored domain (s below num_items() >>
  // elem_bits()): the sets whose union first made it (op1, op2: set ids, both 0 for none; the
  // item (s, e) was made of (op1, e) and (op2, e), so operands() of every element agree), whether
  // its values are contribution ids of mixed elements (general: its one item is (s << bits) | 0,
  // and op1, op2 are items, not sets) and whether it counts a value twice (counts_twice of its
  // items).
  struct SetInfo {
    std::uint64_t op1 = 0, op2 = 0;
    bool general = false, repeats = false;
  };
  virtual SetInfo set_info(std::uint64_t s) const;
  // Number of contributions counted with multiplicity (fingerprint: unknown, returns 0).
  virtual std::uint64_t weight(Item a) const = 0;
  virtual std::size_t memory_bytes() const = 0;
  // While set, combines charge the bytes they are about to intern to `w` (which throws
  // LimitError at the limit). Not owned; nullptr to stop.
  void set_watch(MemoryWatch* w) { watch_ = w; }

  std::uint32_t p() const { return p_; }
  std::uint32_t elems() const { return elems_; }

 protected:
  Domain(std::uint32_t p, std::uint32_t elems) : p_(p), elems_(elems) {}
  std::uint32_t p_, elems_;
  MemoryWatch* watch_ = nullptr;
};

// Term lists of items kept for a caller that holds several at once (the dataflow walk's
// search): each view stays valid until clear() or the end of the TermViews, and the caller
// clears it where it holds none (bytes() says what is kept).
class TermViews {
 public:
  explicit TermViews(const Domain& d) : d_(d) {}
  std::span<const std::uint32_t> operator()(Item a);
  void clear();
  std::size_t bytes() const { return bytes_; }

 private:
  const Domain& d_;
  std::unordered_map<Item, std::vector<std::uint32_t>> lists_;
  std::vector<std::uint32_t> scratch_;
  std::size_t bytes_ = 0;
};

// Throws LimitError if p * elems exceeds 2^32-1 (contribution ids are 32 bits).
std::unique_ptr<Domain> make_domain(DomainKind kind, std::uint32_t p, std::uint32_t elems,
                                    std::uint64_t seed);

}  // namespace collv
