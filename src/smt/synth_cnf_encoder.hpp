// The CNF encodings of synthesis (internal to src/smt; synth_cnf.hpp is the interface): a CNF
// being built (Cnf), and the Encoder, which states the synthesis questions as clauses
// (synth_cnf_encoder.cpp). synth_cnf.cpp hands the CNF to CaDiCaL.
#pragma once

#include <algorithm>
#include <climits>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "smt/synth_cnf.hpp"

namespace collv::sat::cnf_detail {

// Literals: DIMACS integers; two constants that never reach the solver.
constexpr int kTrue = INT_MAX;
constexpr int kFalse = -INT_MAX;

struct CapExceeded {};

// A CNF being built: clauses in a flat 0-terminated buffer, names of the named variables.
class Cnf {
 public:
  explicit Cnf(std::uint64_t cap) : cap_(cap) { names_.emplace_back(); }

  int var(std::string name = {}) {
    names_.push_back(std::move(name));
    return static_cast<int>(names_.size() - 1);
  }
  int vars() const { return static_cast<int>(names_.size() - 1); }
  const std::vector<std::string>& names() const { return names_; }
  const std::vector<int>& buffer() const { return buf_; }
  std::uint64_t clauses() const { return clauses_; }
  std::uint64_t cap() const { return cap_; }

  // Adds a clause, simplified: false literals dropped, satisfied clauses skipped.
  void add(std::initializer_list<int> c) { add(c.begin(), c.end()); }
  void add(const std::vector<int>& c) { add(c.data(), c.data() + c.size()); }
  void add(const int* b, const int* e) {
    for (const int* p = b; p != e; ++p)
      if (*p == kTrue) return;
    for (const int* p = b; p != e; ++p)
      if (*p != kFalse) buf_.push_back(*p);
    buf_.push_back(0);
    ++clauses_;
    if (buf_.size() > cap_) throw CapExceeded{};
  }

  // z -> a AND b (Plaisted-Greenbaum: z only occurs positively in the clauses that use it).
  int and_pos(int a, int b) {
    if (a == kFalse || b == kFalse) return kFalse;
    if (a == kTrue) return b;
    if (b == kTrue) return a;
    int z = var();
    add({-z, a});
    add({-z, b});
    return z;
  }
  // z <-> a AND b (full Tseitin: z can be used in both polarities): and_pos's clauses, and
  // a AND b -> z when z is a new variable.
  int and_full(int a, int b) {
    const int z = and_pos(a, b);
    if (a != kFalse && b != kFalse && a != kTrue && b != kTrue) add({z, -a, -b});
    return z;
  }

  // At most one of lits is true. Pairwise (binary clauses, no new variables) for up to 5
  // literals; above that Sinz's sequential counter: aux s_i = "one of x_1..x_i is true",
  // 3n-4 clauses and n-1 variables instead of n(n-1)/2 clauses. Both are arc-consistent under
  // unit propagation.
  void at_most_one(std::vector<int> lits) {
    std::size_t trues = 0;
    std::vector<int> xs;
    for (int l : lits) {
      if (l == kFalse) continue;
      if (l == kTrue)
        ++trues;
      else
        xs.push_back(l);
    }
    if (trues > 1) {
      add({});
      return;
    }
    if (trues == 1) {
      for (int x : xs) add({-x});
      return;
    }
    std::size_t n = xs.size();
    if (n <= 1) return;
    if (n <= 5) {
      for (std::size_t i = 0; i < n; ++i)
        for (std::size_t j = i + 1; j < n; ++j) add({-xs[i], -xs[j]});
      return;
    }
    std::vector<int> s(n - 1);
    for (auto& v : s) v = var();
    add({-xs[0], s[0]});
    for (std::size_t i = 1; i + 1 < n; ++i) {
      add({-xs[i], s[i]});
      add({-s[i - 1], s[i]});
      add({-xs[i], -s[i - 1]});
    }
    add({-xs[n - 1], -s[n - 2]});
  }

 private:
  std::uint64_t cap_;
  std::vector<int> buf_;
  std::vector<std::string> names_;
  std::uint64_t clauses_ = 0;
};

// The encodings; the same constraints as synth_query.cpp's Builder (variable names included).
class Encoder {
 public:
  // unpruned: every variable the BFS distances would fix to false is a variable of the CNF, and
  // its negation a lemma (lemmas()) that a DRAT proof derives by unit propagation before use.
  Encoder(const SynthProblem& p, Cnf& f, bool unpruned = false);

