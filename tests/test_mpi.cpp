// `collv mpi` (docs/mpi.md): the judge of the harness's observations on hand-written files (each
// check failing on a broken twin), and the real libraries: a small sweep of Open MPI's and MPICH's
// all-reduce, and the bugs injected into the harness's own ring all-reduce, each caught.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "app/mpi_cmd.hpp"
#include "check/checks.hpp"
#include "cli.hpp"
#include "mpi_util.hpp"
#include "util/error.hpp"

namespace fs = std::filesystem;
using namespace collv;

using test::all_pass;
using test::done;
using test::have_mpi;
using test::verdict;
using test::write_ranks;

// An all-reduce on 2 ranks, count 1: rank 0 combines {0} (op) {1}, rank 1 receives the result.
TEST_CASE("mpi judge: a correct all-reduce passes, and each check fails on its broken twin",
          "[mpi]") {
  MpiCase c{"allreduce", 2, 1, 0, false, false};
  const std::string good0 =
      "{\"k\":\"op\",\"n\":1,\"a\":[[0,1]],\"b\":[[0,2]]}\n{\"k\":\"out\",\"buf\":[[0,3]]}\n" +
      done(0, 2);
  const std::string good1 = "{\"k\":\"out\",\"buf\":[[0,3]]}\n" + done(1, 2);
  auto ok = judge_mpi_run(c, write_ranks({good0, good1}));
  CHECK(all_pass(ok));
  CHECK(verdict(ok, "order") == Verdict::Pass);

  SECTION("nodup: a contribution counted twice") {
    auto r = judge_mpi_run(c, write_ranks({"{\"k\":\"op\",\"n\":1,\"a\":[[0,1]],\"b\":[[0,3]]}\n"
                                           "{\"k\":\"out\",\"buf\":[[0,3]]}\n" +
                                               done(0, 2),
                                           good1}));
    CHECK(verdict(r, "nodup") == Verdict::Fail);
  }
  SECTION("operands: elements of different positions combined") {
    MpiCase c2{"allreduce", 2, 2, 0, true, false};
    auto r =
        judge_mpi_run(c2, write_ranks({"{\"k\":\"op\",\"n\":1,\"a\":[[1,1]],\"b\":[[0,2]]}\n"
                                       "{\"k\":\"out\",\"buf\":[[0,3],[1,3]]}\n" +
                                           done(0, 2),
                                       "{\"k\":\"out\",\"buf\":[[0,3],[1,3]]}\n" + done(1, 2)}));
    CHECK(verdict(r, "operands") == Verdict::Fail);
    CHECK(verdict(r, "postcondition") == Verdict::Pass);
  }
  SECTION("operands: an operand that holds nothing (never written)") {
    auto r = judge_mpi_run(c, write_ranks({"{\"k\":\"op\",\"n\":1,\"a\":[[-1,0]],\"b\":[[0,3]]}\n"
                                           "{\"k\":\"out\",\"buf\":[[0,3]]}\n" +
                                               done(0, 2),
                                           good1}));
    CHECK(verdict(r, "operands") == Verdict::Fail);
  }
  SECTION("order: swapped operands under a non-commutative operation; fine if commutative") {
    std::string swapped =
        "{\"k\":\"op\",\"n\":1,\"a\":[[0,2]],\"b\":[[0,1]]}\n{\"k\":\"out\",\"buf\":[[0,3]]}\n" +
        done(0, 2);
    auto r = judge_mpi_run(c, write_ranks({swapped, good1}));
    CHECK(verdict(r, "order") == Verdict::Fail);
    MpiCase comm = c;
    comm.commutative = true;
    auto rc = judge_mpi_run(comm, write_ranks({swapped, good1}));
    CHECK(all_pass(rc));
    CHECK(verdict(rc, "order") == Verdict::NotChecked);
  }
  SECTION("order: non-adjacent operands") {
    MpiCase c3{"allreduce", 3, 1, 0, false, false};
    std::string o1 = "{\"k\":\"out\",\"buf\":[[0,7]]}\n";
    auto r = judge_mpi_run(c3, write_ranks({"{\"k\":\"op\",\"n\":1,\"a\":[[0,1]],\"b\":[[0,4]]}\n"
                                            "{\"k\":\"op\",\"n\":1,\"a\":[[0,5]],\"b\":[[0,2]]}\n" +
                                                o1 + done(0, 3),
                                            o1 + done(1, 3), o1 + done(2, 3)}));
    CHECK(verdict(r, "order") == Verdict::Fail);
  }
  SECTION("postcondition: a contribution missing, one extra, a wrong length, none written") {
    auto missing =
        judge_mpi_run(c, write_ranks({good0, "{\"k\":\"out\",\"buf\":[[0,2]]}\n" + done(1, 2)}));
    CHECK(verdict(missing, "postcondition") == Verdict::Fail);
    MpiCase c3{"allreduce", 3, 1, 0, true, false};
    std::string o = "{\"k\":\"out\",\"buf\":[[0,7]]}\n";
    auto extra =
        judge_mpi_run(c, write_ranks({good0, "{\"k\":\"out\",\"buf\":[[0,7]]}\n" + done(1, 2)}));
    CHECK(verdict(extra, "postcondition") == Verdict::Fail);
    CHECK(verdict(extra, "operands") == Verdict::Pass);
    auto len = judge_mpi_run(
        c, write_ranks({good0, "{\"k\":\"out\",\"buf\":[[0,3],[1,3]]}\n" + done(1, 2)}));
    CHECK(verdict(len, "postcondition") == Verdict::Fail);
    auto none = judge_mpi_run(c, write_ranks({good0, done(1, 2)}));
    CHECK(verdict(none, "postcondition") == Verdict::Fail);
  }
  SECTION("runtime: a rank that wrote nothing, or did not finish, or claims another size") {
    CHECK(verdict(judge_mpi_run(c, write_ranks({good0})), "runtime") == Verdict::Fail);
    CHECK(verdict(judge_mpi_run(c, write_ranks({good0, "{\"k\":\"out\",\"buf\":[[0,3]]}\n"})),
                  "runtime") == Verdict::Fail);
    CHECK(verdict(judge_mpi_run(
                      c, write_ranks({good0, "{\"k\":\"out\",\"buf\":[[0,3]]}\n" + done(1, 3)})),
                  "runtime") == Verdict::Fail);
    CHECK(verdict(judge_mpi_run(c, write_ranks({good0, "{\"k\":\"out\",\"buf\":[[0,"})),
                  "runtime") == Verdict::Fail);
  }
}

