// Issue 37's limits: work counted as items moved and combined (--max-ops), header formulas and
// the v-collective helpers evaluated once, waitall linear in its requests, --max-memory and the
// SMT --timeout held, a repeated header key refused, buffers up to 2^28 items, and the clear
// errors of --emit-smt2 and `synth --json -`. Large inputs are generated; the limits are small.
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "cli.hpp"
#include "exec/executor.hpp"
#include "lang/ast.hpp"
#include "lang/check.hpp"

using namespace collv;
namespace fs = std::filesystem;

namespace {

const std::string kRoot = COLLV_SOURCE_DIR;

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Writes `text` to a fresh temporary file and returns its path.
std::string write_temp(const std::string& name, const std::string& text) {
  std::string path = test::unique_temp(name);
  std::ofstream(path) << text;
  return path;
}

int cli(const std::string& args, std::string& out, int seconds = 60) {
  return test::run_cli(args, out, kRoot, seconds);
}

std::string load_error(const std::string& text) {
  try {
    parse_model(text, "m.coll");
  } catch (const ModelError& e) {
    return e.what();
  }
  return "";
}

const char* kRingBody = R"(procedure P(my_id, x, result)
begin
  result := x;
  msg := x;
  for i := 1 to p - 1 do
    send msg to right;
    receive msg from left;
    result := result ∪ msg;
  endfor;
end P
)";

std::string ring_model(const std::string& extra_header) {
  return "model m\n  collective allgather\n  layout any\n  topology ring\n  input x\n"
         "  output result\n" +
         extra_header + kRingBody;
}

}  // namespace

TEST_CASE("a header key given twice is an error naming the first line", "[limits]") {
  // The first line is not silently replaced: `steps 0` then `steps at most 1000` took the bound.
  std::string e = load_error(ring_model("  steps 0\n  steps at most 1000\n"));
  CHECK(has(e, "m.coll:8:3: error: a second 'steps' line (the first is at m.coll:7:3"));
  e = load_error(ring_model("  cost 0\n  cost at most 1000 * (ts + tw*m)\n"));
  CHECK(has(e, "m.coll:8:3: error: a second 'cost' line (the first is at m.coll:7:3"));
  e = load_error(ring_model("  input y\n"));
  CHECK(has(e, "a second 'input' line (the first is at m.coll:5:3"));
  // Once each is fine, and note/def/library may repeat.
  CHECK(load_error(ring_model("  steps at most 1000\n  note \"a\"\n  note \"b\"\n")).empty());
}

TEST_CASE("an --emit-smt2 path that cannot be a directory is a usage error naming it", "[limits]") {
  std::string out;
  int rc = cli("verify allreduce_star -t star:3 --engine smt --emit-smt2 /dev/null/x", out);
  CHECK(rc == 2);
  CHECK(has(out, "cannot create the directory '/dev/null/x' of --emit-smt2"));
  CHECK_FALSE(has(out, "filesystem error"));
  rc = cli("synth broadcast -t ring:3 --steps 2 --emit-smt2 /dev/null/x --quiet", out);
  CHECK(rc == 2);
  CHECK(has(out, "cannot create the directory '/dev/null/x' of --emit-smt2"));
}

TEST_CASE("synth --json - writes only JSON on standard output", "[limits]") {
  std::string file = test::unique_temp("synth_json_stdout");
  std::string cmd = std::string(COLLV_BINARY) +
                    " synth allgather -t ring:4 --steps 3 --json - --quiet 2>/dev/null >'" + file +
                    "'";
  int rc = std::system(cmd.c_str());
  CHECK(WIFEXITED(rc));
  CHECK(WEXITSTATUS(rc) == 0);
  std::string text = test::slurp(file);
  fs::remove(file);
  REQUIRE_FALSE(text.empty());
  CHECK(text.front() == '{');
  CHECK_NOTHROW(nlohmann::json::parse(text));
}

namespace {

// An allgather whose procedure is `body` (x in, result out), run on ring:2 with `args`.
int run_body(const std::string& body, const std::string& args, std::string& out) {
  std::string path = write_temp("limits_body.coll",
                                "model b\n  collective allgather\n  topology ring\n  input x\n"
                                "  output result\nprocedure P(my_id, x, result)\nbegin\n" +
                                    body + "  result := x;\nend P\n");
  int rc = cli("run " + path + " -t ring:2 --quiet " + args, out);
  fs::remove(path);
  return rc;
}

}  // namespace

