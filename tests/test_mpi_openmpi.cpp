// Open MPI's tuned algorithms against their models (models/openmpi/, docs/mpi.md): each model
// conforms with the installed library at a size and count where its particular path runs, and a
// mutant of it (one statement changed: operand order, an extra or a missing message, the wrong
// switch to another algorithm) fails `collv mpi --conformance` there.
#include <catch2/catch.hpp>
#include <fstream>
#include <string>

#include "app/mpi_cmd.hpp"
#include "app/mpi_internal.hpp"
#include "cli.hpp"
#include "mpi_util.hpp"
#include "util/error.hpp"

using collv::test::have_mpi;

namespace {

struct Mutant {
  const char* model;            // under models/openmpi/
  const char* from;             // the statement changed (must occur in the model, once)
  const char* to;               // what the mutant has there
  const char* args;             // the run where the model's path runs and the mutant differs
  const char* fails;            // what the mutant's report names
  const char* from2 = nullptr;  // a second statement changed with the first (optional)
  const char* to2 = nullptr;
};

// `text` with `from` replaced by `to`; `from` must occur exactly once.
std::string mutate(const std::string& text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  REQUIRE(at != std::string::npos);                       // the mutated statement is still there
  REQUIRE(text.find(from, at + 1) == std::string::npos);  // and only once
  std::string mutated = text;
  mutated.replace(at, from.size(), to);
  return mutated;
}

// Each model passes `collv mpi --conformance` at its arguments (exit 0) and its mutant fails
// there (exit 1) naming what differs.
void check_mutant(const Mutant& m) {
  const std::string model = std::string(COLLV_SOURCE_DIR) + "/models/openmpi/" + m.model + ".coll";
  std::string mutated = mutate(collv::test::slurp(model), m.from, m.to);
  if (m.from2) mutated = mutate(mutated, m.from2, m.to2);
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
    DYNAMIC_SECTION(m.model) { check_mutant(m); }
  }
}