TEST_CASE("mpi judge: the positional postconditions of the rooted and personalized collectives",
          "[mpi]") {
  // scatter from root 1 at p = 2, count 2: rank 0 gets the root's positions 0,1; rank 1 2,3.
  MpiCase s{"scatter", 2, 2, 1, true, false};
  auto ok = judge_mpi_run(s, write_ranks({"{\"k\":\"out\",\"buf\":[[0,2],[1,2]]}\n" + done(0, 2),
                                          "{\"k\":\"out\",\"buf\":[[2,2],[3,2]]}\n" + done(1, 2)}));
  CHECK(all_pass(ok));
  auto bad =
      judge_mpi_run(s, write_ranks({"{\"k\":\"out\",\"buf\":[[2,2],[3,2]]}\n" + done(0, 2),
                                    "{\"k\":\"out\",\"buf\":[[2,2],[3,2]]}\n" + done(1, 2)}));
  CHECK(verdict(bad, "postcondition") == Verdict::Fail);
  // exscan: rank 0's output is undefined (not judged), rank 1 holds rank 0's contribution.
  MpiCase e{"exscan", 2, 1, 0, false, false};
  CHECK(
      all_pass(judge_mpi_run(e, write_ranks({"{\"k\":\"out\",\"buf\":[[-1,0]]}\n" + done(0, 2),
                                             "{\"k\":\"out\",\"buf\":[[0,1]]}\n" + done(1, 2)}))));
  CHECK(verdict(judge_mpi_run(
                    e, write_ranks({done(0, 2), "{\"k\":\"out\",\"buf\":[[0,3]]}\n" + done(1, 2)})),
                "postcondition") == Verdict::Fail);
  // Not the harness's format: refused, not judged.
  CHECK_THROWS_AS(judge_mpi_run(s, write_ranks({"{\"k\":\"weird\"}\n", ""})), UsageError);
}

TEST_CASE("collv mpi: bad usage and a missing MPI exit 2", "[mpi]") {
  std::string out;
  CHECK(test::run_cli("mpi --impl openmpi --collective allreduce --mpicc /nonexistent/mpicc "
                      "--mpirun /nonexistent/mpirun",
                      out) == 2);
  CHECK_THAT(out, Catch::Contains("no MPI to run"));
  CHECK(test::run_cli("mpi --impl openmpi --collective allreduce --algorithm nosuch", out) == 2);
  CHECK_THAT(out, Catch::Contains("recursive_doubling"));
  CHECK(test::run_cli("mpi --impl mpich --collective allreduce --inject double-count", out) == 2);
  CHECK(test::run_cli("mpi --impl mpich --collective bcast --in-place", out) == 2);
}

TEST_CASE("collv mpi: Open MPI's ring all-reduce at p = 2..4, counts 0..5", "[mpi]") {
  if (!have_mpi("mpicc.openmpi") || !have_mpi("mpirun.openmpi")) {
    WARN("Open MPI is not installed (mpicc.openmpi): skipped; scripts/install-deps.sh installs it");
    return;
  }
  std::string out;
  int rc = test::run_cli(
      "mpi --impl openmpi --collective allreduce --algorithm ring --sizes 2..4 --count 0..5", out,
      "", 300);
  INFO(out);
  CHECK(rc == 0);
  CHECK_THAT(out, Catch::Contains("18 runs: 18 passed"));
}

TEST_CASE("collv mpi: MPICH's recursive-doubling all-reduce, non-commutative, p = 2..4", "[mpi]") {
  if (!have_mpi("mpicc.mpich") || !have_mpi("mpiexec.mpich")) {
    WARN("MPICH is not installed (mpicc.mpich): skipped; scripts/install-deps.sh installs it");
    return;
  }
  std::string out;
  int rc = test::run_cli(
      "mpi --impl mpich --collective allreduce --algorithm recursive_doubling --sizes 2..4 "
      "--count 0..5 --op noncommutative",
      out, "", 300);
  INFO(out);
  CHECK(rc == 0);
  CHECK_THAT(out, Catch::Contains("18 runs: 18 passed"));
}

