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
// missing operand, the walk's visit cap) hands the node back.
//
// A node is replayed here whole or not at all: replay() says true only when the per-item walk
// would derive every item the node sends or keeps by combine history alone (no search, no
// budget spent, nothing to report), so the verdict is the one the per-item replay gives; false
// makes the caller replay the node item by item from its start.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "exec/trace.hpp"

namespace collv {

// The per-item walk's cap on the items it visits for one target (dataflow.cpp); the set walk
// visits the same sets in the same order and stops at the same count.
inline constexpr std::size_t kMaxDagVisits = 4096;

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
  struct Cover {  // the elements [lo, hi) of a set held or derived at the node of generation gen
    std::uint32_t gen = 0;
    std::uint32_t lo = 0, hi = 0;
    bool broken = false;  // the elements held are not one interval: not answered
  };
  enum class Has { All, None, Some };

  bool runs_of(const Item* items, std::size_t n, std::vector<Run>& out) const;
  std::span<const Run> payload_runs(const Transfer& x);
  Has has(const Run& r) const;
  bool add(const Run& r);
  bool derive(const Run& r);
  bool hold(const Item* items, std::size_t n);
  bool derive_all(const Item* items, std::size_t n);

  const Trace& t_;
  const Domain& d_;
  bool usable_ = false;
  unsigned ebits_ = 0;
  Item emask_ = 0;
  std::uint32_t gen_ = 0;
  std::vector<Cover> cover_;  // per set
  // Runs of shared payloads, by payload_begin and length (a payload shared by many transfers is
  // split once); unshared ones are split where they are read.
  std::unordered_map<std::uint64_t, std::pair<std::uint32_t, std::uint32_t>> memo_;
  std::vector<Run> memo_runs_, scratch_;
  std::vector<std::uint64_t> stack_, expanded_;
  std::size_t replayed_ = 0, handed_back_ = 0;
};

}  // namespace collv
