// `collv mpi` runs every count of a root in one launch (docs/mpi.md, "How it works"): what a rank
// prints during a count goes to that count's rank<R>.err, so MPICH's fallback message still
// belongs to one count, and a library that aborts in one count fails that count only, the
// counts after it running again in a launch of their own.
#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "cli.hpp"
#include "mpi_util.hpp"

using namespace collv;

namespace {

nlohmann::json read_json(const std::string& path) {
  std::ifstream f(path);
  return nlohmann::json::parse(f);
}

}  // namespace

TEST_CASE(
    "collv mpi: MPICH's fallback message belongs to its count inside a launch of several counts",
    "[mpi][mpi-launches]") {
  if (!test::have_mpi("mpicc.mpich") || !test::have_mpi("mpiexec.mpich")) {
    WARN("MPICH is not installed: skipped; scripts/install-deps.sh installs it");
    return;
  }
  // MPICH's Rabenseifner all-reduce falls back below pof2 = 4 elements and runs from 4 on: one
  // launch, counts 2 and 3 skipped (fell back, never passed), 4 and 5 judged. Read as the
  // launch's (the launcher's whole error stream), every count would have fallen back (exit 3).
  const std::string json = test::unique_temp("collv_mpi_fallback") + ".json";
  std::string out;
  int rc = test::run_cli(
      "mpi --impl mpich --collective allreduce --algorithm reduce_scatter_allgather --sizes 4 "
      "--count 2..5 --op builtin --json " +
          json,
      out, "", 120);
  INFO(out);
  CHECK(rc == 0);
  auto j = read_json(json);
  CHECK(j["library"]["launches"] == 1);
  CHECK(j["library"]["fell_back"] == nlohmann::json({"np:4 count 2", "np:4 count 3"}));
  REQUIRE(j["results"].size() == 2);
  for (const auto& r : j["results"]) {
    CHECK(r["status"] == "pass");
    CHECK(r["count"].get<int>() >= 4);
  }
  std::remove(json.c_str());
}

TEST_CASE(
    "collv mpi: a library abort in one count of a launch fails that count only, with the rank's "
    "message, and the other counts are judged",
    "[mpi][mpi-launches]") {
  if (!test::have_mpi("mpicc.mpich") || !test::have_mpi("mpiexec.mpich")) {
    WARN("MPICH is not installed: skipped; scripts/install-deps.sh installs it");
    return;
  }
  // Rank 1 aborts in its all-reduce of count 2: counts 1 and 3 pass (count 3 in a launch of its
  // own after the abort), count 2 fails on `runtime` with what rank 1 printed. A launch read as
  // a whole would fail every count (or lose count 3).
  const std::string launcher = test::shim_launcher("mpich", "ABORT_COUNT2");
  REQUIRE(!launcher.empty());
  const std::string json = test::unique_temp("collv_mpi_abort") + ".json";
  std::string out;
  int rc = test::run_cli(
      "mpi --impl mpich --collective allreduce --algorithm recursive_doubling --sizes 3 --count "
      "1..3 --mpirun " +
          launcher + " --json " + json,
      out, "", 120);
  INFO(out);
  CHECK(rc == 1);
  auto j = read_json(json);
  // 1..3 (cut at 2: count 1 judged), 2..3 (2 cut first: judged as the launch's), 3.
  CHECK(j["library"]["launches"] == 3);
  REQUIRE(j["results"].size() == 3);
  for (const auto& r : j["results"]) {
    INFO(r.dump());
    if (r["count"] == 2) {
      CHECK(r["status"] == "fail");
      CHECK_THAT(r.dump(), Catch::Contains("rank 1: shim: rank 1 aborts at count 2"));
    } else {
      CHECK(r["status"] == "pass");
    }
  }
  std::remove(json.c_str());
}

TEST_CASE(
    "collv mpi: a library that returns the previous count's result inside one launch fails: "
    "call numbers run on across the counts",
    "[mpi][mpi-launches][mpi-shim]") {
  if (!test::have_mpi("mpicc.mpich") || !test::have_mpi("mpiexec.mpich")) {
    WARN("MPICH is not installed: skipped; scripts/install-deps.sh installs it");
    return;
  }
  // Rank 0's all-reduce of count 2 returns, in position 0, count 1's result of the same call:
  // the right ranks at the right position, so with the calls numbered 1 and 2 in every count (as
  // before) this passed. Now count 1's calls are 3 and 4, count 2's 5 and 6.
  const std::string launcher = test::shim_launcher("mpich", "STALE_COUNT");
  REQUIRE(!launcher.empty());
  std::string out;
  int rc = test::run_cli(
      "mpi --impl mpich --collective allreduce --algorithm recursive_doubling --sizes 3 --count "
      "1..2 --mpirun " +
          launcher,
      out, "", 120);
  INFO(out);
  CHECK(rc == 1);
  CHECK_THAT(out, Catch::Contains("rank 0, call 1, position 0: holds ranks {0..2} of position 0 "
                                  "of call 1 of count 1: the result of another call"));
  // Count 1 (nothing before it in the launch) passes.
  CHECK_THAT(out, Catch::Contains("1 passed"));
}