TEST_CASE("collv mpi: bugs injected into the harness's ring all-reduce are caught", "[mpi]") {
  std::string impl = have_mpi("mpicc.mpich") && have_mpi("mpiexec.mpich")      ? "mpich"
                     : have_mpi("mpicc.openmpi") && have_mpi("mpirun.openmpi") ? "openmpi"
                                                                               : "";
  if (impl.empty()) {
    WARN("no MPI installed: skipped; scripts/install-deps.sh installs Open MPI and MPICH");
    return;
  }
  std::string base = "mpi --impl " + impl +
                     " --collective allreduce --algorithm harness-ring --sizes 3..4 --count 5 "
                     "--op noncommutative --json - ";
  std::string out;
  int rc = test::run_cli(base, out, "", 120);
  INFO(out);
  CHECK(rc == 0);
  struct Bug {
    const char* name;
    const char* check;
  };
  for (Bug b :
       {Bug{"off-by-one", "\"operands\": \"fail\""}, Bug{"double-count", "\"nodup\": \"fail\""},
        Bug{"swap-operands", "\"order\": \"fail\""}}) {
    rc = test::run_cli(base + "--inject " + b.name, out, "", 120);
    INFO(b.name << "\n" << out);
    CHECK(rc == 1);
    CHECK_THAT(out, Catch::Contains(b.check));
    CHECK_THAT(out, Catch::Contains("--inject " + std::string(b.name)));  // the reproducer
  }
  // Swapped operands are no bug under a commutative operation.
  rc = test::run_cli(
      "mpi --impl " + impl +
          " --collective allreduce --algorithm harness-ring --sizes 3 --count 5 --inject "
          "swap-operands",
      out, "", 120);
  CHECK(rc == 0);
}

TEST_CASE("collv mpi: a run where MPICH says it fell back is not counted as the algorithm's",
          "[mpi]") {
  if (!have_mpi("mpicc.mpich") || !have_mpi("mpiexec.mpich")) {
    WARN("MPICH is not installed (mpicc.mpich): skipped; scripts/install-deps.sh installs it");
    return;
  }
  // MPICH's reduce-scatter-allgather all-reduce does not take user operations: MPICH prints so
  // and runs its own choice, so nothing was checked of the algorithm asked for (exit 3).
  std::string out;
  int rc = test::run_cli(
      "mpi --impl mpich --collective allreduce --algorithm reduce_scatter_allgather --sizes 2 "
      "--count 4",
      out, "", 120);
  INFO(out);
  CHECK(rc == 3);
  CHECK_THAT(out, Catch::Contains("fell back"));
}

TEST_CASE("mpi conformance: the first rank and position whose combinations differ", "[mpi]") {
  MpiCombinations lib = {{{0, 1, 2}, {1, 1, 2}}, {}};
  CHECK(compare_combinations(lib, lib).verdict == Verdict::Pass);
  MpiCombinations swapped = {{{0, 2, 1}, {1, 1, 2}}, {}};
  auto r = compare_combinations(lib, swapped);
  REQUIRE(r.verdict == Verdict::Fail);
  CHECK_THAT(r.violations.front().message,
             Catch::Contains("rank 0, position 0, combination 1: the library makes ranks {0} "
                             "(op) ranks {1} at position 0, the model makes ranks {1} (op) ranks "
                             "{0}"));
  MpiCombinations extra = {{{0, 1, 2}, {1, 1, 2}}, {{0, 3, 4}}};
  r = compare_combinations(lib, extra);
  REQUIRE(r.verdict == Verdict::Fail);
  CHECK_THAT(r.violations.front().message, Catch::Contains("rank 1, position 0"));
  CHECK_THAT(r.violations.front().message, Catch::Contains("the library makes no more"));
  // Nothing combined on either side (a broadcast): conformance says nothing, and says so.
  MpiCombinations none = {{}, {}};
  r = compare_combinations(none, none);
  CHECK(r.verdict == Verdict::NotChecked);
  CHECK_THAT(r.note, Catch::Contains("says nothing"));
}

