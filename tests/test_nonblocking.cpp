// Nonblocking point-to-point in the model language (issue 23): `irecv`/`isend` posted with a
// handle, completed by `wait`/`waitall` (docs/language.md, "Nonblocking point-to-point").
// Matching follows MPI's non-overtaking rule; the completion order cannot be observed by the
// model (runs with the waits in other orders give the same values and steps); the receive port
// takes the receives a node has outstanding at once in any order its waits allow, timed by the
// shorter of posting order and a list schedule by readiness; every misuse is a runtime error at
// its position.
#include <filesystem>
#include <fstream>
#include <string>

#include <catch2/catch.hpp>

#include "check/checks.hpp"
#include "cli.hpp"
#include "exec/executor.hpp"
#include "lang/ast.hpp"
#include "util/error.hpp"

using namespace collv;

namespace {

const std::string kRoot = COLLV_SOURCE_DIR;

std::string write_model(const std::string& name, const std::string& text) {
  std::string path = test::unique_temp(name) + ".coll";
  std::ofstream(path) << text;
  return path;
}

Trace run_file(const std::string& path, const std::string& spec, std::uint32_t count,
               DomainKind dom = DomainKind::Exact) {
  Model m = parse_model_file(path);
  RunOptions o;
  o.domain = dom;
  o.count = count;
  return run_model(m, Topology::parse(spec), o);
}

std::vector<std::string> failing(const std::vector<CheckResult>& cs) {
  std::vector<std::string> out;
  for (const auto& c : cs)
    if (c.verdict == Verdict::Fail) out.push_back(c.name);
  return out;
}

// "file:line:col" of the first occurrence of `needle` in a model file (1-based).
std::string position_of(const std::string& path, const std::string& needle) {
  std::string text = test::slurp(path);
  auto at = text.find(needle);
  REQUIRE(at != std::string::npos);
  int line = 1 + static_cast<int>(std::count(text.begin(), text.begin() + at, '\n'));
  auto bol = text.rfind('\n', at);
  int col = static_cast<int>(at - (bol == std::string::npos ? 0 : bol + 1)) + 1;
  return path + ":" + std::to_string(line) + ":" + std::to_string(col);
}

// An all-gather on ring:3 in which every node posts irecvs from both neighbours and isends to
// both, then completes them with WAITS (the variants below differ only there).
std::string exchange_model(const std::string& waits) {
  return "model nb_exchange\n"
         "  collective allgather\n"
         "  topology ring\n"
         "  input x\n"
         "  output result\n"
         "  requires p = 3\n"
         "  steps 2\n"
         "procedure NB_EXCHANGE(my_id, x, result)\n"
         "begin\n"
         "  result := [];\n"
         "  result[my_id * count .. my_id * count + count - 1] := x;\n"
         "  irecv result[left * count .. left * count + count - 1] from left as r1;\n"
         "  irecv result[right * count .. right * count + count - 1] from right as r2;\n"
         "  isend x to right as s1;\n"
         "  isend x to left as s2;\n"
         "  " +
         waits +
         "\n"
         "end NB_EXCHANGE\n";
}

}  // namespace

TEST_CASE("nonblocking: the documented linear all-to-all passes, p - 1 steps",
          "[lang][nonblocking]") {
  std::string doc = test::doc_example(kRoot, "docs/language.md", "alltoall_linear_nb");
  std::string out;
  CHECK(test::run_cli("verify " + doc + " --sizes 1..9 --count 0..3", out) == 0);
  for (auto dom : {DomainKind::Exact, DomainKind::Ordered}) {
    Trace t = run_file(doc, "complete:6", 2, dom);
    CHECK(t.failure.kind == RunFailure::Kind::None);
    CHECK(failing(check_trace(t, CheckOptions{})).empty());
    CHECK(t.steps == 5);
    CHECK(t.transfers.size() == 30);
  }
  // A streamed run cannot order the irecvs' ports: refused, and Auto falls back to the trace.
  Model m = parse_model_file(doc);
  RunOptions o;
  o.stream = RunOptions::Stream::On;
  CHECK_THROWS_AS(run_model(m, Topology::parse("complete:4"), o), StreamRefused);
}

TEST_CASE("nonblocking: the completion order is not observable", "[lang][nonblocking]") {
  // Four ways to complete the same four requests: outputs, steps and every transfer's step agree.
  const char* waits[] = {"waitall;", "waitall s2, r2, s1, r1;", "wait r2; wait r1; waitall;",
                         "wait r1; wait s1; wait r2; wait s2;"};
  std::vector<Trace> runs;
  for (const char* w : waits) {
    std::string path = write_model("nb_exchange", exchange_model(w));
    std::string out;
    INFO(w);
    CHECK(test::run_cli("verify " + path + " -t ring:3 --count 0..3", out) == 0);
    runs.push_back(run_file(path, "ring:3", 2));
    CHECK(failing(check_trace(runs.back(), CheckOptions{})).empty());
  }
  for (std::size_t k = 1; k < runs.size(); ++k) {
    CHECK(runs[k].final_output == runs[0].final_output);
    CHECK(runs[k].steps == runs[0].steps);
    REQUIRE(runs[k].transfers.size() == runs[0].transfers.size());
    for (std::size_t i = 0; i < runs[0].transfers.size(); ++i)
      CHECK(runs[k].transfers[i].step == runs[0].transfers[i].step);
  }
  CHECK(runs[0].steps == 2);  // one send port: the two isends take steps 1 and 2
}

