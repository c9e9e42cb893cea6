// Open MPI's tuned algorithms against their models (models/openmpi/, docs/mpi.md): each model
// conforms with the installed library at a size and count where its particular path runs, and a
// mutant of it (one statement changed: operand order, an extra or a missing message, the wrong
// switch to another algorithm) fails `collv mpi --conformance` there.
#include <catch2/catch.hpp>
#include <fstream>
#include <string>

#include "cli.hpp"
#include "mpi_util.hpp"

using collv::test::have_mpi;

namespace {

struct Mutant {
  const char* model;  // under models/openmpi/
  const char* from;   // the statement changed (must occur in the model)
  const char* to;     // what the mutant has there
  const char* args;   // the run where the model's path runs and the mutant differs
  const char* fails;  // what the mutant's report names
};

}  // namespace

TEST_CASE(
    "collv mpi --conformance: Open MPI's reduce, bcast, alltoall, barrier and two_proc models "
    "conform, and each one's "
    "mutant fails",
    "[mpi][mpi-openmpi][slow]") {
  if (!have_mpi("mpicc.openmpi") || !have_mpi("mpirun.openmpi")) {
    WARN("Open MPI is not installed (mpicc.openmpi): skipped; scripts/install-deps.sh installs it");
    return;
  }
  const Mutant mutants[] = {
      // The commutative path combines own op first child: the mutant puts the child first.
      {"reduce_binomial", "acc := x + y;", "acc := y + x;", "--sizes 3 --count 1 --root 0",
       "conformance: rank 0, position 0, combination 1"},
      {"reduce_pipeline", "acc := x + y;", "acc := y + x;", "--sizes 3 --count 2 --root 1",
       "conformance: rank"},
      // Further children are folded in on the left of the accumulator.
      {"reduce_chain", "acc := y + acc;", "acc := acc + y;", "--sizes 3 --count 1 --root 2",
       "conformance: rank"},
      {"reduce_binary", "acc := y + acc;", "acc := acc + y;", "--sizes 3 --count 1 --root 0",
       "conformance: rank"},
      // The in-order tree (non-commutative path): the left child's sum on the wrong side.
      {"reduce_in_order_binary", "receive y from lk;\n      acc := y + acc;",
       "receive y from lk;\n      acc := acc + y;", "--sizes 3 --count 1 --root 0",
       "conformance: rank"},
      // The halving folds the received half in on the left (ompi_op_reduce(op, tmp_buf, rbuf)).
      {"reduce_rabenseifner",
       "r[ri[step] .. ri[step] + rc[step] - 1] := t + r[ri[step] .. ri[step] + rc[step] - 1];",
       "r[ri[step] .. ri[step] + rc[step] - 1] := r[ri[step] .. ri[step] + rc[step] - 1] + t;",
       "--sizes 4 --count 4 --root 1", "conformance: rank"},
      // At count 1 (a half of 0 elements) the library runs the pipeline: the mutant from 2 on.
      {"bcast_split_binary_tree", "    if count = 1 then\n", "    if count <= 2 then\n",
       "--sizes 4 --count 2 --root 0", "messages: rank"},
      // The ring sends the empty blocks too (zero-byte messages): the mutant leaves them out.
      {"bcast_scatter_allgather_ring",
       "send buf[sb * S .. sb * S + sc - 1] to (my_id + 1) mod p;\n        receive buf[rb * S .. "
       "rb * S + rc - 1] from (my_id - 1) mod p;",
       "if sc > 0 then send buf[sb * S .. sb * S + sc - 1] to (my_id + 1) mod p; endif;\n        "
       "if rc > 0 then receive buf[rb * S .. rb * S + rc - 1] from (my_id - 1) mod p; endif;",
       "--sizes 4 --count 5 --root 0", "messages: rank"},
      // Below count p the library switches to the basic linear broadcast: the mutant does not.
      {"bcast_scatter_allgather", "    if count < p then\n", "    if count < 2 then\n",
       "--sizes 5 --count 3 --root 0", "messages: rank"},
      // Bruck's rounds send to rank + distance: the mutant sends the other way round. At p = 3
      // both send one block to each neighbour (per-peer counts do not see it); at p = 4 they
      // differ.
      {"alltoall_modified_bruck",
       "send msg to (my_id + dist) mod p;\n      receive got from (my_id - dist) mod p;",
       "send msg to (my_id - dist) mod p;\n      receive got from (my_id + dist) mod p;",
       "--sizes 4 --count 1", "messages: rank"},
      // One extra (empty) message each way.
      {"allgather_two_proc", "send x to remote;", "send x to remote; send [] to remote;",
       "--sizes 2 --count 1", "messages: rank"},
      {"alltoall_two_proc", "receive result[remote * E .. remote * E + E - 1] from remote;",
       "receive result[remote * E .. remote * E + E - 1] from remote; send [] to remote; receive "
       "z from remote;",
       "--sizes 2 --count 1", "messages: rank"},
      // The tree barrier without its way down: the messages from rank 0 are missing.
      {"barrier_tree", "jump := depth div 2;", "jump := 0;", "--sizes 4 --count 1",
       "messages: rank"},
      {"barrier_two_proc", "receive token from remote;",
       "receive token from remote; send token to remote; receive token from remote;",
       "--sizes 2 --count 1", "messages: rank"},
  };
  for (const auto& m : mutants) {
    DYNAMIC_SECTION(m.model) {
      const std::string model =
          std::string(COLLV_SOURCE_DIR) + "/models/openmpi/" + m.model + ".coll";
      const std::string text = collv::test::slurp(model);
      const auto at = text.find(m.from);
      REQUIRE(at != std::string::npos);  // the mutated statement is still in the model
      REQUIRE(text.find(m.from, at + 1) == std::string::npos);  // and only once
      std::string mutated = text;
      mutated.replace(at, std::string(m.from).size(), m.to);
      const std::string file =
          collv::test::unique_temp(std::string("collv_mutant_") + m.model) + ".coll";
      std::ofstream(file) << mutated;

      std::string out;
      int rc = collv::test::run_cli("mpi --conformance " + model + " " + m.args, out, "", 240);
      INFO(out);
      CHECK(rc == 0);
      CHECK_THAT(out, Catch::Contains("  pass "));
      rc = collv::test::run_cli("mpi --conformance " + file + " " + m.args, out, "", 240);
      INFO(out);
      CHECK(rc == 1);
      CHECK_THAT(out, Catch::Contains("  FAIL "));
      CHECK_THAT(out, Catch::Contains(m.fails));
    }
  }
}

