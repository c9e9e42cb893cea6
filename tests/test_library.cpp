// The library of real algorithms (models/mpich, models/openmpi, models/nccl): what the sources'
// formulas say where they are exact, and what the language features they use compute.
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>

#include <catch2/catch.hpp>

#include "check/checks.hpp"
#include "exec/executor.hpp"
#include "lang/ast.hpp"

using namespace collv;

namespace {

const std::string kRoot = COLLV_SOURCE_DIR;

Trace run_lib(const std::string& model, const std::string& spec, std::uint32_t count,
              std::uint32_t root = 0) {
  Model m = parse_model_file(kRoot + "/models/" + model + ".coll");
  RunOptions o;
  o.domain = DomainKind::Exact;
  o.count = count;
  o.root = root;
  return run_model(m, Topology::parse(spec), o);
}

bool passes_all(const Trace& t) {
  for (const auto& c : check_trace(t, CheckOptions{}))
    if (c.verdict == Verdict::Fail) return false;
  return true;
}

}  // namespace

TEST_CASE("van de Geijn broadcast costs what Thakur et al. publish when p divides count",
          "[library]") {
  // (lg p + p - 1) ts + 2 (p-1)/p n tw, lg p rounded up off powers of two; n = count elements.
  for (std::uint32_t p : {2u, 4u, 5u, 8u, 12u})
    for (std::uint32_t k : {1u, 2u, 3u}) {
      const std::uint32_t count = p * k;
      INFO("p = " << p << ", count = " << count);
      Trace t = run_lib("mpich/bcast_scatter_ring_allgather", "complete:" + std::to_string(p),
                        count, p - 1);
      REQUIRE(passes_all(t));
      std::uint32_t lg = 0;
      while ((1u << lg) < p) ++lg;
      CHECK(t.steps == lg + p - 1);
      CHECK(t.cost_ts == Approx(lg + p - 1));
      CHECK(t.cost_tw == Approx(2.0 * (p - 1) * count / p));
    }
  // With fewer elements than ranks, the scatter uses fewer levels and the ring still runs p - 1
  // rounds (zero-length messages): count 1 takes p - 1 steps, no scatter at all.
  Trace one = run_lib("mpich/bcast_scatter_ring_allgather", "complete:6", 1, 2);
  CHECK(passes_all(one));
  CHECK(one.steps == 5);
}

TEST_CASE("NCCL's double binary tree: the trees are NCCL's and every rank gets the sum",
          "[library]") {
  // p = 13 (odd: the second tree is the first shifted by one rank) and 14 (even: mirrored).
  for (std::uint32_t p : {13u, 14u}) {
    Trace t = run_lib("nccl/allreduce_double_tree", "complete:" + std::to_string(p), 2);
    INFO("p = " << p);
    REQUIRE(passes_all(t));
    // Each tree carries one element per edge up and down: 2 (p - 1) transfers per tree.
    CHECK(t.transfers.size() == 4 * (p - 1));
  }
  // Tree 1 on 13 ranks (the picture in NCCL's trees.cc): 0 -> 8; 8 -> 4, 12; 4 -> 2, 6;
  // 2 -> 1, 3; 12 -> 10 only (14 and 13 are past the last rank); 10 -> 9, 11. With one element
  // only tree 1 runs, and each rank's first send goes to its parent.
  Trace t = run_lib("nccl/allreduce_double_tree", "complete:13", 1);
  std::vector<int> parent(13, -1);
  for (const Transfer& x : t.transfers)
    if (x.step <= t.steps / 2 + 1 && parent[x.src] == -1 && x.dst != x.src)
      parent[x.src] = static_cast<int>(x.dst);
  CHECK(parent[8] == 0);
  CHECK(parent[4] == 8);
  CHECK(parent[12] == 8);
  CHECK(parent[2] == 4);
  CHECK(parent[1] == 2);
  CHECK(parent[3] == 2);
  CHECK(parent[10] == 12);
  CHECK(parent[11] == 10);
  CHECK(parent[9] == 10);
}