  void build(bool symmetry, CnfResult& res);

 private:
  bool is_rep(std::uint32_t x) const { return rep_[x] == x; }
  // The image of y under the element that maps x to its orbit's representative.
  std::uint32_t to_rep(std::uint32_t x, std::uint32_t y) const;

  std::size_t index_of(std::uint32_t u, std::uint32_t v) const;
  int M(std::uint32_t u, std::uint32_t v, unsigned t) const { return mv_[t][u][index_of(u, v)]; }

  // has[v][c][t], constant where fixed (own chunk; farther than t hops from the chunk's origin).
  int H(std::uint32_t v, std::uint32_t c, unsigned t);

  void gossip_like(const std::vector<std::uint32_t>& chunks);

  // Selection over atoms: the union of the selected atoms' sets is target(c) for every c, and the
  // selected atoms are pairwise disjoint (at most one selected atom contains c). gate: when the
  // target is the constant true, the cover is required only under gate.
  void selection(const std::vector<int>& sel,
                 const std::function<int(std::size_t, std::uint32_t)>& atom,
                 const std::function<int(std::uint32_t)>& target, int gate);

  struct Atom {
    unsigned tau;  // 0 = input
    std::uint32_t w;
  };
  std::vector<Atom> atoms(std::uint32_t u, unsigned t) const;
  // s: u sends chunk c to v in step t.
  int S(std::uint32_t u, std::uint32_t v, std::uint32_t c, unsigned t);
  int A(std::uint32_t u, const Atom& a, std::uint32_t c);

  void allreduce();

  // Single-port allreduce. A node sends at most one message per step and receives at most one, so
  // the value it sends in step t is one set x<u>_<c>_<t> (whoever receives it) and what it received
  // in step t is one atom r<v>_<c>_<t> (empty when nothing arrived). The atoms of v before step t
  // are its input (j = 0) and r<v>_*_<tau> for tau = 1..t-1 (j = tau). Equivalent to allreduce()
  // under the single-port rule, with one send set per node instead of one per link and one atom
  // per step instead of one per link and step (star:5 T = 9: 7 M literals instead of about 10^9).
  std::size_t cell(unsigned t, std::uint32_t v, std::uint32_t c) const;
  int X(std::uint32_t u, std::uint32_t c, unsigned t);
  int R(std::uint32_t v, std::uint32_t c, unsigned t);
  int atom_sp(std::uint32_t v, unsigned j, std::uint32_t c);

  void allreduce_single_port();

 public:
  // The pruning lemmas (unit clauses), in the order a proof derives them: what is sent in step t
  // (rank 2t) follows from what was held before it, what is held after step t (2t+1) from what
  // was sent in it.
  std::vector<int> lemmas() const;
  // Whether the model is read through decode() rather than by the variables' own names.
  bool decodes() const;
  // The schedule's variables of every node, under the names synth_trace.cpp reads: m<u>_<v>_<t>
  // and, for allreduce, s<u>_<v>_<c>_<t> (what u sends to v) and f<v>_<j> (j = 0 the input, j = 1 +
  // (tau-1)*deg(v) + i the value received in step tau from v's i-th neighbour).
  std::map<std::string, std::string> decode(const std::function<bool(int)>& val);

 private:
  // Uniform schedules on a Cayley graph, seen from node 0 (synth_query.cpp's build_symmetric).
  void build_symmetric();

  void lemma(unsigned rank, int lit) { lemmas_.emplace_back(rank, lit); }

  const SynthProblem& p_;
  Cnf& f_;
  unsigned T_;
  bool unpruned_ = false;
  std::vector<std::pair<unsigned, int>> lemmas_;
  std::vector<std::vector<std::vector<int>>> mv_;  // [t][u][i]
  std::vector<int> hv_;
  std::size_t nchunks_ = 0;
  std::vector<std::size_t> chunk_index_;
  std::map<std::tuple<std::uint32_t, std::uint32_t, std::uint32_t, unsigned>, int> sv_;
  std::vector<std::uint32_t> rep_;  // orbit representative of each node
  std::vector<std::size_t> g_;      // the group element mapping a node to its representative
  std::vector<int> xv_, rv_;        // single-port allreduce: [cell(t, node, c)]
  std::vector<std::vector<int>> fsel_;
};

}  // namespace collv::sat::cnf_detail