TEST_CASE("nonblocking: irecvs from one source match in posting order (non-overtaking)",
          "[lang][nonblocking]") {
  // Node 0 sends its two elements one by one; node 1 posts two irecvs and waits for the second
  // first, with a blocking receive of a third message in between: MPI gives the first message to
  // the first irecv, whatever the waits do.
  std::string path = write_model("nb_fifo",
                                 "model nb_fifo\n"
                                 "  collective allgather\n"
                                 "  topology complete\n"
                                 "  input x\n"
                                 "  output result\n"
                                 "  requires p = 2 and count = 3\n"
                                 "procedure NB_FIFO(my_id, x, result)\n"
                                 "begin\n"
                                 "  result := [];\n"
                                 "  result[my_id * 3 .. my_id * 3 + 2] := x;\n"
                                 "  if my_id = 0 then\n"
                                 "    send x[0] to 1; send x[1] to 1; send x[2] to 1;\n"
                                 "    receive result[3 .. 5] from 1;\n"
                                 "  else\n"
                                 "    irecv result[0] from 0 as a;\n"
                                 "    irecv result[1] from 0 as b;\n"
                                 "    receive last from 0;\n"
                                 "    wait b; wait a;\n"
                                 "    result[2] := last;\n"
                                 "    send x to 0;\n"
                                 "  endif;\n"
                                 "end NB_FIFO\n");
  Trace t = run_file(path, "complete:2", 3);
  REQUIRE(t.failure.kind == RunFailure::Kind::None);
  CHECK(failing(check_trace(t, CheckOptions{})).empty());
  CHECK(t.final_output[1] == t.final_output[0]);
}

TEST_CASE("nonblocking: the receive port takes the irecv whose data is ready first",
          "[lang][nonblocking]") {
  // An all-gather on complete:3: node i sends to i + 1, then to i + 2, and posts its irecv from
  // i + 1 first, then from i + 2 (mod 3): each node posts first the irecv whose message comes
  // second. Taken as their data is ready, i -> i + 1 is step 1 and i -> i + 2 step 2, whatever the
  // order of the waits. Posting order has no schedule: 1 -> 0 before 2 -> 0 (0's port), before
  // 2 -> 1 (2's sends), before 0 -> 1 (1's port), before 0 -> 2 (0's sends), before 1 -> 2 (2's
  // port), before 1 -> 0 (1's sends).
  for (const char* waits : {"wait a; wait b;", "wait b; wait a;", "waitall b, a;", "waitall;"}) {
    INFO(waits);
    std::string path = write_model(
        "nb_port", std::string("model nb_port\n"
                               "  collective allgather\n"
                               "  topology complete\n"
                               "  input x\n"
                               "  output result\n"
                               "  requires p = 3\n"
                               "  steps if count = 0 then 0 else 2\n"
                               "procedure NB_PORT(my_id, x, result)\n"
                               "begin\n"
                               "  result := [];\n"
                               "  result[my_id * count .. my_id * count + count - 1] := x;\n"
                               "  if count > 0 then\n"
                               "    n1 := (my_id + 1) mod 3;\n"
                               "    n2 := (my_id + 2) mod 3;\n"
                               "    irecv result[n1 * count .. n1 * count + count - 1] from n1 as "
                               "a;\n"
                               "    irecv result[n2 * count .. n2 * count + count - 1] from n2 as "
                               "b;\n"
                               "    isend x to n1 as c;\n"
                               "    isend x to n2 as e;\n"
                               "    wait c; wait e;\n"
                               "    ") +
                       waits +
                       "\n"
                       "  endif;\n"
                       "end NB_PORT\n");
    Trace t = run_file(path, "complete:3", 1);
    REQUIRE(t.failure.kind == RunFailure::Kind::None);
    CHECK(failing(check_trace(t, CheckOptions{})).empty());
    REQUIRE(t.transfers.size() == 6);
    for (const auto& x : t.transfers) {
      INFO(x.src << " -> " << x.dst);
      CHECK(x.step == ((x.src + 1) % 3 == x.dst ? 1u : 2u));
    }
    CHECK(t.steps == 2);
    std::string out;
    CHECK(test::run_cli("verify " + path + " -t complete:3 --count 0..3", out) == 0);
  }
  // Posting order has a schedule, a longer one: node 0 posts from 1, then from 2; node 1 sends
  // to 2 first. In posting order 1 -> 0 (step 2) comes before 2 -> 0 (step 3); by readiness
  // 2 -> 0 is step 1 and 1 -> 0 step 2, and the shorter schedule is kept.
  {
    std::string path =
        write_model("nb_shorter",
                    "model nb_shorter\n  collective gather\n  topology complete\n  input x\n"
                    "  output result\n  requires p = 3 and root = 0\n  nodup no\n"
                    "procedure NB_SHORTER(my_id, x, result)\nbegin\n  result := [];\n"
                    "  if my_id = 0 then\n    result[0 .. count - 1] := x;\n"
                    "    irecv result[count .. 2 * count - 1] from 1 as a;\n"
                    "    irecv result[2 * count .. 3 * count - 1] from 2 as b;\n    waitall;\n"
                    "  endif;\n"
                    "  if my_id = 1 then send x to 2; send x to 0; endif;\n"
                    "  if my_id = 2 then send x to 0; receive y from 1; endif;\n"
                    "end NB_SHORTER\n");
    Trace t = run_file(path, "complete:3", 1);
    REQUIRE(t.failure.kind == RunFailure::Kind::None);
    REQUIRE(t.transfers.size() == 3);
    for (const auto& x : t.transfers) {
      INFO(x.src << " -> " << x.dst);
      CHECK(x.step == (x.src == 2 || x.dst == 2 ? 1u : 2u));
    }
    CHECK(t.steps == 2);
  }
  // Ties go to posting order: node 0 posts from 2, then from 1, and both send at once.
  for (const char* waits : {"wait a; wait b;", "wait b; wait a;"}) {
    INFO(waits);
    std::string path = write_model("nb_tie", std::string("model nb_tie\n"
                                                         "  collective gather\n"
                                                         "  topology complete\n"
                                                         "  input x\n"
                                                         "  output result\n"
                                                         "  requires p = 3 and root = 0\n"
                                                         "  steps 2\n"
                                                         "procedure NB_TIE(my_id, x, result)\n"
                                                         "begin\n"
                                                         "  result := [];\n"
                                                         "  if my_id = 0 then\n"
                                                         "    result[0 .. count - 1] := x;\n"
                                                         "    irecv result[2 * count .. 3 * "
                                                         "count - 1] from 2 as a;\n"
                                                         "    irecv result[count .. 2 * count - "
                                                         "1] from 1 as b;\n"
                                                         "    ") +
                                                 waits +
                                                 "\n"
                                                 "  else\n"
                                                 "    send x to 0;\n"
                                                 "  endif;\n"
                                                 "end NB_TIE\n");
    Trace t = run_file(path, "complete:3", 1);
    REQUIRE(t.failure.kind == RunFailure::Kind::None);
    CHECK(failing(check_trace(t, CheckOptions{})).empty());
    REQUIRE(t.transfers.size() == 2);
    for (const auto& x : t.transfers) CHECK(x.step == (x.src == 2 ? 1u : 2u));
  }
}

