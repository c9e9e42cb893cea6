// MPICH's `nb` algorithms (issue 35): the blocking collective run over the nonblocking one, whose
// schedule is the nonblocking collective's own selection, pinned by a model's library line
// (MPIR_CVAR_I<COLLECTIVE>_INTRA_ALGORITHM) or by `collv mpi --nb-algorithm`.
#include <catch2/catch.hpp>
#include <cstdio>
#include <string>

#include "cli.hpp"
#include "mpi_util.hpp"

namespace {

const std::string kSrc = COLLV_SOURCE_DIR;

}  // namespace

TEST_CASE("collv mpi --nb-algorithm is MPICH's nb only and takes one of its nonblocking names",
          "[mpi][mpi-nb]") {
  std::string out;
  CHECK(collv::test::run_cli("mpi --impl mpich --collective allreduce --algorithm nb "
                             "--list-algorithms",
                             out) == 0);
  CHECK_THAT(out, Catch::Contains("sched_recursive_doubling\n"));
  CHECK_THAT(out, Catch::Contains("tsp_ring\n"));
  CHECK(collv::test::run_cli("mpi --impl mpich --collective allreduce --algorithm "
                             "recursive_doubling --nb-algorithm sched_recursive_doubling",
                             out) == 2);
  CHECK_THAT(out, Catch::Contains("it needs --impl mpich --algorithm nb"));
  CHECK(collv::test::run_cli("mpi --impl openmpi --collective allreduce --algorithm ring "
                             "--nb-algorithm sched_recursive_doubling",
                             out) == 2);
  CHECK_THAT(out, Catch::Contains("it needs --impl mpich --algorithm nb"));
  CHECK(collv::test::run_cli("mpi --impl mpich --collective allreduce --algorithm nb "
                             "--nb-algorithm sched_binomial",
                             out) == 2);
  CHECK_THAT(out, Catch::Contains("'sched_binomial' is not one of MPICH's nonblocking allreduce "
                                  "algorithms (MPIR_CVAR_IALLREDUCE_INTRA_ALGORITHM)"));
}

TEST_CASE(
    "collv mpi --conformance: a model's second MPICH line runs nb over the nonblocking schedule "
    "it names and is compared, another schedule fails, one that does not apply is not judged, "
    "and an unknown key is an error",
    "[mpi][mpi-mpich][mpi-nb]") {
  if (!collv::test::have_mpich()) {
    WARN("MPICH is not installed: skipped; scripts/install-deps.sh installs it");
    return;
  }
  std::string out;
  const std::string model = kSrc + "/models/mpich/allreduce_recursive_doubling.coll";
  int rc =
      collv::test::run_cli("mpi --conformance " + model + " --sizes 3 --count 2", out, "", 120);
  INFO(out);
  CHECK(rc == 0);
  CHECK_THAT(out, Catch::Contains("pass          " + model + "\n"));
  CHECK_THAT(out, Catch::Contains("pass          " + model + "#nb=sched_recursive_doubling\n"));
  CHECK_THAT(out, Catch::Contains("mpich allreduce nb sched_recursive_doubling"));
  CHECK(out.find(collv::test::kMessagesNotChecked) == std::string::npos);

  // The variable is read: the naive schedule (a reduce to rank 0, then a broadcast) is not
  // recursive doubling, and its messages say so.
  const std::string nb_line = "nb MPIR_CVAR_IALLREDUCE_INTRA_ALGORITHM = sched_recursive_doubling";
  const std::string naive = collv::test::edited_copy(
      model, nb_line, "nb MPIR_CVAR_IALLREDUCE_INTRA_ALGORITHM = sched_naive", "nb_naive");
  out = collv::test::conformance_fails(naive + " --sizes 3 --count 2",
                                       "FAIL          " + naive + "#nb=sched_naive");
  CHECK_THAT(out, Catch::Contains("messages: rank 0, call 1, message 1"));
  std::remove(naive.c_str());
  // ... and the model of the naive schedule (a binomial reduce, then a binomial broadcast) passes.
  const std::string naive_model = kSrc + "/models/mpich/allreduce_nb_naive.coll";
  rc = collv::test::run_cli("mpi --conformance " + naive_model + " --sizes 3 --count 2", out, "",
                            120);
  INFO(out);
  CHECK(rc == 0);
  CHECK_THAT(out, Catch::Contains("pass          " + naive_model + "#nb=sched_naive"));

  // A schedule that does not apply (built-in operations only): MPICH falls back, not judged.
  const std::string rsag = collv::test::edited_copy(
      model, nb_line, "nb MPIR_CVAR_IALLREDUCE_INTRA_ALGORITHM = sched_reduce_scatter_allgather",
      "nb_rsag");
  rc = collv::test::run_cli("mpi --conformance " + rsag + " --sizes 3 --count 2", out, "", 120);
  INFO(out);
  CHECK(rc == 0);  // the blocking line passes; the nb line never ran
  CHECK_THAT(out, Catch::Contains("not judged    " + rsag + "#nb=sched_reduce_scatter_allgather"));
  std::remove(rsag.c_str());

  // A key collv does not know is an error at the line, never ignored; so is a nonblocking name
  // MPICH does not have (not run, with the reason).
  const std::string unknown = collv::test::edited_copy(
      model, nb_line, nb_line + " MPIR_CVAR_IALLREDUCE_TUNING = 1", "nb_unknown");
  rc = collv::test::run_cli("mpi --conformance " + unknown + " --sizes 3 --count 2", out, "", 120);
  INFO(out);
  CHECK(rc == 2);
  CHECK_THAT(out, Catch::Contains(unknown + ":6:3: error: 'MPIR_CVAR_IALLREDUCE_TUNING = 1': "
                                            "collv mpi --conformance knows no such MPICH "
                                            "setting"));
  std::remove(unknown.c_str());
  const std::string bogus = collv::test::edited_copy(
      model, nb_line, "nb MPIR_CVAR_IALLREDUCE_INTRA_ALGORITHM = sched_bogus", "nb_bogus");
  rc = collv::test::run_cli("mpi --conformance " + bogus + " --sizes 3 --count 2", out, "", 120);
  INFO(out);
  CHECK(rc == 0);
  CHECK_THAT(out, Catch::Contains("MPICH has no nonblocking allreduce algorithm 'sched_bogus'"));
  std::remove(bogus.c_str());
}