TEST_CASE("the operation budget counts the items a statement moves and combines", "[limits]") {
  // z holds 2^12 items; 1,000 statements `y := z + z` move and combine about 12 million items a
  // node, which --max-ops 100000 stops in the first iterations. Counted as statements (one
  // operation each) the loop was 3,000 operations and passed.
  const std::string body =
      "  z := x;\n  for i := 1 to 12 do z := z ∪ z; endfor;\n"
      "  for i := 1 to 1000 do y := z + z; endfor;\n";
  std::string out;
  auto t0 = std::chrono::steady_clock::now();
  CHECK(run_body(body, "--max-ops 100000", out) == 3);
  CHECK(has(out, "the run exceeded 100000 operations per node on average"));
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5));
  // The same work fits a budget that counts it: about 3 * 4096 * 1000 items a node.
  CHECK(run_body(body, "--max-ops 20000000", out) == 0);
  // A plain copy counts its items too.
  CHECK(run_body("  z := x;\n  for i := 1 to 12 do z := z ∪ z; endfor;\n"
                 "  for i := 1 to 1000 do y := z; endfor;\n",
                 "--max-ops 100000", out) == 3);
}

TEST_CASE("appending to a buffer and reading a slice cost their items, not the buffer's",
          "[limits]") {
  // 3,000 appends of one item: linear (about 4 operations an iteration), where copying the
  // growing buffer each time would be 4.5 million items.
  std::string out;
  CHECK(run_body("  y := [];\n  for i := 1 to 3000 do y := y ∪ x; endfor;\n", "--max-ops 20000",
                 out) == 0);
  // Reading one position of a 3,000-item buffer 3,000 times: one item each, not the buffer.
  CHECK(run_body("  y := [];\n  for i := 1 to 3000 do y := y ∪ x; endfor;\n"
                 "  for i := 1 to 3000 do w := y[i - 1]; endfor;\n",
                 "--max-ops 40000", out) == 0);
  // And the count is real: the same loops under a budget of 4,000 stop.
  CHECK(run_body("  y := [];\n  for i := 1 to 3000 do y := y ∪ x; endfor;\n"
                 "  for i := 1 to 3000 do w := y[i - 1]; endfor;\n",
                 "--max-ops 4000", out) == 3);
}

TEST_CASE("a buffer holds up to 2^28 items and a position past that is a limit (exit 3)",
          "[limits]") {
  std::string out;
  // Position 2^24 + 1 was a failed run ("cannot assign to positions"); it is a buffer of
  // 16,777,218 items (64 MiB a node), whose filling counts toward --max-ops.
  CHECK(run_body("  y := [];\n  y[16777217] := x;\n", "--max-ops 100000000", out) == 0);
  CHECK(run_body("  y := [];\n  y[16777217] := x;\n", "", out) == 3);
  CHECK(has(out, "operations per node on average"));
  // Position 2^28 lies past the limit: refused before anything is allocated.
  auto t0 = std::chrono::steady_clock::now();
  CHECK(run_body("  y := [];\n  y[268435456] := x;\n", "", out) == 3);
  CHECK(has(out,
            "positions [268435456 .. 268435456] lie past the 268435456 items a buffer may "
            "hold (a limit of collv"));
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5));
  // Before position 0 stays the model's fault.
  CHECK(run_body("  y := [];\n  y[0 - 1] := x;\n", "", out) == 1);
  CHECK(has(out, "cannot assign to positions [-1 .. -1]"));
}

TEST_CASE("displs, sdispls and rdispls equal the sums of the counts", "[limits]") {
  // The closed forms against the sums they replace, over counts and ranks that wrap around
  // count + 1 several times.
  for (std::int64_t c : {0, 1, 2, 3, 5, 8, 13}) {
    for (std::int64_t j = 0; j <= 40; ++j) {
      std::int64_t d = 0;
      for (std::int64_t k = 0; k < j; ++k) d += v_count(c, k);
      REQUIRE(v_displs(c, j) == d);
      for (std::int64_t i = 0; i <= 20; ++i) {
        std::int64_t s = 0, r = 0;
        for (std::int64_t k = 0; k < j; ++k) s += v_pair_count(c, i, k);
        for (std::int64_t k = 0; k < i; ++k) r += v_pair_count(c, k, j);
        REQUIRE(v_sdispls(c, i, j) == s);
        REQUIRE(v_rdispls(c, i, j) == r);
      }
    }
  }
  // Large ranks and counts, where the sum is long: (count + k) mod (count + 1) over a whole
  // period sums to count (count + 1) / 2.
  CHECK(v_displs(1000, 1001 * 1000) == 1000LL * (1000LL * 1001 / 2));
  // MPICH's ring allgatherv over 4,096 ranks reads displs about 2 * 4,096 times a rank: linear in
  // p now (it took 189 s of CPU); a hang guard, not a speed goal.
  std::string out;
  CHECK(cli("run allgatherv_ring -t complete:4096 -c 1 -d fingerprint --quiet", out, 120) == 0);
}

