// Schedule synthesis's parts (internal to src/smt; synth.hpp is the interface): the collective's
// kind, the processor graph and its symmetries (synth_graph.cpp), the Z3 question (Builder and
// its certificate, synth_query.cpp), and the schedule of a sat model as a Trace
// (synth_trace.cpp). synth.cpp asks the questions (Z3, or CaDiCaL through synth_cnf.hpp).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "exec/trace.hpp"
#include "smt/solver.hpp"
#include "smt/synth.hpp"
#include "topology/topology.hpp"

namespace collv::synth_detail {

enum class Kind { Broadcast, Gossip, Allreduce };

Kind kind_of(const std::string& c);
const char* kind_name(Kind k);

// The processor graph: neighbours among processors, and hop distances.
struct Graph {
  std::uint32_t p = 0;
  std::vector<std::vector<NodeId>> nbr;
  std::vector<std::vector<std::uint32_t>> dist;  // dist[a][b]
};

Graph graph_of(const Topology& t);

// The group structure of a Cayley graph with involutive generators (star: transpositions (1 k),
// hypercube: unit vectors), for uniform (symmetric) schedules. Node 0 is the identity.
struct Cayley {
  std::string family;
  int n = 0;               // star n or hypercube d
  std::vector<int> links;  // link numbers (generators)
  // v*q: the node q "seen from" v (v composed with q); neighbor(v, k) = v * gen(k).
  NodeId compose(NodeId v, NodeId q) const {
    if (family == "hypercube") return v ^ q;
    auto pv = star_unrank(v, n), pq = star_unrank(q, n);
    std::vector<int> r(n);
    for (int i = 0; i < n; ++i) r[i] = pv[pq[i] - 1];
    return static_cast<NodeId>(star_rank(r));
  }
  // gen(k) * g (left multiplication by the generator; generators are involutions).
  NodeId lmul(int k, NodeId g) const {
    if (family == "hypercube") return g ^ (1u << k);
    auto pg = star_unrank(g, n);
    for (int& x : pg) x = x == 1 ? k : x == k ? 1 : x;
    return static_cast<NodeId>(star_rank(pg));
  }
};

std::optional<Cayley> cayley_of(const Topology& t);

// The group of automorphisms spanned by SynthOptions::invariant, as node permutations (identity
// first). Throws UsageError when the text does not parse, names a topology other than star or
// hypercube, or the group would need more than 2*10^7 entries; std::logic_error if a generator
// were not an automorphism or the group had fixed points (neither can happen for left
// multiplications).
std::vector<std::vector<std::uint32_t>> invariance_group(const std::string& text,
                                                         const Topology& topo, const Graph& g);

// The terms of the (pruned, general) Z3 query, counted from the graph's size alone (saturating).
std::uint64_t estimate_terms(std::uint64_t p, std::uint64_t edges, std::uint64_t deg, Kind k,
                             unsigned T);

// The names of the link and message variables.
std::string lvar(unsigned t, int k);
std::string mvar(NodeId u, NodeId v, unsigned t);

// The schedule of a sat model as a Trace.
Trace make_trace(const Topology& topo, const Graph& g, Kind k, unsigned T, NodeId root,
                 const std::map<std::string, std::string>& val);
// The schedule of a sat symmetric model as a Trace: node v does what node 0 does, seen from v.
Trace make_trace_symmetric(const Topology& topo, const Graph& g, const Cayley& c, Kind k,
                           unsigned T, const std::map<std::string, std::string>& val);

struct Attempt {
  SynthAttempt info;
  std::optional<Trace> trace;
};

// The certificate of a Z3 synthesis query: the query without collv's distance pruning, with the
// pruning stated as a lemma that the file checks first; "" if refused by the size cap.
std::string certificate(const SynthOptions& o, const Topology& topo, const Graph& g, Kind k,
                        unsigned T, smt::Answer expected);
// One question to Z3: is there a T-step schedule? With --emit-smt2, its SMT-LIB2 file.
Attempt attempt_z3(const SynthOptions& o, const Topology& topo, const Graph& g, Kind k, unsigned T);

}  // namespace collv::synth_detail