TEST_CASE(
    "collv mpi --conformance: MPICH's nb models whose nonblocking schedule differs from the "
    "blocking algorithm conform (Rabenseifner's segments, the binomial broadcast at count 0), and "
    "the blocking models declared as nb fail",
    "[mpi][mpi-mpich][mpi-nb]") {
  if (!collv::test::have_mpich()) {
    WARN("MPICH is not installed: skipped; scripts/install-deps.sh installs it");
    return;
  }
  std::string out;
  const std::string m = kSrc + "/models/mpich/";
  // Rabenseifner's all-reduce: the nonblocking schedule puts the remainder in the last segment.
  const std::string rsag = m + "allreduce_nb_reduce_scatter_allgather.coll";
  int rc = collv::test::run_cli("mpi --conformance " + rsag + " --sizes 3 --count 3", out, "", 120);
  INFO(out);
  CHECK(rc == 0);
  CHECK_THAT(out, Catch::Contains("pass          " + rsag + "#nb=sched_reduce_scatter_allgather"));
  const std::string blocking = collv::test::edited_copy(
      m + "allreduce_rabenseifner.coll", "ALGORITHM = reduce_scatter_allgather",
      "ALGORITHM = nb MPIR_CVAR_IALLREDUCE_INTRA_ALGORITHM = sched_reduce_scatter_allgather",
      "nb_rsag_blocking");
  collv::test::conformance_fails(blocking + " --sizes 3 --count 3",
                                 "messages: rank 1, call 1, message 1: the library sends 16 bytes "
                                 "to rank 2, the model sends 8 bytes to rank 2");
  std::remove(blocking.c_str());
  // The binomial broadcast: at count 0 the nonblocking schedule sends empty messages along the
  // tree, where the blocking one returns first.
  const std::string bin = m + "bcast_nb_binomial.coll";
  rc = collv::test::run_cli("mpi --conformance " + bin + " --sizes 3 --count 0..1 --root last", out,
                            "", 120);
  INFO(out);
  CHECK(rc == 0);
  CHECK_THAT(out, Catch::Contains("pass          " + bin + "#nb=sched_binomial"));
  const std::string bin_blocking = collv::test::edited_copy(
      m + "bcast_binomial.coll", "ALGORITHM = binomial",
      "ALGORITHM = nb MPIR_CVAR_IBCAST_INTRA_ALGORITHM = sched_binomial", "nb_bcast_blocking");
  collv::test::conformance_fails(bin_blocking + " --sizes 3 --count 0 --root last",
                                 "messages: rank 2, call 1, message 1: the library sends 0 bytes "
                                 "to rank 1, the model sends no more");
  std::remove(bin_blocking.c_str());
  // The scatter-ring broadcast: the nonblocking scatter sends a child everything from its piece
  // to the end; at p = 5, root 4, count 5 rank 1 (relative rank 2) sends rank 2 two pieces where
  // the blocking scatter sends one.
  const std::string ring = m + "bcast_nb_scatter_ring_allgather.coll";
  const std::string ring_blocking = collv::test::edited_copy(
      m + "bcast_scatter_ring_allgather.coll", "ALGORITHM = scatter_ring_allgather",
      "ALGORITHM = nb MPIR_CVAR_IBCAST_INTRA_ALGORITHM = sched_scatter_ring_allgather",
      "nb_ring_blocking");
  out = collv::test::conformance_fails(
      ring_blocking + " " + ring + " --sizes 5 --count 5 --root last",
      "messages: rank 1, call 1, message 1: the library sends 32 bytes to rank 2, the model sends "
      "16 bytes to rank 2");
  CHECK_THAT(out, Catch::Contains("pass          " + ring + "#nb=sched_scatter_ring_allgather"));
  std::remove(ring_blocking.c_str());
}

