// Interconnection topologies: immutable values built from a spec string.
//
// A Topology is a set of nodes (processors first, then switch nodes that route but hold no data),
// labelled undirected links stored as adjacency lists, printable node labels, and a deterministic
// route between any two nodes, as in Grama et al. chapter 4 and Oh/Choi/Primeaux (star graph).
//
//   collv::Topology t = collv::Topology::parse("star:4");   // throws collv::SpecError on bad input
//   t.num_processors();          // 24
//   t.route(0, 5);               // {0, 5} when adjacent; star routes never go through other nodes
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace collv {

using NodeId = std::uint32_t;

// Bad user input in a topology spec. The message is one line, without the "error:" prefix.
class SpecError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class NodeKind : std::uint8_t { Processor, Switch };

// The grid directions of rings, linear arrays, meshes and tori, as the book's pseudo-code names
// them.
enum class Direction : std::uint8_t { Left, Right, Up, Down };

// One end of an undirected link, seen from the node that owns the adjacency list.
struct Link {
  NodeId to;
  // The link's number: star link k (2..n), hypercube dimension i (0..d-1), product links are
  // numbered after the left factor's (left factor's numbers unchanged, right factor's + offset).
  // For rings/meshes/tori/lines the number encodes the Direction (0 left, 1 right, 2 up, 3 down);
  // for trees 0 = parent, 1 = left child, 2 = right child; de Bruijn and complete: neighbour index.
  int number;
};

class Topology {
 public:
  // Parses `ring:P`, `line:P`, `mesh:RxC`, `torus:RxC`, `hypercube:D`, `tree:P`, `star:N`,
  // `complete:P`, `debruijn:D` and products `A*B` (left-assoc); the machines `dgx1` (DGX-1's
  // hybrid cube-mesh, NVLink counts as bandwidths) and `nvswitch:N` (N GPUs on one switch); and
  // topology files `file:PATH` or `PATH.json` (docs/topologies.md: collv's JSON or SCCL's
  // `links` matrix). Throws SpecError with a one-line reason for unknown names, malformed or
  // out-of-range sizes, unreadable or malformed files, and sizes too large for memory.
  static Topology parse(std::string_view spec);
  // Stars parsed after this call keep no link table from star:n on (their links computed from
  // the ranks when asked: about 130 ns a neighbour instead of a load), as star:11 and star:12
  // always do. collv-mpi calls it with 2 for a partitioned run: each of its processes holds a
  // slice of the nodes but would hold the whole table (star:10's is 275 MB).
  static void compute_stars_from(int n);

  // A listed topology: processors 0..processors-1, switches after them, undirected links with a
  // bandwidth (chunks per step) in each direction; parallel links add their bandwidths. Throws
  // SpecError (naming `spec`) for a self-loop, an id out of range, a zero bandwidth everywhere,
  // a disconnected network or sizes past the limits. `spec` must parse back to the same network.
  struct ListedLink {
    NodeId a, b;
    std::uint32_t ab = 1, ba = 1;  // chunks per step a -> b and b -> a (0: no link that way)
  };
  static Topology listed(std::string spec, std::size_t processors, std::size_t switches,
                         std::span<const ListedLink> links);
  // complete:p for a schedule file's own network (GOAL): as parse("complete:p") while its link
  // table fits parse's limit, past it with no table (adjacent, neighbor, route and bandwidth are
  // computed; links() refuses, as on star:11). p <= 2^24; throws SpecError past it.
  static Topology complete(std::size_t p);

  const std::string& spec() const;    // canonical spec, e.g. "mesh:4x4"
  const std::string& family() const;  // "ring", "line", "mesh", "torus", "hypercube", "tree",
                                      // "dgx1", "nvswitch", "file",
                                      // "star", "complete", "debruijn" or "product"

  std::size_t num_nodes() const;       // processors + switches
  std::size_t num_processors() const;  // processors are the ids 0 .. num_processors()-1
  std::size_t num_links() const;       // undirected links
  NodeKind kind(NodeId v) const;

  // Adjacency list of v, sorted by link number. Every link appears in both directions.
  std::span<const Link> links(NodeId v) const;
  // The neighbour along link number k (see Link::number), if that link exists at v.
  std::optional<NodeId> neighbor(NodeId v, int k) const;
  bool adjacent(NodeId a, NodeId b) const;
  // True when every link leads back along its own number: the neighbour u of v along link k has
  // v as its neighbour along link k (star links swap positions 1 and k, hypercube dimensions flip
  // one bit). A receive along link k then knows a message sent along link k by a neighbour is
  // from its neighbour along k without asking neighbor() (exec/statements.cpp).
  bool links_symmetric() const;
  // The neighbours of nodes lo..hi-1 in a table, (v - lo) * (n - 1) + (k - 2) for link k, when
  // this is a star whose links are computed (compute_stars_from) although a whole run would list
  // them (n <= 10): a partitioned process's slice of the table it does not keep, a load where
  // neighbor() unranks (about 130 ns). Empty for every other topology. Checks the memory first.
  std::vector<NodeId> star_rows(NodeId lo, NodeId hi) const;

  // Chunks per step the directed link a -> b carries: 0 if there is no such link, 1 on the
  // generated families (one transfer per link per step), the listed value on `dgx1`,
  // `nvswitch:N` and topology files.
  std::uint32_t bandwidth(NodeId a, NodeId b) const;
  // True for listed topologies, whose links state bandwidths in chunks: congestion then compares
  // the chunks crossing a link in a step with its bandwidth instead of counting transfers.
  bool declares_bandwidth() const;

  // Parameters visible to models: always "p" (processors); "d" (hypercube, debruijn), "n" (star),
  // "rows"/"cols" (mesh, torus), nothing else for the others. Products expose only "p".
  const std::map<std::string, std::int64_t>& params() const;

  // True where `left/right/up/down` mean something: ring and line (left/right), mesh and torus.
  bool has_directions() const;
  // The node the book's formulas name by direction, with wrap-around as in Algorithms 4.4 and 4.6
  // (left := (my_id - 1) mod p on a ring; on a mesh the wrap stays within the row or column even
  // though no wrap link exists: the route then goes the long way). nullopt if !has_directions(),
  // or for up/down on a ring or line.
  std::optional<NodeId> direction(NodeId v, Direction dir) const;

  // The route of a transfer from a to b, both endpoints included (route(a, a) == {a}).
  // ring: shorter way, tie goes +1; line: the only path; mesh/torus: along the row first, then the
  // column (torus: shorter way in each, tie +1); hypercube: E-cube (lowest differing bit first);
  // tree: up to the lowest common ancestor and down; complete: direct; debruijn: a shortest path
  // (BFS, lowest-id neighbour first); star: {a, b} always -- a non-neighbour transfer is not
  // routed, and route checking reports it. Products: route in the left factor, then in the right
  // factor.
  std::vector<NodeId> route(NodeId a, NodeId b) const;

  // Printable label: star permutation "2134", hypercube binary "011", mesh "(r,c)" style is not
  // used -- mesh/torus/ring/line/tree/complete/debruijn print the id; switches print "s<k>";
  // products print "(a,b)" of the factor labels.
  std::string label(NodeId v) const;

  // Node id of a star permutation label such as "2134" (lexicographic rank), if valid.
  std::optional<NodeId> node_of_label(std::string_view label) const;

  // Degree statistics over processors and the diameter, by BFS over processors (hop counts over
  // all nodes, switches included). For vertex-transitive families BFS runs from node 0 only.
  std::size_t min_degree() const;
  std::size_t max_degree() const;
  std::size_t diameter() const;

  // True when every node looks the same (ring, torus, hypercube, star, complete, and products of
  // such): one BFS gives the diameter.
  bool vertex_transitive() const;

  // Writes the network as Graphviz DOT (undirected graph, one edge per link, labelled with its
  // number; switches drawn as boxes).
  std::string to_dot() const;

  struct Impl;

 private:
  explicit Topology(std::shared_ptr<const Impl> impl);
  std::shared_ptr<const Impl> impl_;
};

// Lexicographic rank of a permutation of 1..n (given as symbols), and its inverse.
std::uint64_t star_rank(std::span<const int> perm);
std::vector<int> star_unrank(std::uint64_t rank, int n);

}  // namespace collv