TEST_CASE("nonblocking: a wait's data feeds later sends, the posting does not",
          "[lang][nonblocking]") {
  // line:3 chain: node 1 posts an irecv from 0, sends its own input to 2 at once (step 1), then
  // waits and forwards what it got (step 2).
  std::string path = write_model("nb_chain",
                                 "model nb_chain\n"
                                 "  collective broadcast\n"
                                 "  topology line\n"
                                 "  input x\n"
                                 "  output x\n"
                                 "  requires p = 3 and root = 0\n"
                                 "  nodup no\n"
                                 "procedure NB_CHAIN(my_id, x)\n"
                                 "begin\n"
                                 "  if my_id = 0 then send x to 1; endif;\n"
                                 "  if my_id = 1 then\n"
                                 "    irecv y from 0 as r;\n"
                                 "    send x to 2;\n"
                                 "    wait r;\n"
                                 "    send y to 2;\n"
                                 "    x := y;\n"
                                 "  endif;\n"
                                 "  if my_id = 2 then receive z from 1; receive x from 1; endif;\n"
                                 "end NB_CHAIN\n");
  Trace t = run_file(path, "line:3", 1);
  REQUIRE(t.failure.kind == RunFailure::Kind::None);
  REQUIRE(t.transfers.size() == 3);
  CHECK(t.transfers[0].step == 1);  // 0 -> 1
  CHECK(t.transfers[1].step == 1);  // 1 -> 2, its own input: not after the irecv
  CHECK(t.transfers[2].step == 2);  // 1 -> 2, the received value: after 0 -> 1
  CHECK(failing(check_trace(t, CheckOptions{})).empty());
}

TEST_CASE("nonblocking: a model that relies on irecv order is caught, its twin passes",
          "[lang][nonblocking]") {
  std::string out;
  // Reading a block before the waitall: a runtime error at the read, naming the irecv.
  std::string early = kRoot + "/tests/mutants/runtime_alltoall_irecv_read_before_wait.coll";
  Trace t = run_file(early, "complete:4", 1);
  REQUIRE(t.failure.kind == RunFailure::Kind::RuntimeError);
  CHECK(t.failure.message.find(position_of(early, "first := result") + ": runtime error at node") ==
        0);
  CHECK(t.failure.message.find("'result' is read before the irecv into it (posted at " +
                               position_of(early, "irecv result")) != std::string::npos);
  CHECK(test::run_cli("verify " + early + " -t complete:4", out) == 1);
  CHECK(out.find("read before the irecv") != std::string::npos);
  // The waitall left out: the irecv is never completed.
  std::string nowait = kRoot + "/tests/mutants/runtime_alltoall_irecv_no_waitall.coll";
  Trace u = run_file(nowait, "complete:4", 1);
  REQUIRE(u.failure.kind == RunFailure::Kind::RuntimeError);
  CHECK(u.failure.message.find(position_of(nowait, "irecv result") + ": runtime error at node 0") ==
        0);
  CHECK(u.failure.message.find("the irecv posted here is never completed") != std::string::npos);
  CHECK(test::run_cli("verify " + nowait + " -t complete:4", out) == 1);
  // The twin (the documented model) passes the same runs.
  std::string twin = test::doc_example(kRoot, "docs/language.md", "alltoall_linear_nb");
  CHECK(test::run_cli("verify " + twin + " -t complete:4", out) == 0);
}

