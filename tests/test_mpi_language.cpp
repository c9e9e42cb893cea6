// The language for the rest of MPI (issue 23): the exclusive scan, self-messages, a receive into
// a larger buffer, and the count-0 claim of the reduce-then-broadcast all-reduce. Every example
// docs/language.md shows is extracted from the document and run here; every mutant is caught by
// the check its name says, and its correct twin passes.
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>

#include <catch2/catch.hpp>

#include "check/checks.hpp"
#include "cli.hpp"
#include "exec/executor.hpp"
#include "lang/ast.hpp"

using namespace collv;
namespace fs = std::filesystem;

namespace {

const std::string kRoot = COLLV_SOURCE_DIR;

Trace run_file(const std::string& path, const std::string& spec, std::uint32_t count,
               DomainKind dom = DomainKind::Exact, std::uint32_t root = 0) {
  Model m = parse_model_file(path);
  RunOptions o;
  o.domain = dom;
  o.count = count;
  o.root = root;
  return run_model(m, Topology::parse(spec), o);
}

const CheckResult& named(const std::vector<CheckResult>& cs, const std::string& name) {
  for (const auto& c : cs)
    if (c.name == name) return c;
  throw std::runtime_error("no check " + name);
}

std::vector<std::string> failing(const std::vector<CheckResult>& cs) {
  std::vector<std::string> out;
  for (const auto& c : cs)
    if (c.verdict == Verdict::Fail) out.push_back(c.name);
  return out;
}

// `collv verify PATH ARGS`: its exit code, and its output in `out`.
int verify_cli(const std::string& path, const std::string& args, std::string& out) {
  return test::run_cli("verify " + path + " " + args, out);
}

}  // namespace

TEST_CASE("exscan: node 0 is never judged, every other node is", "[lang][mpi]") {
  std::string chain = test::doc_example(kRoot, "docs/language.md", "exscan_chain");
  std::string out;
  CHECK(verify_cli(chain, "--sizes 1..9 --count 0..3", out) == 0);
  for (auto dom : {DomainKind::Exact, DomainKind::Ordered}) {
    Trace t = run_file(chain, "line:5", 2, dom);
    auto cs = check_trace(t, CheckOptions{});
    CHECK(failing(cs).empty());
    // Node 0 holds its own input, which no exscan defines: left unjudged.
    auto want = expected_outputs(t);
    CHECK_FALSE(want[0].has_value());
    for (NodeId v = 1; v < 5; ++v) CHECK(want[v].has_value());
    CHECK(t.final_output[0] == t.initial_input[0]);
    CHECK(t.steps == 4);
  }
  // The same chain judged as an inclusive scan fails at every node but... node 0 is right there;
  // as an exscan, a wrong node 1 fails (the mutant), naming node 1.
  std::string mutant = kRoot + "/tests/mutants/postcondition_exscan_rank1_inclusive.coll";
  Trace bad = run_file(mutant, "complete:4", 1);
  auto cs = check_trace(bad, CheckOptions{});
  const CheckResult& post = named(cs, "postcondition");
  REQUIRE(post.verdict == Verdict::Fail);
  REQUIRE(post.violations.size() == 1);
  CHECK(post.violations[0].nodes == std::vector<NodeId>{1});
  CHECK(post.violations[0].message.find("node 1 ends with [x0+x1] but exscan requires [x0]") !=
        std::string::npos);
  CHECK(verify_cli(mutant, "-t complete:4", out) == 1);
  CHECK(out.find("postcondition: node 1 ends with") != std::string::npos);
}

TEST_CASE("exscan: MPICH's recursive doubling passes every size, count 0 included", "[lang][mpi]") {
  std::string out;
  CHECK(verify_cli(kRoot + "/models/mpich/exscan_recursive_doubling.coll",
                   "--sizes 2..13 --count 0..3", out) == 0);
  // clog2(p) exchanges at a count > 0, none at count 0.
  Trace t = run_file(kRoot + "/models/mpich/exscan_recursive_doubling.coll", "complete:6", 2);
  CHECK(t.steps == 3);
  CHECK(failing(check_trace(t, CheckOptions{})).empty());
  Trace z = run_file(kRoot + "/models/mpich/exscan_recursive_doubling.coll", "complete:6", 0);
  CHECK(z.transfers.empty());
  // The exscan is a collective of its own: the scan model is not an exscan.
  Model m = parse_model_file(kRoot + "/models/mpich/exscan_recursive_doubling.coll");
  CHECK(m.header.collective == Collective::Exscan);
  CHECK(collective_from_name("exscan") == Collective::Exscan);
}

