// Verification partitioned over MPI processes (collv-mpi, docs/partitioned.md): `mpirun -np 2` and
// `-np 3` must give the verdicts, the text report and the JSON report of one process (collv
// itself), on passing models and on a failing mutant whose counterexamples name nodes of
// different slices. Skipped, with a message, when this build has no collv-mpi (MPI not found).
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <regex>

#include "cli.hpp"

namespace {

bool have_mpi() {
  if (COLLV_MPI_BINARY.empty()) {
    WARN("collv-mpi was not built (CMake found no MPI): the partitioned-verify tests are skipped");
    return false;
  }
  if (std::system("command -v mpirun >/dev/null 2>&1") != 0) {
    WARN("no mpirun on the PATH: the partitioned-verify tests are skipped");
    return false;
  }
  return true;
}

// `mpirun APPS` from the source directory (APPS: `-np K collv-mpi ARGS`, or several such app
// contexts joined by ':'), bounded by `timeout 60` (a hang exits 124); stdout and stderr together.
struct Launch {
  int rc = -1;
  std::string out;
};
Launch mpirun(const std::string& apps) {
  std::string f = collv::test::unique_temp("collv_part_launch");
  std::string cmd = "cd '" + COLLV_SOURCE_DIR +
                    "' && OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 "
                    "ASAN_OPTIONS=detect_leaks=0 timeout 60 mpirun --oversubscribe " +
                    apps + " >'" + f + "' 2>&1";
  int rc = std::system(cmd.c_str());
  Launch l;
  l.rc = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  l.out = collv::test::slurp(f);
  std::error_code ec;
  std::filesystem::remove(f, ec);
  return l;
}

// `-np K [--wdir DIR] collv-mpi verify ARGS`: one app context of an mpirun command line.
std::string app(int k, const std::string& args, const std::string& wdir = "") {
  return "-np " + std::to_string(k) + (wdir.empty() ? "" : " --wdir '" + wdir + "'") + " " +
         COLLV_MPI_BINARY + " verify " + args;
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

TEST_CASE("a runtime error in one slice mid-round gives one process's verdict at every K",
          "[partitioned]") {
  if (!have_mpi()) return;
  // Node 5 divides by zero in round 3 while the other slices go on. The run fails `runtime` at
  // every K, and nothing else: a process whose messages of that round were never received
  // called route inconclusive (K = 2), and under --stream auto the run was an error (exit 2:
  // "collv would run this one again with its trace kept"), where one process fails it (exit 1).
  const std::string model = "tests/data/partitioned/runtime_error_mid_round.coll -t ring:8";
  Outcome o = agree(model + " --stream on", {2, 3, 4});
  CHECK(o.rc == 1);
  CHECK(o.json.find("division by zero") != std::string::npos);
  CHECK(o.text.find("route: inconclusive") == std::string::npos);
  for (int k : {2, 3}) {
    Outcome a = verify(k, model);
    INFO("mpirun -np " << k << " (--stream auto):\n" << a.text);
    CHECK(a.rc == 1);
    CHECK(a.text.find("division by zero") != std::string::npos);
  }
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

TEST_CASE("partitioned verify with more processes than nodes", "[partitioned]") {
  if (!have_mpi()) return;
  // ring:2 at K = 3 and 4: rank 0 (and others) hold no node, and node 0 is not rank 0's; the
  // final-buffers check read node 0's output from rank 0, an empty buffer ("node 0 with []").
  Outcome o = agree("allgather_ring -t ring:2 -d all --stream on", {3, 4});
  CHECK(o.rc == 0);
  CHECK(o.json.find("\"status\": \"fail\"") == std::string::npos);
  // A mutant still fails at K > p, with the counterexamples of one process.
  Outcome m =
      agree("tests/mutants/final_allgather_ring_short.coll -t ring:3 -d all --stream on", {4});
  CHECK(m.rc == 1);
  CHECK(m.json.find("\"invariant\": \"final-buffers\"") != std::string::npos);
  // Five processes on star:2's two nodes (three hold none; node 1 is rank 2's).
  Outcome s = agree("allreduce_star -t star:2 -d fingerprint --stream on", {5});
  CHECK(s.rc == 0);
  CHECK(s.json.find("\"status\": \"pass\"") != std::string::npos);
}

TEST_CASE("partitioned verify streams by itself under --stream auto", "[partitioned]") {
  if (!have_mpi()) return;
  // star:4's trace fits in a quarter of --max-memory: collv keeps it, collv-mpi streams (it
  // stopped with "use --stream on"); the verdicts are one process's.
  Outcome one = verify(0, "allreduce_star scan_hypercube --sizes 3..4 -d fingerprint");
  Outcome two = verify(2, "allreduce_star scan_hypercube --sizes 3..4 -d fingerprint");
  INFO(two.text);
  CHECK(one.rc == 0);
  CHECK(two.rc == 0);
  CHECK(two.json.find("\"status\": \"pass\"") != std::string::npos);
  CHECK(two.json.find("\"status\": \"error\"") == std::string::npos);
  CHECK(two.text.find("passed, 0 failed") != std::string::npos);
  // Where a streamed run does not apply, the refusal says why (the barrier replays the trace).
  Outcome bar = verify(2, "models/mpich/barrier_dissemination.coll -t complete:4");
  CHECK(bar.rc == 2);
  CHECK(bar.json.find("partitioned verify follows streamed runs only, and the barrier") !=
        std::string::npos);
}

TEST_CASE("partitioned processes given different arguments stop together", "[partitioned]") {
  if (!have_mpi()) return;
  // turn4-repro 4: rank 1 on star:6, rank 0 on star:5 (it was SIGSEGV in rank 1).
  Launch l = mpirun(app(1, "allreduce_star -t star:5 -d fingerprint --stream on") + " : " +
                    app(1, "allreduce_star -t star:6 -d fingerprint --stream on"));
  INFO(l.out);
  CHECK(l.rc == 2);
  CHECK(l.out.find("collv-mpi: error: rank 1 was started with other arguments than rank 0: its "
                   "argument 4 is 'star:6' where rank 0's is 'star:5'") != std::string::npos);
  // One more argument on rank 2 of 3.
  l = mpirun(app(2, "allreduce_star -t star:4") + " : " + app(1, "allreduce_star -t star:4 -q"));
  INFO(l.out);
  CHECK(l.rc == 2);
  CHECK(l.out.find("rank 2 was started with other arguments than rank 0: it has 1 argument(s) "
                   "more, from argument 5 ('-q')") != std::string::npos);
  // A bad option on every process is the usage error of one.
  l = mpirun(app(2, "allreduce_star -t star:4 --no-such-option"));
  CHECK(l.rc == 2);
  CHECK(l.out.find("--no-such-option") != std::string::npos);
}

TEST_CASE("every partitioned process exits 2 on an error, not rank 0 alone", "[partitioned]") {
  if (!have_mpi()) return;
  // Each process runs under `sh -c` that writes its own exit code to DIR/rc.RANK: mpirun's
  // code is only the first non-zero one.
  const std::string dir = collv::test::unique_temp("collv_part_rcs");
  std::filesystem::create_directories(dir);
  auto wrapped = [&](const std::string& args) {
    return "-np 1 sh -c '\"$0\" verify " + args + "; echo $? > " + dir +
           "/rc.$OMPI_COMM_WORLD_RANK' " + COLLV_MPI_BINARY;
  };
  auto codes = [&] {
    std::string all;
    for (int r = 0; r < 2; ++r) {
      std::string f = dir + "/rc." + std::to_string(r);
      std::string t = std::filesystem::exists(f) ? collv::test::slurp(f) : "none\n";
      std::filesystem::remove(f);
      all += t;
    }
    return all;
  };
  // Different arguments: every process is told, and every process returns 2.
  Launch l = mpirun(wrapped("allreduce_star -t star:4 -d fingerprint") + " : " +
                    wrapped("allreduce_star -t star:5 -d fingerprint"));
  INFO(l.out);
  CHECK(codes() == "2\n2\n");
  // A model missing on one process only (another working directory).
  const std::string elsewhere = std::filesystem::temp_directory_path().string();
  l = mpirun("--wdir '" + elsewhere + "' " + wrapped("models/allreduce_star.coll -t star:4") +
             " : " + wrapped("models/allreduce_star.coll -t star:4"));
  INFO(l.out);
  CHECK(codes() == "2\n2\n");
  // A passing run: rank 0 gives the verdict, the other returns 0.
  l = mpirun(wrapped("allreduce_star -t star:4 -d fingerprint") + " : " +
             wrapped("allreduce_star -t star:4 -d fingerprint"));
  INFO(l.out);
  CHECK(l.rc == 0);
  CHECK(codes() == "0\n0\n");
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

TEST_CASE("a partitioned process that fails at start-up stops the others", "[partitioned]") {
  if (!have_mpi()) return;
  // turn4-repro 3: a model file missing on rank 1's command line (the others waited for ever).
  Launch l = mpirun(
      app(1, "models/allreduce_star.coll -t star:5 -d fingerprint --stream on --timeout 5000") +
      " : " + app(1, "/nonexistent/ar.coll -t star:5 -d fingerprint --stream on --timeout 5000"));
  INFO(l.out);
  CHECK(l.rc == 2);
  CHECK(l.out.find("its argument 2 is '/nonexistent/ar.coll'") != std::string::npos);
  // The same command line, but the file is not there for one process (another working
  // directory): it fails reading it, the others at the start of the run learn it, all end with
  // its error. Rank 1 alone, then rank 0 alone.
  const std::string args = "models/allreduce_star.coll -t star:4 -d fingerprint";
  const std::string elsewhere = std::filesystem::temp_directory_path().string();
  l = mpirun(app(1, args, COLLV_SOURCE_DIR) + " : " + app(1, args, elsewhere));
  INFO(l.out);
  CHECK(l.rc == 2);
  CHECK(l.out.find("collv-mpi: error: rank 1 of 2 stopped where the others did not: no model "
                   "'models/allreduce_star.coll'") != std::string::npos);
  l = mpirun(app(1, args, elsewhere) + " : " + app(2, args, COLLV_SOURCE_DIR));
  INFO(l.out);
  CHECK(l.rc == 2);
  CHECK(l.out.find("no model 'models/allreduce_star.coll'") != std::string::npos);
  CHECK(l.out.find("runs:") == std::string::npos);  // no report: nothing ran
}

TEST_CASE("partitioned processes that find different runs stop together", "[partitioned]") {
  if (!have_mpi()) return;
  // A directory of models that differs between the processes' working directories: they would
  // enter different runs (and wait in each other's exchanges), or one would leave while the
  // others wait for it.
  namespace fs = std::filesystem;
  const fs::path a = collv::test::unique_temp("collv_part_dir_a");
  const fs::path b = collv::test::unique_temp("collv_part_dir_b");
  fs::create_directories(a / "m");
  fs::create_directories(b / "m");
  const fs::path models = fs::path(COLLV_SOURCE_DIR) / "models";
  fs::copy_file(models / "allreduce_star.coll", a / "m" / "allreduce_star.coll");
  fs::copy_file(models / "allreduce_star.coll", b / "m" / "allreduce_star.coll");
  fs::copy_file(models / "allgather_star.coll", a / "m" / "allgather_star.coll");
  const std::string args = "m -t star:3 -d fingerprint";
  Launch l = mpirun(app(1, args, a.string()) + " : " + app(1, args, b.string()));
  INFO(l.out);
  CHECK(l.rc == 2);
  CHECK(l.out.find("is about to run allreduce_star (m/allreduce_star.coll) on star:3") !=
        std::string::npos);
  CHECK(l.out.find("where rank 0 runs allgather_star (m/allgather_star.coll) on star:3") !=
        std::string::npos);
  // b holds a model a lacks, after a's last: rank 0 finishes while rank 1 has a run left.
  fs::copy_file(models / "allreduce_star.coll", b / "m" / "zz_allreduce_star.coll");
  fs::remove(a / "m" / "allgather_star.coll");
  l = mpirun(app(1, args, a.string()) + " : " + app(1, args, b.string()));
  INFO(l.out);
  CHECK(l.rc == 2);
  CHECK(l.out.find("rank 0 of 2 finished its command while rank 1 had runs left") !=
        std::string::npos);
  // The same file name and model name, other contents (a mutant) on rank 1's host: the run's
  // names agree, the programs do not. The processes mixed the two programs in one run (a wrong
  // failure, exit 0 from mpirun); now they stop before it, naming the texts' hashes.
  fs::remove(b / "m" / "zz_allreduce_star.coll");
  std::string mutant = collv::test::slurp(
      COLLV_SOURCE_DIR + "/tests/data/partitioned/allreduce_star_forgets_one.coll");
  mutant = std::regex_replace(mutant, std::regex("model allreduce_star_forgets_one"),
                              "model allreduce_star");
  std::ofstream(b / "m" / "allreduce_star.coll") << mutant;
  l = mpirun(app(1, args, a.string()) + " : " + app(1, args, b.string()));
  INFO(l.out);
  CHECK(l.rc == 2);
  CHECK(std::regex_search(
      l.out, std::regex("rank 1 of 2 is about to run allreduce_star \\(m/allreduce_star.coll\\) on "
                        "star:3 \\([^)]*model text #[0-9a-f]{16}[^)]*\\) where rank 0 runs "
                        "allreduce_star \\(m/allreduce_star.coll\\)")));
  CHECK(l.out.find("runs:") == std::string::npos);  // no report: nothing ran
  // The same contents on both: they agree (the hash is of the text, not of where it lies).
  std::ofstream(b / "m" / "allreduce_star.coll")
      << collv::test::slurp((models / "allreduce_star.coll").string());
  l = mpirun(app(1, args, a.string()) + " : " + app(1, args, b.string()));
  INFO(l.out);
  CHECK(l.rc == 0);
  // A model with a syntax error on rank 1's host only: every process ends with its error.
  std::ofstream(b / "m" / "allreduce_star.coll") << "model allreduce_star\n  oops\n";
  l = mpirun(app(1, args, a.string()) + " : " + app(1, args, b.string()));
  INFO(l.out);
  CHECK(l.rc == 2);
  CHECK(l.out.find("rank 1 of 2 stopped where the others did not") != std::string::npos);
  CHECK(l.out.find("m/allreduce_star.coll:2:") != std::string::npos);
  std::error_code ec;
  fs::remove_all(a, ec);
  fs::remove_all(b, ec);
}