TEST_CASE("nonblocking: misuse is an error at its position", "[lang][nonblocking]") {
  auto model = [](const std::string& body) {
    return "model nb_bad\n  collective allgather\n  topology complete\n  input x\n"
           "  output result\nprocedure NB_BAD(my_id, x, result)\nbegin\n" +
           body + "\nend NB_BAD\n";
  };
  // The error is at `needle` (its line and column; its line only when `line_only`).
  auto run_error = [&](const std::string& body, const std::string& needle, const std::string& want,
                       bool line_only = false) {
    INFO(body);
    std::string path = write_model("nb_bad", model(body));
    Trace t = run_file(path, "complete:2", 1);
    REQUIRE(t.failure.kind == RunFailure::Kind::RuntimeError);
    std::string at = position_of(path, needle);
    if (line_only) at = at.substr(0, at.rfind(':') + 1);
    CHECK(t.failure.message.find(at) == 0);
    CHECK(t.failure.message.find(want) != std::string::npos);
  };
  const std::string peer = "pr := 1 - my_id;\n";
  // Writing an isend's buffer before its wait.
  run_error(peer + "isend x to pr as s;\nx := 0;\nwait s;\nreceive result from pr;", "x := 0",
            "'x' is written before the isend of it");
  // Writing an irecv's buffer before its wait.
  run_error(peer + "send x to pr;\nirecv result from pr as r;\nresult := x;\nwait r;",
            "result := x", "'result' is written before the irecv into it");
  // The length of a buffer being received is a read.
  run_error(peer + "send x to pr;\nirecv result from pr as r;\nln := len(result);\nwait r;",
            "ln := len", "'result' is read before the irecv");
  // A handle that is not outstanding, and one listed twice.
  run_error(peer + "send x to pr;\nirecv result from pr as r;\nwait r + 7;", "wait r + 7",
            "8 is not an outstanding request at this node", true);
  run_error(peer + "send x to pr;\nirecv result from pr as r;\nwait r;\nwait  r;", "wait  r",
            "already completed", true);
  run_error(peer + "send x to pr;\nirecv result from pr as r;\nwaitall r, r;", "waitall r, r",
            "request 1 is listed twice", true);
  // Two whole-buffer irecvs into one buffer at once.
  run_error(peer +
                "send x to pr;\nsend x to pr;\nirecv result from pr as r;\nirecv result from pr "
                "as t;\nwaitall;",
            "irecv result from pr as t", "overlaps the buffer of the irecv posted at");
  // An isend never completed.
  run_error(peer + "isend x to pr as s; receive result from pr;", "isend", "the isend posted here");
  // A wait for a message never sent: a deadlock at the wait.
  std::string path = write_model("nb_dead", model("pr := 1 - my_id;\nirecv result from pr as r;\n"
                                                  "wait r;"));
  Trace d = run_file(path, "complete:2", 1);
  CHECK(d.failure.kind == RunFailure::Kind::Deadlock);
  CHECK(d.failure.message.find(position_of(path, "wait r")) != std::string::npos);
  // Load-time errors.
  auto load_error = [&](const std::string& body, const std::string& want) {
    INFO(body);
    std::string p2 = write_model("nb_load", model(body));
    try {
      (void)parse_model_file(p2);
      FAIL("loaded");
    } catch (const ModelError& e) {
      CHECK(std::string(e.what()).find(want) != std::string::npos);
      CHECK(std::string(e.what()).find(p2 + ":") == 0);
    }
  };
  load_error("irecv result from 0;", "expected 'as' and the request's variable");
  load_error("irecv result from 0 as x;", "'x' is a buffer; a request is an integer handle");
  load_error("isend x to 0 as 3;", "expected");
  // `wait` is still a name a model may assign.
  std::string ok = write_model("nb_name", model("wait := 1; result := x; if wait = 2 then "
                                                "result := []; endif;"));
  CHECK_NOTHROW(parse_model_file(ok));
}

