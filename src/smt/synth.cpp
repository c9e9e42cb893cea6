// Schedule synthesis (see synth.hpp and docs/smt.md).
#include "smt/synth.hpp"

#include <algorithm>
#include <charconv>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "check/checks.hpp"
#include "smt/synth_cnf.hpp"
#include "util/deadline.hpp"
#include "util/error.hpp"
#include "util/memory.hpp"
#include "util/read_file.hpp"
#include "util/text.hpp"

namespace collv {

namespace {

enum class Kind { Broadcast, Gossip, Allreduce };

Kind kind_of(const std::string& c) {
  if (c == "broadcast") return Kind::Broadcast;
  if (c == "allgather" || c == "gossip") return Kind::Gossip;
  if (c == "allreduce") return Kind::Allreduce;
  throw UsageError("synth: unknown collective '" + c +
                   "' (expected broadcast, allgather, gossip or allreduce)");
}

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::Broadcast:
      return "broadcast";
    case Kind::Gossip:
      return "allgather";
    case Kind::Allreduce:
      return "allreduce";
  }
  return "?";
}

// The processor graph: neighbours among processors, and hop distances.
struct Graph {
  std::uint32_t p = 0;
  std::vector<std::vector<NodeId>> nbr;
  std::vector<std::vector<std::uint32_t>> dist;  // dist[a][b]
};

Graph graph_of(const Topology& t) {
  if (t.num_nodes() != t.num_processors())
    throw UsageError("synth: " + t.spec() +
                     " has switch nodes; synthesis needs a network of processors");
  if (t.num_processors() > 4096)
    throw UsageError("synth: " + t.spec() + " is too large (at most 4096 processors)");
  Graph g;
  g.p = static_cast<std::uint32_t>(t.num_processors());
  g.nbr.resize(g.p);
  for (NodeId v = 0; v < g.p; ++v)
    for (const Link& l : t.links(v)) g.nbr[v].push_back(l.to);
  require_memory(sat_mul(sat_mul(g.p, g.p), 4), "the hop distances of " + t.spec());
  g.dist.assign(g.p, std::vector<std::uint32_t>(g.p, UINT32_MAX));
  for (NodeId s = 0; s < g.p; ++s) {
    check_deadline("synth: the hop distances of " + t.spec());
    std::deque<NodeId> q{s};
    g.dist[s][s] = 0;
    while (!q.empty()) {
      NodeId a = q.front();
      q.pop_front();
      for (NodeId b : g.nbr[a])
        if (g.dist[s][b] == UINT32_MAX) {
          g.dist[s][b] = g.dist[s][a] + 1;
          q.push_back(b);
        }
    }
  }
  return g;
}

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

std::optional<Cayley> cayley_of(const Topology& t) {
  Cayley c;
  c.family = t.family();
  if (c.family == "star") {
    c.n = static_cast<int>(t.params().at("n"));
    for (int k = 2; k <= c.n; ++k) c.links.push_back(k);
  } else if (c.family == "hypercube") {
    c.n = static_cast<int>(t.params().at("d"));
    for (int k = 0; k < c.n; ++k) c.links.push_back(k);
  } else {
    return std::nullopt;
  }
  return c;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out{{}};
  for (char c : s) {
    if (c == sep)
      out.emplace_back();
    else
      out.back() += c;
  }
  return out;
}

std::string trim(const std::string& s) {
  auto b = s.find_first_not_of(' '), e = s.find_last_not_of(' ');
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

// The group of automorphisms spanned by SynthOptions::invariant, as node permutations (identity
// first). Throws UsageError when the text does not parse, names a topology other than star or
// hypercube, or the group would need more than 2*10^7 entries; std::logic_error if a generator
// were not an automorphism or the group had fixed points (neither can happen for left
// multiplications).
std::vector<std::vector<std::uint32_t>> invariance_group(const std::string& text,
                                                         const Topology& topo, const Graph& g) {
  auto bad = [&](const std::string& why) {
    return UsageError(fmt::format("synth --invariant '{}': {}", printable(text), why));
  };
  std::vector<std::vector<std::uint32_t>> gens;
  const std::string family = topo.family();
  for (const std::string& part : split(text, ',')) {
    std::string gen = trim(part);
    if (gen.empty()) throw bad("an empty generator");
    std::vector<std::uint32_t> perm(g.p);
    if (family == "star") {
      int n = static_cast<int>(topo.params().at("n"));
      std::vector<int> h(n + 1);
      for (int i = 0; i <= n; ++i) h[i] = i;
      // cycles, applied right to left: (1 2)(2 3) sends 3 to 2 to 1
      std::vector<std::vector<int>> cycles;
      std::size_t i = 0;
      while (i < gen.size()) {
        if (gen[i] == ' ') {
          ++i;
          continue;
        }
        if (gen[i] != '(') throw bad("expected '(' in '" + printable(gen) + "'");
        std::size_t close = gen.find(')', i);
        if (close == std::string::npos)
          throw bad("a cycle without ')' in '" + printable(gen) + "'");
        std::vector<int> cyc;
        for (const std::string& tok : split(gen.substr(i + 1, close - i - 1), ' ')) {
          if (tok.empty()) continue;
          int x = 0;
          auto [ptr, ec] = std::from_chars(tok.data(), tok.data() + tok.size(), x);
          if (ec != std::errc{} || ptr != tok.data() + tok.size() || x < 1 || x > n)
            throw bad(fmt::format("'{}' is not a symbol 1..{}", printable(tok), n));
          if (std::find(cyc.begin(), cyc.end(), x) != cyc.end())
            throw bad(fmt::format("symbol {} twice in one cycle", x));
          cyc.push_back(x);
        }
        cycles.push_back(cyc);
        i = close + 1;
      }
      for (auto c = cycles.rbegin(); c != cycles.rend(); ++c) {
        std::vector<int> next = h;
        for (std::size_t j = 0; j < c->size(); ++j)
          for (int x = 1; x <= n; ++x)
            if (h[x] == (*c)[j]) next[x] = (*c)[(j + 1) % c->size()];
        h = next;
      }
      for (NodeId x = 0; x < g.p; ++x) {
        auto px = star_unrank(x, n);
        for (int& y : px) y = h[y];
        perm[x] = static_cast<std::uint32_t>(star_rank(px));
      }
    } else if (family == "hypercube") {
      std::uint64_t mask = 0;
      int base = 10;
      std::string digits = gen;
      if (digits.rfind("0b", 0) == 0) base = 2, digits = digits.substr(2);
      auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), mask, base);
      if (ec != std::errc{} || ptr != digits.data() + digits.size() || digits.empty() ||
          mask >= g.p)
        throw bad(fmt::format("'{}' is not a node mask below {}", printable(gen), g.p));
      for (NodeId x = 0; x < g.p; ++x) perm[x] = static_cast<std::uint32_t>(x ^ mask);
    } else {
      throw bad(
          "invariance is offered on star and hypercube graphs (Cayley graphs whose left "
          "multiplications are automorphisms), not on " +
          family);
    }
    for (NodeId u = 0; u < g.p; ++u)
      for (NodeId v : g.nbr[u])
        if (std::find(g.nbr[perm[u]].begin(), g.nbr[perm[u]].end(), perm[v]) ==
            g.nbr[perm[u]].end())
          throw std::logic_error(fmt::format("synth --invariant: '{}' is not an automorphism of {}",
                                             printable(gen), topo.spec()));
    gens.push_back(std::move(perm));
  }
  if (gens.empty()) throw bad("no generator");
  std::vector<std::uint32_t> id(g.p);
  for (NodeId x = 0; x < g.p; ++x) id[x] = x;
  std::vector<std::vector<std::uint32_t>> elems{id};
  std::set<std::vector<std::uint32_t>> seen{id};
  for (std::size_t i = 0; i < elems.size(); ++i)
    for (const auto& s : gens) {
      std::vector<std::uint32_t> e(g.p);
      for (NodeId x = 0; x < g.p; ++x) e[x] = s[elems[i][x]];
      if (seen.count(e)) continue;
      if ((elems.size() + 1) * static_cast<std::uint64_t>(g.p) > 20'000'000)
        throw bad("the group is too large to list");
      // Left multiplications act without fixed points; the orbit encoding relies on it.
      for (NodeId x = 0; x < g.p; ++x)
        if (e[x] == x)
          throw std::logic_error(
              fmt::format("synth --invariant: a group element other than the identity fixes "
                          "node {}",
                          x));
      seen.insert(e);
      elems.push_back(std::move(e));
    }
  return elems;
}