TEST_CASE(
    "mpi --conformance: each model's library line chooses the library, collective, "
    "algorithm, settings and operator",
    "[mpi]") {
  const std::string m = std::string(COLLV_SOURCE_DIR) + "/models/";
  MpiOptions base;
  auto one = [&](const std::string& file) {
    auto runs = conformance_runs(file, base);
    // The first line's run (a second line is the model's MPICH nb line, tests/test_mpi_nb.cpp).
    REQUIRE(!runs.empty());
    return runs.front();
  };
  auto r = one(m + "mpich/reduce_scatter_pairwise.coll");
  CHECK(r.why_not.empty());
  CHECK(r.options.impl == "mpich");
  CHECK(r.options.collective == "reduce_scatter_block");
  CHECK(r.options.algorithm == "pairwise");
  CHECK(r.options.op == "commutative");
  CHECK(r.options.model == m + "mpich/reduce_scatter_pairwise.coll");
  // The non-commutative path's model runs with a non-commutative operation.
  r = one(m + "mpich/reduce_binomial.coll");
  CHECK(r.why_not.empty());
  CHECK(r.options.op == "noncommutative");
  CHECK(one(m + "mpich/reduce_binomial_commutative.coll").options.op == "commutative");
  // Open MPI: the algorithm's number, and further settings as MCA environment variables.
  r = one(m + "openmpi/bcast_knomial.coll");
  CHECK(r.why_not.empty());
  CHECK(r.options.collective == "bcast");
  CHECK(r.options.algorithm == "7");
  REQUIRE(r.options.extra_env.size() == 1);
  CHECK(r.options.extra_env[0] ==
        std::make_pair(std::string("OMPI_MCA_coll_tuned_bcast_knomial_radix"), std::string("4")));
  // Not run, each with the reason: NCCL, a model without a library line.
  CHECK_THAT(one(m + "nccl/allreduce_ring_nccl.coll").why_not, Catch::Contains("nccl is not"));
  // A v-collective runs: the harness's counts are the model's counts(j).
  CHECK(one(m + "mpich/gatherv_linear.coll").why_not.empty());
  CHECK(one(m + "mpich/gatherv_linear.coll").options.collective == "gatherv");
  // A barrier is compared by its messages.
  CHECK(one(m + "mpich/barrier_dissemination.coll").why_not.empty());
  CHECK(one(m + "mpich/barrier_dissemination.coll").options.collective == "barrier");
  // An alltoallv model with MPICH's ALLTOALLW selector runs MPI_Alltoallw; an alltoall model with
  // the ALLTOALLV or ALLTOALLW one runs that collective with equal counts (in place: its line).
  const auto w = one(m + "mpich/alltoallw_scattered.coll");
  CHECK(w.why_not.empty());
  CHECK(w.options.collective == "alltoallw");
  CHECK_FALSE(w.options.equal_counts);
  for (const char* k : {"alltoallv", "alltoallw"}) {
    const auto psr = one(m + "mpich/" + k + "_pairwise_sendrecv_replace.coll");
    CHECK(psr.why_not.empty());
    CHECK(psr.options.collective == k);
    CHECK(psr.options.equal_counts);
    CHECK(psr.options.in_place);
  }
  CHECK_FALSE(one(m + "mpich/alltoall_pairwise_sendrecv_replace.coll").options.equal_counts);
  CHECK_THAT(one(m + "allreduce_hypercube.coll").why_not, Catch::Contains("no `library` line"));
  // A selector of another collective, or an algorithm the library does not have.
  std::string text = test::slurp(m + "mpich/allgather_ring.coll");
  auto write = [&](const std::string& from, const std::string& to) {
    std::string t = text;
    auto k = t.find(from);
    REQUIRE(k != std::string::npos);
    t.replace(k, from.size(), to);
    std::string f = test::unique_temp("conf_model") + ".coll";
    std::ofstream(f) << t;
    return f;
  };
  // (the model's parser already refuses a selector of another collective)
  std::string f = write("MPIR_CVAR_ALLGATHER_INTRA", "MPIR_CVAR_BCAST_INTRA");
  CHECK_THROWS_WITH(conformance_runs(f, base), Catch::Contains("does not choose a allgather"));
  fs::remove(f);
  f = write("= ring", "= spiral");
  CHECK_THAT(one(f).why_not, Catch::Contains("'spiral' is not one of mpich's allgather"));
  fs::remove(f);
  // Options that the line decides are refused next to --conformance.
  std::string out;
  CHECK(test::run_cli("mpi --conformance " + m + "mpich --impl mpich", out) == 2);
  CHECK(test::run_cli("mpi --conformance " + m + "no-such-dir", out) == 2);
}

