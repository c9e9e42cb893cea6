// Verification by symmetry on the star graph (`collv verify MODEL -t star:N -d symmetry`,
// docs/symmetry.md): one representative node instead of n!.
//
//   collv::SymmetricResult r = collv::verify_symmetric(model, "star", 12, {});   // one node
//   if (!r.refusal.empty()) ...;           // the program is not provably equivariant: no verdict
//   for (const auto& c : r.checks) ...;    // kCheckNames order, as check_trace gives them
//
// Why it is exact. The star graph's automorphisms pi -> sigma pi preserve link numbers. When every
// node runs the same communications (every send and receive `along link L` with L computed from
// constants, n and loop counters, never from my_id or data; control flow likewise), node pi's
// buffers are pi R for sets R shared by all nodes, and a message received along link j is
// t_j R' when the sender's buffer is R' (t_j swaps positions 1 and j). So running R at one node
// decides, for every node at once, which contributions each buffer holds: NODUP at every `+`/`∪`
// (an intersection of two sets), the postcondition (the output is all n! contributions), the
// steps (one exchange per step) and the cost. The analysis refuses any program it cannot show to
// be of that shape (the refusal names the line); it never guesses.
//
// The hypercube likewise: x -> x XOR a preserves dimensions, node x holds x XOR R, and a message
// from my_id XOR 2^i (or `along link i`) turns R' into 2^i XOR R'. There the peer may be
// my_id XOR c (c a node-independent power of two); my_id may appear nowhere else.
//
// The ring likewise: x -> x + a keeps `left` and `right`; a node that sends to one side and then
// receives from the other gets R' rotated by one, and node x holds x + R.
//
// Sets are bitsets over S_n (n!/8 bytes each: 60 MB at n = 12), so a value's multiplicity beyond
// one is not kept: a `+` of overlapping sets is a NODUP violation, and every value built from it
// is marked, so a postcondition that depends on it fails too.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "check/checks.hpp"
#include "exec/executor.hpp"
#include "lang/ast.hpp"

namespace collv {

struct SymmetricResult {
  std::string refusal;  // non-empty: not provably equivariant (or outside the engine); no verdict
  SourceLoc refusal_loc;
  std::uint32_t steps = 0;
  double cost_ts = 0, cost_tw = 0;  // as Trace::cost_ts / cost_tw (m = 1)
  std::vector<CheckResult> checks;  // every name of kCheckNames, in order
  std::uint64_t peak_bytes = 0;     // the largest total of live sets
  // The representative's output: for each contribution (by origin node id), whether it is held.
  // Filled only up to 40320 processors (tests compare it with a full run).
  std::vector<bool> output_origins;
};

// The bytes verify_symmetric needs on family:size (its sets), estimated before anything is
// allocated.
std::uint64_t symmetric_bytes(const Model& m, const std::string& family, int size);

// Runs m on star:size (2..13), hypercube:size (1..32) or ring:size (2..2^20) by symmetry; the
// topology is never built.
// Throws UsageError for another family or size, LimitError when the sets would pass o.max_memory
// (checked up front). o.progress is called after every exchange.
SymmetricResult verify_symmetric(const Model& m, const std::string& family, int size,
                                 const RunOptions& o);

// The engine's index of a permutation h of 1..n (the one-line notation of g^-1 for the
// contribution of node g): sum over positions i of c_i (i-1)!, c_i = #{l < i : h[l] < h[i]}.
// Swapping positions 1 and j changes only the digits of positions 1..j. Exposed for tests.
std::uint64_t symmetric_index(const std::vector<int>& h);
std::vector<int> symmetric_unindex(std::uint64_t index, int n);

}  // namespace collv