// The terms of the (pruned, general) Z3 query, counted from the graph's size alone (saturating).
std::uint64_t estimate_terms(std::uint64_t p, std::uint64_t edges, std::uint64_t deg, Kind k,
                             unsigned T) {
  std::uint64_t base = sat_add(sat_mul(sat_mul(edges, T), 3), 16);
  switch (k) {
    case Kind::Broadcast:
      return sat_add(base, sat_mul(sat_mul(p, T), 2 + 2 * deg));
    case Kind::Gossip:
      return sat_add(base, sat_mul(sat_mul(sat_mul(p, p), T), 2 + 2 * deg));
    case Kind::Allreduce: {
      std::uint64_t n = 0;
      for (unsigned t = 1; t <= T + 1; ++t) {
        std::uint64_t J = sat_add(1, sat_mul(deg, t - 1));
        std::uint64_t per = sat_add(sat_add(sat_mul(J, 2), sat_mul(sat_mul(J, J - 1), 2)), 4);
        n = sat_add(n, sat_mul(sat_mul(t <= T ? edges : p, p), per));
      }
      return sat_add(base, n);
    }
  }
  return base;
}

std::string lvar(unsigned t, int k) { return fmt::format("l{}_{}", t, k); }

std::string mvar(NodeId u, NodeId v, unsigned t) { return fmt::format("m{}_{}_{}", u, v, t); }

// How the distance pruning enters a query. Pruned: a holding or sending variable that the BFS
// distances rule out is the literal false (what collv solves: fast). Justified: every variable is
// declared and constrained only by the step relation, and a Boolean `pruning` is defined as the
// conjunction of the negations of the variables the BFS would have pruned; the certificate checks
// first that the constraints alone imply `pruning` (unsat assuming its negation) and then the
// question assuming `goal` and `pruning`. Both checks together say: no schedule, from the
// constraints alone (the topology's edges are the message variables declared).
enum class Prune { Pruned, Justified };

// Builds the query into solver (declarations + assertions, goal guarded by literal "goal").
// Returns false when refused by the size cap.
class Builder {
 public:
  Builder(const Graph& g, Kind k, unsigned T, PortModel port, NodeId root, smt::Solver& s,
          const Topology& topo, bool uniform, Prune prune = Prune::Pruned)
      : g_(g),
        k_(k),
        T_(T),
        port_(port),
        root_(root),
        s_(s),
        topo_(topo),
        uniform_(uniform),
        prune_(prune) {
    if (uniform_ && k_ != Kind::Broadcast) {
      cay_ = cayley_of(topo);
      if (!cay_)
        throw UsageError("synth --uniform " + std::string(kind_name(k_)) +
                         " needs a Cayley graph with involutive links: star or hypercube");
    }
  }

  bool symmetric() const { return uniform_ && k_ != Kind::Broadcast; }

  bool build() {
    if (symmetric()) return build_symmetric();
    if (!s_.reserve(estimate())) return false;
    std::string& o = s_.script();
    o += fmt::format("; collv synth {}: {} processors, {} steps, {}-port\n", kind_name(k_), g_.p,
                     T_, port_ == PortModel::Single ? "single" : "all");
    s_.declare("goal", "Bool");
    for (unsigned t = 1; t <= T_; ++t)
      for (NodeId u = 0; u < g_.p; ++u)
        for (NodeId v : g_.nbr[u]) s_.declare(mvar(u, v, t), "Bool");
    if (port_ == PortModel::Single) {
      for (unsigned t = 1; t <= T_; ++t)
        for (NodeId u = 0; u < g_.p; ++u) {
          if (g_.nbr[u].size() < 2) continue;
          std::string out = "((_ at-most 1)", in = "((_ at-most 1)";
          for (NodeId v : g_.nbr[u]) {
            out += " " + mvar(u, v, t);
            in += " " + mvar(v, u, t);
          }
          o += "(assert " + out + "))\n(assert " + in + "))\n";
        }
    }
    if (uniform_) {
      // Every node sends along link l_t in step t (at most one link per step).
      std::set<int> nums;
      for (NodeId u = 0; u < g_.p; ++u)
        for (const Link& l : topo_.links(u)) nums.insert(l.number);
      for (unsigned t = 1; t <= T_; ++t) {
        std::string am = "((_ at-most 1)";
        for (int k : nums) {
          s_.declare(lvar(t, k), "Bool");
          am += " " + lvar(t, k);
        }
        o += "(assert " + am + "))\n";
        for (NodeId u = 0; u < g_.p; ++u)
          for (const Link& l : topo_.links(u))
            o += fmt::format("(assert (= {} {}))\n", mvar(u, l.to, t), lvar(t, l.number));
      }
    }
    switch (k_) {
      case Kind::Broadcast:
        broadcast(o);
        break;
      case Kind::Gossip:
        gossip(o);
        break;
      case Kind::Allreduce:
        allreduce(o);
        break;
    }
    if (prune_ == Prune::Justified) {
      o += "; pruning<t>: the variables of step t that no chain of messages along the declared\n"
           "; links can have set by then (false in every model, proved by the lemma checks)\n";
      for (unsigned t = 1; t <= T_; ++t) {
        s_.declare(prune_name(t), "Bool");
        o += "(assert (= " + prune_name(t) + " (and true";
        for (const std::string& v : far_[t]) o += " (not " + v + ")";
        o += ")))\n";
      }
    }
    return true;
  }
  static std::string prune_name(unsigned t) { return fmt::format("pruning{}", t); }

