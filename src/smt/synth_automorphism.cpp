// Automorphisms of a processor graph, found by backtracking: whether every arc lies in one orbit
// (the symmetry breaking of the CNF synthesis, synth_cnf.hpp).
#include <deque>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "smt/synth_cnf.hpp"

namespace collv::sat {

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

}  // namespace collv::sat
