// The dataflow check on a run in the fingerprint domain (dataflow.cpp), done without the item
// walk's bookkeeping: there a node's sent and kept items are judged by membership only (a
// fingerprint cannot be decomposed), so the verdict is fixed by one number, the items that are
// neither the identity nor held by their node at that point. This replay counts them with a
// table of bare 64-bit values per node and two whole-payload shortcuts:
//   - a payload the node received before (the same place in Trace::payload, the same length:
//     the same items) is not added again;
//   - a payload sent that is one the node received is held item for item: nothing to look up.
// check_dataflow_and_match takes it for runs in the fingerprint domain; analyze_dataflow (which
// records each derivation) keeps the item walk, and tests/test_dataflow_held.cpp compares the
// two (verdict and note, with the count) on broken traces and on every model.
//
//   HeldFlow h(trace);
//   if (h.usable()) missing += h.replay(v, in, out);  // per node, its transfers in step order
#pragma once

#include <cstdint>
#include <span>
#include <unordered_set>
#include <vector>

#include "exec/trace.hpp"

namespace collv {

class HeldFlow {
 public:
  explicit HeldFlow(const Trace& t);
  // A run's trace (not a schedule file's) in the fingerprint domain.
  bool usable() const { return usable_; }
  // Node v's replay: `in` its received transfers, `out` its sent ones, each in step order (as
  // the dataflow check lists them). Returns how many items v sends or keeps that are neither
  // the identity (item 0) nor held by v when sent (its input and the items of the transfers it
  // received in earlier steps) or at the end.
  std::uint64_t replay(NodeId v, std::span<const std::uint32_t> in,
                       std::span<const std::uint32_t> out);

  // Sent payloads judged whole by the second shortcut (for the tests).
  std::uint64_t payloads_skipped() const { return skipped_; }

 private:
  void reset(std::uint64_t items);
  struct Home {
    std::uint64_t group, tag;
  };
  Home home(Item x) const;
  void insert(Item x, Home at);
  bool has(Item x, Home at) const;
  void insert_all(const Item* items, std::size_t n);              // the nonzero ones
  std::uint64_t missing(const Item* items, std::size_t n) const;  // nonzero and not held

  const Trace& t_;
  bool usable_ = false;
  std::vector<std::uint64_t> ctrl_;  // per group of 8 slots, a control byte a slot
  std::vector<Item> values_;         // 8 a group
  std::uint64_t gmask_ = 0;
  unsigned shift_ = 63;
  std::unordered_set<std::uint64_t> received_;  // payload keys (begin, length) of this node
  std::uint64_t skipped_ = 0;
};

}  // namespace collv
