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
  const std::string pairwise = collv::test::edited_copy(
      kModels + "alltoall_pairwise.coll", "= sched_pairwise", "= tsp_ring", "tsp_a2a_pairwise");
  collv::test::conformance_fails(
      pairwise + " --sizes 3 --count 1",
      "messages: rank 0, call 1, message 1: the library sends 48 bytes to rank 1, the "
      "model sends 16 bytes to rank 1");
  std::remove(pairwise.c_str());

  const std::string scattered = kModels + "alltoallv_nb_scattered.coll";
  collv::test::conformance_passes(scattered + " --sizes 3 --count 0..1",
                                  "pass          " + scattered + "#nb=tsp_scattered");
  // The blocking scattered model declared as tsp_scattered: it skips the zero counts.
  const std::string blocking = collv::test::edited_copy(
      kModels + "alltoallv_scattered.coll", "= tsp_blocked", "= tsp_scattered", "tsp_a2av");
  collv::test::conformance_fails(
      blocking + " --sizes 3 --count 1",
      "messages: rank 1, call 1, message 1: the library sends 0 bytes to rank 0, the "
      "model sends no more");
  std::remove(blocking.c_str());
}