TEST_CASE(
    "collv mpi --conformance: every library model with a selector conforms at p = 4, "
    "counts 3..4, root p-1 (MPICH's collectives without a reduction by their message "
    "patterns, its byte-cut broadcasts in bytes), and the old Open MPI ring model fails below "
    "count p",
    "[mpi][heavy]") {
  if (!have_mpi("mpicc.openmpi") || !have_mpi("mpicc.mpich")) {
    WARN("Open MPI or MPICH is not installed: skipped; scripts/install-deps.sh installs them");
    return;
  }
  const std::string root = COLLV_SOURCE_DIR;
  std::string out;
  int rc = test::run_cli("mpi --conformance " + root + "/models --sizes 4 --count 3..4 --root last",
                         out, "", 600);
  INFO(out);
  // Every line run passes (exit 0 since 2026-11-29: before, the byte-cut broadcasts were
  // inconclusive at count 3, exit 3).
  CHECK(rc == 0);
  CHECK_THAT(out, Catch::Contains("conformance: 167 models with an Open MPI or MPICH selector"));
  std::size_t pass = 0, uncompared = 0, at = 0;
  while ((at = out.find("\n  pass  ", at)) != std::string::npos) ++pass, ++at;
  at = 0;
  while ((at = out.find("(no compare: ", at)) != std::string::npos) ++uncompared, ++at;
  // 167 compared and conform: Open MPI's sixty-one (combinations and per-peer messages; its ring
  // reduce-scatter of equal blocks with equal counts since 2026-11-29; its four two_proc models
  // are not run at p = 4), MPICH's 29 `nb` lines on blocking models, its nine `tsp_*` nb lines
  // on blocking models (the eighth: reduce_scatter_recursive_halving's tsp_recexch; the ninth:
  // allgather_bruck's tsp_brucks, compared by dependencies, issue 35), one on the nb Rabenseifner
  // model (tsp_recexch_reduce_scatter_recexch_allgatherv), three nonblocking alltoallw lines
  // (sched_blocked and tsp_blocked on the scattered model, tsp_inplace on the in-place pairwise
  // one) and sixteen tsp models (bcast_nb_tree, bcast_nb_ring, reduce_nb_ring,
  // allgatherv_nb_ring: 2026-11-29's sweep, p = 2..6, every root; alltoall_nb_ring,
  // alltoallv_nb_scattered, gather_nb_tree, scatter_nb_tree, allreduce_nb_tree,
  // allgather_nb_recexch_doubling and _halving, reduce_nb_tree, reduce_scatterv_nb_recexch: its
  // second batch; allreduce_nb_ring, compared by dependencies; allgatherv_nb_recexch_doubling and
  // _halving, on the contiguous layout), its six sched nb models (the two nb scatter-allgather
  // broadcasts in bytes), and MPICH's forty-two blocking models (the five smp models on two
  // cliques of two ranks; combinations and message patterns; reduce-scatterv's with the
  // harness's MPI_Reduce_scatter counts, the noncommutative reduce-scatter with equal counts;
  // the barrier and the v-collectives by their message patterns, the alltoallw scattered one on
  // MPI_Alltoallw, the in-place alltoallv and alltoallw ones with equal counts; the Rabenseifner
  // reduce and all-reduce under MPI_SUM, by their message patterns, at count 4 >= pof2, count 3
  // falling back; the scatter-ring and scatter-recursive-doubling broadcasts, which cut the
  // buffer in bytes, compared in bytes: `item = byte` on their lines; before 2026-11-29 they
  // were inconclusive at count 3).
  CHECK(pass == 167);
  CHECK(uncompared == 0);
  CHECK(out.find("\n  inconclusive ") == std::string::npos);
  // Open MPI's ring reduce-scatter of equal blocks runs with equal counts (it was not run).
  CHECK_THAT(out,
             Catch::Contains("pass          " + root + "/models/openmpi/reduce_scatter_ring.coll"));
  // Open MPI's two_proc models (requires p = 2) are not run at p = 4.
  CHECK_THAT(out, Catch::Contains("allgather_two_proc.coll: its `requires` holds at no p of "
                                  "--sizes 4..4"));
  CHECK_THAT(out, Catch::Contains("pass          " + root + "/models/mpich/bcast_binomial.coll"));
  CHECK_THAT(out, Catch::Contains("pass          " + root +
                                  "/models/mpich/bcast_scatter_ring_allgather.coll"));
  // MPICH uses Rabenseifner's all-reduce only for builtin operations: its line's MPI_Op = MPI_SUM
  // runs it with MPI_SUM, and its messages conform.
  CHECK_THAT(
      out, Catch::Contains("pass          " + root + "/models/mpich/allreduce_rabenseifner.coll"));
  CHECK(out.find("\n  FAIL ") == std::string::npos);
  // The old copy of the Open MPI ring model (the ring at every count) fails at count 2 < p = 4,
  // where Open MPI runs recursive doubling; at count 4 it conforms.
  const std::string old = root + "/tests/data/mpi/allreduce_ring_old.coll";
  rc = test::run_cli("mpi --conformance " + old + " --sizes 4 --count 2", out, "", 120);
  INFO(out);
  CHECK(rc == 1);
  CHECK_THAT(out, Catch::Contains("FAIL          " + old));
  CHECK_THAT(out, Catch::Contains("conformance: rank 0, position 0, combination 1"));
  CHECK(test::run_cli("mpi --conformance " + old + " --sizes 4 --count 4", out, "", 120) == 0);
  // A conformance run in which the library fell back in every run of its only model judged
  // nothing: inconclusive (exit 3), never a pass (count 3 < pof2 = 4: MPICH falls back).
  const std::string raben = root + "/models/mpich/allreduce_rabenseifner.coll";
  rc = test::run_cli("mpi --conformance " + raben + " --sizes 4 --count 3", out, "", 120);
  INFO(out);
  CHECK(rc == 3);
  CHECK_THAT(out, Catch::Contains("not judged    " + raben));
  CHECK_THAT(out, Catch::Contains("nothing was judged: the library fell back"));
}

TEST_CASE("mpi conformance: a model's combinations, rank by rank (the ring all-reduce)", "[mpi]") {
  // The ring at p = 4, count 8: each rank reduces p - 1 = 3 segments of 2 elements, receiving
  // the left neighbour's partial result as the left operand.
  auto m = model_combinations(
      std::string(COLLV_SOURCE_DIR) + "/tests/data/mpi/allreduce_ring_old.coll", 4, 8, 0);
  REQUIRE(m.size() == 4);
  for (const auto& rank : m) CHECK(rank.size() == 6);
  for (std::size_t r = 0; r < 4; ++r)
    for (const auto& c : m[r]) {
      CHECK(c.right == (std::uint64_t{1} << r));  // its own contribution on the right
      CHECK((c.left & c.right) == 0);
    }
}

TEST_CASE(
    "collv mpi --model: Open MPI's ring all-reduce conforms to the ring model at count >= p "
    "and not below, where it runs recursive doubling",
    "[mpi]") {
  if (!have_mpi("mpicc.openmpi") || !have_mpi("mpirun.openmpi")) {
    WARN("Open MPI is not installed (mpicc.openmpi): skipped; scripts/install-deps.sh installs it");
    return;
  }
  std::string model = std::string(COLLV_SOURCE_DIR) + "/tests/data/mpi/allreduce_ring_old.coll";
  std::string base =
      "mpi --impl openmpi --collective allreduce --algorithm ring --sizes 4 --model " + model;
  std::string out;
  int rc = test::run_cli(base + " --count 4..5", out, "", 120);
  INFO(out);
  CHECK(rc == 0);
  rc = test::run_cli(base + " --count 2", out, "", 120);
  INFO(out);
  CHECK(rc == 1);
  CHECK_THAT(out, Catch::Contains("conformance: rank 0, position 0, combination 1: the library "
                                  "makes ranks {0} (op) ranks {1} at position 0, the model makes "
                                  "no more"));
}