TEST_CASE("nonblocking: the request table is bounded", "[lang][nonblocking]") {
  std::string path = write_model("nb_many",
                                 "model nb_many\n  collective allgather\n  topology complete\n"
                                 "  input x\n  output x\nprocedure NB_MANY(my_id, x)\nbegin\n"
                                 "  for i := 1 to 70000 do isend x to my_id as r; endfor;\n"
                                 "end NB_MANY\n");
  try {
    (void)run_file(path, "complete:2", 1);
    FAIL("no limit");
  } catch (const LimitError& e) {
    CHECK(std::string(e.what()).find("outstanding requests") != std::string::npos);
    CHECK(std::string(e.what()).find(position_of(path, "isend")) == 0);
  }
}

TEST_CASE("nonblocking: MPICH's scattered all-to-all posts irecvs and isends per block",
          "[lang][nonblocking]") {
  std::string model = kRoot + "/models/mpich/alltoall_scattered.coll";
  CHECK(test::slurp(model).find("waitall") != std::string::npos);
  std::string out;
  CHECK(test::run_cli("verify " + model + " --sizes 2..16 --count 0..5", out) == 0);
  Trace t = run_file(model, "complete:8", 2);
  CHECK(t.steps == 7);
  CHECK(failing(check_trace(t, CheckOptions{})).empty());
  // The v-variant posts only the positive counts, as MPICH does, and waits per block too.
  std::string v = kRoot + "/models/mpich/alltoallv_scattered.coll";
  CHECK(test::slurp(v).find("irecv") != std::string::npos);
  CHECK(test::run_cli("verify " + v + " --sizes 2..16 --count 0..5", out) == 0);
}

TEST_CASE("nonblocking: the from-MPI guide's ring all-gather runs, and its refused twin",
          "[lang][nonblocking]") {
  std::string ring = test::doc_example(kRoot, "docs/from-mpi.md", "allgather_ring_irecv");
  std::string out;
  CHECK(test::run_cli("verify " + ring + " --sizes 1..9 --count 0..3", out) == 0);
  Trace t = run_file(ring, "ring:6", 2);
  CHECK(t.steps == 5);
  CHECK(failing(check_trace(t, CheckOptions{})).empty());
  // The irecv posted before the isend of the same variable (disjoint positions): MPI allows it,
  // and it runs the same, as the guide says.
  std::string text = test::slurp(ring);
  auto a = text.find("    isend");
  auto b = text.find("    irecv");
  auto e = text.find('\n', b);
  std::string swapped =
      text.substr(0, a) + text.substr(b, e + 1 - b) + text.substr(a, b - a) + text.substr(e + 1);
  std::string path = write_model("ring_swapped", swapped);
  CHECK(test::run_cli("verify " + path + " --sizes 1..9 --count 0..3", out) == 0);
  Trace s6 = run_file(path, "ring:6", 2);
  CHECK(s6.steps == 5);
  // Its irecv one position too long, over the block the isend sends: refused at the isend, naming
  // the positions read and the irecv's (count 1: in round 1 node i > 0 receives into
  // result[i - 1 .. i] and sends result[i]).
  const std::string irecv_line =
      "    irecv result[j * count .. j * count + count - 1] from left as r;";
  REQUIRE(swapped.find(irecv_line) != std::string::npos);
  std::string longer = swapped;
  longer.replace(longer.find(irecv_line), irecv_line.size(),
                 "    irecv result[j * count .. j * count + count] from left as r;");
  std::string lpath = write_model("ring_swapped_long", longer);
  Trace u = run_file(lpath, "ring:4", 1);
  REQUIRE(u.failure.kind == RunFailure::Kind::RuntimeError);
  INFO(u.failure.message);
  CHECK(u.failure.message.find(position_of(lpath, "isend result[s")) == 0);
  CHECK(u.failure.message.find("is read before the irecv into 'result[") != std::string::npos);
  CHECK(u.failure.message.find("(posted at " + position_of(lpath, "irecv result[j")) !=
        std::string::npos);
}

TEST_CASE("nonblocking: positions no outstanding irecv targets may be read and written",
          "[lang][nonblocking]") {
  // MPICH's and Open MPI's in-place pairwise exchange: irecv into the partner's blocks, isend of
  // one's own from the same buffer, wait for both. Refused (whole-variable) before collv compared
  // positions.
  std::string model = test::doc_example(kRoot, "docs/language.md", "allgather_recdbl_inplace");
  std::string out;
  CHECK(test::run_cli("verify " + model + " --sizes 1..16 --count 0..4", out) == 0);
  CHECK(out.find("allgather_recdbl_inplace  complete  2..16 (4 sizes)") != std::string::npos);
  for (int k = 1; k <= 4; ++k) {
    const std::string spec = "complete:" + std::to_string(1 << k);
    INFO(spec);
    Trace t = run_file(model, spec, 3);
    REQUIRE(t.failure.kind == RunFailure::Kind::None);
    CHECK(t.steps == static_cast<std::uint32_t>(k));
    CHECK(failing(check_trace(t, CheckOptions{})).empty());
  }
  // The mutant: the irecv one position too long, over the first position its isend sends, at the
  // upper rank of each pair. Caught at the isend, naming the positions and the irecv; at count 1
  // on 2 nodes node 1 receives into result[0 .. 1] and sends result[1].
  std::string bad = kRoot + "/tests/mutants/runtime_allgather_recdbl_irecv_one_long.coll";
  Trace u = run_file(bad, "complete:2", 1);
  REQUIRE(u.failure.kind == RunFailure::Kind::RuntimeError);
  INFO(u.failure.message);
  CHECK(u.failure.message.find(position_of(bad, "isend result") + ": runtime error at node 1") ==
        0);
  CHECK(u.failure.message.find("'result[1]' is read before the irecv into 'result[0 .. 1]' "
                               "(posted at " +
                               position_of(bad, "irecv result") + ") is completed") !=
        std::string::npos);
  CHECK(test::run_cli("verify " + bad + " --sizes 2..8 --count 1..3", out) == 1);
  CHECK(out.find("runtime: 18 runs") != std::string::npos);
  CHECK(out.find("is read before the irecv into 'result[") != std::string::npos);
}