  // The certificate's checks. With Justified: the lemma checks first, one per step t (expected
  // unsat: pruning1 .. pruning<t-1> imply pruning<t>, so by induction the constraints imply every
  // pruning<t>), then the question assuming goal and every pruning<t>.
  std::vector<std::vector<std::string>> checks() const {
    if (prune_ != Prune::Justified || symmetric()) return {{"goal"}};
    std::vector<std::vector<std::string>> out;
    std::vector<std::string> before;
    for (unsigned t = 1; t <= T_; ++t) {
      std::vector<std::string> c = before;
      c.push_back("(not " + prune_name(t) + ")");
      out.push_back(c);
      before.push_back(prune_name(t));
    }
    before.insert(before.begin(), "goal");
    out.push_back(before);
    return out;
  }

  std::uint64_t estimate() const {
    std::uint64_t edges = 0;
    for (auto& n : g_.nbr) edges += n.size();
    std::uint64_t deg = 0;
    for (auto& n : g_.nbr) deg = std::max<std::uint64_t>(deg, n.size());
    return estimate_terms(g_.p, edges, deg, k_, T_);
  }

  // h: has[v][c][t]; "true"/"false" where fixed.
  std::string H(NodeId v, NodeId c, unsigned t) {
    if (v == c) return "true";
    if (t == 0) return "false";  // the precondition: only c holds chunk c before step 1
    std::string h = fmt::format("h{}_{}_{}", v, c, t);
    if (g_.dist[c][v] > t) {
      if (prune_ == Prune::Pruned) return "false";
      far_[t].insert(h);
      far_names_.insert(h);
    }
    return h;
  }

  void gossip_like(std::string& o, const std::vector<NodeId>& chunks) {
    for (unsigned t = 1; t <= T_; ++t)
      for (NodeId v = 0; v < g_.p; ++v) {
        check_deadline("synth: building the query");
        for (NodeId c : chunks) {
          std::string h = H(v, c, t);
          if (h == "true" || h == "false") continue;
          s_.declare(h, "Bool");
          std::string rhs = "(or false";
          std::string prev = H(v, c, t - 1);
          if (prev != "false") rhs += " " + prev;
          for (NodeId u : g_.nbr[v]) {
            std::string hu = H(u, c, t - 1);
            if (hu == "false") continue;
            rhs += hu == "true" ? fmt::format(" {}", mvar(u, v, t))
                                : fmt::format(" (and {} {})", mvar(u, v, t), hu);
          }
          o += fmt::format("(assert (=> {} {})))\n", h, rhs);
        }
      }
    std::string goal = "(assert (=> goal (and true";
    for (NodeId v = 0; v < g_.p; ++v)
      for (NodeId c : chunks) goal += " " + H(v, c, T_);
    o += goal + ")))\n";
  }

  void broadcast(std::string& o) { gossip_like(o, {root_}); }
  void gossip(std::string& o) {
    std::vector<NodeId> all(g_.p);
    for (NodeId c = 0; c < g_.p; ++c) all[c] = c;
    gossip_like(o, all);
  }

  // s: u sends chunk c to v in step t (a contribution of the partial sum it sends).
  std::string S(NodeId u, NodeId v, NodeId c, unsigned t) {
    if (t == 0) return "false";
    std::string s = fmt::format("s{}_{}_{}_{}", u, v, c, t);
    if (g_.dist[c][u] > t - 1) {
      if (prune_ == Prune::Pruned) return "false";
      far_[t].insert(s);
      far_names_.insert(s);
    }
    return s;
  }
  // Atoms held by u before step t: 0 = its input, then (tau, w) = what w sent it in step tau < t.
  struct Atom {
    unsigned tau;  // 0 = input
    NodeId w;
  };
  std::vector<Atom> atoms(NodeId u, unsigned t) {
    std::vector<Atom> a{{0, u}};
    for (unsigned tau = 1; tau < t; ++tau)
      for (NodeId w : g_.nbr[u]) a.push_back({tau, w});
    return a;
  }
  std::string A(NodeId u, const Atom& a, NodeId c) {
    if (a.tau == 0) return c == u ? "true" : "false";
    return S(a.w, u, c, a.tau);
  }
  // Selection `sel` over `as` (held by u): union = target(c) (if given), pairwise disjoint.
  // With Prune::Justified, the constraints that only restrict a selection of an atom the lemma
  // checks prove false (it is in its target, it is disjoint from the others) are left out: leaving
  // out a constraint only adds models, and under the lemmas they hold anyway. What the lemmas rest
  // on, "a selected target contribution comes from some held atom", is always stated in full.
  void selection(std::string& o, NodeId u, const std::vector<Atom>& as,
                 const std::vector<std::string>& sel,
                 const std::function<std::string(NodeId)>& target, const std::string& gate) {
    auto far = [&](const std::string& a) { return far_names_.count(a) > 0; };
    for (NodeId c = 0; c < g_.p; ++c) {
      std::string tc = target(c);
      std::string any = "(or false";
      for (std::size_t j = 0; j < as.size(); ++j) {
        std::string a = A(u, as[j], c);
        if (a == "false") continue;
        std::string term = a == "true" ? sel[j] : fmt::format("(and {} {})", sel[j], a);
        any += " " + term;
        if (tc != "true" && !far(a))
          o += fmt::format("(assert (=> {} {}))\n", term, tc == "false" ? "false" : tc);
      }
      any += ")";
      if (tc != "false") o += fmt::format("(assert (=> {} {}))\n", tc == "true" ? gate : tc, any);
      for (std::size_t j = 0; j < as.size(); ++j) {
        std::string aj = A(u, as[j], c);
        if (aj == "false" || far(aj)) continue;
        for (std::size_t k = j + 1; k < as.size(); ++k) {
          std::string ak = A(u, as[k], c);
          if (ak == "false" || far(ak)) continue;
          std::string lits = fmt::format("(not {}) (not {})", sel[j], sel[k]);
          if (aj != "true") lits += fmt::format(" (not {})", aj);
          if (ak != "true") lits += fmt::format(" (not {})", ak);
          o += fmt::format("(assert (or {}))\n", lits);
        }
      }
    }
  }