TEST_CASE("mpi messages: the first rank and peer whose message counts or bytes differ", "[mpi]") {
  PeerMessages a(3);
  a.msgs[0][1] = 2;
  a.bytes[0][1] = 32;
  a.msgs[2][0] = 1;
  a.bytes[2][0] = 16;
  CHECK(compare_messages(a, a).verdict == Verdict::Pass);
  PeerMessages b = a;
  b.msgs[2][0] = 2;  // one more message from rank 2 to rank 0
  auto r = compare_messages(a, b);
  REQUIRE(r.verdict == Verdict::Fail);
  CHECK(r.violations.front().message ==
        "rank 2 sends 1 message to rank 0 (16 bytes), the model 2 (16 bytes)");
  PeerMessages c = a;
  c.bytes[0][1] = 48;  // the same messages carrying one element more
  r = compare_messages(a, c);
  REQUIRE(r.verdict == Verdict::Fail);
  CHECK_THAT(r.violations.front().message,
             Catch::Contains("rank 0 sends 32 bytes to rank 1 in 2 messages, the model's "
                             "transfers carry 48 bytes (3 items of 16 bytes)"));
  // Self-messages are left out, and said.
  PeerMessages d = a;
  d.self[1] = 2;
  r = compare_messages(d, a);
  CHECK(r.verdict == Verdict::Pass);
  CHECK_THAT(r.note, Catch::Contains("2 messages a rank sent to itself left out"));
}

TEST_CASE(
    "mpi messages: Open MPI's monitored messages are summed per peer over the calls and a rank's "
    "messages to itself counted apart",
    "[mpi]") {
  // Call 1: rank 0 sends 16 bytes to rank 1, then 0 bytes to itself; rank 1 sends 32 to rank 0.
  // Call 2: rank 0 sends 16 bytes to rank 1 twice.
  const std::vector<SentMessages> calls = {{{{1, 16}, {0, 0}}, {{0, 32}}},
                                           {{{1, 16}, {1, 16}}, {}}};
  auto m = peer_messages(calls, 2);
  CHECK(m.msgs[0][1] == 3);
  CHECK(m.bytes[0][1] == 48);
  CHECK(m.self[0] == 1);
  CHECK(m.msgs[0][0] == 0);
  CHECK(m.msgs[1][0] == 1);
  CHECK(m.bytes[1][0] == 32);
  // Against a model that sends one message each way per call: rank 0 sends one too many.
  PeerMessages model(2);
  model.msgs = {{0, 2}, {2, 0}};
  model.bytes = {{0, 32}, {64, 0}};
  auto r = compare_messages(m, model);
  CHECK(r.verdict == Verdict::Fail);
  m.msgs[0][1] = 2;
  m.bytes[0][1] = 32;
  m.msgs[1][0] = 2;
  m.bytes[1][0] = 64;
  CHECK(compare_messages(m, model).verdict == Verdict::Pass);
  // A model's transfers per peer: the ring all-reduce at p = 4, count 8 sends 2 (p - 1) = 6
  // messages of 2 elements to its right neighbour and none to the others.
  auto mr =
      model_run(std::string(COLLV_SOURCE_DIR) + "/models/openmpi/allreduce_ring.coll", 4, 8, 0);
  for (int r = 0; r < 4; ++r)
    for (int q = 0; q < 4; ++q) {
      CHECK(mr.messages.msgs[r][q] == (q == (r + 1) % 4 ? 6u : 0u));
      CHECK(mr.messages.bytes[r][q] == (q == (r + 1) % 4 ? 6u * 2 * kHarnessElemBytes : 0u));
    }
}

TEST_CASE(
    "collv mpi --model: Open MPI's per-peer message counts against the model's transfers: a model "
    "with the same combinations but other messages fails, and no monitoring is not a pass",
    "[mpi]") {
  if (!have_mpi("mpicc.openmpi") || !have_mpi("mpirun.openmpi")) {
    WARN("Open MPI is not installed (mpicc.openmpi): skipped; scripts/install-deps.sh installs it");
    return;
  }
  const std::string root = COLLV_SOURCE_DIR;
  const std::string wrong = root + "/tests/data/mpi/allreduce_ring_direct_allgather.coll";
  std::string out;
  // Count 4 = p: the ring; the copy's all-gather sends each segment from its owner to every rank.
  int rc = test::run_cli("mpi --conformance " + wrong + " --sizes 4 --count 3..4", out, "", 120);
  INFO(out);
  CHECK(rc == 1);
  CHECK_THAT(out, Catch::Contains("messages: 1 run; the first: np:4 count 4"));
  CHECK_THAT(out, Catch::Contains("messages: rank 0 sends 12 messages to rank 1 (192 bytes), the "
                                  "model 8 (128 bytes)"));
  CHECK(out.find("conformance: rank") == std::string::npos);  // the combinations agree
  // The model as it is: combinations and messages conform, both judged (the messages of both of
  // its paths).
  std::string json = test::unique_temp("collv_mpi_msgs") + ".json";
  rc = test::run_cli(
      "mpi --impl openmpi --collective allreduce --algorithm ring --sizes 4 "
      "--count 3..4 --model " +
          root + "/models/openmpi/allreduce_ring.coll --json " + json,
      out, "", 120);
  CHECK(rc == 0);
  std::string j = test::slurp(json);
  std::size_t passed = 0, at = 0;
  while ((at = j.find("\"messages\": \"pass\"", at)) != std::string::npos) ++passed, ++at;
  CHECK(passed == 2);  // count 3 < p: recursive doubling; count 4: the ring
  // Monitoring that records nothing (a launcher that turns it off): not checked, with the reason.
  std::string wrapper = test::unique_temp("collv_mpi_nomon") + ".sh";
  std::ofstream(wrapper) << "#!/bin/sh\nunset OMPI_MCA_pml_monitoring_enable\nexec mpirun.openmpi "
                            "\"$@\"\n";
  fs::permissions(wrapper, fs::perms::owner_all);
  rc = test::run_cli(
      "mpi --impl openmpi --collective allreduce --algorithm ring --sizes 4 "
      "--count 4 --model " +
          root + "/models/openmpi/allreduce_ring.coll --mpirun " + wrapper + " --json " + json,
      out, "", 120);
  j = test::slurp(json);
  INFO(j);
  CHECK(j.find("\"messages\": \"pass\"") == std::string::npos);
  CHECK_THAT(j, Catch::Contains("\"messages\": \"not-checked\""));
  CHECK_THAT(j, Catch::Contains("\"messages_not_checked\""));
  CHECK_THAT(j, Catch::Contains("np:4 count 4: not checked: rank 0 logged no message pattern for "
                                "call 1"));
  CHECK_THAT(out, Catch::Contains("messages (per-peer counts against the model) not checked in 1 "
                                  "of 1 runs"));
  fs::remove(wrapper);
  fs::remove(json);
}

