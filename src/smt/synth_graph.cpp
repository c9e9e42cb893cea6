// Schedule synthesis: the collective's kind, the processor graph with its hop distances, the
// Cayley structure of star and hypercube graphs, and the invariance groups of --invariant
// (synth_detail.hpp).
#include <algorithm>
#include <charconv>
#include <deque>
#include <set>
#include <stdexcept>

#include <fmt/format.h>

#include "smt/synth_detail.hpp"
#include "util/deadline.hpp"
#include "util/error.hpp"
#include "util/memory.hpp"
#include "util/text.hpp"

namespace collv::synth_detail {

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

namespace {

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

}  // namespace

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

}  // namespace collv::synth_detail
