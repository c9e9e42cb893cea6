// Node positions for each topology family (see render.hpp and docs/rendering.md).
#include <algorithm>
#include <cmath>
#include <numbers>

#include <fmt/format.h>

#include "render/render.hpp"

namespace collv {

namespace {

constexpr double kPi = std::numbers::pi;

std::vector<std::string> split_product(const std::string& spec) {
  std::vector<std::string> out;
  std::size_t a = 0;
  for (;;) {
    auto b = spec.find('*', a);
    out.push_back(spec.substr(a, b == std::string::npos ? std::string::npos : b - a));
    if (b == std::string::npos) break;
    a = b + 1;
  }
  return out;
}

// Nodes on a circle, node 0 at the top, increasing clockwise (as the book draws rings).
void circle(NodeLayout& L, std::size_t n, double u) {
  double r = n <= 1 ? 0 : std::max(u * 0.8, u / (2 * std::sin(kPi / static_cast<double>(n))));
  L.pos.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    double a = kPi / 2 - 2 * kPi * static_cast<double>(i) / static_cast<double>(n);
    L.pos[i] = {r * std::cos(a), r * std::sin(a)};
  }
}

// The star graph: the first three positions of a permutation pick a corner of a hexagon (the
// 6-cycle of links 2 and 3), each further position k picks one of k+1 sub-stars, placed on a
// 2x2 grid (four S3 in S4) or a circle (k+1 >= 5).
void star_layout(NodeLayout& L, const Topology& t, double u) {
  int n = static_cast<int>(t.params().at("n"));
  std::size_t N = t.num_nodes();
  L.pos.assign(N, {0, 0});
  if (n <= 2) {
    for (std::size_t v = 0; v < N; ++v) L.pos[v] = {static_cast<double>(v) * u, 0};
    return;
  }
  // Hexagon order of relative-rank patterns: 012 -(2)- 102 -(3)- 201 -(2)- 021 -(3)- 120 -(2)- 210.
  static const int kHex[6][3] = {{0, 1, 2}, {1, 0, 2}, {2, 0, 1}, {0, 2, 1}, {1, 2, 0}, {2, 1, 0}};
  double r3 = u;  // hexagon radius: side length u
  // Diameters of the drawn sub-stars, level by level, and the offset of each group.
  std::vector<double> diam(static_cast<std::size_t>(n) + 1, 0.0);
  diam[3] = 2 * r3 + 0.6 * u;
  double gap = 1.0 * u;
  for (int k = 4; k <= n; ++k) {
    if (k == 4) {
      diam[4] = 2 * diam[3] + gap;
    } else {
      double R = (diam[k - 1] + gap) / (2 * std::sin(kPi / k));
      diam[k] = 2 * R + diam[k - 1];
    }
  }
  for (std::size_t v = 0; v < N; ++v) {
    std::vector<int> perm = star_unrank(v, n);
    double x = 0, y = 0;
    // Positions 3..n-1 (0-based): group k (size k+1 choices among the remaining symbols).
    for (int k = n - 1; k >= 3; --k) {
      int idx = 0;
      for (int j = 0; j < k; ++j)
        if (perm[j] < perm[k]) ++idx;  // rank among the symbols in positions 0..k
      int groups = k + 1;
      if (groups == 4) {
        double g = diam[3] + gap;
        x += (idx % 2 == 0 ? -0.5 : 0.5) * g;
        y += (idx / 2 == 0 ? 0.5 : -0.5) * g;
      } else {
        double R = (diam[k] + gap) / (2 * std::sin(kPi / groups));
        double a = kPi / 2 - 2 * kPi * idx / groups;
        x += R * std::cos(a);
        y += R * std::sin(a);
      }
    }
    int rel[3];
    for (int i = 0; i < 3; ++i) {
      rel[i] = 0;
      for (int j = 0; j < 3; ++j)
        if (perm[j] < perm[i]) ++rel[i];
    }
    int h = 0;
    for (int k = 0; k < 6; ++k)
      if (kHex[k][0] == rel[0] && kHex[k][1] == rel[1] && kHex[k][2] == rel[2]) h = k;
    double a = kPi / 2 - 2 * kPi * h / 6.0;
    L.pos[v] = {x + r3 * std::cos(a), y + r3 * std::sin(a)};
  }
  if (n >= 4) {
    for (int sym = 1; sym <= n; ++sym) {
      std::vector<NodeId> members;
      for (std::size_t v = 0; v < N; ++v)
        if (star_unrank(v, n).back() == sym) members.push_back(static_cast<NodeId>(v));
      L.clusters.push_back(
          {fmt::format("S{} with last symbol {}", n - 1, sym), std::move(members)});
    }
  }
}

}  // namespace