TEST_CASE(
    "collv mpi --conformance: a model whose `requires` holds at no p of --sizes is not run "
    "(Open MPI's two_proc: p = 2), and without its `requires` the library's refusal fails",
    "[mpi][mpi-openmpi]") {
  if (!have_mpi("mpicc.openmpi") || !have_mpi("mpirun.openmpi")) {
    WARN("Open MPI is not installed (mpicc.openmpi): skipped; scripts/install-deps.sh installs it");
    return;
  }
  const std::string model =
      std::string(COLLV_SOURCE_DIR) + "/models/openmpi/allgather_two_proc.coll";
  std::string out;
  int rc =
      collv::test::run_cli("mpi --conformance " + model + " --sizes 3..4 --count 1", out, "", 120);
  INFO(out);
  CHECK(rc == 2);
  CHECK_THAT(out, Catch::Contains("its `requires` holds at no p of --sizes 3..4"));
  CHECK_THAT(out, Catch::Contains("requires p = 2, which does not hold on complete:3"));
  // The same model without its `requires`: run at p = 3, where Open MPI refuses the algorithm.
  const std::string text = collv::test::slurp(model);
  const auto at = text.find("  requires   p = 2\n");
  REQUIRE(at != std::string::npos);
  std::string loose = text;
  loose.erase(at, std::string("  requires   p = 2\n").size());
  const std::string file = collv::test::unique_temp("collv_two_proc_any_p") + ".coll";
  std::ofstream(file) << loose;
  rc = collv::test::run_cli("mpi --conformance " + file + " --sizes 3 --count 1", out, "", 120);
  INFO(out);
  CHECK(rc == 1);
  CHECK_THAT(out, Catch::Contains("  FAIL "));
  CHECK_THAT(out, Catch::Contains("runtime"));
}