TEST_CASE("nonblocking: reads and writes are judged by position", "[lang][nonblocking]") {
  // p = 2, count 2: tmp holds three blocks; the irecv targets the third (tmp[4 .. 5]), the isend
  // sends the first (tmp[0 .. 1]). `body` replaces the line between the posts and the waitall.
  auto model = [](const std::string& mid) {
    return "model nb_pos\n  collective allgather\n  topology complete\n  input x\n"
           "  output result\nprocedure NB_POS(my_id, x, result)\nbegin\n"
           "  pr := 1 - my_id;\n  c := count;\n  tmp := x ∪ x ∪ x;\n"
           "  irecv tmp[2 * c .. 3 * c - 1] from pr as r;\n"
           "  isend tmp[0 .. c - 1] to pr as s;\n" +
           mid +
           "\n  waitall r, s;\n  result := [];\n"
           "  result[my_id * c .. my_id * c + c - 1] := x;\n"
           "  result[pr * c .. pr * c + c - 1] := tmp[2 * c .. 3 * c - 1];\n"
           "end NB_POS\n";
  };
  // Allowed: reads of positions the irecv does not target (also those the isend sends), writes
  // of positions neither holds, a blocking receive into them, an element, an empty slice.
  for (const std::string mid : {
           "  y := tmp[0 .. 2 * c - 1]; tmp[c .. 2 * c - 1] := y[0 .. c - 1];",
           "  tmp[c] := x[0]; z := tmp[2 * c - 1];",
           "  send tmp[c .. 2 * c - 1] to pr; receive tmp[c .. 2 * c - 1] from pr;",
           "  tmp[2 * c .. 2 * c - 1] := []; y := tmp[2 * c .. 2 * c - 1];",
       }) {
    INFO(mid);
    std::string path = write_model("nb_pos_ok", model(mid));
    Trace t = run_file(path, "complete:2", 2);
    REQUIRE(t.failure.kind == RunFailure::Kind::None);
    // (the third sends a block the partner has already had: nodup objects, nothing else)
    if (mid.find("send") == std::string::npos)
      CHECK(failing(check_trace(t, CheckOptions{})).empty());
  }
  // Refused: each one position into a held buffer, and the whole variable.
  struct Bad {
    std::string mid, needle, want;
  };
  for (const Bad& b : std::vector<Bad>{
           {"  y := tmp[0 .. 2 * c];", "y := tmp",
            "'tmp[0 .. 4]' is read before the irecv into 'tmp[4 .. 5]' (posted at "},
           {"  y := tmp[3 * c - 1];", "y := tmp",
            "'tmp[5]' is read before the irecv into 'tmp[4 .. 5]' (posted at "},
           {"  tmp[c .. 2 * c] := x ∪ x[0 .. 0];", "tmp[c .. 2 * c] :=",
            "'tmp[2 .. 4]' is written before the irecv into 'tmp[4 .. 5]' (posted at "},
           {"  tmp[c - 1 .. 2 * c - 1] := x ∪ x[0 .. 0];", "tmp[c - 1",
            "'tmp[1 .. 3]' is written before the isend of 'tmp[0 .. 1]' (posted at "},
           {"  receive tmp[c - 1 .. 2 * c - 2] from pr;", "receive tmp",
            "'tmp[1 .. 2]' is written before the isend of 'tmp[0 .. 1]' (posted at "},
           {"  y := tmp;", "y := tmp", "'tmp' is read before the irecv into it (posted at "},
           {"  ln := len(tmp);", "ln := len",
            "; it receives into 'tmp[4 .. 5]', and reading all of"},
           {"  tmp := x;", "tmp := x;\n", "'tmp' is written before the irecv into it (posted at "},
       }) {
    INFO(b.mid);
    std::string path = write_model("nb_pos_bad", model(b.mid));
    Trace t = run_file(path, "complete:2", 2);
    REQUIRE(t.failure.kind == RunFailure::Kind::RuntimeError);
    INFO(t.failure.message);
    CHECK(t.failure.message.find(position_of(path, b.needle) + ": runtime error at node") == 0);
    CHECK(t.failure.message.find(b.want) != std::string::npos);
    const bool send = b.want.find("isend") != std::string::npos;
    CHECK(t.failure.message.find("(posted at " +
                                 position_of(path, send ? "isend tmp" : "irecv tmp") + ")") !=
          std::string::npos);
  }
}

