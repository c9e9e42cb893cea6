// Topology queries: links, directions, routes, labels, degree/diameter, DOT output.
#include "topology/topology.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <functional>
#include <numbers>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "topology/topology_impl.hpp"
#include "util/memory.hpp"

namespace collv {
namespace {

using Impl = Topology::Impl;

void check_node(const Impl& t, NodeId v, const char* what) {
  if (v >= t.n_nodes) {
    throw std::out_of_range(
        fmt::format("{}: node {} out of range for {} ({} nodes)", what, v, t.spec, t.n_nodes));
  }
}

// Steps from i to j on a dimension of n positions: +1 or -1 each step.
// cyclic: the shorter way, tie +1; otherwise the only way.
void walk_dim(std::uint64_t i, std::uint64_t j, std::uint64_t n, bool cyclic,
              const std::function<void(std::uint64_t)>& visit) {
  if (i == j) return;
  bool plus;
  if (cyclic) {
    std::uint64_t fwd = (j + n - i) % n;
    plus = fwd <= n - fwd;
  } else {
    plus = j > i;
  }
  while (i != j) {
    i = plus ? (i + 1) % n : (i + n - 1) % n;
    visit(i);
  }
}

std::optional<std::uint64_t> parse_id(std::string_view s) {
  if (s.empty() || s.size() > 12) return std::nullopt;
  if (s.size() > 1 && s[0] == '0') return std::nullopt;
  std::uint64_t v = 0;
  for (char ch : s) {
    if (ch < '0' || ch > '9') return std::nullopt;
    v = v * 10 + static_cast<std::uint64_t>(ch - '0');
  }
  return v;
}

std::uint64_t factorial(int n) {
  std::uint64_t f = 1;
  for (int i = 2; i <= n; ++i) f *= static_cast<std::uint64_t>(i);
  return f;
}

// Maximum hop distance from s to any processor (BFS over all nodes).
std::size_t eccentricity(const Impl& t, NodeId s, std::vector<std::uint32_t>& dist,
                         std::vector<NodeId>& queue) {
  constexpr std::uint32_t kUnseen = UINT32_MAX;
  std::fill(dist.begin(), dist.end(), kUnseen);
  queue.clear();
  dist[s] = 0;
  queue.push_back(s);
  std::size_t ecc = 0;
  for (std::size_t head = 0; head < queue.size(); ++head) {
    NodeId v = queue[head];
    std::uint32_t dv = dist[v];
    if (v < t.n_proc) ecc = std::max<std::size_t>(ecc, dv);
    for (const Link& l : t.links_of(v)) {
      if (dist[l.to] == kUnseen) {
        dist[l.to] = dv + 1;
        queue.push_back(l.to);
      }
    }
  }
  if (queue.size() != t.n_nodes) throw std::logic_error("topology " + t.spec + " is not connected");
  return ecc;
}

// Work budget (node + entry visits) for BFS from every processor of a non-vertex-transitive
// network; beyond it the diameter comes from the family's closed form.
constexpr std::uint64_t kBfsBudget = std::uint64_t{1} << 30;

}  // namespace

// ---------------------------------------------------------------- Impl

std::size_t closed_form_diameter(const Impl& t) {
  switch (t.fam) {
    case Family::Ring:
      return t.a / 2;
    case Family::Line:
      return t.a - 1;
    case Family::Mesh:
      return (t.a - 1) + (t.b - 1);
    case Family::Torus:
      return t.a / 2 + t.b / 2;
    case Family::Hypercube:
      return t.a;
    case Family::Tree:
      return 2 * static_cast<std::size_t>(std::countr_zero(t.a));
    case Family::Star:
      return 3 * (t.a - 1) / 2;
    case Family::Complete:
      return t.a > 1 ? 1 : 0;
    case Family::DeBruijn:
      return t.a;
    case Family::Product:
      return t.left->diameter() + t.right->diameter();
    case Family::Custom:  // small by construction: BFS from every processor always runs
      break;
  }
  return 0;
}

std::size_t Impl::diameter() const {
  std::call_once(diameter_once, [this] {
    if (n_nodes == 0) return;
    if (implicit_star || implicit_complete) {
      diameter_value = closed_form_diameter(*this);
      return;
    }
    std::vector<std::uint32_t> dist(n_nodes);
    std::vector<NodeId> queue;
    queue.reserve(n_nodes);
    if (transitive) {
      diameter_value = eccentricity(*this, 0, dist, queue);
      return;
    }
    std::uint64_t work = static_cast<std::uint64_t>(n_proc) * (n_nodes + adj.size());
    if (work > kBfsBudget && fam != Family::Custom) {
      diameter_value = closed_form_diameter(*this);
      return;
    }
    std::size_t d = 0;
    for (std::size_t s = 0; s < n_proc; ++s) {
      d = std::max(d, eccentricity(*this, static_cast<NodeId>(s), dist, queue));
    }
    diameter_value = d;
  });
  return diameter_value;
}

// A shortest path from `from` to `to`, lowest ids first, appended to r after `from`; through
// processors only when `via_processors` (switches always forward). No path: r gets `to` alone.
void Impl::bfs_route(NodeId from, NodeId to, bool via_processors, std::vector<NodeId>& r) const {
  std::vector<NodeId> parent(n_nodes, UINT32_MAX);
  std::vector<NodeId> queue{from};
  parent[from] = from;
  for (std::size_t head = 0; head < queue.size() && parent[to] == UINT32_MAX; ++head) {
    NodeId v = queue[head];
    if (!via_processors && v != from && v < n_proc) continue;
    for (const Link& l : links_of(v)) {
      if (parent[l.to] == UINT32_MAX) {
        parent[l.to] = v;
        queue.push_back(l.to);
      }
    }
  }
  if (parent[to] == UINT32_MAX) {
    r.push_back(to);
    return;
  }
  std::vector<NodeId> back;
  for (NodeId v = to; v != from; v = parent[v]) back.push_back(v);
  r.insert(r.end(), back.rbegin(), back.rend());
}

std::vector<NodeId> Impl::route(NodeId from, NodeId to) const {
  std::vector<NodeId> r{from};
  if (from == to) return r;
  switch (fam) {
    case Family::Ring:
    case Family::Line:
      walk_dim(from, to, a, fam == Family::Ring,
               [&](std::uint64_t i) { r.push_back(static_cast<NodeId>(i)); });
      break;
    case Family::Mesh:
    case Family::Torus: {
      bool cyc = fam == Family::Torus;
      std::uint64_t r0 = from / b, c0 = from % b, r1 = to / b, c1 = to % b;
      walk_dim(c0, c1, b, cyc,
               [&](std::uint64_t c) { r.push_back(static_cast<NodeId>(r0 * b + c)); });
      walk_dim(r0, r1, a, cyc,
               [&](std::uint64_t rr) { r.push_back(static_cast<NodeId>(rr * b + c1)); });
      break;
    }
    case Family::Hypercube: {
      NodeId v = from;
      while (v != to) {
        NodeId diff = v ^ to;
        v ^= diff & (~diff + 1);  // lowest differing bit
        r.push_back(v);
      }
      break;
    }
    case Family::Tree: {
      const std::uint64_t p = a;
      auto heap = [p](NodeId v) -> std::uint64_t { return v < p ? v + p : v - p + 1; };
      auto id = [p](std::uint64_t h) { return static_cast<NodeId>(h >= p ? h - p : p + h - 1); };
      std::uint64_t ha = heap(from), hb = heap(to);
      std::vector<NodeId> down;
      while (ha != hb) {
        if (std::bit_width(ha) >= std::bit_width(hb)) {
          ha /= 2;
          r.push_back(id(ha));
        } else {
          down.push_back(id(hb));
          hb /= 2;
        }
      }
      r.insert(r.end(), down.rbegin(), down.rend());
      break;
    }
    case Family::Star:
    case Family::Complete:
      r.push_back(to);
      break;
    case Family::DeBruijn:  // links are sorted by id: numbers are neighbour indices
      bfs_route(from, to, true, r);
      break;
    case Family::Custom:  // processors do not forward; no path: {from, to}, route checking reports
                          // it
      bfs_route(from, to, false, r);
      break;
    case Family::Product: {
      const std::size_t nb = right->n_nodes;
      NodeId xa = static_cast<NodeId>(from / nb), ya = static_cast<NodeId>(from % nb);
      NodeId xb = static_cast<NodeId>(to / nb), yb = static_cast<NodeId>(to % nb);
      auto ra = left->route(xa, xb);
      for (std::size_t i = 1; i < ra.size(); ++i) r.push_back(static_cast<NodeId>(ra[i] * nb + ya));
      auto rb = right->route(ya, yb);
      for (std::size_t i = 1; i < rb.size(); ++i) r.push_back(static_cast<NodeId>(xb * nb + rb[i]));
      break;
    }
  }
  return r;
}

std::string Impl::label(NodeId v) const {
  switch (fam) {
    case Family::Hypercube: {
      if (a == 0) return "0";
      std::string s(a, '0');
      for (std::uint64_t i = 0; i < a; ++i) {
        if ((v >> i) & 1) s[a - 1 - i] = '1';
      }
      return s;
    }
    case Family::Star: {
      auto perm = star_unrank(v, static_cast<int>(a));
      std::string s;
      for (std::size_t i = 0; i < perm.size(); ++i) {
        if (a >= 10 && i > 0) s += ',';
        s += std::to_string(perm[i]);
      }
      return s;
    }
    case Family::Tree:
    case Family::Custom:
      if (v >= n_proc) return fmt::format("s{}", v - n_proc);
      return std::to_string(v);
    case Family::Product: {
      const std::size_t nb = right->n_nodes;
      return fmt::format("({},{})", left->label(static_cast<NodeId>(v / nb)),
                         right->label(static_cast<NodeId>(v % nb)));
    }
    default:
      return std::to_string(v);
  }
}

std::optional<NodeId> Impl::node_of_label(std::string_view s) const {
  switch (fam) {
    case Family::Hypercube: {
      std::size_t len = a == 0 ? 1 : a;
      if (s.size() != len) return std::nullopt;
      NodeId v = 0;
      for (char ch : s) {
        if (ch != '0' && ch != '1') return std::nullopt;
        v = (v << 1) | static_cast<NodeId>(ch - '0');
      }
      if (v >= n_nodes) return std::nullopt;
      return v;
    }
    case Family::Star: {
      const int n = static_cast<int>(a);
      std::vector<int> perm;
      if (s.find(',') != std::string_view::npos) {
        std::size_t start = 0;
        while (true) {
          auto comma = s.find(',', start);
          auto part = s.substr(start, comma == s.npos ? s.npos : comma - start);
          auto x = parse_id(part);
          if (!x || *x < 1 || *x > static_cast<std::uint64_t>(n)) return std::nullopt;
          perm.push_back(static_cast<int>(*x));
          if (comma == s.npos) break;
          start = comma + 1;
        }
      } else if (n < 10) {
        for (char ch : s) {
          if (ch < '1' || ch > '9') return std::nullopt;
          perm.push_back(ch - '0');
        }
      } else {
        return std::nullopt;
      }
      if (static_cast<int>(perm.size()) != n) return std::nullopt;
      std::vector<bool> seen(n + 1, false);
      for (int x : perm) {
        if (x < 1 || x > n || seen[x]) return std::nullopt;
        seen[x] = true;
      }
      return static_cast<NodeId>(star_rank(perm));
    }
    case Family::Tree:
    case Family::Custom:
      if (!s.empty() && s[0] == 's') {
        auto k = parse_id(s.substr(1));
        if (!k || *k + n_proc >= n_nodes) return std::nullopt;
        return static_cast<NodeId>(*k + n_proc);
      }
      [[fallthrough]];
    default: {
      if (fam == Family::Product) break;
      auto x = parse_id(s);
      if (!x || *x >= n_proc) return std::nullopt;
      return static_cast<NodeId>(*x);
    }
  }
  // Product "(x,y)": factor labels may contain commas, so try every split.
  if (s.size() < 5 || s.front() != '(' || s.back() != ')') return std::nullopt;
  std::string_view inner = s.substr(1, s.size() - 2);
  for (std::size_t i = inner.find(','); i != inner.npos; i = inner.find(',', i + 1)) {
    auto x = left->node_of_label(inner.substr(0, i));
    if (!x) continue;
    auto y = right->node_of_label(inner.substr(i + 1));
    if (!y) continue;
    return static_cast<NodeId>(std::size_t{*x} * right->n_nodes + *y);
  }
  return std::nullopt;
}

// ---------------------------------------------------------------- Topology

Topology::Topology(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}

const std::string& Topology::spec() const { return impl_->spec; }
const std::string& Topology::family() const { return impl_->family; }
std::size_t Topology::num_nodes() const { return impl_->n_nodes; }
std::size_t Topology::num_processors() const { return impl_->n_proc; }
std::size_t Topology::num_links() const { return impl_->n_links; }

NodeKind Topology::kind(NodeId v) const {
  check_node(*impl_, v, "kind");
  return v < impl_->n_proc ? NodeKind::Processor : NodeKind::Switch;
}

std::span<const Link> Topology::links(NodeId v) const {
  check_node(*impl_, v, "links");
  return impl_->links_of(v);
}

std::optional<NodeId> Topology::neighbor(NodeId v, int k) const {
  const Impl& t = *impl_;
  if (t.implicit_star) {
    check_node(t, v, "neighbor");
    if (k < 2 || k > static_cast<int>(t.a)) return std::nullopt;
    return star_neighbor_rank(v, static_cast<int>(t.a), k);
  }
  if (t.implicit_complete) {
    check_node(t, v, "neighbor");
    if (k < 0 || static_cast<std::uint64_t>(k) + 1 >= t.a) return std::nullopt;
    return static_cast<NodeId>(static_cast<NodeId>(k) < v ? k : k + 1);
  }
  if (t.dense_first_number && v < t.n_nodes) {
    auto i = static_cast<std::int64_t>(k) - *t.dense_first_number;
    if (i < 0 || i >= static_cast<std::int64_t>(t.uniform_degree)) return std::nullopt;
    return t.adj[std::size_t{v} * t.uniform_degree + static_cast<std::size_t>(i)].to;
  }
  auto ls = links(v);
  auto it = std::lower_bound(ls.begin(), ls.end(), k,
                             [](const Link& l, int num) { return l.number < num; });
  if (it != ls.end() && it->number == k) return it->to;
  return std::nullopt;
}

bool Topology::adjacent(NodeId a, NodeId b) const {
  if (a >= impl_->n_nodes || b >= impl_->n_nodes) [[unlikely]] {  // no call on the common path
    check_node(*impl_, a, "adjacent");
    check_node(*impl_, b, "adjacent");
  }
  if (impl_->fam == Family::Complete) return a != b;
  if (impl_->implicit_star) return star_adjacent_rank(a, b, static_cast<int>(impl_->a));
  auto la = impl_->links_of(a), lb = impl_->links_of(b);
  if (lb.size() < la.size()) {
    std::swap(la, lb);
    std::swap(a, b);
  }
  return std::any_of(la.begin(), la.end(), [b](const Link& l) { return l.to == b; });
}

const std::map<std::string, std::int64_t>& Topology::params() const { return impl_->params; }

bool Topology::links_symmetric() const {
  return impl_->fam == Family::Star || impl_->fam == Family::Hypercube;
}

bool Topology::has_directions() const {
  auto f = impl_->fam;
  return f == Family::Ring || f == Family::Line || f == Family::Mesh || f == Family::Torus;
}

std::optional<NodeId> Topology::direction(NodeId v, Direction dir) const {
  check_node(*impl_, v, "direction");
  const Impl& t = *impl_;
  auto step = [](std::uint64_t i, std::uint64_t n, bool plus) {
    return plus ? (i + 1) % n : (i + n - 1) % n;
  };
  switch (t.fam) {
    case Family::Ring:
    case Family::Line:
      if (dir == Direction::Left) return static_cast<NodeId>(step(v, t.a, false));
      if (dir == Direction::Right) return static_cast<NodeId>(step(v, t.a, true));
      return std::nullopt;
    case Family::Mesh:
    case Family::Torus: {
      std::uint64_t r = v / t.b, c = v % t.b;
      switch (dir) {
        case Direction::Left:
          c = step(c, t.b, false);
          break;
        case Direction::Right:
          c = step(c, t.b, true);
          break;
        case Direction::Up:
          r = step(r, t.a, false);
          break;
        case Direction::Down:
          r = step(r, t.a, true);
          break;
      }
      return static_cast<NodeId>(r * t.b + c);
    }
    default:
      return std::nullopt;
  }
}

std::vector<NodeId> Topology::route(NodeId a, NodeId b) const {
  check_node(*impl_, a, "route");
  check_node(*impl_, b, "route");
  return impl_->route(a, b);
}

std::string Topology::label(NodeId v) const {
  check_node(*impl_, v, "label");
  return impl_->label(v);
}

std::optional<NodeId> Topology::node_of_label(std::string_view label) const {
  return impl_->node_of_label(label);
}

std::size_t Topology::min_degree() const { return impl_->min_deg; }
std::size_t Topology::max_degree() const { return impl_->max_deg; }
std::uint32_t Topology::bandwidth(NodeId a, NodeId b) const {
  check_node(*impl_, a, "bandwidth");
  check_node(*impl_, b, "bandwidth");
  const Impl& t = *impl_;
  if (t.bw.empty()) return adjacent(a, b) ? 1 : 0;
  auto ls = t.links_of(a);
  for (std::size_t i = 0; i < ls.size(); ++i)
    if (ls[i].to == b) return t.bw[static_cast<std::size_t>(&ls[i] - t.adj.data())];
  return 0;
}

bool Topology::declares_bandwidth() const { return !impl_->bw.empty(); }

std::size_t Topology::diameter() const { return impl_->diameter(); }
bool Topology::vertex_transitive() const { return impl_->transitive; }

std::string Topology::to_dot() const {
  const Impl& t = *impl_;
  // About 40 bytes a node line and 24 a link line (the text, with the string's doubling),
  // checked before the text is built: star:12's drawing would take tens of GiB.
  require_memory(sat_add(sat_mul(t.n_nodes, 80), sat_mul(t.n_links, 48)),
                 "the DOT drawing of " + t.spec);
  std::string out;
  out += fmt::format("// collv topology {}: {} nodes, {} links\n", t.spec, t.n_nodes, t.n_links);
  out += "graph collv {\n";
  out += "  node [shape=circle, fontsize=10];\n";
  // neato-friendly positions for the families with an obvious drawing.
  auto pos = [&](NodeId v) -> std::string {
    switch (t.fam) {
      case Family::Ring: {
        double ang = 2.0 * std::numbers::pi * static_cast<double>(v) / static_cast<double>(t.a);
        double rad = std::max(1.0, static_cast<double>(t.a) / (2.0 * std::numbers::pi)) * 0.9;
        return fmt::format(", pos=\"{:.3f},{:.3f}!\"", rad * std::sin(ang), rad * std::cos(ang));
      }
      case Family::Line:
        return fmt::format(", pos=\"{},0!\"", v);
      case Family::Mesh:
      case Family::Torus:
        return fmt::format(", pos=\"{},{}!\"", v % t.b, -static_cast<std::int64_t>(v / t.b));
      default:
        return "";
    }
  };
  for (NodeId v = 0; v < t.n_nodes; ++v) {
    bool sw = v >= t.n_proc;
    out +=
        fmt::format("  {} [label=\"{}\"{}{}];\n", v, t.label(v), sw ? ", shape=box" : "", pos(v));
  }
  for (NodeId v = 0; v < t.n_nodes; ++v) {
    for (const Link& l : t.links_of(v)) {
      if (l.to <= v) continue;
      if (!t.bw.empty()) {  // listed: the bandwidth each way is what a reader needs
        std::uint32_t f = bandwidth(v, l.to), b = bandwidth(l.to, v);
        out += f == b ? fmt::format("  {} -- {} [label=\"bw {}\"];\n", v, l.to, f)
                      : fmt::format("  {} -- {} [label=\"bw {}/{}\"];\n", v, l.to, f, b);
        continue;
      }
      // The number seen from the other end.
      int back = -1;
      if (t.fam == Family::Complete) {
        back = static_cast<int>(v);  // v < l.to: v is at index v in l.to's list
      } else {
        for (const Link& r : t.links_of(l.to)) {
          if (r.to == v) {
            back = r.number;
            break;
          }
        }
      }
      if (back == l.number) {
        out += fmt::format("  {} -- {} [label=\"{}\"];\n", v, l.to, l.number);
      } else {
        out += fmt::format("  {} -- {} [taillabel=\"{}\", headlabel=\"{}\"];\n", v, l.to, l.number,
                           back);
      }
    }
  }
  out += "}\n";
  return out;
}

// ---------------------------------------------------------------- star ranks

std::uint64_t star_rank(std::span<const int> perm) {
  const int n = static_cast<int>(perm.size());
  if (n > 20) throw std::invalid_argument("star_rank: permutations of more than 20 symbols");
  std::uint64_t used = 0, r = 0;
  for (int i = 0; i < n; ++i) {
    int x = perm[i];
    if (x < 1 || x > n || ((used >> (x - 1)) & 1)) {
      throw std::invalid_argument("star_rank: not a permutation of 1..n");
    }
    std::uint64_t bit = std::uint64_t{1} << (x - 1);
    r += static_cast<std::uint64_t>(std::popcount((bit - 1) & ~used)) * factorial(n - 1 - i);
    used |= bit;
  }
  return r;
}

namespace {

constexpr std::uint32_t kFact32[13] = {1,    1,     2,      6,       24,       120,      720,
                                       5040, 40320, 362880, 3628800, 39916800, 479001600};

// Bits set below each of 12 positions, by table (no popcount instruction assumed).
struct Ones12 {
  std::uint8_t c[4096];
  Ones12() {
    c[0] = 0;
    for (int i = 1; i < 4096; ++i) c[i] = static_cast<std::uint8_t>(c[i / 2] + (i & 1));
  }
};
const Ones12& ones12() {
  static const Ones12 t;
  return t;
}

// The Lehmer code of rank v (digit i has radix n - i), from the least significant digit: q mod 2,
// (q / 2) mod 3, ... with divisors known at compile time, so the compiler multiplies instead of
// dividing (eleven hardware divisions by factorials made a star:11 neighbour cost about 100 ns).
template <int N>
void lehmer_fixed(std::uint32_t q, int* code) {
  [&]<int... R>(std::integer_sequence<int, R...>) {
    ((code[N - 1 - R] = static_cast<int>(q % (R + 1)), q /= (R + 1)), ...);
  }
  (std::make_integer_sequence<int, N>{});
}

void lehmer(std::uint32_t v, int n, int* code) {
  switch (n) {
    case 12:
      return lehmer_fixed<12>(v, code);
    case 11:
      return lehmer_fixed<11>(v, code);
    case 10:
      return lehmer_fixed<10>(v, code);
    case 9:
      return lehmer_fixed<9>(v, code);
    case 8:
      return lehmer_fixed<8>(v, code);
    default:
      for (int i = 0; i < n; ++i) {
        const std::uint32_t f = kFact32[n - 1 - i];
        code[i] = static_cast<int>(v / f);
        v -= static_cast<std::uint32_t>(code[i]) * f;
      }
  }
}

// The permutation (values 0..n-1) of lexicographic rank v.
void unrank32(std::uint32_t v, int n, int* perm) {
  int code[12];
  lehmer(v, n, code);
  // The values not used yet, ascending, one per 4-bit digit: taking the d-th is a shift, without
  // the data-dependent loop (and its mispredicted branches) of dropping d set bits one by one.
  std::uint64_t free = 0xBA9876543210ULL;
  for (int i = 0; i < n; ++i) {
    const unsigned sh = 4 * static_cast<unsigned>(code[i]);
    perm[i] = static_cast<int>((free >> sh) & 0xF);
    const std::uint64_t low = free & ((std::uint64_t{1} << sh) - 1);
    free = low | ((free >> (sh + 4)) << sh);
  }
}

std::uint32_t rank32(const int* perm, int n) {
  const auto& ones = ones12();
  std::uint32_t used = 0, r = 0;
  for (int i = 0; i < n; ++i) {
    const std::uint32_t bit = std::uint32_t{1} << perm[i];
    r += ones.c[(bit - 1) & ~used] * kFact32[n - 1 - i];
    used |= bit;
  }
  return r;
}

}  // namespace

NodeId star_neighbor_rank(NodeId v, int n, int k) {
  int perm[12] = {};
  unrank32(v, n, perm);
  std::swap(perm[0], perm[k - 1]);
  return rank32(perm, n);
}

std::vector<NodeId> Topology::star_rows(NodeId lo, NodeId hi) const {
  const Impl& t = *impl_;
  if (!t.implicit_star || t.a >= kImplicitStarN || lo >= hi || hi > t.n_nodes) return {};
  const int n = static_cast<int>(t.a);
  const std::size_t deg = static_cast<std::size_t>(n - 1);
  require_memory(sat_mul(std::uint64_t{hi - lo}, deg * sizeof(NodeId)),
                 fmt::format("the links of nodes {}..{} of {}", lo, hi - 1, t.spec));
  std::vector<NodeId> rows(std::size_t{hi - lo} * deg);
  int perm[12] = {};
  unrank32(lo, n, perm);
  std::size_t at = 0;
  for (NodeId v = lo; v < hi; ++v) {
    for (std::size_t k = 1; k <= deg; ++k) {
      std::swap(perm[0], perm[k]);
      rows[at++] = rank32(perm, n);
      std::swap(perm[0], perm[k]);
    }
    std::next_permutation(perm, perm + n);  // lexicographic order is node order
  }
  return rows;
}

bool star_adjacent_rank(NodeId a, NodeId b, int n) {
  int pa[12] = {}, pb[12] = {};
  unrank32(a, n, pa);
  unrank32(b, n, pb);
  int diff = -1;
  for (int i = 1; i < n; ++i) {
    if (pa[i] == pb[i]) continue;
    if (diff >= 0) return false;
    diff = i;
  }
  return diff > 0 && pa[0] == pb[diff] && pb[0] == pa[diff];
}

void Impl::refuse_links() const {
  if (implicit_complete)
    throw SpecError(fmt::format(
        "{} has {} links; collv computes them as they are needed and does not list them "
        "(commands that list links need a complete graph of at most {} processors)",
        spec, n_links, 11585));  // 11585 * 11584 <= kMaxAdjacency
  throw SpecError(fmt::format(
      "{} has {} nodes; collv computes its links as they are needed and does not list them "
      "(commands that draw, synthesize or prove on it need a star of n <= {})",
      spec, n_nodes, kImplicitStarN - 1));
}

std::vector<int> star_unrank(std::uint64_t rank, int n) {
  if (n < 0 || n > 20) throw std::invalid_argument("star_unrank: n must be in 0..20");
  if (rank >= factorial(n)) throw std::out_of_range("star_unrank: rank >= n!");
  std::vector<int> avail(n), perm;
  for (int i = 0; i < n; ++i) avail[i] = i + 1;
  perm.reserve(n);
  for (int i = 0; i < n; ++i) {
    std::uint64_t f = factorial(n - 1 - i);
    std::uint64_t idx = rank / f;
    rank %= f;
    perm.push_back(avail[idx]);
    avail.erase(avail.begin() + static_cast<std::ptrdiff_t>(idx));
  }
  return perm;
}

}  // namespace collv
