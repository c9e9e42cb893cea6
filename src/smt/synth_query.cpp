// Schedule synthesis: the Z3 question. The Builder states SCCL-style Boolean encodings of
// broadcast, gossip and allreduce, general or uniform, pruned by hop distances or with the pruning
// proved inside (Prune); the certificate is the unpruned query with that proof.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>

#include <fmt/format.h>

#include "smt/synth_detail.hpp"
#include "util/deadline.hpp"
#include "util/error.hpp"
#include "util/memory.hpp"
#include "util/read_file.hpp"

namespace collv::synth_detail {

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

namespace {

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
          // append, not += " " + ...: GCC 12 warns (-Wrestrict) on the temporary in this file
          std::string out = "((_ at-most 1)", in = "((_ at-most 1)";
          for (NodeId v : g_.nbr[u]) {
            out.append(" ").append(mvar(u, v, t));
            in.append(" ").append(mvar(v, u, t));
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
          am.append(" ").append(lvar(t, k));
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
      for (NodeId c : chunks) goal.append(" ").append(H(v, c, T_));
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
        am.append(" ").append(lvar(t, k));
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

}  // namespace

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

Attempt attempt_z3(const SynthOptions& o, const Topology& topo, const Graph& g, Kind k,
                   unsigned T) {
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

}  // namespace collv::synth_detail
