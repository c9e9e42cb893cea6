// Verification partitioned over MPI processes (collv-mpi, docs/partitioned.md): `mpirun -np 2` and
// `-np 3` must give the verdicts, the text report and the JSON report of one process (collv
// itself), on passing models and on a failing mutant whose counterexamples name nodes of
// different slices. Skipped, with a message, when this build has no collv-mpi (MPI not found).
#include <catch2/catch.hpp>
#include <filesystem>
#include <regex>

#include "cli.hpp"

namespace {

bool have_mpi() {
  if (!COLLV_MPI_BINARY.empty()) return true;
  WARN("collv-mpi was not built (CMake found no MPI): the partitioned-verify tests are skipped");
  return false;
}

struct Outcome {
  int rc = -1;
  std::string text, json;
};

// `collv ARGS --json FILE` (k == 0) or `mpirun -np k collv-mpi ARGS --json FILE`.
Outcome verify(int k, const std::string& args) {
  std::string json = collv::test::unique_temp("collv_part_json");
  std::string out = collv::test::unique_temp("collv_part_out");
  std::string cmd = "cd '" + COLLV_SOURCE_DIR + "' && ";
  if (k == 0) {
    cmd += COLLV_BINARY;
  } else {
    // Open MPI refuses root without these; ASan's leak report of the MPI library is not ours.
    cmd +=
        "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 "
        "ASAN_OPTIONS=detect_leaks=0 timeout 120 mpirun --oversubscribe -np " +
        std::to_string(k) + " " + COLLV_MPI_BINARY;
  }
  cmd += " verify " + args + " --json '" + json + "' >'" + out + "' 2>/dev/null";
  int rc = std::system(cmd.c_str());
  Outcome o;
  o.rc = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  // The text report's times differ from run to run; nothing else may.
  o.text = std::regex_replace(collv::test::slurp(out), std::regex("[0-9]+\\.[0-9]+s\\b"), "T");
  o.json = collv::test::slurp(json);
  std::error_code ec;
  std::filesystem::remove(json, ec);
  std::filesystem::remove(out, ec);
  return o;
}

// K = 1 (collv) and each of ks agree; returns the one-process outcome.
Outcome agree(const std::string& args, std::initializer_list<int> ks = {2, 3}) {
  Outcome one = verify(0, args);
  INFO("collv verify " << args << "\n" << one.text);
  REQUIRE(!one.json.empty());
  for (int k : ks) {
    Outcome part = verify(k, args);
    INFO("mpirun -np " << k << ":\n" << part.text);
    CHECK(part.rc == one.rc);
    CHECK(part.text == one.text);
    CHECK(part.json == one.json);
  }
  return one;
}

}  // namespace

TEST_CASE("partitioned verify agrees with one process on passing models", "[partitioned]") {
  if (!have_mpi()) return;
  // Three domains (the ordered one fails allreduce_star on operand order only: commutative-only).
  Outcome o =
      agree("allreduce_star allreduce_hypercube scan_hypercube --sizes 3..4 -d all --stream on");
  CHECK(o.rc == 0);
  CHECK(o.json.find("\"status\": \"pass\"") != std::string::npos);
  CHECK(o.json.find("\"status\": \"commutative-only\"") != std::string::npos);
  CHECK(o.json.find("\"status\": \"fail\"") == std::string::npos);
}

TEST_CASE("partitioned verify agrees with one process on mutants failing across slices",
          "[partitioned]") {
  if (!have_mpi()) return;
  // allreduce_star_forgets_one (its correct twin is allreduce_star above) and a deadlock; at
  // K = 4 too, where most of a node's neighbours are in other slices (their messages are received
  // in the round they arrive, and their steps go back in the timing rounds after it).
  Outcome o = agree(
      "tests/data/partitioned/allreduce_star_forgets_one.coll "
      "tests/mutants/deadlock_exchange_recv_first.coll --sizes 3..4 -d all --stream on",
      {2, 3, 4});
  CHECK(o.rc == 1);
  // On star:4, node 0 (slice 0 of 2 and of 3) against node 23 (the last slice).
  CHECK(o.json.find("\"invariant\": \"final-buffers\"") != std::string::npos);
  CHECK(std::regex_search(o.json, std::regex("\"nodes\": \\[\\s*0,\\s*23\\s*\\]")));
  CHECK(o.json.find("deadlock: 8 of 8 nodes wait for ever") != std::string::npos);
}

