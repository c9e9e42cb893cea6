// MPICH's generic-transport schedules whose sends leave in an order that depends on arrival
// (issue 35): iallgather tsp_brucks (a line on allgather_bruck.coll) and iallreduce tsp_ring
// (allreduce_nb_ring.coll), compared with `message_order = dependencies` (a multiset of messages
// per rank, each send after the messages its data depends on; tests/test_mpi_dependencies.cpp
// has the comparison itself). Each conforms on the installed MPICH; a wrong peer, a wrong size and
// a message too many fail on messages.
#include <catch2/catch.hpp>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "cli.hpp"
#include "mpi_util.hpp"

namespace {

const std::string kModels = std::string(COLLV_SOURCE_DIR) + "/models/mpich/";
const std::string kBruck = kModels + "allgather_bruck.coll";
const std::string kRing = kModels + "allreduce_nb_ring.coll";

// allgather_bruck.coll with its tsp_brucks line alone, and `edits` made.
std::string bruck_tsp(std::vector<std::pair<std::string, std::string>> edits,
                      const std::string& name) {
  edits.insert(edits.begin(),
               {{"  library    mpich 4.0 MPIR_CVAR_ALLGATHER_INTRA_ALGORITHM = brucks\n", ""},
                {"  library    mpich 4.0 MPIR_CVAR_ALLGATHER_INTRA_ALGORITHM = nb "
                 "MPIR_CVAR_IALLGATHER_INTRA_ALGORITHM = sched_brucks\n",
                 ""}});
  return collv::test::edited_copy(kBruck, edits, name);
}

}  // namespace

TEST_CASE(
    "collv mpi --conformance: MPICH's iallgather tsp_brucks and iallreduce tsp_ring conform by "
    "dependencies, and a wrong peer, a wrong size and a message too many fail",
    "[mpi][mpi-mpich][mpi-nb][mpi-tsp][mpi-deps]") {
  if (!collv::test::have_mpich()) {
    WARN("MPICH is not installed: skipped; scripts/install-deps.sh installs it");
    return;
  }
  const std::string bruck = bruck_tsp({}, "tsp_brucks");
  const std::string out = collv::test::conformance_passes(
      bruck + " " + kRing + " --sizes 4 --count 0..2", "pass          " + kRing + "#nb=tsp_ring");
  CHECK_THAT(out, Catch::Contains("pass          " + bruck + "#nb=tsp_brucks"));
  CHECK_THAT(out, !Catch::Contains(collv::test::kMessagesNotChecked));
  std::remove(bruck.c_str());

  // Bruck's rounds the other way round: rank 0 sends its block to rank 1, MPICH to rank 3.
  const std::string peer = bruck_tsp({{"to (my_id - pof2) mod p;", "to (my_id + pof2) mod p;"},
                                      {"from (my_id + pof2) mod p;", "from (my_id - pof2) mod p;"}},
                                     "tsp_brucks_peer");
  collv::test::conformance_fails(peer + " --sizes 4 --count 1",
                                 "messages: rank 0, call 1: the library sends 0 messages of 16 "
                                 "bytes to rank 1, the model 1");
  std::remove(peer.c_str());
  // Blocks of count div p + 1: at p = 3, count 3 the blocks 2, 1, 0 where MPICH's are 1, 1, 1.
  const std::string size = collv::test::edited_copy(kRing, "c := (count + p - 1) div p;",
                                                    "c := count div p + 1;", "tsp_ring_size");
  collv::test::conformance_fails(size + " --sizes 3 --count 3",
                                 "messages: rank 0, call 1: the library sends 0 messages of 0 "
                                 "bytes to rank 1, the model 2");
  std::remove(size.c_str());
  // One allgatherv round more: one message too many to rank + 1.
  const std::string extra = collv::test::edited_copy(
      kRing, "for i := 0 to p - 2 do\n        sb := (my_id - i) mod p;",
      "for i := 0 to p - 1 do\n        sb := (my_id - i) mod p;", "tsp_ring_extra");
  collv::test::conformance_fails(extra + " --sizes 3 --count 3",
                                 "messages: rank 0, call 1: the library sends 4 messages of 16 "
                                 "bytes to rank 1, the model 5");
  std::remove(extra.c_str());

  // The key's values: program (the default) or dependencies; another is an error at the line.
  const std::string bad = collv::test::edited_copy(kRing, "tsp_ring message_order = dependencies",
                                                   "tsp_ring message_order = any", "tsp_ring_bad");
  std::string text;
  const int rc =
      collv::test::run_cli("mpi --conformance " + bad + " --sizes 3 --count 1", text, "", 120);
  INFO(text);
  CHECK(rc == 2);
  CHECK_THAT(text, Catch::Contains("'message_order = any': program or dependencies expected"));
  std::remove(bad.c_str());
}

TEST_CASE(
    "collv mpi --conformance: MPICH's iallgatherv tsp_recexch_doubling and _halving conform on "
    "the contiguous layout, and the doubling model declared as halving fails on messages",
    "[mpi][mpi-mpich][mpi-nb][mpi-tsp]") {
  if (!collv::test::have_mpich()) {
    WARN("MPICH is not installed: skipped; scripts/install-deps.sh installs it");
    return;
  }
  const std::string doubling = kModels + "allgatherv_nb_recexch_doubling.coll";
  const std::string halving = kModels + "allgatherv_nb_recexch_halving.coll";
  const std::string out =
      collv::test::conformance_passes(doubling + " " + halving + " --sizes 4 --count 0..2",
                                      "pass          " + doubling + "#nb=tsp_recexch_doubling");
  CHECK_THAT(out, Catch::Contains("pass          " + halving + "#nb=tsp_recexch_halving"));
  CHECK_THAT(out, !Catch::Contains(collv::test::kMessagesNotChecked));
  // The halving schedule swaps with the digit-reversed partner first.
  const std::string as_halving = collv::test::edited_copy(
      doubling, "= tsp_recexch_doubling displs", "= tsp_recexch_halving displs", "agv_d_as_h");
  collv::test::conformance_fails(as_halving + " --sizes 4 --count 1",
                                 "messages: rank 0, call 1, message 1: the library sends 16 bytes "
                                 "to rank 2, the model sends 16 bytes to rank 1");
  std::remove(as_halving.c_str());
  // Without `displs = contiguous` the harness's gaps make MPICH fall back: never judged.
  const std::string gaps =
      collv::test::edited_copy(doubling, " displs = contiguous", "", "agv_gaps");
  std::string text;
  const int rc =
      collv::test::run_cli("mpi --conformance " + gaps + " --sizes 3 --count 1", text, "", 120);
  INFO(text);
  CHECK(rc == 3);
  CHECK_THAT(text, Catch::Contains("not judged    " + gaps + "#nb=tsp_recexch_doubling"));
  std::remove(gaps.c_str());
}