TEST_CASE("nonblocking: a run posting order cannot time is timed by readiness",
          "[lang][nonblocking]") {
  // docs/language.md's example: node 0 posts its irecv from 1 before the one from 2, while 2 sends
  // to 0 first and 1 forwards what 2 sent it. In posting order 1 -> 0 would precede 2 -> 0, which
  // precedes 2 -> 1 (2's send port), which precedes 1 -> 0 (the data): no schedule (collv used to
  // call this run inconclusive). Taken as ready: 2 -> 0 step 1, 2 -> 1 step 2, 1 -> 0 step 3, the
  // same schedule as with the irecvs posted the other way round.
  std::string late = test::doc_example(kRoot, "docs/language.md", "nb_ready_order");
  std::string text = test::slurp(late);
  const std::string from1 = "    irecv result[count .. 2 * count - 1] from 1 as a;\n";
  const std::string from2 = "    irecv result[2 * count .. 3 * count - 1] from 2 as b;\n";
  auto at = text.find(from1 + from2);
  REQUIRE(at != std::string::npos);
  std::string swapped = text;
  swapped.replace(at, from1.size() + from2.size(), from2 + from1);
  std::string early = write_model("nb_order", swapped);
  std::vector<Trace> runs;
  for (const std::string& path : {late, early}) {
    INFO(path);
    runs.push_back(run_file(path, "complete:3", 2));
    const Trace& t = runs.back();
    REQUIRE(t.failure.kind == RunFailure::Kind::None);
    CHECK_FALSE(t.failure.order_unexplored);
    CHECK(failing(check_trace(t, CheckOptions{})).empty());
    CHECK(t.steps == 3);
    REQUIRE(t.transfers.size() == 3);
    for (const auto& x : t.transfers) {
      INFO(x.src << " -> " << x.dst);
      CHECK(x.step == (x.dst == 0 ? (x.src == 2 ? 1u : 3u) : 2u));
    }
    std::string out;
    CHECK(test::run_cli("verify " + path + " -t complete:3 --count 1..3", out) == 0);
  }
  CHECK(runs[0].final_output == runs[1].final_output);
}

TEST_CASE("nonblocking: a port cycle the waits force is a deadlock, one free order removes",
          "[lang][nonblocking]") {
  // tests/data/timing/port_order_cycle.coll with the receives of nodes 1 and 2 as irecvs. Waited
  // one by one (each completed before the next is posted), the orders are the program's: the
  // cycle of port orders is a deadlock found. Posted together and waited by one waitall, MPI may
  // complete them in either order, and the readiness order has a schedule.
  std::string base = test::slurp(kRoot + "/tests/data/timing/port_order_cycle.coll");
  auto variant = [&](const std::string& one, const std::string& two) {
    std::string t = base;
    for (const auto& [from, to] :
         {std::pair<std::string, std::string>{"        receive y from 3;\n        receive x from "
                                              "0;\n",
                                              one},
          {"        receive x from 0;\n        receive y from 3;\n", two}}) {
      auto at = t.find(from);
      REQUIRE(at != std::string::npos);
      t.replace(at, from.size(), to);
    }
    return write_model("nb_cycle", t);
  };
  std::string forced =
      variant("        irecv y from 3 as r; wait r;\n        irecv x from 0 as s; wait s;\n",
              "        irecv x from 0 as r; wait r;\n        irecv y from 3 as s; wait s;\n");
  Trace d = run_file(forced, "complete:4", 1);
  REQUIRE(d.failure.kind == RunFailure::Kind::Deadlock);
  CHECK(d.failure.ports);
  CHECK_FALSE(d.failure.order_unexplored);
  CHECK(d.failure.message.find("deadlock of the ports") != std::string::npos);
  CHECK(d.failure.message.find("its receives in any order its waits allow") != std::string::npos);
  CHECK(failing(check_trace(d, CheckOptions{})) == std::vector<std::string>{"deadlock"});
  std::string out;
  CHECK(test::run_cli("verify " + forced + " -t complete:4", out) == 1);
  std::string free_order =
      variant("        irecv y from 3 as r;\n        irecv x from 0 as s;\n        waitall;\n",
              "        irecv x from 0 as r;\n        irecv y from 3 as s;\n        waitall;\n");
  Trace f = run_file(free_order, "complete:4", 1);
  REQUIRE(f.failure.kind == RunFailure::Kind::None);
  CHECK(failing(check_trace(f, CheckOptions{})).empty());
  // 0 -> 1, 0 -> 2, 0 -> 3 at steps 1, 2, 3 (0's send port); 3 -> 2 and 3 -> 1 after 0 -> 3.
  CHECK(f.steps == 5);
}

