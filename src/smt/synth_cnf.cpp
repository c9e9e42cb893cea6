// The CNF encodings of synthesis, solved by CaDiCaL (see synth_cnf.hpp and docs/smt.md).
#include "smt/synth_cnf.hpp"

#include <algorithm>
#include <cadical.hpp>
#include <chrono>
#include <climits>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "util/read_file.hpp"

namespace collv::sat {

namespace {

using Clock = std::chrono::steady_clock;

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

  // z <-> a AND b (full Tseitin: z can be used in both polarities).
  int and_full(int a, int b) {
    if (a == kFalse || b == kFalse) return kFalse;
    if (a == kTrue) return b;
    if (b == kTrue) return a;
    int z = var();
    add({-z, a});
    add({-z, b});
    add({z, -a, -b});
    return z;
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

// The encodings; the same constraints as synth.cpp's Builder (variable names included).
class Encoder {
 public:
  // unpruned: every variable the BFS distances would fix to false is a variable of the CNF, and
  // its negation a lemma (lemmas()) that a DRAT proof derives by unit propagation before use.
  Encoder(const SynthProblem& p, Cnf& f, bool unpruned = false)
      : p_(p), f_(f), T_(p.steps), unpruned_(unpruned) {
    // Orbits of the invariance group (acting freely): rep_[x] = the least node of x's orbit and
    // g_[x] = the element that maps x to it. Without a group every node is its own orbit.
    rep_.resize(p_.p);
    g_.assign(p_.p, 0);
    for (std::uint32_t x = 0; x < p_.p; ++x) rep_[x] = x;
    // The action is free, so an element is known by where it sends any one node. inverse[i]: the
    // element j with j(i(0)) = 0, found through the node each element sends to 0.
    std::size_t n = p_.group.size();
    std::vector<std::size_t> sends_to_0(p_.p, SIZE_MAX), inverse(n);
    for (std::size_t j = 0; j < n; ++j)
      for (std::uint32_t z = 0; z < p_.p; ++z)
        if (p_.group[j][z] == 0) sends_to_0[z] = j;
    for (std::size_t i = 0; i < n; ++i) inverse[i] = sends_to_0[p_.group[i][0]];
    for (std::uint32_t x = 0; x < p_.p; ++x) {
      if (rep_[x] != x) continue;
      for (std::size_t i = 0; i < n; ++i) {
        std::uint32_t y = p_.group[i][x];
        if (y == x) continue;
        rep_[y] = x;
        g_[y] = inverse[i];
      }
    }
  }

  void build(bool symmetry, CnfResult& res) {
    if (p_.uniform && p_.kind != SynthKind::Broadcast) {
      res.symmetry_note = "uniform: the symmetric encoding follows node 0 only";
      build_symmetric();
      return;
    }
    // Message variables, one per directed link and step (a repeated neighbour shares it).
    mv_.assign(T_ + 1, {});
    for (unsigned t = 1; t <= T_; ++t) {
      mv_[t].resize(p_.p);
      for (std::uint32_t u = 0; u < p_.p; ++u) {
        auto& row = mv_[t][u];
        for (std::size_t i = 0; i < p_.nbr[u].size(); ++i) {
          std::uint32_t v = p_.nbr[u][i];
          std::size_t first = index_of(u, v);
          if (!is_rep(u))  // the representative's variable (rep_[u] < u: already made)
            row.push_back(M(rep_[u], to_rep(u, v), t));
          else
            row.push_back(first < i ? row[first] : f_.var(fmt::format("m{}_{}_{}", u, v, t)));
        }
      }
    }
    if (p_.single_port)
      for (unsigned t = 1; t <= T_; ++t)
        for (std::uint32_t u = 0; u < p_.p; ++u) {
          if (p_.nbr[u].size() < 2 || !is_rep(u)) continue;
          std::vector<int> out, in;
          for (std::uint32_t v : p_.nbr[u]) {
            out.push_back(M(u, v, t));
            in.push_back(M(v, u, t));
          }
          f_.at_most_one(out);
          f_.at_most_one(in);
        }
    if (p_.uniform) {  // broadcast: every node sends along link l_t in step t
      std::set<int> nums;
      for (auto& row : p_.link_number) nums.insert(row.begin(), row.end());
      for (unsigned t = 1; t <= T_; ++t) {
        std::map<int, int> l;
        std::vector<int> am;
        for (int k : nums) am.push_back(l[k] = f_.var(fmt::format("l{}_{}", t, k)));
        f_.at_most_one(am);
        for (std::uint32_t u = 0; u < p_.p; ++u)
          for (std::size_t i = 0; i < p_.nbr[u].size(); ++i) {
            int m = mv_[t][u][i], li = l[p_.link_number[u][i]];
            f_.add({-m, li});
            f_.add({m, -li});
          }
      }
    }
    if (symmetry && !p_.group.empty()) {
      // The arc argument maps a schedule by an automorphism, which need not keep it invariant
      // under the group: not combined.
      res.symmetry_note = "no symmetry breaking: the schedule is restricted to invariant ones";
    } else if (symmetry && !p_.uniform && T_ >= 1 && p_.p >= 2) {
      std::uint32_t a = p_.kind == SynthKind::Broadcast ? p_.root : 0;
      std::string why;
      if (!p_.nbr[a].empty() &&
          arcs_in_one_orbit(p_.nbr, p_.kind == SynthKind::Broadcast, p_.root, &why)) {
        f_.add({M(a, p_.nbr[a][0], 1)});
        res.symmetry_used = true;
        res.symmetry_note =
            fmt::format("symmetry breaking: {} sends to {} in step 1 ({})", a, p_.nbr[a][0], why);
      } else {
        res.symmetry_note = "no symmetry breaking: " + why;
      }
    }
    switch (p_.kind) {
      case SynthKind::Broadcast:
        gossip_like({p_.root});
        break;
      case SynthKind::Gossip: {
        std::vector<std::uint32_t> all(p_.p);
        for (std::uint32_t c = 0; c < p_.p; ++c) all[c] = c;
        gossip_like(all);
        break;
      }
      case SynthKind::Allreduce:
        if (p_.single_port)
          allreduce_single_port();
        else
          allreduce();
        break;
    }
  }

 private:
  bool is_rep(std::uint32_t x) const { return rep_[x] == x; }
  // The image of y under the element that maps x to its orbit's representative.
  std::uint32_t to_rep(std::uint32_t x, std::uint32_t y) const {
    return rep_[x] == x ? y : p_.group[g_[x]][y];
  }

  std::size_t index_of(std::uint32_t u, std::uint32_t v) const {
    const auto& n = p_.nbr[u];
    return static_cast<std::size_t>(std::find(n.begin(), n.end(), v) - n.begin());
  }
  int M(std::uint32_t u, std::uint32_t v, unsigned t) const { return mv_[t][u][index_of(u, v)]; }

  // has[v][c][t], constant where fixed (own chunk; farther than t hops from the chunk's origin).
  int H(std::uint32_t v, std::uint32_t c, unsigned t) {
    if (!is_rep(v)) return H(rep_[v], to_rep(v, c), t);
    if (v == c) return kTrue;
    if (t == 0 || (p_.dist[c][v] > t && !unpruned_)) return kFalse;
    int& h = hv_[(static_cast<std::size_t>(t) * p_.p + v) * nchunks_ + chunk_index_[c]];
    if (h == 0) {
      h = f_.var(fmt::format("h{}_{}_{}", v, c, t));
      if (p_.dist[c][v] > t) lemma(2 * t + 1, -h);
    }
    return h;
  }

  void gossip_like(const std::vector<std::uint32_t>& chunks) {
    // Each holding variable has at least two literals: refuse before allocating past the cap.
    nchunks_ = chunks.size();
    if (static_cast<std::uint64_t>(T_ + 1) * p_.p * nchunks_ * 2 > f_.cap()) throw CapExceeded{};
    chunk_index_.assign(p_.p, 0);
    for (std::size_t i = 0; i < chunks.size(); ++i) chunk_index_[chunks[i]] = i;
    hv_.assign(static_cast<std::size_t>(T_ + 1) * p_.p * nchunks_, 0);
    std::vector<int> cl;
    for (unsigned t = 1; t <= T_; ++t)
      for (std::uint32_t v = 0; v < p_.p; ++v)
        for (std::uint32_t c : chunks) {
          if (!is_rep(v)) continue;  // its constraints are the representative's, mapped
          int h = H(v, c, t);
          if (h == kTrue || h == kFalse) continue;
          int prev = H(v, c, t - 1);
          cl.assign({-h, prev});
          if (p_.single_port) {
            // At most one message arrives: v gained c only if a message arrived, and whoever
            // sent it held c. No auxiliary variables.
            for (std::uint32_t u : p_.nbr[v]) {
              int hu = H(u, c, t - 1), m = M(u, v, t);
              if (hu != kFalse) cl.push_back(m);
              if (hu != kTrue) f_.add({-h, prev, -m, hu});
            }
          } else {
            for (std::uint32_t u : p_.nbr[v]) cl.push_back(f_.and_pos(M(u, v, t), H(u, c, t - 1)));
          }
          f_.add(cl);
        }
    for (std::uint32_t v = 0; v < p_.p; ++v)
      if (is_rep(v))
        for (std::uint32_t c : chunks) f_.add({H(v, c, T_)});
  }

  // Selection over atoms: the union of the selected atoms' sets is target(c) for every c, and the
  // selected atoms are pairwise disjoint (at most one selected atom contains c). gate: when the
  // target is the constant true, the cover is required only under gate.
  void selection(const std::vector<int>& sel,
                 const std::function<int(std::size_t, std::uint32_t)>& atom,
                 const std::function<int(std::uint32_t)>& target, int gate) {
    std::vector<int> zs;
    for (std::uint32_t c = 0; c < p_.p; ++c) {
      int tc = target(c);
      if (tc == kFalse) {  // no selected atom may contain c
        for (std::size_t j = 0; j < sel.size(); ++j) {
          int a = atom(j, c);
          if (a != kFalse) f_.add({-sel[j], -a});
        }
        continue;
      }
      zs.clear();
      for (std::size_t j = 0; j < sel.size(); ++j) {
        int z = f_.and_full(sel[j], atom(j, c));
        if (z == kFalse) continue;
        zs.push_back(z);
        if (tc != kTrue) f_.add({-z, tc});
      }
      std::vector<int> cover{tc == kTrue ? -gate : -tc};
      cover.insert(cover.end(), zs.begin(), zs.end());
      f_.add(cover);
      f_.at_most_one(zs);
    }
  }

  struct Atom {
    unsigned tau;  // 0 = input
    std::uint32_t w;
  };
  std::vector<Atom> atoms(std::uint32_t u, unsigned t) const {
    std::vector<Atom> a{{0, u}};
    for (unsigned tau = 1; tau < t; ++tau)
      for (std::uint32_t w : p_.nbr[u]) a.push_back({tau, w});
    return a;
  }
  // s: u sends chunk c to v in step t.
  int S(std::uint32_t u, std::uint32_t v, std::uint32_t c, unsigned t) {
    if (t == 0 || (p_.dist[c][u] > t - 1 && !unpruned_)) return kFalse;
    auto key = std::make_tuple(u, v, c, t);
    auto it = sv_.find(key);
    if (it != sv_.end()) return it->second;
    int s = f_.var(fmt::format("s{}_{}_{}_{}", u, v, c, t));
    sv_.emplace(key, s);
    if (p_.dist[c][u] > t - 1) lemma(2 * t, -s);
    return s;
  }
  int A(std::uint32_t u, const Atom& a, std::uint32_t c) {
    if (a.tau == 0) return c == u ? kTrue : kFalse;
    return S(a.w, u, c, a.tau);
  }

  void allreduce() {
    for (unsigned t = 1; t <= T_; ++t)
      for (std::uint32_t u = 0; u < p_.p; ++u) {
        auto as = atoms(u, t);
        for (std::size_t i = 0; i < p_.nbr[u].size(); ++i) {
          std::uint32_t v = p_.nbr[u][i];
          if (index_of(u, v) < i) continue;  // a repeated neighbour: the same message
          int m = mv_[t][u][i];
          std::vector<int> sel;
          for (std::size_t j = 0; j < as.size(); ++j) {
            sel.push_back(f_.var(fmt::format("q{}_{}_{}_{}", u, v, t, j)));
            f_.add({-sel.back(), m});
          }
          for (std::uint32_t c = 0; c < p_.p; ++c) S(u, v, c, t);  // names in order
          selection(
              sel, [&](std::size_t j, std::uint32_t c) { return A(u, as[j], c); },
              [&](std::uint32_t c) { return S(u, v, c, t); }, kFalse);
        }
      }
    for (std::uint32_t v = 0; v < p_.p; ++v) {
      auto as = atoms(v, T_ + 1);
      std::vector<int> sel;
      for (std::size_t j = 0; j < as.size(); ++j)
        sel.push_back(f_.var(fmt::format("f{}_{}", v, j)));
      selection(
          sel, [&](std::size_t j, std::uint32_t c) { return A(v, as[j], c); },
          [](std::uint32_t) { return kTrue; }, kTrue);
    }
  }

  // Single-port allreduce. A node sends at most one message per step and receives at most one, so
  // the value it sends in step t is one set x<u>_<c>_<t> (whoever receives it) and what it received
  // in step t is one atom r<v>_<c>_<t> (empty when nothing arrived). The atoms of v before step t
  // are its input (j = 0) and r<v>_*_<tau> for tau = 1..t-1 (j = tau). Equivalent to allreduce()
  // under the single-port rule, with one send set per node instead of one per link and one atom
  // per step instead of one per link and step (star:5 T = 9: 7 M literals instead of about 10^9).
  std::size_t cell(unsigned t, std::uint32_t v, std::uint32_t c) const {
    return (static_cast<std::size_t>(t) * p_.p + v) * p_.p + c;
  }
  int X(std::uint32_t u, std::uint32_t c, unsigned t) {
    if (!is_rep(u)) return X(rep_[u], to_rep(u, c), t);
    if (t == 0 || (p_.dist[c][u] > t - 1 && !unpruned_)) return kFalse;
    int& x = xv_[cell(t, u, c)];
    if (x == 0) {
      x = f_.var(fmt::format("x{}_{}_{}", u, c, t));
      if (p_.dist[c][u] > t - 1) lemma(2 * t, -x);
    }
    return x;
  }
  int R(std::uint32_t v, std::uint32_t c, unsigned t) {
    if (!is_rep(v)) return R(rep_[v], to_rep(v, c), t);
    if (t == 0 || (p_.dist[c][v] > t && !unpruned_)) return kFalse;
    int& r = rv_[cell(t, v, c)];
    if (r == 0) {
      r = f_.var(fmt::format("r{}_{}_{}", v, c, t));
      if (p_.dist[c][v] > t) lemma(2 * t + 1, -r);
    }
    return r;
  }
  int atom_sp(std::uint32_t v, unsigned j, std::uint32_t c) {
    if (j == 0) return c == v ? kTrue : kFalse;
    return R(v, c, j);
  }

  void allreduce_single_port() {
    // x and r of every node, step and contribution; each has at least two literals.
    if (static_cast<std::uint64_t>(T_ + 1) * p_.p * p_.p * 2 > f_.cap()) throw CapExceeded{};
    xv_.assign(static_cast<std::size_t>(T_ + 1) * p_.p * p_.p, 0);
    rv_ = xv_;
    std::vector<int> any;
    for (unsigned t = 1; t <= T_; ++t)
      for (std::uint32_t v = 0; v < p_.p; ++v) {
        if (!is_rep(v)) continue;
        for (std::uint32_t c = 0; c < p_.p; ++c) {
          // r <-> OR_u (m(u,v,t) AND x(u,c,t)); at most one m(u,v,t) holds, so no auxiliaries.
          int r = R(v, c, t);
          any.assign({-r});
          for (std::uint32_t u : p_.nbr[v]) {
            int m = M(u, v, t), x = X(u, c, t);
            if (x != kFalse) any.push_back(m);
            f_.add({-r, -m, x});
            f_.add({r, -m, -x});
          }
          f_.add(any);
          // --nodup: what arrives holds no contribution v held before (its input, or an atom
          // received in an earlier step).
          if (p_.nodup) {
            if (c == v) f_.add({-r});
            for (unsigned tau = 1; tau < t; ++tau) f_.add({-r, -R(v, c, tau)});
          }
        }
        // --exchange: v sends to u and receives from w in step t only if u = w.
        if (p_.exchange)
          for (std::uint32_t u : p_.nbr[v])
            for (std::uint32_t w : p_.nbr[v])
              if (u != w) f_.add({-M(v, u, t), -M(w, v, t)});
        std::vector<int> sel;
        for (unsigned j = 0; j < t; ++j) sel.push_back(f_.var(fmt::format("y{}_{}_{}", v, t, j)));
        selection(
            sel, [&](std::size_t j, std::uint32_t c) { return atom_sp(v, j, c); },
            [&](std::uint32_t c) { return X(v, c, t); }, kFalse);
      }
    fsel_.assign(p_.p, {});
    for (std::uint32_t v = 0; v < p_.p; ++v) {
      if (!is_rep(v)) continue;
      for (unsigned j = 0; j <= T_; ++j) fsel_[v].push_back(f_.var(fmt::format("g{}_{}", v, j)));
      selection(
          fsel_[v], [&](std::size_t j, std::uint32_t c) { return atom_sp(v, j, c); },
          [](std::uint32_t) { return kTrue; }, kTrue);
    }
  }

 public:
  // The pruning lemmas (unit clauses), in the order a proof derives them: what is sent in step t
  // (rank 2t) follows from what was held before it, what is held after step t (2t+1) from what
  // was sent in it.
  std::vector<int> lemmas() const {
    auto l = lemmas_;
    std::stable_sort(l.begin(), l.end(), [](auto a, auto b) { return a.first < b.first; });
    std::vector<int> out;
    for (auto [rank, lit] : l) out.push_back(lit);
    return out;
  }
  // Whether the model is read through decode() rather than by the variables' own names.
  bool decodes() const {
    return !p_.uniform &&
           (!p_.group.empty() || (p_.kind == SynthKind::Allreduce && p_.single_port));
  }
  // The schedule's variables of every node, under the names synth.cpp reads: m<u>_<v>_<t> and, for
  // allreduce, s<u>_<v>_<c>_<t> (what u sends to v) and f<v>_<j> (j = 0 the input, j = 1 +
  // (tau-1)*deg(v) + i the value received in step tau from v's i-th neighbour).
  std::map<std::string, std::string> decode(const std::function<bool(int)>& val) {
    auto truth = [&](int lit) {
      if (lit == kTrue) return true;
      if (lit == kFalse) return false;
      return val(lit);
    };
    auto name = [](bool b) { return std::string(b ? "true" : "false"); };
    std::map<std::string, std::string> out;
    bool ar = p_.kind == SynthKind::Allreduce;
    for (unsigned t = 1; t <= T_; ++t)
      for (std::uint32_t u = 0; u < p_.p; ++u)
        for (std::uint32_t v : p_.nbr[u]) {
          bool m = truth(M(u, v, t));
          out[fmt::format("m{}_{}_{}", u, v, t)] = name(m);
          if (ar && m)
            for (std::uint32_t c = 0; c < p_.p; ++c)
              out[fmt::format("s{}_{}_{}_{}", u, v, c, t)] = name(truth(X(u, c, t)));
        }
    if (ar)
      for (std::uint32_t v = 0; v < p_.p; ++v) {
        const auto& f = fsel_[rep_[v]];
        out[fmt::format("f{}_0", v)] = name(truth(f[0]));
        std::size_t j = 0;
        for (unsigned tau = 1; tau <= T_; ++tau)
          for (std::uint32_t w : p_.nbr[v])
            out[fmt::format("f{}_{}", v, ++j)] = name(truth(f[tau]) && truth(M(w, v, tau)));
      }
    return out;
  }

 private:
  // Uniform schedules on a Cayley graph, seen from node 0 (synth.cpp's build_symmetric).
  void build_symmetric() {
    std::size_t L = p_.links.size();
    std::vector<std::vector<int>> l(T_ + 1, std::vector<int>(L));
    for (unsigned t = 1; t <= T_; ++t) {
      for (std::size_t k = 0; k < L; ++k) l[t][k] = f_.var(fmt::format("l{}_{}", t, p_.links[k]));
      f_.at_most_one(l[t]);
    }
    if (p_.kind == SynthKind::Gossip) {
      std::vector<std::vector<int>> K(T_ + 1, std::vector<int>(p_.p, kFalse));
      K[0][0] = kTrue;
      for (unsigned t = 1; t <= T_; ++t) {
        K[t][0] = kTrue;
        for (std::uint32_t g = 1; g < p_.p; ++g) K[t][g] = f_.var(fmt::format("k{}_{}", t, g));
        for (std::uint32_t g = 1; g < p_.p; ++g) {
          std::vector<int> cl{-K[t][g], K[t - 1][g]};
          for (std::size_t k = 0; k < L; ++k)
            cl.push_back(f_.and_pos(l[t][k], K[t - 1][p_.lmul[k][g]]));
          f_.add(cl);
        }
      }
      for (std::uint32_t g = 1; g < p_.p; ++g) f_.add({K[T_][g]});
      return;
    }
    // allreduce: atoms of e before step t: j = 0 its input {e}, j = 1..t-1 received R_j.
    std::vector<std::vector<int>> R(T_ + 1, std::vector<int>(p_.p, kFalse));
    for (std::uint32_t g = 0; g < p_.p; ++g) R[0][g] = g == 0 ? kTrue : kFalse;
    for (unsigned t = 1; t <= T_; ++t) {
      std::vector<int> sel;
      for (unsigned j = 0; j < t; ++j) sel.push_back(f_.var(fmt::format("y{}_{}", t, j)));
      std::vector<int> Mt(p_.p);
      for (std::uint32_t g = 0; g < p_.p; ++g) Mt[g] = f_.var(fmt::format("M{}_{}", t, g));
      selection(
          sel, [&](std::size_t j, std::uint32_t g) { return R[j][g]; },
          [&](std::uint32_t g) { return Mt[g]; }, kFalse);
      for (std::uint32_t g = 0; g < p_.p; ++g) {
        int r = R[t][g] = f_.var(fmt::format("r{}_{}", t, g));
        std::vector<int> cl{-r};  // r <-> OR_k (l_k AND M(gen_k g))
        for (std::size_t k = 0; k < L; ++k) {
          int z = f_.and_full(l[t][k], Mt[p_.lmul[k][g]]);
          cl.push_back(z);
          f_.add({-z, r});
        }
        f_.add(cl);
      }
    }
    std::vector<int> fsel;
    for (unsigned j = 0; j <= T_; ++j) fsel.push_back(f_.var(fmt::format("f{}", j)));
    selection(
        fsel, [&](std::size_t j, std::uint32_t g) { return R[j][g]; },
        [](std::uint32_t) { return kTrue; }, kTrue);
  }

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

struct Deadline : CaDiCaL::Terminator {
  Clock::time_point end;
  bool terminate() override { return Clock::now() >= end; }
};

void write_dimacs(const std::string& path, const Cnf& f, const SynthProblem& p) {
  std::ofstream out(path, std::ios::binary);
  if (!out) throw std::runtime_error("cannot write " + path);
  std::string s;
  s += "c collv synth, CNF for CaDiCaL (docs/smt.md, the SAT backend)\n";
  std::istringstream cm(p.comment);
  for (std::string line; std::getline(cm, line);) s += "c " + line + "\n";
  s += "c re-check: cadical FILE.cnf (exit 20 = unsat); drat-trim FILE.cnf FILE.drat\n";
  const auto& names = f.names();
  for (std::size_t v = 1; v < names.size(); ++v)
    if (!names[v].empty()) s += fmt::format("c var {} {}\n", v, names[v]);
  s += fmt::format("p cnf {} {}\n", f.vars(), f.clauses());
  out << s;
  s.clear();
  for (int lit : f.buffer()) {
    fmt::format_to(std::back_inserter(s), "{}", lit);
    s += lit == 0 ? '\n' : ' ';
    if (s.size() > (1u << 20)) {
      out << s;
      s.clear();
    }
  }
  out << s;
  if (!out) throw std::runtime_error("cannot write " + path);
}

// Cube and conquer in one solver: lookahead cubes, then the cubes under assumptions (clauses
// learned on one cube help the next), in passes: every open cube gets a time slice (10 s, then
// four times more each pass) so that one hard cube does not hide how the others fare. 10 sat (the
// model is the solver's), 20 every cube refuted (or lookahead refuted the formula), 0 the time
// limit came first.
int solve_by_cubes(CaDiCaL::Solver& s, const CnfOptions& o, CnfResult& res, Deadline& d,
                   const std::string& icnf_file) {
  auto t0 = Clock::now();
  const auto end = d.end;
  auto cw = s.generate_cubes(static_cast<int>(o.cube_depth));
  if (cw.status == 20) return 20;
  if (cw.status == 10) return s.solve();  // lookahead found a model; solve() makes it the state
  res.cubes = cw.cubes.size();
  if (!icnf_file.empty()) {
    // The cubes as an incremental CNF's "a" lines, to append to the written CNF (cadical decides
    // such a file cube by cube), and to re-check the split: the CNF with every cube negated
    // must be unsat, each cube added as units must be unsat for an unsat answer.
    std::ofstream out(icnf_file);
    for (const auto& c : cw.cubes) {
      out << 'a';
      for (int lit : c) out << ' ' << lit;
      out << " 0\n";
    }
    if (!out) throw std::runtime_error("cannot write " + icnf_file);
  }
  auto secs = [](Clock::time_point a) {
    return std::chrono::duration<double>(Clock::now() - a).count();
  };
  if (o.progress)
    o.progress(fmt::format("lookahead: {} cubes of depth up to {} ({:.1f} s)", cw.cubes.size(),
                           o.cube_depth, secs(t0)));
  if (cw.cubes.empty()) return s.solve();
  std::vector<std::size_t> open(cw.cubes.size());
  for (std::size_t i = 0; i < open.size(); ++i) open[i] = i;
  auto slice = std::chrono::milliseconds(10'000);
  for (unsigned pass = 1; !open.empty();
       ++pass, slice = std::min(slice * 4, std::chrono::milliseconds(1'000'000'000))) {
    std::vector<std::size_t> still;
    for (std::size_t i : open) {
      if (Clock::now() >= end) {
        still.push_back(i);
        continue;
      }
      auto tc = Clock::now();
      d.end = std::min(end, tc + slice);
      for (int lit : cw.cubes[i]) s.assume(lit);
      int r = s.solve();
      d.end = end;
      if (o.progress)
        o.progress(fmt::format("cube {}/{}: {} ({:.1f} s, pass {})", i + 1, cw.cubes.size(),
                               r == 10   ? "sat"
                               : r == 20 ? "unsat"
                                         : "open",
                               secs(tc), pass));
      if (r == 10) return 10;
      if (r == 20)
        ++res.cubes_refuted;
      else
        still.push_back(i);
    }
    open.swap(still);
    if (!open.empty() && Clock::now() >= end) {
      res.reason = fmt::format("timeout ({} ms) after refuting {} of {} cubes", o.timeout_ms,
                               res.cubes_refuted, res.cubes);
      return 0;
    }
  }
  return 20;
}

}  // namespace

CnfResult solve_synth_cnf(const SynthProblem& p, const CnfOptions& o) {
  CnfResult res;
  auto t0 = Clock::now();
  Cnf f(o.max_literals);
  // A DRAT proof rests on the written CNF alone: the CNF keeps the variables collv's distances
  // would prune, the solver gets the pruning as unit clauses, and the proof derives each of them
  // first (docs/smt.md, "Proofs of unsat answers").
  const bool drat = !o.proof_dir.empty() && o.cube_depth == 0;
  Encoder e(p, f, drat);
  try {
    e.build(o.symmetry_breaking, res);
  } catch (const CapExceeded&) {
    res.answer = smt::Answer::Unknown;
    res.reason = fmt::format("refused: the CNF exceeds {} literals (the size cap, --max-terms)",
                             o.max_literals);
    res.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    return res;
  }
  res.vars = static_cast<std::uint64_t>(f.vars());
  res.clauses = f.clauses();
  std::string proof;
  if (!o.proof_dir.empty()) {
    make_dir_checked(o.proof_dir, "--proof");
    res.cnf_file = (std::filesystem::path(o.proof_dir) / (p.name + ".cnf")).string();
    if (o.cube_depth == 0)
      proof = (std::filesystem::path(o.proof_dir) / (p.name + ".drat")).string();
    write_dimacs(res.cnf_file, f, p);
  }
  {
    CaDiCaL::Solver s;
    s.set("quiet", 1);
    if (!o.configuration.empty() && !s.configure(o.configuration.c_str()))
      throw std::runtime_error("CaDiCaL: unknown configuration " + o.configuration);
    if (!proof.empty()) {
      s.set("binary", 0);
      if (!s.trace_proof((proof + ".solver").c_str()))
        throw std::runtime_error("cannot write " + proof);
    }
    s.reserve(f.vars());
    for (int lit : f.buffer()) s.add(lit);
    for (int lit : e.lemmas()) {
      s.add(lit);
      s.add(0);
    }
    Deadline d;
    d.end = Clock::now() + std::chrono::milliseconds(o.timeout_ms);
    s.connect_terminator(&d);
    auto ts = Clock::now();
    int r = o.cube_depth == 0
                ? s.solve()
                : solve_by_cubes(s, o, res, d,
                                 res.cnf_file.empty() ? std::string() : res.cnf_file + ".cubes");
    res.solve_seconds = std::chrono::duration<double>(Clock::now() - ts).count();
    s.disconnect_terminator();
    if (r == 10) {
      res.answer = smt::Answer::Sat;
      if (e.decodes()) {
        res.values = e.decode([&](int lit) { return s.val(lit) > 0; });
      } else {
        const auto& names = f.names();
        for (std::size_t v = 1; v < names.size(); ++v)
          if (!names[v].empty())
            res.values[names[v]] = s.val(static_cast<int>(v)) > 0 ? "true" : "false";
      }
    } else if (r == 20) {
      res.answer = smt::Answer::Unsat;
    } else {
      res.answer = smt::Answer::Unknown;
      if (res.reason.empty()) res.reason = fmt::format("timeout ({} ms)", o.timeout_ms);
    }
    if (!proof.empty()) s.close_proof_trace();
  }
  if (!proof.empty()) {
    if (res.answer == smt::Answer::Unsat) {
      // The pruning lemmas, then CaDiCaL's proof of the CNF with them.
      std::ofstream out(proof, std::ios::binary);
      std::string head;
      for (int lit : e.lemmas()) head += fmt::format("{} 0\n", lit);
      out << head;
      std::ifstream in(proof + ".solver", std::ios::binary);
      if (in.peek() != std::char_traits<char>::eof()) out << in.rdbuf();
      if (!out) throw std::runtime_error("cannot write " + proof);
      res.proof_file = proof;
    }
    std::filesystem::remove(proof + ".solver");
  }
  res.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return res;
}

// ---- automorphisms ----------------------------------------------------------------------------

namespace {

std::vector<std::uint32_t> bfs(const std::vector<std::vector<std::uint32_t>>& nbr,
                               std::uint32_t s) {
  std::vector<std::uint32_t> d(nbr.size(), UINT32_MAX);
  std::deque<std::uint32_t> q{s};
  d[s] = 0;
  while (!q.empty()) {
    auto a = q.front();
    q.pop_front();
    for (auto b : nbr[a])
      if (d[b] == UINT32_MAX) {
        d[b] = d[a] + 1;
        q.push_back(b);
      }
  }
  return d;
}

bool adjacent(const std::vector<std::vector<std::uint32_t>>& nbr, std::uint32_t a,
              std::uint32_t b) {
  return std::find(nbr[a].begin(), nbr[a].end(), b) != nbr[a].end();
}

// An automorphism sigma with sigma(u) = a, sigma(v) = b, by backtracking in BFS order from u with
// distance pruning; empty if none found within budget.
std::vector<std::uint32_t> find_automorphism(const std::vector<std::vector<std::uint32_t>>& nbr,
                                             std::uint32_t u, std::uint32_t v, std::uint32_t a,
                                             std::uint32_t b, std::uint64_t& budget) {
  std::size_t p = nbr.size();
  auto du = bfs(nbr, u), dv = bfs(nbr, v), da = bfs(nbr, a), db = bfs(nbr, b);
  std::vector<std::uint32_t> order{u, v}, parent(p, UINT32_MAX);
  std::vector<char> seen(p, 0);
  seen[u] = seen[v] = 1;
  for (std::size_t i = 0; i < order.size(); ++i)
    for (auto w : nbr[order[i]])
      if (!seen[w]) {
        seen[w] = 1;
        parent[w] = order[i];
        order.push_back(w);
      }
  if (order.size() != p) return {};
  std::vector<std::uint32_t> sig(p, UINT32_MAX), inv(p, UINT32_MAX);
  auto fits = [&](std::uint32_t w, std::uint32_t x) {
    if (inv[x] != UINT32_MAX || du[w] != da[x] || dv[w] != db[x]) return false;
    if (nbr[w].size() != nbr[x].size()) return false;
    std::size_t mapped_w = 0, mapped_x = 0;
    for (auto y : nbr[w])
      if (sig[y] != UINT32_MAX) {
        ++mapped_w;
        if (!adjacent(nbr, x, sig[y])) return false;
      }
    for (auto y : nbr[x])
      if (inv[y] != UINT32_MAX) ++mapped_x;
    return mapped_w == mapped_x;
  };
  if (!fits(u, a)) return {};
  sig[u] = a;
  inv[a] = u;
  if (!fits(v, b)) return {};
  sig[v] = b;
  inv[b] = v;
  std::function<bool(std::size_t)> rec = [&](std::size_t i) -> bool {
    if (i == p) return true;
    if (budget == 0) return false;
    --budget;
    std::uint32_t w = order[i];
    for (auto x : nbr[sig[parent[w]]]) {
      if (!fits(w, x)) continue;
      sig[w] = x;
      inv[x] = w;
      if (rec(i + 1)) return true;
      sig[w] = inv[x] = UINT32_MAX;
      if (budget == 0) return false;
    }
    return false;
  };
  if (!rec(2)) return {};
  // Verify: a bijection that maps every edge to an edge.
  for (std::size_t x = 0; x < p; ++x)
    if (sig[x] == UINT32_MAX || inv[sig[x]] != x) return {};
  for (std::size_t x = 0; x < p; ++x)
    for (auto y : nbr[x])
      if (!adjacent(nbr, sig[x], sig[y])) return {};
  return sig;
}

}  // namespace

bool arcs_in_one_orbit(const std::vector<std::vector<std::uint32_t>>& nbr, bool fixed_root,
                       std::uint32_t root, std::string* why) {
  auto say = [&](std::string s) {
    if (why) *why = std::move(s);
    return false;
  };
  std::size_t p = nbr.size();
  std::uint32_t a = fixed_root ? root : 0;
  if (p < 2 || a >= p || nbr[a].empty()) return say("too small");
  std::uint32_t b = nbr[a][0];
  std::uint64_t budget = 50'000'000;
  std::size_t found = 0;
  for (std::uint32_t u = 0; u < p; ++u) {
    if (fixed_root && u != root) continue;
    for (std::uint32_t v : nbr[u]) {
      if (u == a && v == b) continue;
      auto sig = find_automorphism(nbr, u, v, a, b, budget);
      if (sig.empty())
        return say(
            fmt::format("no automorphism found mapping the arc {}->{} to {}->{}", u, v, a, b));
      ++found;
    }
  }
  if (why)
    *why =
        fixed_root
            ? fmt::format("{} automorphisms fixing the root map each of its arcs to {}->{}", found,
                          a, b)
            : fmt::format("{} automorphisms map every arc to {}->{}: arc-transitive", found, a, b);
  return true;
}

// ---- a forward RUP checker ----------------------------------------------------------------------

namespace {

class Rup {
 public:
  void ensure(int var) {
    if (static_cast<std::size_t>(var) >= val_.size()) {
      val_.resize(static_cast<std::size_t>(var) + 1, 0);
      watches_.resize(2 * (static_cast<std::size_t>(var) + 1));
    }
  }
  // Adds a clause at the top level (after a successful check); returns false on a conflict.
  bool add(std::vector<int> c) {
    if (conflict_) return false;
    for (int l : c) ensure(std::abs(l));
    // Non-false literals first.
    std::stable_partition(c.begin(), c.end(), [&](int l) { return value(l) >= 0; });
    if (c.empty() || value(c[0]) < 0) return !(conflict_ = true);
    if (c.size() == 1 || value(c[1]) < 0) {
      if (value(c[0]) == 0) {
        assign(c[0]);
        if (!propagate()) return !(conflict_ = true);
      }
      if (c.size() == 1) return true;
    }
    std::size_t id = clauses_.size();
    clauses_.push_back(std::move(c));
    watches_[idx(-clauses_[id][0])].push_back(id);
    watches_[idx(-clauses_[id][1])].push_back(id);
    return true;
  }
  // Is c a reverse-unit-propagation consequence of the clauses added so far?
  bool rup(const std::vector<int>& c) {
    if (conflict_) return true;
    for (int l : c) ensure(std::abs(l));
    std::size_t mark = trail_.size();
    bool ok = false;
    for (int l : c) {
      if (value(l) > 0) {
        ok = true;
        break;
      }
      if (value(l) == 0) assign(-l);
    }
    if (!ok) ok = !propagate();
    while (trail_.size() > mark) {
      val_[static_cast<std::size_t>(std::abs(trail_.back()))] = 0;
      trail_.pop_back();
    }
    qhead_ = mark;
    return ok;
  }
  bool conflict() const { return conflict_; }

 private:
  static std::size_t idx(int lit) {
    return 2 * static_cast<std::size_t>(std::abs(lit)) + (lit < 0 ? 1 : 0);
  }
  int value(int lit) const {
    int v = val_[static_cast<std::size_t>(std::abs(lit))];
    return lit < 0 ? -v : v;
  }
  void assign(int lit) {
    val_[static_cast<std::size_t>(std::abs(lit))] = lit > 0 ? 1 : -1;
    trail_.push_back(lit);
  }
  // Unit propagation; false on a conflict. watches_[idx(x)]: clauses watching -x, visited when x
  // becomes true.
  bool propagate() {
    while (qhead_ < trail_.size()) {
      int x = trail_[qhead_++];
      auto& ws = watches_[idx(x)];
      std::size_t keep = 0;
      bool confl = false;
      for (std::size_t i = 0; i < ws.size(); ++i) {
        std::size_t id = ws[i];
        if (confl) {
          ws[keep++] = id;
          continue;
        }
        auto& c = clauses_[id];
        if (c[0] == -x) std::swap(c[0], c[1]);
        if (value(c[0]) > 0) {
          ws[keep++] = id;
          continue;
        }
        bool moved = false;
        for (std::size_t k = 2; k < c.size(); ++k)
          if (value(c[k]) >= 0) {
            std::swap(c[1], c[k]);
            watches_[idx(-c[1])].push_back(id);
            moved = true;
            break;
          }
        if (moved) continue;
        ws[keep++] = id;
        if (value(c[0]) < 0)
          confl = true;
        else
          assign(c[0]);
      }
      ws.resize(keep);
      if (confl) return false;
    }
    return true;
  }

  std::vector<std::vector<int>> clauses_;
  std::vector<std::vector<std::size_t>> watches_;
  std::vector<int> val_{0};
  std::vector<int> trail_;
  std::size_t qhead_ = 0;
  bool conflict_ = false;
};

}  // namespace

ProofCheck check_drup_proof(const std::string& cnf_file, const std::string& proof_file) {
  ProofCheck pc;
  std::ifstream cnf(cnf_file);
  if (!cnf) {
    pc.message = "cannot read " + cnf_file;
    return pc;
  }
  Rup rup;
  std::string line;
  std::vector<int> c;
  bool header = false;
  while (std::getline(cnf, line)) {
    if (line.empty() || line[0] == 'c') continue;
    if (line[0] == 'p') {
      header = true;
      continue;
    }
    std::istringstream in(line);
    for (int lit; in >> lit;) {
      if (lit != 0) {
        c.push_back(lit);
        continue;
      }
      rup.add(c);
      c.clear();
    }
  }
  if (!header || !c.empty()) {
    pc.message = cnf_file + ": not a DIMACS CNF";
    return pc;
  }
  std::ifstream pf(proof_file);
  if (!pf) {
    pc.message = "cannot read " + proof_file;
    return pc;
  }
  while (std::getline(pf, line)) {
    if (line.empty() || line[0] == 'c') continue;
    bool del = line[0] == 'd';
    std::istringstream in(del ? line.substr(1) : line);
    for (int lit; in >> lit;) {
      if (lit != 0) {
        c.push_back(lit);
        continue;
      }
      if (!del) {
        ++pc.lemmas;
        if (!rup.rup(c)) {
          std::string s;
          for (int l : c) s += fmt::format("{} ", l);
          pc.message = fmt::format("{}: lemma {} ({}0) is not implied by unit propagation",
                                   proof_file, pc.lemmas, s);
          return pc;
        }
        rup.add(c);
      }
      c.clear();
    }
    if (in.fail() && !in.eof()) {
      pc.message = proof_file + ": not a text DRAT proof (binary?)";
      return pc;
    }
  }
  if (!rup.conflict()) {
    pc.message = proof_file + ": the proof does not derive the empty clause";
    return pc;
  }
  pc.ok = true;
  pc.message = fmt::format("{} lemmas checked, the empty clause is derived", pc.lemmas);
  return pc;
}

}  // namespace collv::sat
