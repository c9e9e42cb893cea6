// MPICH's smp algorithms under `collv mpi` (src/app/mpi_smp.cpp, docs/mpi.md "MPICH's smp
// algorithms"): the selection file collv writes, the harness's node lines that decide whether a
// run is one of smp, control messages; then the five models against the installed MPICH (two
// cliques of consecutive ranks), a mutant of each failing, and runs that are no smp run skipped.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "app/mpi_cmd.hpp"
#include "app/mpi_internal.hpp"
#include "cli.hpp"
#include "mpi_util.hpp"
#include "util/error.hpp"

using namespace collv;
using namespace collv::mpi_detail;

namespace {

const std::string kSrc = COLLV_SOURCE_DIR;

bool have_mpich() { return test::have_mpi("mpicc.mpich") && test::have_mpi("mpiexec.mpich"); }

std::string node_file(int r, int p, int leader, int local) {
  return "{\"k\":\"node\",\"leader\":" + std::to_string(leader) +
         ",\"local\":" + std::to_string(local) + "}\n" + test::done(r, p);
}

}  // namespace

TEST_CASE(
    "mpi smp: the selection file names smp on the parent communicator and the nested "
    "algorithms on the node and node-roots ones",
    "[mpi-smp]") {
  const std::string j = mpich_smp_selection(
      "barrier", {{"node_bcast", "binomial"}, {"node_roots_barrier", "dissemination"}});
  auto tree = nlohmann::ordered_json::parse(j);
  const auto& intra = tree["collective=barrier"]["comm_type=intra"];
  // MPICH tries the keys in order: node_roots, node, parent (smp), then any other communicator.
  std::vector<std::string> keys;
  for (const auto& [k, v] : intra.items()) keys.push_back(k);
  CHECK(keys == std::vector<std::string>{"comm_hierarchy=node_roots", "comm_hierarchy=node",
                                         "comm_hierarchy=parent", "comm_hierarchy=any"});
  CHECK(intra["comm_hierarchy=parent"].contains("algorithm=MPIR_Barrier_intra_smp"));
  // smp only for the collective under test.
  CHECK(!tree["collective=bcast"]["comm_type=intra"].contains("comm_hierarchy=parent"));
  CHECK(tree["collective=bcast"]["comm_type=intra"]["comm_hierarchy=node"].contains(
      "algorithm=MPIR_Bcast_intra_binomial"));
  CHECK(tree["collective=gatherv"].contains("algorithm=MPIR_Gatherv_allcomm_linear"));
  CHECK(tree["collective=scan"].size() == 1);  // no inter-communicator scan
  // A key or algorithm the file cannot name is refused, never written.
  CHECK_THROWS_AS(mpich_smp_selection("barrier", {{"node_frobnicate", "binomial"}}), UsageError);
  CHECK_THROWS_AS(mpich_smp_selection("allreduce", {{"node_reduce", "smp"}}), UsageError);
  CHECK_THROWS_AS(mpich_smp_selection("allreduce", {{"node_reduce", "ring"}}), UsageError);
  CHECK_THROWS_AS(mpich_smp_selection("gatherv", {{"node_gatherv", "linear"}}), UsageError);
}

TEST_CASE(
    "mpi smp: a run is one of smp only when its ranks' node lines show several nodes, one "
    "of two ranks or more",
    "[mpi-smp]") {
  // Two nodes: {0, 1} and {2}: an smp run.
  CHECK(smp_not_spread(test::write_ranks(
                           {node_file(0, 3, 0, 2), node_file(1, 3, 0, 2), node_file(2, 3, 2, 1)}),
                       3) == "");
  // One node of three ranks.
  CHECK_THAT(smp_not_spread(test::write_ranks({node_file(0, 3, 0, 3), node_file(1, 3, 0, 3),
                                               node_file(2, 3, 0, 3)}),
                            3),
             Catch::Contains("spans one node"));
  // Two nodes of one rank each: MPICH makes the communicator flat.
  CHECK_THAT(smp_not_spread(test::write_ranks({node_file(0, 2, 0, 1), node_file(1, 2, 1, 1)}), 2),
             Catch::Contains("every node holds one rank"));
  // Claims that disagree (rank 1 says its node has 3 ranks; 2 name leader 0) are no layout.
  CHECK_THAT(smp_not_spread(test::write_ranks({node_file(0, 3, 0, 2), node_file(1, 3, 0, 3),
                                               node_file(2, 3, 2, 1)}),
                            3),
             Catch::Contains("disagree"));
  // A rank without a node line.
  CHECK_THAT(smp_not_spread(test::write_ranks({node_file(0, 2, 0, 2), test::done(1, 2)}), 2),
             Catch::Contains("rank 1 wrote no node line"));
  // The judge reads a node line that does not fit the rank as an error of the file.
  MpiCase c{"barrier", 2, 1, 0, true, false};
  CHECK_THROWS_AS(
      judge_mpi_run(c, test::write_ranks({node_file(0, 2, 1, 2), node_file(1, 2, 0, 2)})),
      UsageError);
}

