// Schedule synthesis and step lower bounds with Z3 (SCCL-style Boolean encodings, docs/smt.md).
//
//   collv::SynthOptions o;  o.collective = "allgather";  o.topology = "hypercube:3";  o.steps = 2;
//   collv::SynthResult r = collv::synthesize(o);
//   r.answer;   // Unsat: no 2-step schedule exists (a proved lower bound of 3 steps)
//   o.steps = 3;  r = collv::synthesize(o);   // Sat: r.trace is a 3-step schedule (a Trace)
//
// Variables: send[u][v][t] (u sends to its neighbour v in step t = 1..T) and has[v][c][t] (node v
// holds chunk c after step t). single-port: every node sends at most one message and receives at
// most one message per step; all-port: one message per directed link per step.
//  * broadcast: one chunk, from the root; a node sends only what it holds.
//  * allgather (= gossip): a message carries every chunk its sender holds (message size is free).
//  * allreduce: one-word messages, each a partial sum: a set of contributions that is a disjoint
//    union of values the sender holds (its input and the messages it received); the result is a
//    disjoint union of held values covering every contribution (no contribution counted twice).
//    Exact for commutative operators without idempotence or inverses. Any all-reduce schedule is
//    also a gossip schedule (information must flow), so gossip's lower bounds hold for it.
// uniform: every node uses the same link number in a step (see SynthOptions::uniform).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "exec/trace.hpp"
#include "smt/solver.hpp"

namespace collv {

struct SynthOptions {
  std::string collective;  // "broadcast", "allgather" (or "gossip"), "allreduce"
  std::string topology;    // spec
  unsigned steps = 0;      // T; with least: the largest T tried
  PortModel port = PortModel::Single;
  bool least = false;  // find the least T in 1..steps
  // Uniform (symmetric) schedules only: in step t every node sends along the same link number
  // k_t (Z3 chooses the k_t). A restriction: sat gives a real schedule, unsat only says no
  // uniform one exists. For allreduce this uses the Cayley-graph symmetry (star, hypercube): every
  // node sends the same partial sum relative to itself, so the query has p, not p^2, chunk
  // variables per step, which makes star:5 tractable.
  bool uniform = false;
  // cadical backend, gossip and single-port allreduce: only schedules invariant under the group
  // of automorphisms these generators span, and which must act on the nodes without fixed
  // points. star:n: permutations of the symbols 1..n in cycle notation, acting by relabelling
  // (left multiplication), e.g. "(1 2 3 4 5)" or "(1 2 3),(3 4 5)"; hypercube:d: bit masks,
  // acting by xor, e.g. "3,5". A restriction like uniform (which is invariance under the whole
  // group of left multiplications): sat gives a real schedule, unsat only says that no invariant
  // one exists. Empty: none.
  std::string invariant;
  // cadical backend, single-port allreduce only (the stricter questions of issue 21):
  // nodup: no message carries a contribution its receiver already holds (its own input, or one it
  // received in an earlier step), so every contribution reaches every node once;
  // exchange: one neighbour per node and step (a node that sends to v and receives in the same
  // step receives from v), the paper's pairwise exchanges.
  bool nodup = false;
  bool exchange = false;
  std::uint32_t root = 0;                // broadcast source
  unsigned timeout_ms = 60000;           // per query
  std::uint64_t max_terms = 30'000'000;  // per query, counted before it is built
  std::string emit_dir;                  // write every query as an SMT-LIB2 file here
  // "z3" (default) or "cadical": the same questions as CNF, solved by CaDiCaL (synth_cnf.hpp).
  std::string backend = "z3";
  // cadical: write <query>.cnf (DIMACS) and, for unsat, <query>.drat (text DRAT proof) here
  // (default: emit_dir).
  std::string proof_dir;
  // cadical: fix node 0's (broadcast: the root's) step-1 message when the graph is shown
  // arc-transitive by explicit automorphisms (sound, docs/smt.md).
  bool symmetry_breaking = true;
  // cadical: cube and conquer to this lookahead depth (0: one solve). An unsat answer then has no
  // DRAT proof; an unknown one says how many cubes were refuted (synth_cnf.hpp).
  unsigned cube_depth = 0;
  // Progress lines of long runs (cube mode: one per cube), e.g. to stderr.
  std::function<void(const std::string&)> progress;
};

struct SynthAttempt {
  unsigned steps;
  smt::Answer answer;
  double seconds;
  std::string reason;  // unknown: why
  std::string file;    // emitted query, if any (cadical: the DIMACS CNF)
  std::string proof;   // cadical, unsat, with a proof directory: the DRAT proof of `file`
};

struct SynthResult {
  smt::Answer answer = smt::Answer::Unknown;  // for `steps` (the least T found, with least)
  unsigned steps = 0;
  std::optional<Trace> trace;          // the schedule, when answer is Sat
  std::vector<SynthAttempt> attempts;  // every T tried, in order
  std::string note;
  std::uint64_t invariant_order = 0;  // with SynthOptions::invariant: the group's order
};

// Throws UsageError / SpecError for bad options.
SynthResult synthesize(const SynthOptions& o);

// The SMT-LIB2 text of one synthesis query (for certificates and `collv prove`), and whether it
// was refused by the size cap.
struct SynthQuery {
  std::string text;  // self-contained script with (check-sat)
  bool refused = false;
  std::string reason;
};
// The group SynthOptions::invariant spans on a topology, as node permutations (identity first):
// what `synth --invariant` restricts schedules by. Throws UsageError / SpecError for bad input.
std::vector<std::vector<std::uint32_t>> invariance_group(const std::string& generators,
                                                         const std::string& topology);

SynthQuery synth_query_text(const SynthOptions& o, unsigned steps, smt::Answer expected);

}  // namespace collv