namespace {

std::string lib_model(const std::string& collective, const std::string& library_line) {
  return "model m\n  collective " + collective + "\n  library " + library_line +
         "\n  input x\n  output x\nprocedure P(my_id, x)\nbegin\nend P\n";
}

// The message of the ModelError the text raises, or "" when it parses.
std::string lib_error(const std::string& collective, const std::string& library_line) {
  try {
    parse_model(lib_model(collective, library_line), "t.coll");
  } catch (const ModelError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("the library line names a library, a version range and the algorithm selector",
          "[library]") {
  Model m = parse_model(lib_model("allreduce", "openmpi 4.1 coll_tuned_allreduce_algorithm = 4"),
                        "t.coll");
  REQUIRE(m.header.libraries.size() == 1);
  const LibraryClaim& l = m.header.libraries[0];
  CHECK(l.library == "openmpi");
  CHECK(l.version_lo == "4.1");
  CHECK(l.version_hi == "4.1");
  REQUIRE(l.selectors.size() == 1);
  CHECK(l.selectors[0].first == "coll_tuned_allreduce_algorithm");
  CHECK(l.selectors[0].second == "4");
  CHECK(l.loc.line == 3);

  Model r = parse_model(lib_model("broadcast",
                                  "openmpi 4.1 .. 5.0.3 coll_tuned_bcast_algorithm = 3 "
                                  "coll_tuned_bcast_algorithm_segmentsize = 8\n  library mpich 4.0 "
                                  "MPIR_CVAR_BCAST_INTRA_ALGORITHM = binomial"),
                        "t.coll");
  REQUIRE(r.header.libraries.size() == 2);
  CHECK(r.header.libraries[0].version_hi == "5.0.3");
  CHECK(r.header.libraries[0].selectors.size() == 2);
  CHECK(r.header.libraries[1].selectors[0].second == "binomial");
  CHECK(parse_model(lib_model("allreduce", "nccl 2.18 NCCL_ALGO = Tree"), "t")
            .header.libraries[0]
            .selectors[0]
            .second == "Tree");

  // Each malformed line is refused at load time, saying what is wrong.
  CHECK_THAT(lib_error("allreduce", "lam 7.1 x = 1"), Catch::Contains("unknown library 'lam'"));
  CHECK_THAT(lib_error("allreduce", "openmpi coll_tuned_allreduce_algorithm = 4"),
             Catch::Contains("expected the library's version"));
  CHECK_THAT(lib_error("allreduce", "openmpi 5.0 .. 4.1 coll_tuned_allreduce_algorithm = 4"),
             Catch::Contains("empty version range"));
  CHECK_THAT(lib_error("allreduce", "openmpi 4.1"),
             Catch::Contains("expected the algorithm selector"));
  CHECK_THAT(lib_error("allreduce", "openmpi 4.1 coll_tuned_bcast_algorithm = 3"),
             Catch::Contains("does not choose a allreduce algorithm in openmpi"));
  CHECK_THAT(lib_error("allreduce", "openmpi 4.1 coll_tuned_allreduce_algorithm = ring"),
             Catch::Contains("takes the algorithm's number"));
  CHECK_THAT(lib_error("reduce", "mpich 4.0 MPIR_CVAR_REDUCE_INTRA_ALGORITHM = 2"),
             Catch::Contains("takes the algorithm's name"));
  CHECK_THAT(lib_error("reduce", "mpich 4.0 MPIR_CVAR_BCAST_INTRA_ALGORITHM = binomial"),
             Catch::Contains("does not choose a reduce algorithm in mpich"));
  CHECK_THAT(lib_error("allgather", "nccl 2.18 NCCL_ALGO = Tree"),
             Catch::Contains("NCCL_ALGO is Ring for a allgather"));
  CHECK_THAT(lib_error("allreduce",
                       "openmpi 4.1 coll_tuned_allreduce_algorithm = 4\n  library "
                       "openmpi 5.0 coll_tuned_allreduce_algorithm = 4"),
             Catch::Contains("a second 'library openmpi' line"));
  // Two lines of one library name two algorithms the model stands for (MPICH's blocking one and
  // its `nb` over the nonblocking schedule); the same selectors twice are refused.
  Model two = parse_model(lib_model("allreduce",
                                    "mpich 4.0 MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM = "
                                    "recursive_doubling\n  library mpich 4.0 "
                                    "MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM = nb "
                                    "MPIR_CVAR_IALLREDUCE_INTRA_ALGORITHM = "
                                    "sched_recursive_doubling"),
                          "t.coll");
  REQUIRE(two.header.libraries.size() == 2);
  CHECK(two.header.libraries[1].selectors[1].second == "sched_recursive_doubling");
  CHECK_THAT(lib_error("allreduce",
                       "mpich 4.0 MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM = nb\n  library "
                       "mpich 4.0 MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM = nb"),
             Catch::Contains("a second 'library mpich' line with the same selectors"));
  // The nonblocking key: the selector's own collective, for `nb` only, a name.
  CHECK_THAT(lib_error("allreduce",
                       "mpich 4.0 MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM = nb "
                       "MPIR_CVAR_IREDUCE_INTRA_ALGORITHM = sched_binomial"),
             Catch::Contains("selects another collective's nonblocking algorithm"));
  CHECK_THAT(lib_error("allreduce",
                       "mpich 4.0 MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM = recursive_doubling "
                       "MPIR_CVAR_IALLREDUCE_INTRA_ALGORITHM = sched_recursive_doubling"),
             Catch::Contains("is read by MPICH's `nb` algorithm only"));
  CHECK_THAT(lib_error("allreduce",
                       "mpich 4.0 MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM = nb "
                       "MPIR_CVAR_IALLREDUCE_INTRA_ALGORITHM = 4"),
             Catch::Contains("takes the algorithm's name in MPICH (as sched_binomial)"));
  // A version is no number: it is refused where an expression is expected.
  CHECK_THAT(lib_error("allreduce", "openmpi 4.1 coll_tuned_allreduce_algorithm = 4\n  steps 4.1"),
             Catch::Contains("version 4.1"));

  // Every library model with a counterpart in Open MPI 4.1 or MPICH 4.0 names its selector.
  for (const char* f : {"mpich/allgather_bruck",
                        "mpich/allgather_recursive_doubling",
                        "mpich/allreduce_rabenseifner",
                        "mpich/allreduce_recursive_doubling",
                        "mpich/alltoall_bruck",
                        "mpich/alltoall_pairwise",
                        "mpich/barrier_dissemination",
                        "mpich/bcast_binomial",
                        "mpich/bcast_scatter_ring_allgather",
                        "mpich/reduce_binomial",
                        "mpich/reduce_binomial_commutative",
                        "mpich/allgather_ring",
                        "mpich/gather_binomial",
                        "mpich/scatter_binomial",
                        "mpich/scan_recursive_doubling",
                        "mpich/reduce_scatter_pairwise",
                        "openmpi/allgather_neighbor_exchange",
                        "mpich/alltoall_scattered",
                        "mpich/reduce_scatter_recursive_halving",
                        "openmpi/bcast_knomial",
                        "openmpi/allreduce_ring",
                        "openmpi/bcast_pipeline",
                        "openmpi/alltoall_pairwise",
                        "openmpi/allgather_ring",
                        "openmpi/reduce_scatter_ring"}) {
    INFO(f);
    Model lm = parse_model_file(kRoot + "/models/" + f + ".coll");
    // MPICH's models also name its `nb` over the same nonblocking schedule: a second line.
    REQUIRE(lm.header.libraries.size() >= 1);
    const std::string want = std::string(f).rfind("mpich", 0) == 0 ? "mpich" : "openmpi";
    for (const auto& l : lm.header.libraries) CHECK(l.library == want);
    CHECK(lm.header.libraries[0].selectors[0].second != "nb");
  }
}

TEST_CASE("count 0: every library model runs with empty buffers and passes", "[library]") {
  for (const char* f :
       {"mpich/bcast_binomial", "mpich/allreduce_rabenseifner", "mpich/alltoall_bruck",
        "mpich/alltoall_pairwise", "mpich/reduce_binomial"}) {
    INFO(f);
    Trace t = run_lib(f, "complete:5", 0, 2);
    CHECK(passes_all(t));
    for (const auto& o : t.final_output) CHECK(o.empty());
  }
}

namespace {

// NCCL's published rule (src/graph/trees.cc, the comment above ncclGetBtree): rank r > 0 with
// lowest set bit b hangs below (r XOR b) OR 2b, or below r XOR b when that is past the last rank;
// rank 0 is the root. The second tree (ncclGetDtree) shifts the first by one rank for odd n
// and mirrors it for even n.
int btree_parent(int n, int r) {
  if (r == 0) return -1;
  int b = r & -r;
  int up = (r ^ b) | (b << 1);
  return up < n ? up : (r ^ b);
}
int dtree_parent(int n, int r) {
  if (n % 2 == 1) {
    int u = btree_parent(n, (r - 1 + n) % n);
    return u < 0 ? -1 : (u + 1) % n;
  }
  int u = btree_parent(n, n - 1 - r);
  return u < 0 ? -1 : n - 1 - u;
}

}  // namespace

TEST_CASE("NCCL's double binary tree matches the trees of NCCL's current rule", "[library]") {
  for (int p = 2; p <= 17; ++p) {
    INFO("p = " << p);
    // count 2: element 0 goes up and down tree 1, element 1 tree 2.
    Trace t = run_lib("nccl/allreduce_double_tree", "complete:" + std::to_string(p), 2);
    REQUIRE(passes_all(t));
    // The model's trees: a partial sum (fewer than p terms) goes from a child to its parent;
    // the full sum comes down from a parent to its child. The last hop into the root carries
    // the full sum too, so it is read by the root, which never receives in the broadcast.
    std::vector<std::vector<int>> parent(2, std::vector<int>(p, -2));
    std::vector<std::vector<std::pair<int, int>>> full(2);
    for (const Transfer& x : t.transfers) {
      REQUIRE(x.payload_len == 1);
      auto terms = t.domain->terms(t.payload[x.payload_begin]);
      const int tree = static_cast<int>(terms.front() % 2);
      for (auto c : terms) REQUIRE(static_cast<int>(c % 2) == tree);
      if (terms.size() < static_cast<std::size_t>(p)) {
        parent[tree][x.src] = static_cast<int>(x.dst);
      } else {
        full[tree].emplace_back(static_cast<int>(x.src), static_cast<int>(x.dst));
      }
    }
    for (int tree = 0; tree < 2; ++tree) {
      const int root = tree == 0 ? 0 : (p % 2 == 1 ? 1 : p - 1);  // ncclGetDtreeRoots
      for (auto [s, d] : full[tree]) {
        if (d == root) {
          parent[tree][s] = d;  // the last hop of the reduction
        } else {
          // The sum comes down the edge the partial sum went up (or to a child of the root).
          if (parent[tree][d] != -2) CHECK(parent[tree][d] == s);
          parent[tree][d] = s;
        }
      }
      parent[tree][root] = -1;
      for (int r = 0; r < p; ++r) {
        INFO("tree " << tree + 1 << ", rank " << r);
        CHECK(parent[tree][r] == (tree == 0 ? btree_parent(p, r) : dtree_parent(p, r)));
      }
    }
  }
}

TEST_CASE("Open MPI's ring all-reduce runs recursive doubling when count < p", "[library]") {
  // p = 8, count 1: ompi_coll_base_allreduce_intra_ring calls the recursive doubling: three
  // exchanges with my_id XOR 1, 2, 4, no ring step.
  Trace t = run_lib("openmpi/allreduce_ring", "complete:8", 1);
  REQUIRE(passes_all(t));
  CHECK(t.steps == 3);
  for (const Transfer& x : t.transfers) {
    const auto d = x.src ^ x.dst;
    CHECK((d == 1 || d == 2 || d == 4));
  }
  CHECK(t.transfers.size() == 8 * 3);
  // p = 6, count 5: the fold (0->1, 2->3), two exchanges, the unfold: 4 steps.
  Trace six = run_lib("openmpi/allreduce_ring", "complete:6", 5);
  REQUIRE(passes_all(six));
  CHECK(six.steps == 4);
  // count = p: the ring, 2 (p - 1) steps, every transfer to the right neighbour.
  Trace ring = run_lib("openmpi/allreduce_ring", "complete:8", 8);
  REQUIRE(passes_all(ring));
  CHECK(ring.steps == 14);
  for (const Transfer& x : ring.transfers) CHECK(x.dst == (x.src + 1) % 8);
  // count 0: MPI_Allreduce returns before the algorithm, no message.
  CHECK(run_lib("openmpi/allreduce_ring", "complete:8", 0).transfers.empty());
}

namespace {

// A model whose `steps at most` claim is looser than its runs (p = 2..32, complete, count 1) by
// more steps than its note explains ("slack: at most N steps shorter for p <= 32"), or that has
// a bound and no such note: one line per such model, empty when every claim is explained.
std::vector<std::string> loose_claims(const std::vector<Model>& models) {
  std::vector<std::string> out;
  const std::regex slack("slack: at most ([0-9]+) steps? shorter for p <= 32");
  for (const Model& m : models) {
    if (!m.header.steps_at_most) continue;
    std::optional<long> told;
    for (const auto& n : m.header.notes) {
      std::smatch k;
      if (std::regex_search(n, k, slack)) told = std::stol(k[1]);
    }
    long worst = 0;
    int at = 0;
    for (int p = 2; p <= 32; ++p) {
      RunOptions o;
      o.domain = DomainKind::Exact;
      Trace t = run_model(m, Topology::parse("complete:" + std::to_string(p)), o);
      if (!t.claimed_steps) continue;
      long gap = static_cast<long>(*t.claimed_steps) - static_cast<long>(t.steps);
      if (gap > worst) worst = gap, at = p;
    }
    if (!told) {
      out.push_back(m.header.name + ": a bound and no note of its slack (at most " +
                    std::to_string(worst) + " steps at p = " + std::to_string(at) + ")");
    } else if (worst > *told) {
      out.push_back(m.header.name + ": " + std::to_string(worst) + " steps looser at p = " +
                    std::to_string(at) + ", the note explains " + std::to_string(*told));
    }
  }
  return out;
}

}  // namespace

TEST_CASE("no library claim is looser than its run by more than its note explains", "[library]") {
  std::vector<Model> models;
  for (const char* dir : {"/models/mpich", "/models/openmpi", "/models/nccl"})
    for (const auto& e : std::filesystem::directory_iterator(kRoot + dir))
      if (e.path().extension() == ".coll") models.push_back(parse_model_file(e.path().string()));
  REQUIRE(models.size() >= 15);
  std::vector<std::string> listed = loose_claims(models);
  // One INFO with every line (an INFO inside the loop would end with each iteration, before
  // the CHECK could show it).
  std::string all;
  for (const auto& l : listed) all += l + "\n";
  INFO(all);
  CHECK(listed.empty());

  // Twins: the recursive-doubling allgather with a note that explains less than its slack, and
  // with no slack note at all, are listed.
  std::ifstream in(kRoot + "/models/mpich/allgather_recursive_doubling.coll");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto at = text.find("slack: at most 6 steps");
  REQUIRE(at != std::string::npos);
  std::string less = text, none = text;
  less.replace(at, 22, "slack: at most 2 steps");
  none.replace(at, 22, "no slack stated here  ");
  std::vector<Model> twins;
  twins.push_back(parse_model(less, "less.coll"));
  twins.push_back(parse_model(none, "none.coll"));
  auto bad = loose_claims(twins);
  REQUIRE(bad.size() == 2);
  CHECK_THAT(bad[0], Catch::Contains("6 steps looser at p = 30, the note explains 2"));
  CHECK_THAT(bad[1], Catch::Contains("a bound and no note of its slack"));
}

TEST_CASE(
    "MPICH's recursive-halving reduce-scatter costs what Thakur et al. publish on powers "
    "of two",
    "[library]") {
  // lg p ts + ((p - 1)/p) n tw with n = p count elements: (p - 1) count tw.
  for (std::uint32_t p : {2u, 4u, 8u, 16u})
    for (std::uint32_t count : {1u, 3u}) {
      INFO("p = " << p << ", count = " << count);
      Trace t =
          run_lib("mpich/reduce_scatter_recursive_halving", "complete:" + std::to_string(p), count);
      REQUIRE(passes_all(t));
      std::uint32_t lg = 0;
      while ((1u << lg) < p) ++lg;
      CHECK(t.steps == lg);
      CHECK(t.cost_ts == Approx(lg));
      CHECK(t.cost_tw == Approx(double(p - 1) * count));
    }
}
