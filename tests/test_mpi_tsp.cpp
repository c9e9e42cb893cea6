// MPICH's generic-transport (`tsp_*`) nonblocking schedules modelled after the first batch
// (issue 35; tests/test_mpi_nb.cpp has the first): each model conforms with the schedule it names
// on the installed MPICH, and its nearest neighbour declared as that schedule fails on messages.
#include <catch2/catch.hpp>
#include <cstdio>
#include <string>

#include "cli.hpp"
#include "mpi_util.hpp"

namespace {

const std::string kModels = std::string(COLLV_SOURCE_DIR) + "/models/mpich/";

// A neighbouring model (under kModels, or a path) with its line `from` edited to `to`, run with
// `args`: conformance fails on messages and says `message`.
void declared_as_fails(const std::string& model, const std::string& from, const std::string& to,
                       const std::string& name, const std::string& args,
                       const std::string& message) {
  const std::string path = model.find('/') == std::string::npos ? kModels + model : model;
  const std::string copy = collv::test::edited_copy(path, from, to, name);
  collv::test::conformance_fails(copy + args, message);
  std::remove(copy.c_str());
}

}  // namespace

TEST_CASE(
    "collv mpi --conformance: MPICH's alltoall tsp_ring (the whole buffer round the ring) and "
    "alltoallv tsp_scattered (empty blocks sent) conform and their neighbours fail on messages",
    "[mpi][mpi-mpich][mpi-nb][mpi-tsp]") {
  if (!collv::test::have_mpich()) {
    WARN("MPICH is not installed: skipped; scripts/install-deps.sh installs it");
    return;
  }
  const std::string ring = kModels + "alltoall_nb_ring.coll";
  collv::test::conformance_passes(ring + " --sizes 3 --count 0..1",
                                  "pass          " + ring + "#nb=tsp_ring");
  // The pairwise exchange declared as tsp_ring: one block per message, the ring sends p.
  declared_as_fails(
      "alltoall_pairwise.coll", "= sched_pairwise", "= tsp_ring", "tsp_a2a_pairwise",
      " --sizes 3 --count 1",
      "messages: rank 0, call 1, message 1: the library sends 48 bytes to rank 1, the "
      "model sends 16 bytes to rank 1");

  const std::string scattered = kModels + "alltoallv_nb_scattered.coll";
  collv::test::conformance_passes(scattered + " --sizes 3 --count 0..1",
                                  "pass          " + scattered + "#nb=tsp_scattered");
  // The blocking scattered model declared as tsp_scattered: it skips the zero counts.
  declared_as_fails("alltoallv_scattered.coll", "= tsp_blocked", "= tsp_scattered", "tsp_a2av",
                    " --sizes 3 --count 1",
                    "messages: rank 1, call 1, message 1: the library sends 0 bytes to rank 0, the "
                    "model sends no more");
}

TEST_CASE(
    "collv mpi --conformance: MPICH's igather and iscatter tsp_tree (the pre-order k-nomial tree) "
    "conform at every root and the binomial models declared as them fail on messages",
    "[mpi][mpi-mpich][mpi-nb][mpi-tsp]") {
  if (!collv::test::have_mpich()) {
    WARN("MPICH is not installed: skipped; scripts/install-deps.sh installs it");
    return;
  }
  const std::string gather = kModels + "gather_nb_tree.coll";
  const std::string scatter = kModels + "scatter_nb_tree.coll";
  const std::string out =
      collv::test::conformance_passes(gather + " " + scatter + " --sizes 4 --count 1 --root all",
                                      "pass          " + gather + "#nb=tsp_tree");
  CHECK_THAT(out, Catch::Contains("pass          " + scatter + "#nb=tsp_tree"));
  // The binomial gather declared as tsp_tree: its rank 1 is a leaf, the tree's rank 1 forwards
  // rank 2's block with its own.
  declared_as_fails("gather_binomial.coll", "= sched_binomial", "= tsp_tree", "tsp_gather",
                    " --sizes 4 --count 1 --root 0",
                    "messages: rank 1, call 1, message 1: the library sends 32 bytes "
                    "to rank 0, the model sends 16 bytes to rank 0");
  // The binomial scatter declared as tsp_tree: at p = 3 its root serves rank 2 first, the tree
  // is the chain 0 -> 1 -> 2.
  declared_as_fails("scatter_binomial.coll", "= sched_binomial", "= tsp_tree", "tsp_scatter",
                    " --sizes 3 --count 1 --root 0",
                    "messages: rank 0, call 1, message 1: the library sends 32 bytes "
                    "to rank 1, the model sends 16 bytes to rank 2");
  // MPI_Reduce_scatter's tsp_recexch sends an empty part as a 0-byte message, where the
  // blocking recursive halving (and its model) skips it.
  const std::string v = kModels + "reduce_scatterv_nb_recexch.coll";
  collv::test::conformance_passes(v + " --sizes 2 --count 0..1",
                                  "pass          " + v + "#nb=tsp_recexch");
  declared_as_fails("reduce_scatterv_recursive_halving.coll", "= sched_recursive_halving",
                    "= tsp_recexch", "tsp_rsv", " --sizes 2 --count 1",
                    "messages: rank 0, call 1, message 1: the library sends 0 bytes to rank 1, "
                    "the model sends no more");
}

