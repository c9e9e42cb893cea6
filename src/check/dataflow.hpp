// Data flow: replays a Trace's transfers in step order from the collective's initial buffers and
// explains every item that moves. Each item a node sends, and each item of every final buffer,
// must be derivable from what that node holds at that point: its input elements and the items it
// received in earlier steps (a held item itself, or, for reductions, a combination of held items
// that counts no contribution twice). The derivations found are the schedule's structure: the SMT
// engine encodes them (src/smt), so a proof rests on the schedule, not on collv's values.
//
//   collv::Dataflow df = collv::analyze_dataflow(trace, {});
//   df.dataflow.verdict;  // Pass, or Fail: step, transfer, item and what the sender held
//   df.payload[df.slot[i] + k].parts;  // how item k of transfer i was made from what its
//                                      // sender held
//
// The `match` check reports sends that no node ever receives (Trace::unreceived) and receives
// that never happen (the nodes a deadlock leaves waiting). docs/checks.md has the details.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "check/checks.hpp"
#include "exec/trace.hpp"

namespace collv {

// One value a node holds: an element of its initial input, or an item it received.
struct HeldRef {
  enum class Kind : std::uint8_t { Input, Received };
  Kind kind = Kind::Input;
  // Input: index into Trace::initial_input[node]. Received: the slot (payload_slots) of the item
  // in the transfer that brought it: Dataflow::slot[transfer] + position.
  std::uint32_t index = 0;
  bool operator==(const HeldRef&) const = default;
};

// An item as a combination of held values, left to right: parts[0] + parts[1] + ... One part is a
// copy; no parts is the identity (an empty item).
struct Derivation {
  std::vector<HeldRef> parts;
  bool found = false;  // false: no derivation exists (a dataflow violation) or none was decided
};

struct Dataflow {
  std::vector<std::uint32_t> slot;  // per transfer: its first slot (payload_slots)
  std::vector<Derivation> payload;  // per slot: item k of transfer i at slot[i] + k
  std::vector<std::vector<Derivation>> final_output;  // per node, per item of final_output
  CheckResult dataflow;                               // name "dataflow"
  CheckResult match;                                  // name "match"
};

Dataflow analyze_dataflow(const Trace& t, const CheckOptions& o);

// The two verdicts of analyze_dataflow without recording the derivations (what check_trace runs:
// it keeps memory flat on traces with millions of items).
std::pair<CheckResult, CheckResult> check_dataflow_and_match(const Trace& t, const CheckOptions& o);
// match alone: the transfers in Trace::unreceived, and the receives a deadlock leaves waiting.
CheckResult check_match(const Trace& t, const CheckOptions& o);

}  // namespace collv