TEST_CASE("mpi smp: a control message is compared as a model's send of no item, only at its size",
          "[mpi-smp]") {
  // Rank 0 releases rank 1 with a 1-byte message; the model sends an empty token.
  const std::vector<SentMessages> lib(kHarnessCalls, SentMessages{{{1, 1}}, {}});
  const SentMessages model{{{1, 0}}, {}};
  CHECK(compare_sends(lib, model, kHarnessElemBytes, 1).verdict == Verdict::Pass);
  // Without the setting: a part of an element, not compared.
  CHECK(compare_sends(lib, model).verdict == Verdict::Unknown);
  // Another size is no control message.
  CHECK(compare_sends(lib, model, kHarnessElemBytes, 4).verdict == Verdict::Unknown);
  // The control message still goes to its rank: a model that sends it elsewhere fails.
  const std::vector<SentMessages> lib3(kHarnessCalls, SentMessages{{{2, 1}}, {}, {}});
  CHECK(compare_sends(lib3, SentMessages{{{1, 0}}, {}, {}}, kHarnessElemBytes, 1).verdict ==
        Verdict::Fail);
}

TEST_CASE(
    "collv mpi --conformance: MPICH's five smp algorithms on two nodes of consecutive ranks "
    "conform, and a mutant of each fails",
    "[mpi][mpi-mpich][mpi-smp]") {
  if (!have_mpich()) {
    WARN("MPICH is not installed: skipped; scripts/install-deps.sh installs it");
    return;
  }
  std::string out;
  // p = 5: node 0 holds ranks 0..2, node 1 ranks 3..4; root 1 is not its node's leader.
  std::string models;
  for (const char* m : {"barrier_smp", "bcast_smp", "allreduce_smp", "reduce_smp", "scan_smp"})
    models += " " + kSrc + "/models/mpich/" + m + ".coll";
  int rc =
      test::run_cli("mpi --conformance" + models + " --sizes 5 --count 2 --root 1", out, "", 300);
  INFO(out);
  CHECK(rc == 0);
  CHECK(out.find("no compare") == std::string::npos);
  CHECK(out.find(collv::test::kMessagesNotChecked) == std::string::npos);
  CHECK(out.find("\n  FAIL ") == std::string::npos);  // a model's line, not the table's FAILED
  std::string mutants;
  for (const char* m : {"barrier_smp_flat_release", "bcast_smp_node_first",
                        "allreduce_smp_local_first", "reduce_smp_via_leader", "scan_smp_no_noneed"})
    mutants += " " + kSrc + "/tests/data/mpi/" + m + ".coll";
  rc = test::run_cli("mpi --conformance" + mutants + " --sizes 5 --count 2 --root 1", out, "", 300);
  INFO(out);
  CHECK(rc == 1);
  for (const char* m : {"barrier_smp_flat_release", "bcast_smp_node_first",
                        "allreduce_smp_local_first", "reduce_smp_via_leader", "scan_smp_no_noneed"})
    CHECK_THAT(out, Catch::Contains(std::string("FAIL          ") + kSrc + "/tests/data/mpi/" + m));
}

TEST_CASE("collv mpi: an smp run on one node, or on nodes of one rank, is skipped, not passed",
          "[mpi][mpi-mpich][mpi-smp]") {
  if (!have_mpich()) {
    WARN("MPICH is not installed: skipped; scripts/install-deps.sh installs it");
    return;
  }
  std::string out;
  // No cliques: one node. MPICH runs smp's node part only; the run is no run of the model.
  int rc = test::run_cli(
      "mpi --impl mpich --collective barrier --algorithm smp --sizes 4 --count "
      "1 --model " +
          kSrc + "/models/mpich/barrier_smp.coll",
      out, "", 120);
  INFO(out);
  CHECK(rc == 3);
  CHECK_THAT(out, Catch::Contains("spans one node"));
  CHECK_THAT(out, Catch::Contains("0 passed"));
  // Two cliques at p = 2: a node per rank, a flat communicator.
  const std::string wrapper = test::unique_temp("collv_mpi_cliques") + ".sh";
  std::ofstream(wrapper) << "#!/bin/sh\nMPIR_CVAR_NUM_CLIQUES=2 MPIR_CVAR_CLIQUES_BY_BLOCK=1 "
                            "exec mpiexec.mpich \"$@\"\n";
  std::filesystem::permissions(wrapper, std::filesystem::perms::owner_all);
  rc = test::run_cli(
      "mpi --impl mpich --collective barrier --algorithm smp --sizes 2 --count 1 --mpirun " +
          wrapper,
      out, "", 120);
  INFO(out);
  CHECK(rc == 3);
  CHECK_THAT(out, Catch::Contains("every node holds one rank"));
  // A non-commutative operation: MPICH's restriction, applied by collv (the file would not).
  rc = test::run_cli(
      "mpi --impl mpich --collective allreduce --algorithm smp --sizes 4 --count 1 "
      "--op noncommutative --mpirun " +
          wrapper,
      out, "", 120);
  INFO(out);
  CHECK(rc == 3);
  CHECK_THAT(out, Catch::Contains("commutative operations only"));
}