TEST_CASE(
    "collv mpi --conformance: MPICH's iallreduce tsp_tree (non-commutative: up and down the "
    "pre-order k-nomial tree from rank 0) conforms and recursive doubling declared as it fails "
    "on messages",
    "[mpi][mpi-mpich][mpi-nb][mpi-tsp]") {
  if (!collv::test::have_mpich()) {
    WARN("MPICH is not installed: skipped; scripts/install-deps.sh installs it");
    return;
  }
  const std::string tree = kModels + "allreduce_nb_tree.coll";
  collv::test::conformance_passes(tree + " --sizes 4 --count 0..1",
                                  "pass          " + tree + "#nb=tsp_tree");
  // Recursive doubling declared as tsp_tree: rank 0's second message goes to its partner at
  // distance 2, the tree's root serves its second child, rank 3.
  declared_as_fails("allreduce_recursive_doubling.coll", "= sched_recursive_doubling", "= tsp_tree",
                    "tsp_allreduce", " --sizes 4 --count 1",
                    "messages: rank 0, call 1, message 2: the library sends 16 bytes "
                    "to rank 3, the model sends 16 bytes to rank 2");
}

TEST_CASE(
    "collv mpi --conformance: MPICH's iallgather tsp_recexch_doubling and tsp_recexch_halving "
    "(the fold beyond the power of two, the recursive exchange, the result back) conform and "
    "their neighbours declared as them fail on messages",
    "[mpi][mpi-mpich][mpi-nb][mpi-tsp]") {
  if (!collv::test::have_mpich()) {
    WARN("MPICH is not installed: skipped; scripts/install-deps.sh installs it");
    return;
  }
  const std::string doubling = kModels + "allgather_nb_recexch_doubling.coll";
  const std::string halving = kModels + "allgather_nb_recexch_halving.coll";
  const std::string out =
      collv::test::conformance_passes(doubling + " " + halving + " --sizes 6 --count 1",
                                      "pass          " + doubling + "#nb=tsp_recexch_doubling");
  CHECK_THAT(out, Catch::Contains("pass          " + halving + "#nb=tsp_recexch_halving"));
  // Distance doubling declared as halving: rank 0's first partner is at distance 1, halving's at
  // distance 2 (rank 0 is its own digit reversal, so it swaps nothing first).
  declared_as_fails(doubling, "= tsp_recexch_doubling", "= tsp_recexch_halving", "tsp_halving",
                    " --sizes 4 --count 1",
                    "messages: rank 0, call 1, message 1: the library sends 16 bytes "
                    "to rank 2, the model sends 16 bytes to rank 1");
  // MPICH's blocking recursive doubling declared as tsp_recexch_doubling, at p = 3: rank 0 folds
  // into rank 1 and sends nothing more, the blocking one forwards to rank 2.
  declared_as_fails("allgather_recursive_doubling.coll", "= sched_recursive_doubling",
                    "= tsp_recexch_doubling", "tsp_rd", " --sizes 3 --count 1",
                    "messages: rank 0, call 1, message 2: the library sends no more, "
                    "the model sends 32 bytes to rank 2");
}