TEST_CASE("a transfer between slices waits for its step about half a round, not one and a half",
          "[partitioned]") {
  if (!have_mpi()) return;
  // star:6 at K = 2: 360 nodes a slice, each sending at most once a round in these rounds (the
  // horizon). The receivers take what arrived in the round it arrived, so the senders' sides
  // waiting at once stay under a round of the slice's sends (216 at each rank); received a round
  // later they reached 432.
  std::string f = collv::test::unique_temp("collv_part_stats");
  std::string cmd = "cd '" + COLLV_SOURCE_DIR +
                    "' && COLLV_PARTITION_STATS=1 OMPI_ALLOW_RUN_AS_ROOT=1 "
                    "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 ASAN_OPTIONS=detect_leaks=0 timeout 120 "
                    "mpirun --oversubscribe -np 2 " +
                    COLLV_MPI_BINARY +
                    " verify allreduce_star -t star:6 -d fingerprint --stream on >'" + f + "' 2>&1";
  int rc = std::system(cmd.c_str());
  std::string out = collv::test::slurp(f);
  INFO(out);
  CHECK(WEXITSTATUS(rc) == 0);
  std::regex span("senders' sides spanning at most ([0-9]+) transfers");
  int ranks = 0;
  for (auto it = std::sregex_iterator(out.begin(), out.end(), span); it != std::sregex_iterator();
       ++it) {
    ++ranks;
    const long n = std::stol((*it)[1].str());
    CHECK(n > 0);
    CHECK(n <= 360);
  }
  CHECK(ranks == 2);
  std::error_code ec;
  std::filesystem::remove(f, ec);
}

TEST_CASE("partitioned verify refuses what it does not follow", "[partitioned]") {
  if (!have_mpi()) return;
  // A run that would keep its trace (--stream off, or auto at a size whose trace fits).
  Outcome off = verify(2, "allreduce_star -t star:4 -d exact --stream off");
  CHECK(off.rc == 2);
  CHECK(off.json.find("partitioned verify follows streamed runs only") != std::string::npos);
  // One process: collv-mpi is collv.
  Outcome one = verify(1, "allreduce_star -t star:4 -d exact --stream off");
  Outcome plain = verify(0, "allreduce_star -t star:4 -d exact --stream off");
  CHECK(one.rc == 0);
  CHECK(one.json == plain.json);
  CHECK(one.text == plain.text);
  // -d symmetry and other commands are one process's.
  std::string out;
  std::string mpirun =
      "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 ASAN_OPTIONS=detect_leaks=0 "
      "timeout 120 mpirun --oversubscribe -np 2 " +
      COLLV_MPI_BINARY;
  std::string f = collv::test::unique_temp("collv_part_refuse");
  int rc = std::system(
      (mpirun + " verify allreduce_star -t star:4 -d symmetry >'" + f + "' 2>&1").c_str());
  CHECK(WEXITSTATUS(rc) == 2);
  CHECK(collv::test::slurp(f).find("does not follow -d symmetry") != std::string::npos);
  rc = std::system((mpirun + " run allreduce_star -t star:3 >'" + f + "' 2>&1").c_str());
  CHECK(WEXITSTATUS(rc) == 2);
  CHECK(collv::test::slurp(f).find("collv-mpi partitions `verify`") != std::string::npos);
  std::error_code ec;
  std::filesystem::remove(f, ec);
}
