// The SAT backend of `collv synth --backend cadical` (docs/smt.md, "The SAT backend"): the same
// synthesis questions as the Z3 encodings of synth_query.cpp, written as CNF and solved by CaDiCaL
// through its C++ library. synth.cpp fills a SynthProblem from the topology and turns the model
// (named variables with the Z3 encoding's names: m<u>_<v>_<t>, s<u>_<v>_<c>_<t>, f<v>_<j>,
// l<t>_<k>, M<t>_<g>, r<t>_<g>, f<j>) into a Trace exactly as for Z3.
//
//   collv::sat::SynthProblem p = ...;           // graph, kind, T, port, root
//   collv::sat::CnfOptions co;  co.proof_dir = "out";
//   collv::sat::CnfResult r = collv::sat::solve_synth_cnf(p, co);
//   // r.answer Unsat: out/<name>.cnf (DIMACS) and out/<name>.drat (text DRAT proof) are written;
//   // `cadical out/<name>.cnf` or `drat-trim out/<name>.cnf out/<name>.drat` re-check them.
//
// Only this file's .cpp includes cadical.hpp.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "smt/solver.hpp"

namespace collv::sat {

enum class SynthKind { Broadcast, Gossip, Allreduce };

struct SynthProblem {
  SynthKind kind = SynthKind::Gossip;
  unsigned steps = 0;  // T
  bool single_port = true;
  std::uint32_t root = 0;                        // broadcast source
  std::uint32_t p = 0;                           // processors 0..p-1
  std::vector<std::vector<std::uint32_t>> nbr;   // nbr[u]: neighbours of u (links of u, in order)
  std::vector<std::vector<int>> link_number;     // parallel to nbr: the link's number
  std::vector<std::vector<std::uint32_t>> dist;  // hop distances
  // Uniform schedules (SynthOptions::uniform): for gossip and allreduce the symmetric encoding on
  // a Cayley graph (node 0 is the identity; lmul[k][g] = gen(links[k]) * g); for broadcast every
  // node sends along the same link number in a step.
  bool uniform = false;
  std::vector<int> links;                        // generators' link numbers
  std::vector<std::vector<std::uint32_t>> lmul;  // [index into links][g]
  // Invariant schedules (SynthOptions::invariant): the elements of a group of automorphisms, as
  // node permutations (identity included), that acts freely on the nodes. The schedule must be
  // invariant under it (u sends to v in step t iff g(u) sends to g(v); v holds c iff g(v) holds
  // g(c)), so the encoding keeps the variables of one node per orbit. Empty: no restriction.
  std::vector<std::vector<std::uint32_t>> group;
  // Single-port allreduce only (SynthOptions::nodup, ::exchange).
  bool nodup = false;     // no received atom meets what the receiver held before
  bool exchange = false;  // a node's sender and receiver in one step are the same neighbour
  std::string name;       // file stem for the CNF and the proof
  std::string comment;    // the question, written into the CNF's header
};

struct CnfOptions {
  unsigned timeout_ms = 60000;
  std::uint64_t max_literals = 30'000'000;  // cap on the CNF's size, checked while building
  // Symmetry breaking (only where sound: see docs/smt.md): fixes node 0's step-1 message when the
  // automorphism search proves the graph arc-transitive (broadcast: the root's neighbours lie in
  // one orbit of the root's stabilizer).
  bool symmetry_breaking = true;
  std::string proof_dir;  // write <name>.cnf always and <name>.drat (text DRAT) for unsat
  // CaDiCaL's configuration: "plain" (no pre- and inprocessing) decides the star queries 2-3x
  // faster than "default" on these encodings (docs/smt.md).
  std::string configuration = "plain";
  // Cube and conquer (docs/smt.md): split the question into cubes by CaDiCaL's lookahead to this
  // depth, then decide the cubes one after the other in one incremental solver under the same
  // wall-clock limit. 0: one solve. Unsat then rests on every cube being refuted, and no DRAT
  // proof is written (an incremental run under assumptions does not end in the empty clause).
  unsigned cube_depth = 0;
  // Called after each cube is decided (cube mode only): "cube 3/16: unsat (12.5 s)".
  std::function<void(const std::string&)> progress;
};

struct CnfResult {
  smt::Answer answer = smt::Answer::Unknown;
  double seconds = 0;  // building the CNF and solving
  double solve_seconds = 0;
  std::string reason;  // unknown: why
  // sat: every named variable, "true"/"false". With a group, or for single-port allreduce, the
  // schedule's variables of every node under the names synth_trace.cpp reads (m<u>_<v>_<t>,
  // s<u>_<v>_<c>_<t>, f<v>_<j>), decoded from the encoding's own.
  std::map<std::string, std::string> values;
  std::uint64_t vars = 0, clauses = 0;
  bool symmetry_used = false;
  std::string symmetry_note;  // why symmetry breaking was or was not used
  std::string cnf_file, proof_file;
  // Cube mode: how many cubes lookahead produced and how many were refuted before the answer.
  std::uint64_t cubes = 0, cubes_refuted = 0;
};

CnfResult solve_synth_cnf(const SynthProblem& p, const CnfOptions& o);

// Arc-transitivity, shown by construction: for every arc (u, v) an automorphism of the graph that
// maps it to (0, nbr[0][0]) (with fixed_root: for every neighbour v of root, one that fixes root
// and maps v to nbr[root][0]). Each automorphism found is verified edge by edge. false when one is
// not found within the search budget (then no symmetry breaking is used).
bool arcs_in_one_orbit(const std::vector<std::vector<std::uint32_t>>& nbr, bool fixed_root,
                       std::uint32_t root, std::string* why = nullptr);

// A forward RUP checker for text DRAT proofs of DIMACS CNF files (an independent re-check of an
// unsat answer; drat-trim is not packaged in Debian). Deletions are ignored, which is sound (every
// lemma is checked against a superset of implied clauses). RAT lemmas are not accepted.
struct ProofCheck {
  bool ok = false;
  std::string message;
  std::uint64_t lemmas = 0;
};
ProofCheck check_drup_proof(const std::string& cnf_file, const std::string& proof_file);

}  // namespace collv::sat