TEST_CASE("a header formula is evaluated once per model and size, not once per run", "[limits]") {
  Model m = parse_model(
      "model g\n  collective gather\n  topology complete\n  input x\n  output result\n"
      "  cost at most sum(i, 1, 1000000, i * p) * (ts + tw*m)\n"
      "procedure P(my_id, x, result)\nbegin\n  result := [];\n"
      "  if my_id <> root then send x to root; endif;\n"
      "  if my_id = root then\n    for j := 0 to p - 1 do\n"
      "      if j = my_id then result := result ∪ x; else receive y from j; "
      "result := result ∪ y; endif;\n    endfor;\n  endif;\nend P\n",
      "g.coll");
  REQUIRE(m.header.memo);
  Topology t = Topology::parse("complete:4");
  RunOptions o;
  Trace a = run_model(m, t, o);
  const std::size_t after_one = m.header.memo->values.size();
  CHECK(after_one == 2);                            // the cost's ts and tw parts
  for (std::uint32_t root = 1; root < 4; ++root) {  // other sources and domains: no new values
    o.root = root;
    o.domain = root % 2 ? DomainKind::Ordered : DomainKind::Exact;
    Trace b = run_model(m, t, o);
    CHECK(b.claimed_ts == a.claimed_ts);
    CHECK(b.claimed_tw == a.claimed_tw);
  }
  CHECK(m.header.memo->values.size() == after_one);
  // Another size is another value.
  Trace c = run_model(m, Topology::parse("complete:5"), RunOptions{});
  CHECK(m.header.memo->values.size() == after_one + 2);
  CHECK(c.claimed_ts == 5.0 * 500000.0 * 1000001.0);
}

TEST_CASE("waitall is linear in its outstanding requests", "[limits]") {
  // 20,000 irecvs completed by one waitall took 255 s (each wake-up went through the whole
  // request list); a hang guard with a generous bound, not a speed goal.
  std::string path = write_temp(
      "limits_waitall.coll",
      "model w\n  collective allgather\n  topology complete\n  input x\n  output result\n"
      "procedure P(my_id, x, result)\nbegin\n  result := x;\n  if my_id = 1 then\n    y := [];\n"
      "    for k := 1 to 20000 do irecv y[k .. k] from 0 as r; endfor;\n    waitall;\n"
      "  endif;\n  if my_id = 0 then\n    for k := 1 to 20000 do send x to 1; endfor;\n  endif;\n"
      "end P\n");
  std::string out;
  CHECK(cli("run " + path + " -t complete:2 --quiet", out, 60) == 0);
  // The requests a node may hold at once are bounded, with a clear limit (exit 3).
  std::ofstream(path) << "model w\n  collective allgather\n  topology complete\n  input x\n"
                         "  output result\nprocedure P(my_id, x, result)\nbegin\n  result := x;\n"
                         "  if my_id = 1 then\n    y := [];\n"
                         "    for k := 1 to 70000 do irecv y[k .. k] from 0 as r; endfor;\n"
                         "    waitall;\n  endif;\nend P\n";
  CHECK(cli("run " + path + " -t complete:2 --quiet", out, 60) == 3);
  CHECK(has(out, "would have more than 65536 outstanding requests"));
  fs::remove(path);
}

TEST_CASE("the memory limit holds when large messages fill the trace", "[limits]") {
  // 15 nodes send 100 messages of 65,535 items each (393 MB of payload): the payload's doubling
  // was charged nowhere, and --max-memory 768 stopped at 1,186 MiB. Now the growth is charged
  // before it is made: the run stops with the process holding less than the limit.
  std::string path = write_temp(
      "limits_payload.coll",
      "model mem\n  collective gather\n  topology ring\n  elements 65535\n  input inp\n"
      "  output inp\nprocedure P(my_id, inp)\nbegin\n  for k := 1 to 100 do\n"
      "    send inp to (my_id + 1) mod p;\n    receive t from (my_id - 1) mod p;\n  endfor;\n"
      "end P\n");
  std::string out;
  CHECK(cli("run " + path + " -t ring:15 --max-memory 300 --max-ops 100000000 --quiet", out, 120) ==
        3);
  fs::remove(path);
  auto at = out.find("stopped at the memory limit of 300.0 MiB: the process holds ");
  REQUIRE(at != std::string::npos);
  double held = std::stod(out.substr(at + std::string("stopped at the memory limit of 300.0 MiB: "
                                                      "the process holds ")
                                              .size()));
  CHECK(held <= 300.0 * 1.1);
}

TEST_CASE("verify --engine smt returns near its --timeout, asserting included", "[limits][slow]") {
  // Z3 spent 140 s asserting one query of a 4,096-item trace past --timeout 5000 (ms): its own
  // timeout covers the search only. A watchdog interrupts it; a hang guard, not a speed goal.
  // Known gap: Z3's parser answers no interrupt, and parsing this 2.2 MB query alone takes about
  // 30 s of CPU (2026-11-28), so the guard is 90 s and the test is [slow] (not under ASan).
  std::string out;
  CHECK(cli("verify allgather_neighbor_exchange -t complete:2 -d fingerprint -c 4096 --engine smt "
            "--timeout 2000",
            out, 90) == 3);
  CHECK(has(out, "time limit of --timeout 2000 ms"));
}