TEST_CASE(
    "collv mpi --conformance: MPICH's generic-transport (tsp) schedules conform with their "
    "models (a binary tree and a chain broadcast, a chain reduce, the allgatherv ring with empty "
    "blocks), and the neighbouring models declared as them fail on messages",
    "[mpi][mpi-mpich][mpi-nb]") {
  if (!collv::test::have_mpich()) {
    WARN("MPICH is not installed: skipped; scripts/install-deps.sh installs it");
    return;
  }
  std::string out;
  const std::string m = kSrc + "/models/mpich/";
  const std::string tree = m + "bcast_nb_tree.coll", ring = m + "bcast_nb_ring.coll";
  int rc = collv::test::run_cli(
      "mpi --conformance " + tree + " " + ring + " --sizes 4 --count 0..1 --root last", out, "",
      120);
  INFO(out);
  CHECK(rc == 0);
  CHECK_THAT(out, Catch::Contains("pass          " + tree + "#nb=tsp_tree"));
  CHECK_THAT(out, Catch::Contains("pass          " + ring + "#nb=tsp_ring"));
  // The binomial schedule's model declared as tsp_tree: the root sends its larger subtree first
  // (rank 2), the binary tree its first child (rank 1).
  const std::string binomial = collv::test::edited_copy(
      m + "bcast_nb_binomial.coll", "= sched_binomial", "= tsp_tree", "tsp_binomial");
  rc = collv::test::run_cli("mpi --conformance " + binomial + " --sizes 4 --count 1 --root 0", out,
                            "", 120);
  INFO(out);
  CHECK(rc == 1);
  CHECK_THAT(out, Catch::Contains("messages: rank 0, call 1, message 1: the library sends 16 bytes "
                                  "to rank 1, the model sends 16 bytes to rank 2"));
  std::remove(binomial.c_str());
  // The binary tree declared as tsp_ring: the chain's root sends one message, not two.
  const std::string as_ring =
      collv::test::edited_copy(tree, "= tsp_tree", "= tsp_ring", "tsp_tree_as_ring");
  rc = collv::test::run_cli("mpi --conformance " + as_ring + " --sizes 4 --count 1 --root 0", out,
                            "", 120);
  INFO(out);
  CHECK(rc == 1);
  CHECK_THAT(out, Catch::Contains("messages: rank 0, call 1, message 2: the library sends no more, "
                                  "the model sends 16 bytes to rank 2"));
  std::remove(as_ring.c_str());
  // The chain reduce (tsp_ring, a non-commutative operator): rank 2 sends rank 1, where the
  // binomial tree's rank 2 sends rank 0; the chain's own model passes, root 1 included (rank 0
  // sends the result to the root).
  const std::string chain = m + "reduce_nb_ring.coll";
  rc = collv::test::run_cli("mpi --conformance " + chain + " --sizes 3 --count 1 --root all", out,
                            "", 120);
  INFO(out);
  CHECK(rc == 0);
  CHECK_THAT(out, Catch::Contains("pass          " + chain + "#nb=tsp_ring"));
  const std::string binomial_chain = collv::test::edited_copy(
      m + "reduce_binomial.coll", "= sched_binomial", "= tsp_ring", "tsp_reduce");
  rc = collv::test::run_cli("mpi --conformance " + binomial_chain + " --sizes 3 --count 1 --root 0",
                            out, "", 120);
  INFO(out);
  CHECK(rc == 1);
  CHECK_THAT(out, Catch::Contains("messages: rank 2, call 1, message 1: the library sends 16 bytes "
                                  "to rank 1, the model sends 16 bytes to rank 0"));
  std::remove(binomial_chain.c_str());
  // The allgatherv ring (tsp_ring) sends every block, an empty one too: the blocking ring's model,
  // which skips them, fails at count 0; the schedule's own passes.
  const std::string agv = m + "allgatherv_nb_ring.coll";
  rc = collv::test::run_cli("mpi --conformance " + agv + " --sizes 3 --count 0..1", out, "", 120);
  INFO(out);
  CHECK(rc == 0);
  CHECK_THAT(out, Catch::Contains("pass          " + agv + "#nb=tsp_ring"));
  const std::string agv_blocking = collv::test::edited_copy(
      m + "allgatherv_ring.coll", "= sched_ring", "= tsp_ring", "tsp_allgatherv");
  rc = collv::test::run_cli("mpi --conformance " + agv_blocking + " --sizes 3 --count 0", out, "",
                            120);
  INFO(out);
  CHECK(rc == 1);
  CHECK_THAT(out, Catch::Contains("messages: rank 0, call 1, message 1: the library sends 0 bytes "
                                  "to rank 1, the model sends no more"));
  std::remove(agv_blocking.c_str());
}