  void allreduce(std::string& o) {
    for (unsigned t = 1; t <= T_; ++t)
      for (NodeId u = 0; u < g_.p; ++u) {
        check_deadline("synth: building the query");
        auto as = atoms(u, t);
        for (NodeId v : g_.nbr[u]) {
          std::string m = mvar(u, v, t);
          std::vector<std::string> sel;
          for (std::size_t j = 0; j < as.size(); ++j) {
            sel.push_back(fmt::format("q{}_{}_{}_{}", u, v, t, j));
            s_.declare(sel.back(), "Bool");
            o += fmt::format("(assert (=> {} {}))\n", sel.back(), m);
          }
          for (NodeId c = 0; c < g_.p; ++c) {
            std::string sv = S(u, v, c, t);
            if (sv != "false") s_.declare(sv, "Bool");
          }
          selection(
              o, u, as, sel, [&](NodeId c) { return S(u, v, c, t); }, "false");
        }
      }
    // The result of every node: a disjoint union of its atoms covering every contribution.
    for (NodeId v = 0; v < g_.p; ++v) {
      auto as = atoms(v, T_ + 1);
      std::vector<std::string> sel;
      for (std::size_t j = 0; j < as.size(); ++j) {
        sel.push_back(fmt::format("f{}_{}", v, j));
        s_.declare(sel.back(), "Bool");
      }
      selection(
          o, v, as, sel, [&](NodeId) { return std::string("true"); }, "goal");
    }
  }

  // Uniform schedules on a Cayley graph, seen from node 0 (the identity e): every node v holds
  // v*X for each set X that e holds. In step t everybody exchanges along link k_t (l<t>_<k>);
  // gossip: S_t = S_(t-1) + gen(k_t) S_(t-1); allreduce: e sends the set M_t (a disjoint union of
  // its atoms: its input {e} and R_1..R_(t-1)), and receives R_t = gen(k_t) M_t.
  std::uint64_t estimate_symmetric() const {
    std::uint64_t p = g_.p, L = cay_->links.size();
    if (k_ == Kind::Gossip) return T_ * p * (2 * L + 4) + 16;
    return T_ * p * (2 * L + 4) + (T_ + 1) * p * (T_ + 2) * (T_ + 2) * 3 + 16;
  }
  bool build_symmetric() {
    if (!s_.reserve(estimate_symmetric())) return false;
    std::string& o = s_.script();
    const Cayley& c = *cay_;
    o += fmt::format("; collv synth {} --uniform: {} processors, {} steps (symmetric encoding)\n",
                     kind_name(k_), g_.p, T_);
    s_.declare("goal", "Bool");
    for (unsigned t = 1; t <= T_; ++t) {
      std::string am = "((_ at-most 1)";
      for (int k : c.links) {
        s_.declare(lvar(t, k), "Bool");
        am += " " + lvar(t, k);
      }
      o += "(assert " + am + "))\n";
    }
    if (k_ == Kind::Gossip) {
      auto S = [&](unsigned t, NodeId g) {
        return g == 0   ? std::string("true")
               : t == 0 ? std::string("false")
                        : fmt::format("k{}_{}", t, g);
      };
      for (unsigned t = 1; t <= T_; ++t)
        for (NodeId g = 1; g < g_.p; ++g) {
          s_.declare(S(t, g), "Bool");
          std::string rhs = "(or " + S(t - 1, g);
          for (int k : c.links)
            rhs += fmt::format(" (and {} {})", lvar(t, k), S(t - 1, c.lmul(k, g)));
          o += fmt::format("(assert (=> {} {})))\n", S(t, g), rhs);
        }
      std::string goal = "(assert (=> goal (and true";
      for (NodeId g = 1; g < g_.p; ++g) goal += " " + S(T_, g);
      o += goal + ")))\n";
      return true;
    }
    // allreduce. Atom j of e before step t: j = 0 its input {e}; j = 1..t-1 what it received in
    // step j.
    auto A = [&](unsigned j, NodeId g) {
      if (j == 0) return std::string(g == 0 ? "true" : "false");
      return fmt::format("r{}_{}", j, g);
    };
    auto selection = [&](const std::vector<std::string>& sel, unsigned atoms, auto target,
                         const std::string& gate) {
      for (NodeId g = 0; g < g_.p; ++g) {
        std::string tg = target(g);
        std::string any = "(or false";
        for (unsigned j = 0; j < atoms; ++j) {
          std::string a = A(j, g);
          if (a == "false") continue;
          std::string term = a == "true" ? sel[j] : fmt::format("(and {} {})", sel[j], a);
          any += " " + term;
          if (tg != "true") o += fmt::format("(assert (=> {} {}))\n", term, tg);
        }
        any += ")";
        o += fmt::format("(assert (=> {} {}))\n", tg == "true" ? gate : tg, any);
        for (unsigned j = 0; j < atoms; ++j)
          for (unsigned k = j + 1; k < atoms; ++k) {
            std::string aj = A(j, g), ak = A(k, g);
            if (aj == "false" || ak == "false") continue;
            std::string lits = fmt::format("(not {}) (not {})", sel[j], sel[k]);
            if (aj != "true") lits += " (not " + aj + ")";
            if (ak != "true") lits += " (not " + ak + ")";
            o += "(assert (or " + lits + "))\n";
          }
      }
    };
    for (unsigned t = 1; t <= T_; ++t) {
      std::vector<std::string> sel;
      for (unsigned j = 0; j < t; ++j) {
        sel.push_back(fmt::format("y{}_{}", t, j));
        s_.declare(sel.back(), "Bool");
      }
      for (NodeId g = 0; g < g_.p; ++g) s_.declare(fmt::format("M{}_{}", t, g), "Bool");
      selection(
          sel, t, [&](NodeId g) { return fmt::format("M{}_{}", t, g); }, "false");
      for (NodeId g = 0; g < g_.p; ++g) {
        s_.declare(A(t, g), "Bool");
        std::string rhs = "(or false";
        for (int k : c.links) rhs += fmt::format(" (and {} M{}_{})", lvar(t, k), t, c.lmul(k, g));
        o += fmt::format("(assert (= {} {})))\n", A(t, g), rhs);
      }
    }
    std::vector<std::string> fsel;
    for (unsigned j = 0; j <= T_; ++j) {
      fsel.push_back(fmt::format("f{}", j));
      s_.declare(fsel.back(), "Bool");
    }
    selection(
        fsel, T_ + 1, [&](NodeId) { return std::string("true"); }, "goal");
    return true;
  }

