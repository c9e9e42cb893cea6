// The library of real algorithms (models/mpich, models/openmpi, models/nccl): what the sources'
// formulas say where they are exact, and what the language features they use compute.
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
  // p = 13 (odd: the second tree mirrors the first) and 14 (even: shifted by one rank).
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
