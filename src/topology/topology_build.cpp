// Building each family's adjacency (CSR) and Cartesian products.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <numeric>
#include <stdexcept>
#include <vector>

#include "topology/topology.hpp"
#include "topology/topology_impl.hpp"
#include "util/deadline.hpp"
#include "util/memory.hpp"

namespace collv {

namespace {
std::atomic<std::uint64_t> g_implicit_star_n{kImplicitStarN};
}  // namespace
std::uint64_t implicit_star_n() { return g_implicit_star_n.load(std::memory_order_relaxed); }
void Topology::compute_stars_from(int n) {
  g_implicit_star_n.store(static_cast<std::uint64_t>(std::clamp<int>(n, 2, kImplicitStarN)),
                          std::memory_order_relaxed);
}
namespace {

using Impl = Topology::Impl;

// Appends node after node; each node's links must be pushed in increasing link-number order.
class CsrBuilder {
 public:
  CsrBuilder(Impl& t, std::size_t nodes, std::size_t entries_hint) : t_(t) {
    // Checked before anything is allocated: the offsets and the link table, twice (finish()'s
    // shrink_to_fit copies a table that was reserved larger than it grew).
    require_memory(
        sat_add(sat_mul(nodes + 1, sizeof(std::uint32_t)), sat_mul(2 * sizeof(Link), entries_hint)),
        "building " + t.spec);
    t_.n_nodes = nodes;
    t_.offsets.reserve(nodes + 1);
    t_.offsets.push_back(0);
    t_.adj.reserve(entries_hint);
  }
  void push(std::uint64_t to, int number) {
    t_.adj.push_back(Link{static_cast<NodeId>(to), number});
  }
  void end_node() {
    t_.offsets.push_back(static_cast<std::uint32_t>(t_.adj.size()));
    if ((t_.offsets.size() & 0xFFFF) == 0) check_deadline("building " + t_.spec);
  }

  void finish() {
    if (t_.offsets.size() != t_.n_nodes + 1) throw std::logic_error("CsrBuilder: node count");
    t_.n_links = t_.adj.size() / 2;
    bool uniform = true;
    std::uint32_t d0 = t_.n_nodes > 0 ? t_.offsets[1] - t_.offsets[0] : 0;
    for (std::size_t v = 0; v < t_.n_nodes && uniform; ++v) {
      uniform = (t_.offsets[v + 1] - t_.offsets[v]) == d0;
    }
    std::size_t mn = SIZE_MAX, mx = 0;
    for (std::size_t v = 0; v < t_.n_proc; ++v) {
      std::size_t d = t_.offsets[v + 1] - t_.offsets[v];
      mn = std::min(mn, d);
      mx = std::max(mx, d);
    }
    t_.min_deg = t_.n_proc ? mn : 0;
    t_.max_deg = mx;
    if (uniform) {
      t_.uniform = true;
      t_.uniform_degree = d0;
      std::vector<std::uint32_t>().swap(t_.offsets);
      // Star (2..n) and hypercube (0..d-1) number every node's links first, first+1, ...: then
      // neighbor(v, k) is one array access, which the executor does for every send and receive.
      bool dense = d0 > 0;
      int first = dense ? t_.adj[0].number : 0;
      for (std::size_t e = 0; e < t_.adj.size() && dense; ++e)
        dense = t_.adj[e].number == first + static_cast<int>(e % d0);
      if (dense) t_.dense_first_number = first;
    }
    t_.adj.shrink_to_fit();
  }