  const Graph& g_;
  Kind k_;
  unsigned T_;
  PortModel port_;
  NodeId root_;
  smt::Solver& s_;
  const Topology& topo_;
  bool uniform_;
  Prune prune_;
  std::map<unsigned, std::set<std::string>> far_;  // Justified: per step, what pruning sets false
  std::set<std::string> far_names_;
  std::optional<Cayley> cay_;
};

// The schedule of a sat model as a Trace.
Trace make_trace(const Topology& topo, const Graph& g, Kind k, unsigned T, NodeId root,
                 const std::map<std::string, std::string>& val) {
  auto is_true = [&](const std::string& n) {
    auto f = val.find(n);
    return f != val.end() && f->second == "true";
  };
  Trace tr;
  tr.model_name = fmt::format("synth-{}", kind_name(k));
  tr.model_file = "(synthesized by collv synth)";
  tr.topology = topo;
  tr.root = root;
  tr.collective = k == Kind::Broadcast ? Collective::Broadcast
                  : k == Kind::Gossip  ? Collective::Allgather
                                       : Collective::Allreduce;
  tr.op_class = OperatorClass::Commutative;
  tr.nodup_claimed = k != Kind::Allreduce;
  tr.layout_any = true;  // gossip asks who knows what, not where it lies in a buffer
  tr.domain = std::shared_ptr<Domain>(make_domain(DomainKind::Exact, g.p, 1, 1).release());
  Domain& d = *tr.domain;
  tr.initial_input.resize(g.p);
  for (NodeId v = 0; v < g.p; ++v)
    if (k != Kind::Broadcast || v == root) tr.initial_input[v].push_back(d.leaf(v, 0));
  auto add = [&](unsigned t, NodeId u, NodeId v, const std::vector<Item>& items) {
    Transfer x{};
    x.step = t;
    x.src = u;
    x.dst = v;
    x.payload_begin = static_cast<std::uint32_t>(tr.payload.size());
    x.payload_len = static_cast<std::uint16_t>(items.size());
    tr.payload.insert(tr.payload.end(), items.begin(), items.end());
    tr.transfers.push_back(x);
  };
  if (k == Kind::Allreduce) {
    // Received sets per (node, step, sender), to rebuild the result selection.
    std::map<std::tuple<NodeId, unsigned, NodeId>, Item> got;
    for (unsigned t = 1; t <= T; ++t)
      for (NodeId u = 0; u < g.p; ++u)
        for (NodeId v : g.nbr[u]) {
          if (!is_true(mvar(u, v, t))) continue;
          Item it = 0;
          for (NodeId c = 0; c < g.p; ++c)
            if (is_true(fmt::format("s{}_{}_{}_{}", u, v, c, t))) it = d.combine(it, d.leaf(c, 0));
          got[{v, t, u}] = it;
          add(t, u, v, {it});
        }
    tr.final_output.resize(g.p);
    for (NodeId v = 0; v < g.p; ++v) {
      Item acc = 0;
      std::size_t j = 0;
      if (is_true(fmt::format("f{}_{}", v, j))) acc = d.combine(acc, d.leaf(v, 0));
      for (unsigned tau = 1; tau <= T; ++tau)
        for (NodeId w : g.nbr[v]) {
          ++j;
          if (!is_true(fmt::format("f{}_{}", v, j))) continue;
          auto f = got.find({v, tau, w});
          if (f != got.end()) acc = d.combine(acc, f->second);
        }
      tr.final_output[v].push_back(acc);
    }
  } else {
    std::vector<std::set<NodeId>> held(g.p);
    for (NodeId v = 0; v < g.p; ++v)
      if (k != Kind::Broadcast || v == root) held[v].insert(v);
    for (unsigned t = 1; t <= T; ++t) {
      auto prev = held;
      for (NodeId u = 0; u < g.p; ++u)
        for (NodeId v : g.nbr[u]) {
          if (!is_true(mvar(u, v, t))) continue;
          std::vector<Item> items;
          for (NodeId c : prev[u])
            if (!prev[v].count(c)) {
              items.push_back(d.leaf(c, 0));
              held[v].insert(c);
            }
          if (!items.empty()) add(t, u, v, items);
        }
    }
    tr.final_output.resize(g.p);
    for (NodeId v = 0; v < g.p; ++v)
      for (NodeId c : held[v]) tr.final_output[v].push_back(d.leaf(c, 0));
  }
  tr.compute_stats();
  return tr;
}