TEST_CASE("mpi judge --op builtin: MPI_SUM's values say how often each input was added", "[mpi]") {
  // p = 3, count 2, all-reduce: rank r's input at position k is (k + 1) << 5r.
  auto v = [](std::uint64_t k, std::initializer_list<int> ranks) {
    std::uint64_t x = 0;
    for (int r : ranks) x += (k + 1) << (5 * r);
    return std::to_string(x);
  };
  auto run = [&](const std::string& buf0) {
    std::vector<std::string> files;
    for (int r = 0; r < 3; ++r)
      files.push_back("{\"k\":\"outv\",\"buf\":[" +
                      (r == 0 ? buf0 : v(0, {0, 1, 2}) + "," + v(1, {0, 1, 2})) + "]}\n" +
                      done(r, 3));
    MpiCase c{"allreduce", 3, 2, 0, true, false};
    c.builtin = true;
    std::string dir = write_ranks(files);
    auto res = judge_mpi_run(c, dir);
    fs::remove_all(dir);
    return res;
  };
  auto ok = run(v(0, {0, 1, 2}) + "," + v(1, {0, 1, 2}));
  CHECK(verdict(ok, "postcondition") == Verdict::Pass);
  CHECK(verdict(ok, "nodup") == Verdict::NotChecked);  // no combination is visible
  CHECK(verdict(ok, "order") == Verdict::NotChecked);
  auto first = [](const std::vector<CheckResult>& cs) {
    for (const auto& c : cs)
      if (c.name == "postcondition" && !c.violations.empty()) return c.violations[0].message;
    return std::string("(none)");
  };
  // Rank 1's input added twice at position 1; rank 2's missing at position 0.
  auto twice = run(v(0, {0, 1, 2}) + "," + v(1, {0, 1, 1, 2}));
  CHECK(verdict(twice, "postcondition") == Verdict::Fail);
  CHECK_THAT(first(twice),
             Catch::Contains("rank 0 position 1") && Catch::Contains("rank 1 counted 2 times"));
  auto missing = run(v(0, {0, 1}) + "," + v(1, {0, 1, 2}));
  CHECK_THAT(first(missing), Catch::Contains("rank 2 missing"));
  // Rank 2's input of position 0 added at position 1.
  auto moved = run(v(0, {0, 1, 2}) + "," + std::to_string((2u << 0) + (2u << 5) + (1u << 10)));
  CHECK_THAT(first(moved),
             Catch::Contains("rank 0 position 1") && Catch::Contains("rank 2's digit is 1, not 2"));
  // Values in a run of a user operation are not the harness's output.
  MpiCase user{"allreduce", 3, 2, 0, true, false};
  std::string dir = write_ranks({"{\"k\":\"outv\",\"buf\":[1,2]}\n" + done(0, 3)});
  CHECK_THROWS_AS(judge_mpi_run(user, dir), UsageError);
  fs::remove_all(dir);
}

TEST_CASE("collv mpi --op builtin: MPICH's Rabenseifner all-reduce runs and its values are judged",
          "[mpi]") {
  if (!have_mpi("mpicc.mpich") || !have_mpi("mpiexec.mpich")) {
    WARN("MPICH is not installed (mpicc.mpich): skipped; scripts/install-deps.sh installs it");
    return;
  }
  std::string out;
  // With the harness's user operation MPICH falls back (nothing run: exit 2); with MPI_SUM it
  // runs reduce_scatter_allgather (count >= pof2) and the values pass.
  const std::string base =
      "mpi --impl mpich --collective allreduce --algorithm reduce_scatter_allgather --sizes 4 "
      "--count 4";
  CHECK(test::run_cli(base, out, "", 120) == 3);
  CHECK_THAT(out, Catch::Contains("fell back"));
  int rc = test::run_cli(base + " --op builtin", out, "", 120);
  INFO(out);
  CHECK(rc == 0);
  CHECK_THAT(out, Catch::Contains("1 runs: 1 passed"));
  CHECK(out.find("fell back") == std::string::npos);
  // With a model: its messages are compared (8-byte items), its combinations not (none seen).
  const std::string model =
      std::string(COLLV_SOURCE_DIR) + "/models/mpich/allreduce_rabenseifner.coll";
  rc = test::run_cli(base + " --op builtin --model " + model, out, "", 120);
  INFO(out);
  CHECK(rc == 0);
  CHECK(out.find("messages (per-peer counts against the model) not checked") == std::string::npos);
  // Refused: a collective that is no reduction, harness-ring, more positions than digits hold.
  CHECK(test::run_cli("mpi --impl mpich --collective bcast --op builtin", out) == 2);
  CHECK(test::run_cli("mpi --impl mpich --collective allreduce --algorithm harness-ring --op "
                      "builtin",
                      out) == 2);
  CHECK(test::run_cli("mpi --impl mpich --collective reduce_scatter_block --sizes 4 --count 8 "
                      "--op builtin",
                      out) == 2);
}