TEST_CASE(
    "collv mpi --conformance: Open MPI's allreduce segmented_ring and nonoverlapping, allgather "
    "linear, reduce_scatter, reduce_scatter_block, allgatherv and alltoallv models conform, and "
    "each one's mutant fails",
    "[mpi][mpi-openmpi][slow]") {
  if (!have_mpi("mpicc.openmpi") || !have_mpi("mpirun.openmpi")) {
    WARN("Open MPI is not installed (mpicc.openmpi): skipped; scripts/install-deps.sh installs it");
    return;
  }
  const Mutant mutants[] = {
      // segcount = count: the plain ring at every count; at p = 3, count 12 the library runs two
      // phases (segment size 32 bytes: two elements).
      {"allreduce_segmented_ring", "def segc(c) = if c > 2 then 2 else c", "def segc(c) = c",
       "--sizes 3 --count 12", "messages: rank"},
      // The linear reduce folds rank i in on the left: the mutant on the right.
      {"allreduce_nonoverlapping", "acc := y + acc;", "acc := acc + y;", "--sizes 3 --count 1",
       "conformance: rank"},
      {"reduce_scatter_block_basic_linear", "acc := y + acc;", "acc := acc + y;",
       "--sizes 3 --count 1", "conformance: rank"},
      // Without the pinned gather and bcast the library runs its fixed decision (a binomial
      // broadcast at p = 4), not the model: the library line's settings are what select them.
      {"allgather_linear", " coll_tuned_gather_algorithm = 1 coll_tuned_bcast_algorithm = 1", "",
       "--sizes 4 --count 2", "messages: rank"},
      {"allgatherv_default", " coll_tuned_bcast_algorithm = 1\n", "\n", "--sizes 4 --count 2",
       "messages: rank"},
      // The basic scatterv sends no empty block: the mutant sends them (zero-byte messages).
      {"reduce_scatterv_non_overlapping",
       "if counts(i) > 0 then send acc[displs(i) .. displs(i) + counts(i) - 1] to i; endif;",
       "send acc[displs(i) .. displs(i) + counts(i) - 1] to i;", "--sizes 3 --count 1",
       "messages: rank", "if counts(my_id) > 0 then receive result from 0; endif;",
       "receive result from 0;"},
      // The non-commutative path: the received blocks on the wrong side.
      {"reduce_scatter_block_recursive_doubling", "if rtr < ctr then", "if rtr > ctr then",
       "--sizes 2 --count 1", "conformance: rank"},
      {"reduce_scatter_block_recursive_halving",
       "tmp[rd .. rd + rc - 1] := t + tmp[rd .. rd + rc - 1];",
       "tmp[rd .. rd + rc - 1] := tmp[rd .. rd + rc - 1] + t;", "--sizes 4 --count 1",
       "conformance: rank"},
      {"reduce_scatter_block_butterfly", "tmp[ri .. ri + nb - 1] := tmp[ri .. ri + nb - 1] + t;",
       "tmp[ri .. ri + nb - 1] := t + tmp[ri .. ri + nb - 1];", "--sizes 4 --count 1",
       "conformance: rank"},
      {"reduce_scatterv_recursive_halving", "tmp[ro .. re - 1] := t + tmp[ro .. re - 1];",
       "tmp[ro .. re - 1] := tmp[ro .. re - 1] + t;", "--sizes 4 --count 2", "conformance: rank"},
      {"reduce_scatterv_butterfly", "tmp[rd .. rd + rc - 1] := tmp[rd .. rd + rc - 1] + t;",
       "tmp[rd .. rd + rc - 1] := t + tmp[rd .. rd + rc - 1];", "--sizes 4 --count 2",
       "conformance: rank"},
      {"reduce_scatterv_ring",
       "acc[displs(my_id) .. displs(my_id) + counts(my_id) - 1] := t + acc[displs(my_id) .. "
       "displs(my_id) + counts(my_id) - 1];",
       "acc[displs(my_id) .. displs(my_id) + counts(my_id) - 1] := acc[displs(my_id) .. "
       "displs(my_id) + counts(my_id) - 1] + t;",
       "--sizes 3 --count 2", "conformance: rank"},
      // The ring sends the empty blocks too: the mutant leaves them out.
      {"allgatherv_ring",
       "send result[displs(sdf) .. displs(sdf) + counts(sdf) - 1] to sendto;\n      receive "
       "result[displs(rdf) .. displs(rdf) + counts(rdf) - 1] from recvfrom;",
       "if counts(sdf) > 0 then send result[displs(sdf) .. displs(sdf) + counts(sdf) - 1] to "
       "sendto; endif;\n      if counts(rdf) > 0 then receive result[displs(rdf) .. displs(rdf) + "
       "counts(rdf) - 1] from recvfrom; endif;",
       "--sizes 3 --count 1", "messages: rank"},
      // Bruck's last round sends only the blocks still missing: the mutant sends distance blocks.
      {"allgatherv_bruck", "bc := if distance <= p div 2 then distance else p - distance;",
       "bc := distance;", "--sizes 3 --count 2", "messages: rank"},
      // At even p the library exchanges with neighbours: the mutant runs the ring there.
      {"allgatherv_neighbor", "    if p mod 2 = 1 then\n", "    if p mod 2 >= 0 then\n",
       "--sizes 4 --count 2", "messages: rank"},
      {"allgatherv_two_proc", "send x to remote;", "send x to remote; send [] to remote;",
       "--sizes 2 --count 1", "messages: rank"},
      // Open MPI 4.1.4 sends the empty blocks: the mutant skips them (as 4.1.8 does).
      {"alltoallv_basic_linear", "    if i <> my_id then\n      irecv",
       "    if i <> my_id and counts(i, my_id) > 0 then\n      irecv", "--sizes 3 --count 1",
       "messages: rank", "    if i <> my_id then\n      isend",
       "    if i <> my_id and counts(my_id, i) > 0 then\n      isend"},
      {"alltoallv_pairwise",
       "    send x[sdispls(my_id, dst) .. sdispls(my_id, dst) + counts(my_id, dst) - 1] to dst;",
       "    if counts(my_id, dst) > 0 then send x[sdispls(my_id, dst) .. sdispls(my_id, dst) + "
       "counts(my_id, dst) - 1] to dst; endif;",
       "--sizes 3 --count 1", "messages: rank",
       "    receive result[rdispls(src, my_id) .. rdispls(src, my_id) + counts(src, my_id) - 1] "
       "from src;",
       "    if counts(src, my_id) > 0 then receive result[rdispls(src, my_id) .. rdispls(src, "
       "my_id) + counts(src, my_id) - 1] from src; endif;"},
  };
  for (const auto& m : mutants) {
    DYNAMIC_SECTION(m.model) { check_mutant(m); }
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

TEST_CASE(
    "collv mpi: Open MPI's allgatherv algorithm named `default` is algorithm 1, not the "
    "library's own choice",
    "[mpi][mpi-openmpi]") {
  collv::MpiOptions o;
  o.impl = "openmpi";
  o.collective = "allgatherv";
  o.algorithm = "default";
  CHECK(collv::mpi_detail::algorithm_name(o) == "default");  // was "ignore": the fixed decision ran
  o.algorithm = "1";
  CHECK(collv::mpi_detail::algorithm_name(o) == "default");
  o.algorithm = "ignore";
  CHECK(collv::mpi_detail::algorithm_name(o) == "ignore");
  o.algorithm = "auto";
  CHECK(collv::mpi_detail::algorithm_name(o) == "ignore");
  o.collective = "allreduce";
  o.algorithm = "default";  // an alias where no algorithm has the name
  CHECK(collv::mpi_detail::algorithm_name(o) == "ignore");
  o.impl = "mpich";
  o.algorithm = "auto";
  CHECK(collv::mpi_detail::algorithm_name(o) == "auto");
  o.algorithm = "spiral";
  CHECK_THROWS_AS(collv::mpi_detail::algorithm_name(o), collv::UsageError);
}

TEST_CASE(
    "collv mpi: an Open MPI algorithm that its source replaces for every non-commutative "
    "operation never runs under one: skipped and inconclusive (exit 3), never passed",
    "[mpi][mpi-openmpi]") {
  using collv::mpi_detail::openmpi_silent_fallback;
  CHECK_FALSE(openmpi_silent_fallback("reduce_scatter_block", "recursive_halving", false).empty());
  CHECK(openmpi_silent_fallback("reduce_scatter_block", "recursive_halving", true).empty());
  CHECK_FALSE(openmpi_silent_fallback("allreduce", "rabenseifner", false).empty());
  CHECK_FALSE(openmpi_silent_fallback("reduce", "rabenseifner", false).empty());
  CHECK(openmpi_silent_fallback("reduce_scatter_block", "recursive_doubling", false).empty());
  CHECK(openmpi_silent_fallback("allreduce", "ring", false).empty());
  if (!have_mpi("mpicc.openmpi") || !have_mpi("mpirun.openmpi")) {
    WARN("Open MPI is not installed (mpicc.openmpi): skipped; scripts/install-deps.sh installs it");
    return;
  }
  // It passed (exit 0) on the basic linear algorithm's results: the named one never ran.
  std::string out;
  int rc = collv::test::run_cli(
      "mpi --impl openmpi --collective reduce_scatter_block --algorithm recursive_halving "
      "--sizes 4 --count 0..2 --op noncommutative",
      out, "", 240);
  INFO(out);
  CHECK(rc == 3);
  CHECK_THAT(out, Catch::Contains("the named algorithm never ran: 2 runs where the library fell "
                                  "back to its own choice, 1 at count 0"));
  CHECK_THAT(out, Catch::Contains("Open MPI's source: "
                                  "ompi_coll_base_reduce_scatter_block_intra_recursivehalving"));
  // Under a commutative operation it runs, and is judged.
  rc = collv::test::run_cli(
      "mpi --impl openmpi --collective reduce_scatter_block --algorithm recursive_halving "
      "--sizes 4 --count 0..2 --op commutative",
      out, "", 240);
  INFO(out);
  CHECK(rc == 0);
}

TEST_CASE(
    "collv mpi --conformance reads Open MPI's reduce_scatter_block selector, and a further "
    "coll_tuned_ setting (a nested collective's algorithm) goes to the launch",
    "[mpi][mpi-openmpi]") {
  const std::string m = std::string(COLLV_SOURCE_DIR) + "/models/openmpi/";
  collv::MpiOptions base;
  base.sizes = {4, 4};
  auto one = [&](const std::string& f) {
    auto runs = collv::conformance_runs(f, base);
    REQUIRE(runs.size() == 1);
    return runs[0];
  };
  // Before: "the line names no algorithm selector" (the selector was read as a further setting
  // of reduce_scatter), so no Open MPI reduce_scatter_block model ran.
  auto r = one(m + "reduce_scatter_block_basic_linear.coll");
  CHECK(r.why_not.empty());
  CHECK(r.options.collective == "reduce_scatter_block");
  CHECK(r.options.algorithm == "1");
  CHECK(r.options.op == "noncommutative");
  REQUIRE(r.options.extra_env.size() == 2);
  CHECK(r.options.extra_env[0] ==
        std::make_pair(std::string("OMPI_MCA_coll_tuned_reduce_algorithm"), std::string("1")));
  CHECK(r.options.extra_env[1] ==
        std::make_pair(std::string("OMPI_MCA_coll_tuned_scatter_algorithm"), std::string("1")));
  r = one(m + "allgather_linear.coll");
  CHECK(r.why_not.empty());
  CHECK(r.options.collective == "allgather");
  CHECK(r.options.algorithm == "1");
  CHECK(r.options.extra_env.size() == 2);
  // The equal-block ring reduce-scatter, on MPI_Reduce_scatter's selector, runs with equal
  // counts (until 2026-11-29 it was not run); the reduce-scatterv one with the harness's counts.
  r = one(m + "reduce_scatter_ring.coll");
  CHECK(r.why_not.empty());
  CHECK(r.options.collective == "reduce_scatter");
  CHECK(r.options.equal_counts);
  r = one(m + "reduce_scatterv_ring.coll");
  CHECK(r.why_not.empty());
  CHECK_FALSE(r.options.equal_counts);
}

TEST_CASE(
    "collv mpi --conformance: a key an Open MPI library line names that collv does not know is "
    "an error at its line (file:line:col), never a silent not run",
    "[mpi][mpi-openmpi]") {
  if (!have_mpi("mpicc.openmpi") || !have_mpi("mpirun.openmpi")) {
    WARN("Open MPI is not installed (mpicc.openmpi): skipped; scripts/install-deps.sh installs it");
    return;
  }
  const std::string model = std::string(COLLV_SOURCE_DIR) + "/models/openmpi/bcast_binomial.coll";
  const std::string text = collv::test::slurp(model);
  const std::string line = "coll_tuned_bcast_algorithm = 6";
  auto copy = [&](const std::string& to, const char* name) {
    const std::string f = collv::test::unique_temp(name) + ".coll";
    std::ofstream(f) << mutate(text, line, to);
    return f;
  };
  std::string out;
  // Settings of other MCA components (the parser itself refuses a selector of another collective,
  // or a first key that is not the selector): errors at the line.
  for (const auto& [to, key] :
       {std::pair<std::string, std::string>{line + " btl_tcp_if_include = lo",
                                            "btl_tcp_if_include = lo"},
        {line + " coll_sync_barrier_before = 1", "coll_sync_barrier_before = 1"}}) {
    const std::string f = copy(to, "ompi_unknown_key");
    int rc = collv::test::run_cli("mpi --conformance " + f + " --sizes 2 --count 1", out, "", 120);
    INFO(out);
    CHECK(rc == 2);
    CHECK_THAT(out, Catch::Contains(f + ":7:3: error: '" + key +
                                    "': collv mpi --conformance knows no such Open MPI setting"));
    std::remove(f.c_str());
  }
  // The model's own line still runs (its further coll_tuned_ settings go to the launch).
  const std::string seg = copy(line + " coll_tuned_bcast_algorithm_segmentsize = 0", "ompi_seg");
  int rc = collv::test::run_cli("mpi --conformance " + seg + " --sizes 2 --count 1", out, "", 120);
  INFO(out);
  CHECK(rc == 0);
  std::remove(seg.c_str());
}