TEST_CASE("self-messages use no link, no port and no step", "[lang][mpi]") {
  std::string ring = test::doc_example(kRoot, "docs/language.md", "allgather_ring_self");
  std::string out;
  CHECK(verify_cli(ring, "--sizes 1..9 --count 0..3", out) == 0);
  Trace t = run_file(ring, "ring:5", 2);
  CHECK(t.steps == 4);
  CHECK(t.transfers.size() == 5 * 4);  // the self-messages are not transfers
  for (const auto& x : t.transfers) CHECK(x.src != x.dst);
  CHECK(failing(check_trace(t, CheckOptions{})).empty());
  // MPICH's scattered all-to-all sends its own block to itself, as the C code does; with the
  // self-message skipped (and no copy) the own block is missing.
  CHECK(verify_cli(kRoot + "/models/mpich/alltoall_scattered.coll", "--sizes 1..9 --count 0..2",
                   out) == 0);
  std::string skipped = kRoot + "/tests/mutants/postcondition_alltoall_scattered_self_skipped.coll";
  CHECK(verify_cli(skipped, "-t complete:4", out) == 1);
  CHECK(out.find("postcondition: node 0 ends with [0, x1.0") != std::string::npos);
}

TEST_CASE("a self-message without its partner is a deadlock or a runtime error", "[lang][mpi]") {
  auto write = [](const std::string& name, const std::string& body) {
    std::string path = test::unique_temp(name) + ".coll";
    std::ofstream(path) << "model " << name
                        << "\n  source \"test\"\n  collective allgather\n  topology complete\n"
                           "  input x\n  output result\nprocedure P(my_id, x, result)\nbegin\n"
                        << body << "end P\n";
    return path;
  };
  // A receive from itself before any send to itself waits for ever.
  std::string waits = write("self_recv_first", "  result := x;\n  receive y from my_id;\n");
  Trace a = run_file(waits, "complete:3", 1);
  CHECK(a.failure.kind == RunFailure::Kind::Deadlock);
  CHECK(a.failure.message.find("waiting chain: 0 -> 0") != std::string::npos);
  CHECK(named(check_trace(a, CheckOptions{}), "deadlock").verdict == Verdict::Fail);
  // A send to itself that is never received: a runtime error at the send.
  std::string lost = write("self_never_received", "  result := x;\n  send x to my_id;\n");
  Trace b = run_file(lost, "complete:3", 1);
  CHECK(b.failure.kind == RunFailure::Kind::RuntimeError);
  CHECK(b.failure.message.find(":10:3: runtime error at node 0 (0): a message the node sent to "
                               "itself is never received") != std::string::npos);
  CHECK(named(check_trace(b, CheckOptions{}), "runtime").verdict == Verdict::Fail);
  std::string out;
  CHECK(verify_cli(lost, "-t complete:3", out) == 1);
  // The twin: send then receive, FIFO, the value and its dependency come back.
  std::string ok = write("self_fifo",
                         "  send x to my_id;\n  send [] to my_id;\n  receive result from my_id;\n"
                         "  receive e from my_id;\n  result := result ∪ e;\n"
                         "  for k := 1 to p - 1 do\n    send x to (my_id + k) mod p;\n"
                         "    receive y from (my_id - k) mod p;\n"
                         "    result := result ∪ y;\n  endfor;\n");
  Trace c = run_file(ok, "complete:3", 1);
  CHECK(c.failure.kind == RunFailure::Kind::None);
  CHECK(c.final_output[0].size() == 3);
  CHECK(c.final_output[0][0] == c.initial_input[0][0]);
}

TEST_CASE("a receive into a larger buffer fills its front and leaves the rest", "[lang][mpi]") {
  std::string bcast = test::doc_example(kRoot, "docs/language.md", "bcast_larger_receive");
  std::string out;
  CHECK(verify_cli(bcast, "--sizes 2..6 --count 0..3", out) == 0);
  Trace t = run_file(bcast, "complete:4", 2, DomainKind::Exact, 1);
  CHECK(failing(check_trace(t, CheckOptions{})).empty());
  CHECK(t.steps == 3);
  // A message longer than the slice is MPI's truncation error: a runtime error naming both.
  std::string text = test::slurp(bcast);
  text = std::regex_replace(text, std::regex(R"(receive buf\[1 \.\. count \+ 3\])"),
                            "receive buf[1 .. count - 1]");
  std::string trunc = test::unique_temp("bcast_truncated") + ".coll";
  std::ofstream(trunc) << text;
  Trace bad = run_file(trunc, "complete:2", 2);
  CHECK(bad.failure.kind == RunFailure::Kind::RuntimeError);
  CHECK(bad.failure.message.find("a message of 2 items is received into 1 positions") !=
        std::string::npos);
  CHECK(named(check_trace(bad, CheckOptions{}), "runtime").verdict == Verdict::Fail);
}