 private:
  Impl& t_;
};

// One dimension of a ring/torus (cyclic) or line/mesh (acyclic) of n positions: the neighbours
// of position i as (position, +1 side?) pairs in link-number order (-1 side first).
// A cycle of 2 is a single link (like a line of 2); a cycle of 1 has no links.
template <typename F>
void dim_neighbors(std::uint64_t i, std::uint64_t n, bool cyclic, F&& f) {
  bool wrap = cyclic && n >= 3;
  if (i > 0) {
    f(i - 1, false);
  } else if (wrap) {
    f(n - 1, false);
  }
  if (i + 1 < n) {
    f(i + 1, true);
  } else if (wrap) {
    f(0, true);
  }
}

void build_grid(Impl& t, std::uint64_t rows, std::uint64_t cols, bool cyclic) {
  std::size_t n = rows * cols;
  CsrBuilder b(t, n, 4 * n);
  for (std::uint64_t r = 0; r < rows; ++r) {
    for (std::uint64_t c = 0; c < cols; ++c) {
      dim_neighbors(c, cols, cyclic,
                    [&](std::uint64_t c2, bool plus) { b.push(r * cols + c2, plus ? 1 : 0); });
      dim_neighbors(r, rows, cyclic,
                    [&](std::uint64_t r2, bool plus) { b.push(r2 * cols + c, plus ? 3 : 2); });
      b.end_node();
    }
  }
  b.finish();
}

// Lexicographic rank via the Lehmer code; bit counts come from a table (n <= 10 here, since
// 11! exceeds the node limit), which is much faster than std::popcount without -mpopcnt.
struct BitCounts {
  std::array<std::uint8_t, 1024> c{};
  BitCounts() {
    for (std::size_t i = 1; i < c.size(); ++i) c[i] = static_cast<std::uint8_t>(c[i / 2] + (i & 1));
  }
};

std::uint64_t star_rank_fast(const int* p, int n, const std::uint64_t* fact, const BitCounts& bc) {
  std::uint32_t used = 0;
  std::uint64_t r = 0;
  for (int i = 0; i < n; ++i) {
    std::uint32_t bit = std::uint32_t{1} << (p[i] - 1);
    r += std::uint64_t{bc.c[(bit - 1) & ~used & 1023u]} * fact[n - 1 - i];
    used |= bit;
  }
  return r;
}

void build_star(Impl& t, int n) {
  if (n > 10) throw std::logic_error("build_star: n > 10 exceeds the node limit");
  const BitCounts bc;
  std::array<std::uint64_t, 21> fact{};
  fact[0] = 1;
  for (int i = 1; i <= 20; ++i) fact[i] = fact[i - 1] * static_cast<std::uint64_t>(i);
  std::size_t nodes = fact[n];
  CsrBuilder b(t, nodes, nodes * static_cast<std::size_t>(n - 1));
  std::vector<int> p(n);
  std::iota(p.begin(), p.end(), 1);
  do {
    for (int k = 1; k < n; ++k) {
      std::swap(p[0], p[k]);
      b.push(star_rank_fast(p.data(), n, fact.data(), bc), k + 1);
      std::swap(p[0], p[k]);
    }
    b.end_node();
  } while (std::next_permutation(p.begin(), p.end()));
  b.finish();
}

void build_debruijn(Impl& t, std::uint64_t d) {
  std::uint64_t n = std::uint64_t{1} << d;
  CsrBuilder b(t, n, 4 * n);
  for (std::uint64_t x = 0; x < n; ++x) {
    std::array<std::uint64_t, 4> nb = {(2 * x) % n, (2 * x + 1) % n, x >> 1, (x >> 1) | (n >> 1)};
    std::sort(nb.begin(), nb.end());
    int idx = 0;
    for (std::size_t i = 0; i < nb.size(); ++i) {
      if (nb[i] == x || (i > 0 && nb[i] == nb[i - 1])) continue;
      b.push(nb[i], idx++);
    }
    b.end_node();
  }
  b.finish();
}

}  // namespace

std::shared_ptr<Impl> build_family(Family fam, std::uint64_t a, std::uint64_t bsz) {
  auto t = std::make_shared<Impl>();
  t->fam = fam;
  t->a = a;
  t->b = bsz;
  t->n_proc = 0;
  switch (fam) {
    case Family::Ring:
    case Family::Line: {
      bool ring = fam == Family::Ring;
      t->family = ring ? "ring" : "line";
      t->spec = fmt::format("{}:{}", t->family, a);
      t->n_proc = a;
      t->number_space = 2;
      t->transitive = ring;
      CsrBuilder b(*t, a, 2 * a);
      for (std::uint64_t v = 0; v < a; ++v) {
        dim_neighbors(v, a, ring, [&](std::uint64_t w, bool plus) { b.push(w, plus ? 1 : 0); });
        b.end_node();
      }
      b.finish();
      break;
    }
    case Family::Mesh:
    case Family::Torus: {
      bool torus = fam == Family::Torus;
      t->family = torus ? "torus" : "mesh";
      t->spec = fmt::format("{}:{}x{}", t->family, a, bsz);
      t->n_proc = a * bsz;
      t->number_space = 4;
      t->transitive = torus;
      t->params["rows"] = static_cast<std::int64_t>(a);
      t->params["cols"] = static_cast<std::int64_t>(bsz);
      build_grid(*t, a, bsz, torus);
      break;
    }
    case Family::Hypercube: {
      t->family = "hypercube";
      t->spec = fmt::format("hypercube:{}", a);
      std::uint64_t n = std::uint64_t{1} << a;
      t->n_proc = n;
      t->number_space = static_cast<int>(a);
      t->transitive = true;
      t->params["d"] = static_cast<std::int64_t>(a);
      CsrBuilder b(*t, n, n * a);
      for (std::uint64_t v = 0; v < n; ++v) {
        for (std::uint64_t i = 0; i < a; ++i)
          b.push(v ^ (std::uint64_t{1} << i), static_cast<int>(i));
        b.end_node();
      }
      b.finish();
      break;
    }
    case Family::Tree: {
      // Heap numbering h: root 1, children 2h and 2h+1, leaves P..2P-1.
      // Leaf heap h -> processor id h - P; internal heap h -> switch id P + h - 1.
      t->family = "tree";
      t->spec = fmt::format("tree:{}", a);
      std::uint64_t p = a;
      t->n_proc = p;
      t->number_space = 3;
      auto id_of = [p](std::uint64_t h) { return h >= p ? h - p : p + h - 1; };
      CsrBuilder b(*t, 2 * p - 1, 2 * (2 * p - 2));
      auto add_node = [&](std::uint64_t h) {
        if (h > 1) b.push(id_of(h / 2), 0);
        if (h < p) {
          b.push(id_of(2 * h), 1);
          b.push(id_of(2 * h + 1), 2);
        }
        b.end_node();
      };
      for (std::uint64_t h = p; h < 2 * p; ++h) add_node(h);  // processors 0..P-1
      for (std::uint64_t h = 1; h < p; ++h) add_node(h);      // switches P..2P-2
      b.finish();
      break;
    }
    case Family::Star: {
      t->family = "star";
      t->spec = fmt::format("star:{}", a);
      t->number_space = static_cast<int>(a) + 1;
      t->transitive = true;
      t->params["n"] = static_cast<std::int64_t>(a);
      // n_proc must be set before finish() computes degree statistics.
      std::uint64_t f = 1;
      for (std::uint64_t i = 2; i <= a; ++i) f *= i;
      t->n_proc = f;
      if (a >= implicit_star_n()) {  // no link table: links computed (topology.cpp)
        t->implicit_star = true;
        t->n_nodes = f;
        t->n_links = f * (a - 1) / 2;
        t->uniform = true;
        t->uniform_degree = static_cast<std::uint32_t>(a - 1);
        t->dense_first_number = 2;
        t->min_deg = t->max_deg = a - 1;
        break;
      }
      build_star(*t, static_cast<int>(a));
      break;
    }
    case Family::Complete: {
      t->family = "complete";
      t->spec = fmt::format("complete:{}", a);
      t->n_proc = a;
      t->number_space = a > 1 ? static_cast<int>(a - 1) : 0;
      t->transitive = true;
      CsrBuilder b(*t, a, a * (a - 1));
      for (std::uint64_t v = 0; v < a; ++v) {
        int idx = 0;
        for (std::uint64_t w = 0; w < a; ++w) {
          if (w != v) b.push(w, idx++);
        }
        b.end_node();
      }
      b.finish();
      break;
    }
    case Family::DeBruijn: {
      t->family = "debruijn";
      t->spec = fmt::format("debruijn:{}", a);
      t->n_proc = std::uint64_t{1} << a;
      t->number_space = 4;
      t->params["d"] = static_cast<std::int64_t>(a);
      build_debruijn(*t, a);
      break;
    }
    case Family::Product:
    case Family::Custom:
      throw std::logic_error("build_family: not a generated family");
  }
  t->params["p"] = static_cast<std::int64_t>(t->n_proc);
  return t;
}

std::shared_ptr<Impl> build_product(std::shared_ptr<const Impl> left,
                                    std::shared_ptr<const Impl> right) {
  if (left->n_proc != left->n_nodes || right->n_proc != right->n_nodes) {
    throw SpecError(
        fmt::format("cannot build '{}*{}': products of networks with switch nodes are "
                    "not supported",
                    left->spec, right->spec));
  }
  auto t = std::make_shared<Impl>();
  t->fam = Family::Product;
  t->family = "product";
  t->spec = left->spec + "*" + right->spec;
  const std::size_t na = left->n_nodes, nb = right->n_nodes;
  t->n_proc = na * nb;
  t->number_space = left->number_space + right->number_space;
  t->transitive = left->transitive && right->transitive;
  const int off = left->number_space;
  CsrBuilder b(*t, na * nb, na * right->adj.size() + nb * left->adj.size());
  for (std::size_t x = 0; x < na; ++x) {
    auto lx = left->links_of(static_cast<NodeId>(x));
    for (std::size_t y = 0; y < nb; ++y) {
      for (const Link& l : lx) b.push(std::uint64_t{l.to} * nb + y, l.number);
      for (const Link& l : right->links_of(static_cast<NodeId>(y))) {
        b.push(x * nb + l.to, l.number + off);
      }
      b.end_node();
    }
  }
  b.finish();
  t->params["p"] = static_cast<std::int64_t>(t->n_proc);
  t->left = std::move(left);
  t->right = std::move(right);
  return t;
}

}  // namespace collv