TEST_CASE(
    "collv mpi --conformance: MPICH's nonblocking alltoallw (sched_blocked and tsp_blocked as the "
    "scattered pattern and tsp_inplace as the pairwise exchange in place) conforms and a model "
    "that sends forward or pairs in the other order fails on messages",
    "[mpi][mpi-mpich][mpi-nb]") {
  if (!collv::test::have_mpich()) {
    WARN("MPICH is not installed: skipped; scripts/install-deps.sh installs it");
    return;
  }
  std::string out;
  const std::string m = kSrc + "/models/mpich/";
  const std::string scattered = m + "alltoallw_scattered.coll";
  const std::string pairwise = m + "alltoallw_pairwise_sendrecv_replace.coll";
  int rc = collv::test::run_cli(
      "mpi --conformance " + scattered + " " + pairwise + " --sizes 3 --count 1", out, "", 120);
  INFO(out);
  CHECK(rc == 0);
  CHECK_THAT(out, Catch::Contains("pass          " + scattered + "#nb=sched_blocked"));
  CHECK_THAT(out, Catch::Contains("pass          " + scattered + "#nb=tsp_blocked"));
  CHECK_THAT(out, Catch::Contains("pass          " + pairwise + "#nb=tsp_inplace"));
  // The scattered pattern with its sends to rank + i (receives from rank - i), declared as
  // sched_blocked: rank 0's first message goes to rank 1, the library's to rank 2.
  const std::string fwd = collv::test::edited_copy(
      kSrc + "/tests/data/mpi/alltoallw_scattered_sends_forward.coll",
      "ALLTOALLW_INTRA_ALGORITHM = scattered",
      "ALLTOALLW_INTRA_ALGORITHM = nb MPIR_CVAR_IALLTOALLW_INTRA_ALGORITHM = sched_blocked",
      "alltoallw_nb_forward");
  rc = collv::test::run_cli("mpi --conformance " + fwd + " --sizes 3 --count 1", out, "", 120);
  INFO(out);
  CHECK(rc == 1);
  CHECK_THAT(out, Catch::Contains("messages: rank 0, call 1, message 1: the library sends 16 bytes "
                                  "to rank 2, the model sends 16 bytes to rank 1"));
  std::remove(fwd.c_str());
  // The pairwise exchange with its partners in descending order, its tsp_inplace line alone.
  const std::string down = collv::test::edited_copy(
      pairwise,
      {{"  library    mpich 4.0 MPIR_CVAR_ALLTOALLW_INTRA_ALGORITHM = pairwise_sendrecv_replace "
        "MPI_IN_PLACE = yes\n",
        ""},
       {"for j := i + 1 to p - 1 do", "for j := p - 1 downto i + 1 do"}},
      "alltoallw_nb_inplace_down");
  rc = collv::test::run_cli("mpi --conformance " + down + " --sizes 3 --count 1", out, "", 120);
  INFO(out);
  CHECK(rc == 1);
  CHECK_THAT(out, Catch::Contains("#nb=tsp_inplace"));
  CHECK_THAT(out, Catch::Contains("messages: rank 0, call 1, message 1:"));
  std::remove(down.c_str());
}
