// Private to src/topology: the representation behind collv::Topology.
//
// Adjacency is stored in CSR form: `adj` holds every node's links back to back, sorted by link
// number within a node. When every node has the same degree (`uniform_degree` > 0 or the graph has
// no links at all) the offsets array is dropped and node v's links start at v * uniform_degree.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "topology/topology.hpp"

namespace collv {

enum class Family : std::uint8_t {
  Ring,
  Line,
  Mesh,
  Torus,
  Hypercube,
  Tree,
  Star,
  Complete,
  DeBruijn,
  Product,
  Custom  // a topology file or a built-in machine (dgx1, nvswitch:N): links listed, not generated
};

// Memory limits, enforced from the spec before anything is allocated.
inline constexpr std::uint64_t kMaxNodes = std::uint64_t{1} << 24;
inline constexpr std::uint64_t kMaxAdjacency = std::uint64_t{1} << 27;  // directed link entries
inline constexpr std::size_t kMaxFactors = 16;
// Stars from this n on keep no link table (11! nodes would need 3.2 GB of it); up to n = 12
// (479,001,600 nodes, node ids still 32 bits).
inline constexpr std::uint64_t kImplicitStarN = 11, kMaxImplicitStarN = 12;
// kImplicitStarN unless Topology::compute_stars_from lowered it.
std::uint64_t implicit_star_n();

// Node ids of star:n (n <= 12): the neighbour along link k (swap positions 1 and k), and whether
// two nodes are neighbours, from the lexicographic ranks alone.
NodeId star_neighbor_rank(NodeId v, int n, int k);
bool star_adjacent_rank(NodeId a, NodeId b, int n);

struct Topology::Impl {
  Family fam = Family::Ring;
  std::string spec;    // canonical
  std::string family;  // printable family name
  // Family sizes: ring/line/complete/tree: a = p; hypercube/debruijn: a = d; star: a = n;
  // mesh/torus: a = rows, b = cols.
  std::uint64_t a = 0, b = 0;

  std::size_t n_nodes = 0;
  std::size_t n_proc = 0;
  std::size_t n_links = 0;
  // Right-factor link numbers in a product are offset by the left factor's number_space.
  int number_space = 0;

  bool uniform = false;
  std::uint32_t uniform_degree = 0;
  // Set when uniform and every node's links are numbered first, first+1, ... in order.
  std::optional<int> dense_first_number;
  std::vector<std::uint32_t> offsets;  // n_nodes + 1 entries unless uniform
  std::vector<Link> adj;
  // Chunks per step on each directed adjacency entry (parallel to adj); empty: every link carries
  // one transfer per step, the unit of the book's and the paper's cost models.
  std::vector<std::uint32_t> bw;

  std::map<std::string, std::int64_t> params;
  std::shared_ptr<const Impl> left, right;  // product factors

  std::size_t min_deg = 0, max_deg = 0;  // over processors
  bool transitive = false;

  mutable std::once_flag diameter_once;
  mutable std::size_t diameter_value = 0;

  // A star too large for a link table (n >= kImplicitStarN): its links are computed from the
  // permutations when asked (neighbor, adjacent, route); links_of refuses it.
  bool implicit_star = false;
  // complete:p past the link-table limit (Topology::complete): neighbour k of v is k < v ? k : k+1.
  bool implicit_complete = false;

  std::span<const Link> links_of(NodeId v) const {
    if (implicit_star || implicit_complete) refuse_links();
    if (uniform) return {adj.data() + std::size_t{v} * uniform_degree, uniform_degree};
    return {adj.data() + offsets[v], offsets[v + 1] - offsets[v]};
  }
  [[noreturn]] void refuse_links() const;

  std::string label(NodeId v) const;
  std::optional<NodeId> node_of_label(std::string_view s) const;
  std::vector<NodeId> route(NodeId a, NodeId b) const;
  void bfs_route(NodeId from, NodeId to, bool via_processors, std::vector<NodeId>& r) const;
  std::size_t diameter() const;
};

// Builds a validated, size-checked family (topology_build.cpp).
std::shared_ptr<Topology::Impl> build_family(Family fam, std::uint64_t a, std::uint64_t b);
std::shared_ptr<Topology::Impl> build_product(std::shared_ptr<const Topology::Impl> left,
                                              std::shared_ptr<const Topology::Impl> right);

// A listed topology (topology_custom.cpp): a file `file:PATH` or `PATH.json`, `dgx1`,
// `nvswitch:N`. nullopt if the spec names none of them.
std::shared_ptr<Topology::Impl> parse_custom(std::string_view spec);
// A topology file's text (collv JSON or an SCCL links matrix) as the network `spec` names; `path`
// is for messages. Throws SpecError.
std::shared_ptr<Topology::Impl> listed_from_text(const std::string& text, const std::string& spec,
                                                 const std::string& path);

// Closed-form diameter of a family (used for big non-vertex-transitive networks).
std::size_t closed_form_diameter(const Topology::Impl& t);

}  // namespace collv