TEST_CASE(
    "collv mpi --conformance: MPICH's ireduce_scatter_block tsp_recexch (commutative) posts the "
    "blocking recursive halving's messages and ireduce_scatter tsp_recexch the same with empty "
    "parts sent and the pairwise and blocking models declared as them fail on messages",
    "[mpi][mpi-mpich][mpi-nb][mpi-tsp]") {
  if (!collv::test::have_mpich()) {
    WARN("MPICH is not installed: skipped; scripts/install-deps.sh installs it");
    return;
  }
  const std::string halving = kModels + "reduce_scatter_recursive_halving.coll";
  collv::test::conformance_passes(halving + " --sizes 3 --count 0..1",
                                  "pass          " + halving + "#nb=tsp_recexch");
  // The pairwise exchange declared as tsp_recexch: rank 0 first sends one block to rank 1, the
  // recursive exchange two blocks to its partner at distance 2.
  declared_as_fails("reduce_scatter_pairwise.coll", "= sched_pairwise", "= tsp_recexch", "tsp_rs",
                    " --sizes 4 --count 1",
                    "messages: rank 0, call 1, message 1: the library sends 32 bytes "
                    "to rank 2, the model sends 16 bytes to rank 1");
}

TEST_CASE(
    "collv mpi --conformance: MPICH's ireduce tsp_tree (commutative: the binary tree from the "
    "root) conforms at every root and the binomial reduce declared as it fails on messages",
    "[mpi][mpi-mpich][mpi-nb][mpi-tsp]") {
  if (!collv::test::have_mpich()) {
    WARN("MPICH is not installed: skipped; scripts/install-deps.sh installs it");
    return;
  }
  const std::string tree = kModels + "reduce_nb_tree.coll";
  collv::test::conformance_passes(tree + " --sizes 4 --count 1 --root all",
                                  "pass          " + tree + "#nb=tsp_tree");
  // The commutative binomial reduce declared as tsp_tree: its rank 3 sends to rank 2, the binary
  // tree's to its parent, rank 1.
  declared_as_fails("reduce_binomial_commutative.coll", "= sched_binomial", "= tsp_tree",
                    "tsp_reduce_tree", " --sizes 4 --count 1 --root 0",
                    "messages: rank 3, call 1, message 1: the library sends 16 bytes "
                    "to rank 1, the model sends 16 bytes to rank 2");
}

TEST_CASE(
    "collv mpi --conformance: MPICH's iallreduce tsp_recexch_reduce_scatter_recexch_allgatherv "
    "posts the nb Rabenseifner messages at every count (0-byte ones at count 0) and the blocking "
    "model or one silent at count 0 declared as it fails on messages",
    "[mpi][mpi-mpich][mpi-nb][mpi-tsp]") {
  if (!collv::test::have_mpich()) {
    WARN("MPICH is not installed: skipped; scripts/install-deps.sh installs it");
    return;
  }
  const std::string rsag = kModels + "allreduce_nb_reduce_scatter_allgather.coll";
  const std::string tsp = "#nb=tsp_recexch_reduce_scatter_recexch_allgatherv";
  collv::test::conformance_passes(rsag + " --sizes 3 --count 0..1", "pass          " + rsag + tsp);
  // The blocking algorithm's segments (the first count mod pof2 one element longer).
  declared_as_fails("allreduce_rabenseifner.coll", "ALGORITHM = reduce_scatter_allgather",
                    "ALGORITHM = nb MPIR_CVAR_IALLREDUCE_INTRA_ALGORITHM = "
                    "tsp_recexch_reduce_scatter_recexch_allgatherv",
                    "tsp_rsag_blocking", " --sizes 3 --count 3",
                    "messages: rank 1, call 1, message 1: the library sends 16 bytes to rank 2, "
                    "the model sends 8 bytes to rank 2");
  // The model returning first at count 0: the schedule sends its empty segments.
  const std::string silent = collv::test::edited_copy(
      rsag,
      {{"  steps      if popcount", "  steps      if count = 0 then 0 else if popcount"},
       {"begin\n    pof2 := 2^log2(p);", "begin\n  if count > 0 then\n    pof2 := 2^log2(p);"},
       {"\nend MPIR_ALLREDUCE_RSAG", "\n  endif;\nend MPIR_ALLREDUCE_RSAG"}},
      "tsp_rsag_silent");
  collv::test::conformance_fails(silent + " --sizes 3 --count 0",
                                 "messages: rank 0, call 1, message 1: the library sends 0 bytes "
                                 "to rank 1, the model sends no more");
  std::remove(silent.c_str());
}