NodeLayout layout_topology(const Topology& t, double ux, double uy) {
  NodeLayout L;
  const std::string& fam = t.family();
  std::size_t N = t.num_nodes();
  double u = std::max(ux, uy);
  if (fam == "line") {
    L.name = "line";
    L.pos.resize(N);
    for (std::size_t i = 0; i < N; ++i) L.pos[i] = {static_cast<double>(i) * ux, 0};
  } else if (fam == "mesh" || fam == "torus") {
    L.name = "grid";
    auto rows = static_cast<std::size_t>(t.params().at("rows"));
    auto cols = static_cast<std::size_t>(t.params().at("cols"));
    (void)rows;
    L.pos.resize(N);
    bool torus = fam == "torus";
    for (std::size_t v = 0; v < N; ++v) {
      double c = static_cast<double>(v % cols), r = static_cast<double>(v / cols);
      double x = c * ux, y = -r * uy;
      // Torus: rows and columns bow slightly so that a wrap link (a straight line from one end of
      // a row to the other) passes beside the nodes between its ends instead of through them.
      if (torus && cols >= 3) y += 0.45 * uy * std::sin(kPi * c / static_cast<double>(cols - 1));
      if (torus && rows >= 3) x += 0.45 * ux * std::sin(kPi * r / static_cast<double>(rows - 1));
      L.pos[v] = {x, y};
    }
  } else if (fam == "hypercube" && t.params().at("d") <= 4) {
    L.name = "nested-squares";
    L.pos.resize(N);
    for (std::size_t v = 0; v < N; ++v) {
      double s = (v & 4) ? 1.25 : 0.5;
      double x = ((v & 1) ? 1 : -1) * s * u;
      double y = ((v & 2) ? 1 : -1) * s * u;
      if (v & 8) {     // the second cube beside the first, raised a little so that the
        x += 3.6 * u;  // dimension-3 links do not run through other nodes
        y += 0.45 * u;
      }
      if (t.params().at("d") == 1) y = 0;
      L.pos[v] = {x, y};
    }
  } else if (fam == "tree") {
    L.name = "tree";
    std::size_t P = t.num_processors();
    L.pos.resize(N);
    // Leaves (processors) in a row at the bottom; switch with heap index h above its leaves.
    int depth = 0;
    while ((std::size_t{1} << depth) < P) ++depth;
    for (std::size_t i = 0; i < P; ++i) L.pos[i] = {static_cast<double>(i) * ux, 0};
    for (std::size_t h = 1; h < P; ++h) {
      int level = 0;  // depth of heap index h (root 0)
      while ((std::size_t{1} << (level + 1)) <= h) ++level;
      std::size_t width = P >> level;                               // leaves under it
      std::size_t first = (h - (std::size_t{1} << level)) * width;  // first leaf under it
      double x = (static_cast<double>(first) + static_cast<double>(width - 1) / 2) * ux;
      double y = static_cast<double>(depth - level) * uy * 0.9;
      L.pos[P + h - 1] = {x, y};
    }
  } else if (fam == "star") {
    L.name = "star";
    star_layout(L, t, u);
  } else if (fam == "ring") {
    L.name = "circle";
    circle(L, N, u);
  } else if (fam == "product") {
    auto f = split_product(t.spec());
    if (f.size() == 2) {
      std::size_t nb = Topology::parse(f[1]).num_nodes();
      L.name = "grid";
      L.pos.resize(N);
      for (std::size_t v = 0; v < N; ++v)
        L.pos[v] = {static_cast<double>(v % nb) * ux, -static_cast<double>(v / nb) * uy};
    } else {
      L.name = "circle";
      circle(L, N, u);
    }
  } else {
    L.name = "circle";
    circle(L, N, u);
  }
  return L;
}

}  // namespace collv