// The schedule of a sat symmetric model as a Trace: node v does what node 0 does, seen from v.
Trace make_trace_symmetric(const Topology& topo, const Graph& g, const Cayley& c, Kind k,
                           unsigned T, const std::map<std::string, std::string>& val) {
  auto is_true = [&](const std::string& n) {
    auto f = val.find(n);
    return f != val.end() && f->second == "true";
  };
  std::vector<int> link(T + 1, -1);
  for (unsigned t = 1; t <= T; ++t)
    for (int kk : c.links)
      if (is_true(lvar(t, kk))) link[t] = kk;
  if (k == Kind::Gossip) {
    std::map<std::string, std::string> m;
    for (unsigned t = 1; t <= T; ++t) {
      if (link[t] < 0) continue;
      for (NodeId u = 0; u < g.p; ++u)
        if (auto v = topo.neighbor(u, link[t])) m[mvar(u, *v, t)] = "true";
    }
    return make_trace(topo, g, k, T, 0, m);
  }
  Trace tr;
  tr.model_name = "synth-allreduce-uniform";
  tr.model_file = "(synthesized by collv synth --uniform)";
  tr.topology = topo;
  tr.collective = Collective::Allreduce;
  tr.op_class = OperatorClass::Commutative;
  tr.nodup_claimed = false;
  tr.domain = std::shared_ptr<Domain>(make_domain(DomainKind::Exact, g.p, 1, 1).release());
  Domain& d = *tr.domain;
  tr.initial_input.resize(g.p);
  for (NodeId v = 0; v < g.p; ++v) tr.initial_input[v].push_back(d.leaf(v, 0));
  auto set_item = [&](NodeId v, const std::vector<NodeId>& rel) {
    Item it = 0;
    for (NodeId q : rel) it = d.combine(it, d.leaf(c.compose(v, q), 0));
    return it;
  };
  std::vector<std::vector<NodeId>> M(T + 1), R(T + 1);
  for (unsigned t = 1; t <= T; ++t)
    for (NodeId q = 0; q < g.p; ++q) {
      if (is_true(fmt::format("M{}_{}", t, q))) M[t].push_back(q);
      if (is_true(fmt::format("r{}_{}", t, q))) R[t].push_back(q);
    }
  for (unsigned t = 1; t <= T; ++t) {
    if (link[t] < 0) continue;
    for (NodeId v = 0; v < g.p; ++v) {
      auto w = topo.neighbor(v, link[t]);
      if (!w) continue;
      Transfer x{};
      x.step = t;
      x.src = v;
      x.dst = *w;
      x.payload_begin = static_cast<std::uint32_t>(tr.payload.size());
      x.payload_len = 1;
      tr.payload.push_back(set_item(v, M[t]));
      tr.transfers.push_back(x);
    }
  }
  tr.final_output.resize(g.p);
  for (NodeId v = 0; v < g.p; ++v) {
    Item acc = 0;
    if (is_true("f0")) acc = d.combine(acc, d.leaf(v, 0));
    for (unsigned j = 1; j <= T; ++j)
      if (is_true(fmt::format("f{}", j))) acc = d.combine(acc, set_item(v, R[j]));
    tr.final_output[v].push_back(acc);
  }
  tr.compute_stats();
  return tr;
}

struct Attempt {
  SynthAttempt info;
  std::optional<Trace> trace;
};

std::string query_stem(const SynthOptions& o, const Topology& topo, Kind k, unsigned T) {
  std::string s =
      fmt::format("synth-{}-{}-{}{}-T{}", kind_name(k), topo.spec(),
                  o.port == PortModel::Single ? "single" : "all", o.uniform ? "-uniform" : "", T);
  std::replace(s.begin(), s.end(), ':', '_');
  return s;
}

// The same question as CNF, solved by CaDiCaL (synth_cnf.hpp); the model has the Z3 encoding's
// variable names, so the schedule is rebuilt by the same functions.
Attempt attempt_cnf(const SynthOptions& o, const Topology& topo, const Graph& g, Kind k, unsigned T,
                    const std::vector<std::vector<std::uint32_t>>& group) {
  sat::SynthProblem p;
  p.kind = k == Kind::Broadcast ? sat::SynthKind::Broadcast
           : k == Kind::Gossip  ? sat::SynthKind::Gossip
                                : sat::SynthKind::Allreduce;
  p.steps = T;
  p.single_port = o.port == PortModel::Single;
  p.root = o.root;
  p.p = g.p;
  p.nbr = g.nbr;
  p.dist = g.dist;
  p.link_number.resize(g.p);
  for (NodeId v = 0; v < g.p; ++v)
    for (const Link& l : topo.links(v)) p.link_number[v].push_back(l.number);
  p.uniform = o.uniform;
  std::optional<Cayley> cay;
  if (o.uniform && k != Kind::Broadcast) {
    cay = cayley_of(topo);
    if (!cay)
      throw UsageError("synth --uniform " + std::string(kind_name(k)) +
                       " needs a Cayley graph with involutive links: star or hypercube");
    p.links = cay->links;
    for (int kk : cay->links) {
      std::vector<std::uint32_t> row(g.p);
      for (NodeId x = 0; x < g.p; ++x) row[x] = cay->lmul(kk, x);
      p.lmul.push_back(std::move(row));
    }
  }
  p.group = group;
  p.nodup = o.nodup;
  p.exchange = o.exchange;
  p.name = query_stem(o, topo, k, T);
  if (o.nodup) p.name.insert(p.name.rfind("-T"), "-nodup");
  if (o.exchange) p.name.insert(p.name.rfind("-T"), "-exchange");
  std::string restricted;
  if (!group.empty()) {
    // the generators in the file name, made safe: "(1 2 3),(4 5)" -> "inv60-1.2.3_4.5"
    std::string tag = fmt::format("-inv{}-", group.size());
    for (char c : o.invariant)
      if (std::isalnum(static_cast<unsigned char>(c)))
        tag += c;
      else if (c == ' ' && !tag.empty() && std::isalnum(static_cast<unsigned char>(tag.back())))
        tag += '.';
      else if ((c == ',' || c == ')') && tag.back() != '_')
        tag += '_';
    while (!tag.empty() && (tag.back() == '_' || tag.back() == '-')) tag.pop_back();
    p.name.insert(p.name.rfind("-T"), tag);
    restricted = fmt::format(
        "no schedule INVARIANT under the group generated by {} (order {}) "
        "exists (not a lower bound)",
        o.invariant, group.size());
  }
  p.comment = fmt::format(
      "collv synth {} --topology {} --steps {} --port {}{}{}{}{} --backend cadical\n"
      "meaning: unsat = {}; sat = a {}-step schedule exists",
      kind_name(k), topo.spec(), T, o.port == PortModel::Single ? "single" : "all",
      o.uniform ? " --uniform" : "", group.empty() ? "" : " --invariant '" + o.invariant + "'",
      o.nodup ? " --nodup" : "", o.exchange ? " --exchange" : "",
      o.uniform             ? "no UNIFORM schedule exists (not a lower bound)"
      : !restricted.empty() ? restricted
                            : fmt::format("no schedule exists (lower bound {} steps)", T + 1),
      T);
  sat::CnfOptions co;
  co.timeout_ms = o.timeout_ms;
  co.max_literals = o.max_terms;
  co.symmetry_breaking = o.symmetry_breaking;
  co.cube_depth = o.cube_depth;
  co.progress = o.progress;
  co.proof_dir = o.proof_dir.empty() ? o.emit_dir : o.proof_dir;
  sat::CnfResult r = sat::solve_synth_cnf(p, co);
  Attempt a;
  a.info.steps = T;
  a.info.answer = r.answer;
  a.info.seconds = r.seconds;
  a.info.reason = r.reason;
  a.info.file = r.cnf_file;
  a.info.proof = r.proof_file;
  if (r.answer == smt::Answer::Sat) {
    if (cay)
      a.trace = make_trace_symmetric(topo, g, *cay, k, T, r.values);
    else
      a.trace = make_trace(topo, g, k, T, o.root, r.values);
    a.trace->port = o.port;
    // --nodup is judged by the re-check's nodup check (a failure is then an internal error);
    // --exchange here: at most one partner per node and step.
    if (o.nodup) a.trace->nodup_claimed = true;
    if (o.exchange) {
      std::map<std::pair<unsigned, NodeId>, std::set<NodeId>> partners;
      for (const Transfer& x : a.trace->transfers) {
        partners[{x.step, x.src}].insert(x.dst);
        partners[{x.step, x.dst}].insert(x.src);
      }
      for (const auto& [at, who] : partners)
        if (who.size() > 1)
          throw std::logic_error(
              fmt::format("synth --exchange: node {} talks to {} neighbours in step {}", at.second,
                          who.size(), at.first));
    }
  }
  return a;
}