TEST_CASE(
    "collv mpi --max-ops bounds the model's run: stopped there the comparison is inconclusive "
    "(exit 3), not passed and not an error",
    "[mpi][budget]") {
  const std::string ring = std::string(COLLV_SOURCE_DIR) + "/models/openmpi/allreduce_ring.coll";
  // The model's run alone: one operation per node is far too few; the default limit is enough.
  CHECK_THROWS_AS(model_run(ring, 4, 8, 0, 1), LimitError);
  CHECK_NOTHROW(model_run(ring, 4, 8, 0));
  std::string out;
  CHECK(test::run_cli("mpi --impl openmpi --collective allreduce --max-ops 0", out) == 2);
  if (!have_mpi("mpicc.openmpi") || !have_mpi("mpirun.openmpi")) {
    WARN("Open MPI is not installed (mpicc.openmpi): skipped; scripts/install-deps.sh installs it");
    return;
  }
  const std::string cmd =
      "mpi --impl openmpi --collective allreduce --algorithm ring --sizes 4 "
      "--count 8 --model " +
      ring;
  int rc = test::run_cli(cmd + " --max-ops 1", out, "", 120);
  INFO(out);
  CHECK(rc == 3);
  CHECK_THAT(out, Catch::Contains("the model's run stopped at a limit"));
  CHECK_THAT(out, Catch::Contains("--model " + ring + " --max-ops 1"));  // the reproduce line
  rc = test::run_cli(cmd, out, "", 120);
  INFO(out);
  CHECK(rc == 0);
}

TEST_CASE(
    "mpi judge: alltoallw and alltoallv in place are judged with symmetric counts, with equal "
    "counts as alltoall, and a block in another place fails",
    "[mpi]") {
  // p = 2, count 2. In place: spair(i, j) = (2 + i + j) mod 3, rank 1 gets nothing from rank 0
  // and 1 element of its own at position 1; vpair (not in place) would give it 1 and 2.
  const std::string r0 = "{\"k\":\"out\",\"buf\":[[0,1],[1,1],[-1,0],[-1,0]]}\n" + done(0, 2);
  const std::string r1 = "{\"k\":\"out\",\"buf\":[[-1,0],[1,2],[-1,0]]}\n" + done(1, 2);
  for (const char* k : {"alltoallw", "alltoallv"}) {
    INFO(k);
    MpiCase in_place{k, 2, 2, 0, true, true};
    CHECK(all_pass(judge_mpi_run(in_place, write_ranks({r0, r1}))));
    // The same buffers read as not in place (vpair counts) fail.
    MpiCase not_in_place{k, 2, 2, 0, true, false};
    CHECK(verdict(judge_mpi_run(not_in_place, write_ranks({r0, r1})), "postcondition") ==
          Verdict::Fail);
    // Rank 1's own element one place early: in the gap after rank 0's (empty) block.
    const std::string early = "{\"k\":\"out\",\"buf\":[[1,2],[-1,0],[-1,0]]}\n" + done(1, 2);
    CHECK(verdict(judge_mpi_run(in_place, write_ranks({r0, early})), "postcondition") ==
          Verdict::Fail);
  }
  // Equal counts (the _equal kinds): alltoall's layout, no gaps.
  const std::string e0 = "{\"k\":\"out\",\"buf\":[[0,1],[0,2]]}\n" + done(0, 2);
  const std::string e1 = "{\"k\":\"out\",\"buf\":[[1,1],[1,2]]}\n" + done(1, 2);
  MpiCase equal{"alltoallw_equal", 2, 1, 0, true, true};
  CHECK(all_pass(judge_mpi_run(equal, write_ranks({e0, e1}))));
  CHECK(verdict(judge_mpi_run(equal, write_ranks({e1, e0})), "postcondition") == Verdict::Fail);
  MpiCase gaps{"alltoallw", 2, 1, 0, true, true};
  CHECK(verdict(judge_mpi_run(gaps, write_ranks({e0, e1})), "postcondition") == Verdict::Fail);
}

TEST_CASE(
    "collv mpi: alltoallw's algorithms are listed (MPICH's four, Open MPI's tuned none), and "
    "--equal-counts and --in-place are refused where they do not apply",
    "[mpi]") {
  std::string out;
  CHECK(test::run_cli("mpi --impl mpich --collective alltoallw --list-algorithms", out) == 0);
  CHECK(out == "auto\nnb\npairwise_sendrecv_replace\nscattered\n");
  CHECK(test::run_cli("mpi --impl openmpi --collective alltoallw --list-algorithms", out) == 0);
  CHECK(out == "ignore\n");
  CHECK(test::run_cli("mpi --impl mpich --collective alltoall --equal-counts --list-algorithms",
                      out) == 2);
  CHECK_THAT(out, Catch::Contains("--equal-counts applies to"));
  CHECK(test::run_cli("mpi --impl mpich --collective barrier --in-place --list-algorithms", out) ==
        2);
  CHECK_THAT(out, Catch::Contains("a barrier has no buffer"));
  CHECK(test::run_cli("mpi --impl mpich --collective alltoallw --in-place --equal-counts "
                      "--list-algorithms",
                      out) == 0);
}