TEST_CASE("reduce-then-broadcast all-reduce: 2d - 1 steps at count 0, 2d otherwise",
          "[lang][mpi]") {
  // Count 0: the broadcast carries nothing the reduction received, so its first transfer
  // shares step d with the reduction's last (the model's note derives it).
  const std::string model = kRoot + "/models/allreduce_hypercube_reduce_bcast.coll";
  for (int d = 1; d <= 5; ++d) {
    Trace z = run_file(model, "hypercube:" + std::to_string(d), 0);
    CHECK(z.steps == static_cast<std::uint32_t>(2 * d - 1));
    CHECK(named(check_trace(z, CheckOptions{}), "steps").verdict == Verdict::Pass);
    Trace one = run_file(model, "hypercube:" + std::to_string(d), 1);
    CHECK(one.steps == static_cast<std::uint32_t>(2 * d));
    CHECK(named(check_trace(one, CheckOptions{}), "steps").verdict == Verdict::Pass);
  }
}

TEST_CASE("per-rank counts: the v-collectives in MPI's layout, uneven counts with zeros",
          "[lang][mpi]") {
  // The rule: rank 0 has count, rank 1 none, rank 2 one, ... (alltoallv: (count + i + 2j)).
  CHECK(v_count(3, 0) == 3);
  CHECK(v_count(3, 1) == 0);
  CHECK(v_count(3, 2) == 1);
  CHECK(v_pair_count(2, 1, 1) == 2);
  std::string direct = test::doc_example(kRoot, "docs/language.md", "allgatherv_direct");
  std::string out;
  CHECK(verify_cli(direct, "--sizes 1..9 --count 0..5", out) == 0);
  Trace t = run_file(direct, "complete:4", 2);  // counts 2, 0, 1, 2
  REQUIRE(t.failure.kind == RunFailure::Kind::None);
  CHECK(t.initial_input[0].size() == 2);
  CHECK(t.initial_input[1].empty());
  CHECK(t.initial_input[3].size() == 2);
  for (const auto& o : t.final_output) CHECK(o.size() == 5);
  CHECK(failing(check_trace(t, CheckOptions{})).empty());
  // Every MPICH v-model passes the uneven sweep, every root.
  for (const char* m : {"allgatherv_ring", "gatherv_linear", "scatterv_linear",
                        "alltoallv_scattered", "reduce_scatterv_pairwise"}) {
    INFO(m);
    CHECK(verify_cli(kRoot + "/models/mpich/" + m + ".coll", "--sizes 2..9 --count 0..5", out) ==
          0);
  }
  // One displacement off: the postcondition names the root and the position.
  std::string off = kRoot + "/tests/mutants/postcondition_gatherv_displacement_off.coll";
  Trace bad = run_file(off, "complete:4", 1);
  auto checks = check_trace(bad, CheckOptions{});
  const CheckResult& post = named(checks, "postcondition");
  REQUIRE(post.verdict == Verdict::Fail);
  CHECK(post.violations[0].message.find("node 0 ends with [x2] but gatherv requires [x0, x2]") !=
        std::string::npos);
  CHECK(verify_cli(off, "-t complete:4", out) == 1);
  // The counts are a v-collective's: elsewhere, or with the wrong arity, refused at load.
  auto load_error = [](const std::string& coll, const std::string& expr) {
    std::string path = test::unique_temp("vcount") + ".coll";
    std::ofstream(path) << "model v\n  source \"t\"\n  collective " << coll
                        << "\n  topology complete\n  input x\n  output x\nprocedure P(my_id, x)\n"
                           "begin\n  k := "
                        << expr << ";\nend P\n";
    try {
      parse_model_file(path);
    } catch (const ModelError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(
      load_error("allgather", "counts(0)").find("'counts' is defined in the v-collectives only") !=
      std::string::npos);
  CHECK(load_error("alltoallv", "counts(0)").find("'counts' takes 2 arguments") !=
        std::string::npos);
  CHECK(load_error("gatherv", "sdispls(0, 1)").find("'sdispls' belongs to alltoallv") !=
        std::string::npos);
  CHECK(load_error("gatherv", "displs(1)").empty());
  // A schedule file cannot carry per-rank counts.
  std::string file = test::unique_temp("vfile") + ".json";
  std::ofstream(file) << R"({"collective": "allgatherv", "topology": "complete:2",
    "domain": "exact", "transfers": []})";
  CHECK(test::run_cli("verify --trace " + file, out) == 2);
  CHECK(out.find("per-rank counts") != std::string::npos);
}