// What a synthesis certificate's answer means (its comment lines).
std::string synth_meaning(const SynthOptions& o, const Topology& topo, Kind k, unsigned T) {
  return o.uniform
             ? fmt::format(
                   "collv synth {} --topology {} --steps {} --uniform\n"
                   "sat = a uniform {}-step schedule exists; unsat = no UNIFORM one exists "
                   "(not a lower bound)",
                   kind_name(k), topo.spec(), T, T)
             : fmt::format(
                   "collv synth {} --topology {} --steps {} --port {}{}\n"
                   "sat = a {}-step schedule exists; unsat = none exists (lower bound {} steps)",
                   kind_name(k), topo.spec(), T, o.port == PortModel::Single ? "single" : "all",
                   k == Kind::Broadcast ? fmt::format(" --root {}", o.root) : "", T, T + 1);
}

// The certificate of a Z3 synthesis query: the query without collv's distance pruning, with the
// pruning stated as a lemma that the file checks first (Prune::Justified); "" if refused by the
// size cap.
std::string certificate(const SynthOptions& o, const Topology& topo, const Graph& g, Kind k,
                        unsigned T, smt::Answer expected) {
  smt::Solver s(smt::Limits{o.timeout_ms, o.max_terms}, "QF_FD");
  Builder b(g, k, T, o.port, o.root, s, topo, o.uniform, Prune::Justified);
  if (!b.build()) return "";
  std::string meaning = synth_meaning(o, topo, k, T);
  auto checks = b.checks();
  if (checks.size() > 1)
    meaning += fmt::format(
        "\nchecks: {} in order. The first {} are lemmas (each expected unsat): check t "
        "shows from the\nconstraints alone that pruning1 .. pruning<t-1> imply "
        "pruning<t> (no variable of step t is true\nbefore a chain of messages along "
        "the declared links can have set it).\nThe last asks the question under "
        "the lemmas; its answer is the certificate's.",
        checks.size(), checks.size() - 1);
  return s.to_smt2_checks(expected, checks, meaning);
}

Attempt attempt(const SynthOptions& o, const Topology& topo, const Graph& g, Kind k, unsigned T,
                const std::vector<std::vector<std::uint32_t>>& group) {
  if (o.backend == "cadical") return attempt_cnf(o, topo, g, k, T, group);
  smt::Solver s(smt::Limits{o.timeout_ms, o.max_terms}, "QF_FD");
  Builder b(g, k, T, o.port, o.root, s, topo, o.uniform);
  Attempt a;
  a.info.steps = T;
  if (!b.build()) {
    a.info.answer = smt::Answer::Unknown;
    a.info.reason = s.refusal();
    return a;
  }
  std::vector<std::string> names;
  std::optional<Cayley> cay = o.uniform && k != Kind::Broadcast ? cayley_of(topo) : std::nullopt;
  if (cay) {
    for (unsigned t = 1; t <= T; ++t) {
      for (int kk : cay->links) names.push_back(lvar(t, kk));
      if (k == Kind::Allreduce)
        for (NodeId c = 0; c < g.p; ++c) {
          names.push_back(fmt::format("M{}_{}", t, c));
          names.push_back(fmt::format("r{}_{}", t, c));
        }
    }
    if (k == Kind::Allreduce)
      for (unsigned j = 0; j <= T; ++j) names.push_back(fmt::format("f{}", j));
  } else {
    for (unsigned t = 1; t <= T; ++t)
      for (NodeId u = 0; u < g.p; ++u)
        for (NodeId v : g.nbr[u]) {
          names.push_back(mvar(u, v, t));
          if (k == Kind::Allreduce)
            for (NodeId c = 0; c < g.p; ++c)
              if (g.dist[c][u] <= t - 1) names.push_back(fmt::format("s{}_{}_{}_{}", u, v, c, t));
        }
    if (k == Kind::Allreduce)
      for (NodeId v = 0; v < g.p; ++v)
        for (std::size_t j = 0; j < 1 + g.nbr[v].size() * T; ++j)
          names.push_back(fmt::format("f{}_{}", v, j));
  }
  smt::Result r = s.check({"goal"}, names);
  a.info.answer = r.answer;
  a.info.seconds = r.seconds;
  a.info.reason = r.reason;
  if (!o.emit_dir.empty()) {
    make_dir_checked(o.emit_dir, "--emit-smt2");
    a.info.file = (std::filesystem::path(o.emit_dir) /
                   fmt::format("synth-{}-{}-{}{}-T{}.smt2", kind_name(k), topo.spec(),
                               o.port == PortModel::Single ? "single" : "all",
                               o.uniform ? "-uniform" : "", T))
                      .string();
    std::replace(a.info.file.begin() + static_cast<long>(o.emit_dir.size()), a.info.file.end(), ':',
                 '_');
    // sat: the pruned query itself (pruning only adds constraints, so a model of it is a
    // schedule); unsat and unknown: the query with the pruning proved inside (Prune::Justified).
    std::string text = r.answer == smt::Answer::Sat
                           ? s.to_smt2(r.answer, {"goal"},
                                       synth_meaning(o, topo, k, T) +
                                           "\n(the pruned query: pruning only adds constraints, so "
                                           "a model is a schedule)")
                           : certificate(o, topo, g, k, T, r.answer);
    if (text.empty()) {
      a.info.file.clear();
      a.info.reason += std::string(a.info.reason.empty() ? "" : "; ") +
                       "no certificate written: the unpruned query is over --max-terms";
    } else {
      std::ofstream f(a.info.file, std::ios::binary);
      if (!(f << text)) throw UsageError("cannot write " + a.info.file);
    }
  }
  if (r.answer == smt::Answer::Sat) {
    if (cay)
      a.trace = make_trace_symmetric(topo, g, *cay, k, T, r.values);
    else
      a.trace = make_trace(topo, g, k, T, o.root, r.values);
    a.trace->port = o.port;  // the checkers judge it under the port model it was found for
  }
  return a;
}

}  // namespace