TEST_CASE("nonblocking: a cycle through collv's conservative data rule is inconclusive",
          "[lang][nonblocking]") {
  // complete:4. Node 0 posts an irecv from 1, then one from 3, completes both with one waitall
  // and sends what 3 sent it to 2. Node 1 sends to 2, then to 0; node 2 receives from 0, then
  // from 1. collv keeps one dependency per variable and counts a value as ready when every
  // receive its node completed no later has happened: the value from 3 is counted as needing
  // 1 -> 0 (completed by the same waitall, posted first), which follows 1 -> 2 (1's send port),
  // which follows 0 -> 2 (2's receive port), which carries the value: a cycle, through a
  // dependency the data does not have (MPI: 3 -> 0 step 1, 0 -> 2 step 2, 1 -> 2 step 3, 1 -> 0
  // step 4). Not judged: inconclusive, never a failure. Posted the other way round, the value
  // from 3 needs only 3 -> 0, and that schedule is found.
  auto model = [](const std::string& posts) {
    return "model nb_approx\n  collective allgather\n  topology complete\n  input x\n"
           "  output x\n  requires p = 4\n  nodup no\n"
           "procedure NB_APPROX(my_id, x)\nbegin\n"
           "  if my_id = 0 then\n" +
           posts +
           "    waitall;\n"
           "    send a to 2;\n"
           "  endif;\n"
           "  if my_id = 1 then send x to 2; send x to 0; endif;\n"
           "  if my_id = 2 then receive y from 0; receive z from 1; endif;\n"
           "  if my_id = 3 then send x to 0; endif;\n"
           "end NB_APPROX\n";
  };
  const std::string from1 = "    irecv b from 1 as rb;\n";
  const std::string from3 = "    irecv a from 3 as ra;\n";
  Trace u = run_file(write_model("nb_approx", model(from1 + from3)), "complete:4", 1);
  REQUIRE(u.failure.kind == RunFailure::Kind::Deadlock);
  CHECK(u.failure.ports);
  CHECK(u.failure.order_unexplored);
  CHECK(u.failure.message.find("MPI may complete this run (inconclusive") != std::string::npos);
  for (const auto& c : check_trace(u, CheckOptions{}))
    if (c.name == "deadlock") CHECK(c.verdict == Verdict::Unknown);
  Trace k = run_file(write_model("nb_approx", model(from3 + from1)), "complete:4", 1);
  REQUIRE(k.failure.kind == RunFailure::Kind::None);
  CHECK(k.steps == 4);
  for (const auto& x : k.transfers) {
    INFO(x.src << " -> " << x.dst);
    const std::uint32_t want = x.src == 3 ? 1 : x.src == 0 ? 2 : x.dst == 2 ? 3 : 4;
    CHECK(x.step == want);
  }
}

TEST_CASE(
    "nonblocking: the list schedule gives blocking receives' steps where waits fix the "
    "order",
    "[lang][nonblocking]") {
  // Every `receive` of real models rewritten as `irecv ... as nbq; wait nbq;` (each completed
  // before the next is posted, so the program fixes every port order): the list schedule must
  // give every transfer the step the longest-path pass gives the blocking model.
  namespace fs = std::filesystem;
  std::size_t compared = 0;
  for (const char* dir : {"/models/mpich", "/models/openmpi"})
    for (const auto& e : fs::directory_iterator(kRoot + dir)) {
      if (e.path().extension() != ".coll") continue;
      std::string text = test::slurp(e.path().string());
      if (text.find("irecv") != std::string::npos) continue;
      std::string out;
      std::size_t at = 0, changed = 0;
      while (true) {
        auto r = text.find("receive ", at);
        if (r == std::string::npos) break;
        auto end = text.find(';', r);
        // `receive` as a statement (not inside a word or a comment line's prose)
        bool stmt = (r == 0 || text[r - 1] == ' ' || text[r - 1] == '\n') &&
                    end != std::string::npos && text.find('\n', r) > end &&
                    (text.find(" from ", r) < end || text.find(" along ", r) < end);
        auto bol = text.rfind('\n', r);
        if (stmt && text.find('#', bol == std::string::npos ? 0 : bol) < r) stmt = false;
        if (!stmt) {
          out += text.substr(at, r + 8 - at);
          at = r + 8;
          continue;
        }
        out += text.substr(at, r - at) + "irecv " + text.substr(r + 8, end - r - 8) +
               " as nbq; wait nbq;";
        at = end + 1;
        ++changed;
      }
      out += text.substr(at);
      if (changed == 0) continue;
      INFO(e.path().string());
      Model blocking = parse_model_file(e.path().string());
      Model nb = parse_model(out, e.path().string());
      for (const char* spec : {"complete:5", "complete:8"}) {
        INFO(spec);
        RunOptions o;
        o.count = 3;
        Trace a;
        try {
          a = run_model(blocking, Topology::parse(spec), o);
        } catch (const UsageError&) {
          continue;  // a `requires` that does not hold here (the two_proc models: p = 2)
        }
        Trace b = run_model(nb, Topology::parse(spec), o);
        if (a.failure.kind != RunFailure::Kind::None) continue;  // sizes
        REQUIRE(b.failure.kind == RunFailure::Kind::None);
        REQUIRE(a.transfers.size() == b.transfers.size());
        CHECK(a.steps == b.steps);
        for (std::size_t i = 0; i < a.transfers.size(); ++i)
          CHECK(a.transfers[i].step == b.transfers[i].step);
        ++compared;
      }
    }
  CHECK(compared >= 20);
}
