// The dataflow check's fast way (dataflow.cpp: following how the run combined an item down to
// items the node holds) done once per set rather than once per element.
//
// In the exact and ordered domains at count > 1 an item is element e of a set s of ranks
// (Domain::elem_bits), and the combine history of (s, e) is that of s at element e: every
// element of a recursive-doubling buffer shares its set and its history. So a run of items
// (s, e0), (s, e0 + 1), ..., (s, e0 + n - 1) in a payload is derived by one walk over sets: a set
// t the walk meets stops it when every element of the run is held or derived at t, is expanded
// into its operands when none is, and anything the per-item walk could treat differently from
// element to element (some elements held and some not, a set mixing elements, a repeat, a
// missing operand, the walk's visit cap) hands the node back. Where a set's recorded operands
// are not both held, the walk takes the first other pair that made it (other_operands) whose
// sets are both held at every element of the run, as the per-item walk does element by element;
// a pair held at some elements only hands the node back. A set's elements held or derived at a
// node are kept as up to two intervals (the ring receives a segment's full sums from its own
// segment downwards, wrapping past element 0); a third hands the node back.
//
// A node is replayed here whole or not at all: replay() says true only when the per-item walk
// would derive every item the node sends or keeps by combine history alone (no search, no
// budget spent, nothing to report), so the verdict is the one the per-item replay gives; false
// makes the caller replay the node item by item from its start.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "exec/trace.hpp"

namespace collv {

// The per-item walk's cap on the items it visits for one target (dataflow.cpp); the set walk
// visits the same sets in the same order and stops at the same count.
inline constexpr std::size_t kMaxDagVisits = 4096;
// The other combines of an item (other_operands, domain_sets.hpp) the walks look at, over all the
// expansions of one walk; the set walk looks at the same ones in the same order.
inline constexpr std::size_t kMaxOtherOperands = 65536;

class SetFlow {
 public:
  // Usable only on a run's trace (a schedule file's items carry no combine history) in a domain
  // that factors items by element.
  explicit SetFlow(const Trace& t);
  bool usable() const { return usable_; }
  // Node v's replay: `in` its received transfers, `out` its sent ones, each in step order.
  // True: every item v sends and keeps is derived (see above). False: replay v item by item.
  // After many nodes handed back (a schedule whose buffers mix sets element by element) it
  // stops trying: usable() turns false.
  bool replay(NodeId v, std::span<const std::uint32_t> in, std::span<const std::uint32_t> out);

  std::size_t nodes_replayed() const { return replayed_; }
  std::size_t nodes_handed_back() const { return handed_back_; }

 private:
  struct Run {  // items (set, e0), ..., (set, e0 + len - 1)
    std::uint64_t set;
    std::uint32_t e0, len;
  };
  struct Cover {  // the elements [lo, hi) and [lo2, hi2) of a set held or derived at the node
                  // of generation gen (lo2 == hi2: one interval); all zero bytes: never held
    std::uint32_t gen = 0;
    std::uint32_t lo = 0, hi = 0, lo2 = 0, hi2 = 0;
    bool broken = false;  // the elements held are more than two intervals: not answered
  };
  enum class Has { All, None, Some };

  bool runs_of(const Item* items, std::size_t n, std::vector<Run>& out) const;
  std::span<const Run> payload_runs(const Transfer& x);
  Has has(const Run& r) const;
  bool add(const Run& r);
  bool derive(const Run& r);
  bool other_pair(std::uint64_t s, const Run& r, std::uint64_t& op1, std::uint64_t& op2);
  bool hold(const Item* items, std::size_t n);
  bool derive_all(const Item* items, std::size_t n);

  const Trace& t_;
  const Domain& d_;
  bool usable_ = false;
  unsigned ebits_ = 0;
  Item emask_ = 0;
  std::uint32_t gen_ = 0;
  // Per set, from calloc: the pages of sets no node holds are never touched.
  struct FreeCovers {
    void operator()(Cover* c) const;
  };
  std::unique_ptr<Cover[], FreeCovers> cover_;
  std::size_t num_sets_ = 0;
  std::vector<std::pair<Item, Item>> others_;  // other_operands'
  std::size_t other_budget_ = 0;               // of this walk
  // Runs of shared payloads, by payload_begin and length (a payload shared by many transfers is
  // split once); unshared ones are split where they are read.
  std::unordered_map<std::uint64_t, std::pair<std::uint32_t, std::uint32_t>> memo_;
  std::vector<Run> memo_runs_, scratch_;
  std::vector<std::uint64_t> stack_, expanded_;
  std::size_t replayed_ = 0, handed_back_ = 0;
};

}  // namespace collv