SynthResult synthesize(const SynthOptions& o) {
  Kind k = kind_of(o.collective);
  Topology topo = Topology::parse(o.topology);
  // The size of the smallest query asked, from the topology's size alone, before the distances
  // (p breadth-first searches) are computed: complete:4096 is refused at once.
  if (o.backend == "z3" && !o.uniform && topo.num_nodes() == topo.num_processors()) {
    std::uint64_t edges = 0, deg = 0;
    for (NodeId v = 0; v < topo.num_processors(); ++v) {
      edges += topo.links(v).size();
      deg = std::max<std::uint64_t>(deg, topo.links(v).size());
    }
    smt::Solver probe(smt::Limits{o.timeout_ms, o.max_terms}, "QF_FD");
    unsigned T0 = o.least ? 1 : o.steps;
    if (!probe.reserve(estimate_terms(topo.num_processors(), edges, deg, k, T0))) {
      SynthResult res;
      SynthAttempt a;
      a.steps = T0;
      a.answer = smt::Answer::Unknown;
      a.reason = probe.refusal();
      res.attempts.push_back(a);
      res.answer = smt::Answer::Unknown;
      res.steps = T0;
      res.note = a.reason;
      return res;
    }
  }
  Graph g = graph_of(topo);
  if (o.root >= g.p)
    throw UsageError(fmt::format("synth: root {} is not a processor of {}", o.root, topo.spec()));
  if (o.steps == 0 && !o.least) throw UsageError("synth: --steps must be at least 1");
  if (o.backend != "z3" && o.backend != "cadical")
    throw UsageError("synth: unknown backend '" + o.backend + "' (expected z3 or cadical)");
  if (o.cube_depth > 0 && o.backend != "cadical")
    throw UsageError("synth --cubes needs --backend cadical");
  if (o.cube_depth > 30) throw UsageError("synth --cubes: a depth of at most 30");
  std::vector<std::vector<std::uint32_t>> group;
  if (o.nodup || o.exchange) {
    const char* flag = o.nodup ? "--nodup" : "--exchange";
    if (o.backend != "cadical")
      throw UsageError(std::string("synth ") + flag + " needs --backend cadical");
    if (kind_of(o.collective) != Kind::Allreduce || o.port != PortModel::Single || o.uniform)
      throw UsageError(std::string("synth ") + flag +
                       " is offered for the single-port one-word allreduce (not --uniform)");
  }
  if (!o.invariant.empty()) {
    if (o.backend != "cadical") throw UsageError("synth --invariant needs --backend cadical");
    if (o.uniform)
      throw UsageError(
          "synth --invariant and --uniform exclude each other (uniform already is "
          "invariance under every left multiplication)");
    if (k == Kind::Broadcast)
      throw UsageError(
          "synth --invariant is for allgather and allreduce: a broadcast's root is "
          "a fixed point of every group that keeps it invariant");
    if (k == Kind::Allreduce && o.port != PortModel::Single)
      throw UsageError("synth --invariant allreduce is offered for the single-port model only");
    group = invariance_group(o.invariant, topo, g);
  }
  SynthResult res;
  res.invariant_order = group.size();
  if (group.size() == 1) group.clear();  // the identity alone: no restriction, the general question
  if (!o.least) {
    Attempt a = attempt(o, topo, g, k, o.steps, group);
    res.attempts.push_back(a.info);
    res.answer = a.info.answer;
    res.steps = o.steps;
    res.trace = std::move(a.trace);
    return res;
  }
  unsigned hi = o.steps == 0 ? 64 : o.steps;
  bool all_unsat = true;
  for (unsigned T = 1; T <= hi; ++T) {
    Attempt a = attempt(o, topo, g, k, T, group);
    res.attempts.push_back(a.info);
    if (a.info.answer == smt::Answer::Sat) {
      res.answer = smt::Answer::Sat;
      res.steps = T;
      res.trace = std::move(a.trace);
      res.note = all_unsat ? fmt::format("least: {} steps (every T < {} is unsat)", T, T)
                           : fmt::format("{} steps found, but a smaller T was inconclusive", T);
      if (!all_unsat) res.answer = smt::Answer::Unknown;
      return res;
    }
    if (a.info.answer == smt::Answer::Unknown) all_unsat = false;
  }
  res.steps = hi;
  res.answer = all_unsat ? smt::Answer::Unsat : smt::Answer::Unknown;
  res.note =
      all_unsat
          ? fmt::format("no schedule with at most {} steps", hi)
          : fmt::format("no schedule found with at most {} steps; some T were inconclusive", hi);
  return res;
}

std::vector<std::vector<std::uint32_t>> invariance_group(const std::string& generators,
                                                         const std::string& topology) {
  Topology topo = Topology::parse(topology);
  return invariance_group(generators, topo, graph_of(topo));
}

SynthQuery synth_query_text(const SynthOptions& o, unsigned steps, smt::Answer expected) {
  Kind k = kind_of(o.collective);
  Topology topo = Topology::parse(o.topology);
  Graph g = graph_of(topo);
  SynthQuery q;
  q.text = certificate(o, topo, g, k, steps, expected);
  if (q.text.empty()) {
    q.refused = true;
    q.reason = "refused by the size cap (--max-terms)";
  }
  return q;
}

}  // namespace collv
