// The timing semantics (docs/language.md, "When a transfer happens"): steps follow the data and
// the ports, not the sender's clock. Models under tests/data/timing/.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "check/checks.hpp"
#include "cli.hpp"
#include "exec/executor.hpp"
#include "exec/timing.hpp"

using namespace collv;

namespace {

const std::string kDir = std::string(COLLV_SOURCE_DIR) + "/tests/data/timing/";

Trace run_file(const std::string& name, const std::string& spec, RunOptions o = {}) {
  Model m = parse_model_file(kDir + name);
  return run_model(m, Topology::parse(spec), o);
}

Trace run_text(const std::string& text, const std::string& spec, RunOptions o = {}) {
  return run_model(parse_model(text, "t.coll"), Topology::parse(spec), o);
}

std::string simple(const std::string& body, const std::string& coll = "allreduce") {
  return "model t\n  collective " + coll + "\n  input x\n  output x\n  nodup no\nprocedure P\n" +
         "begin\n" + body + "end P\n";
}

Verdict verdict(const Trace& t, const std::string& name) {
  for (const auto& c : check_trace(t, {}))
    if (c.name == name) return c.verdict;
  FAIL("no check " << name);
  return Verdict::NotChecked;
}

std::uint32_t floor_log2(std::uint32_t x) { return 31 - __builtin_clz(x); }
std::uint32_t ceil_log2(std::uint32_t x) { return x <= 1 ? 0 : floor_log2(x - 1) + 1; }

// The step of the first transfer from u to v.
std::uint32_t step_of(const Trace& t, NodeId u, NodeId v) {
  for (const auto& x : t.transfers)
    if (x.src == u && x.dst == v) return x.step;
  FAIL("no transfer " << u << " -> " << v);
  return 0;
}

}  // namespace

TEST_CASE("MPICH's binomial reduce on p = 6 takes 3 steps and is single-port", "[timing]") {
  Trace t = run_file("reduce_binomial_mpich.coll", "complete:6");
  REQUIRE(t.failure.kind == RunFailure::Kind::None);
  CHECK(t.port == PortModel::Single);
  CHECK(t.steps == 3);  // the sender's-clock rule measured 2 and failed single-port
  // Node 0 receives from 1, then 2 (which received from 3 first), then 4 (which received from 5
  // in step 1 but must wait for 0's receive port).
  CHECK(step_of(t, 1, 0) == 1);
  CHECK(step_of(t, 2, 0) == 2);
  CHECK(step_of(t, 4, 0) == 3);
  CHECK(verdict(t, "single-port") == Verdict::Pass);
  CHECK(verdict(t, "postcondition") == Verdict::Pass);
}

TEST_CASE("the binomial reduce takes ceil(log2 p) steps for p = 2..16", "[timing]") {
  for (std::uint32_t p = 2; p <= 16; ++p) {
    INFO("p = " << p);
    RunOptions o;
    o.domain = DomainKind::Ordered;
    Trace t = run_file("reduce_binomial_mpich.coll", "complete:" + std::to_string(p), o);
    REQUIRE(t.failure.kind == RunFailure::Kind::None);
    CHECK(t.steps == ceil_log2(p));
    CHECK(verdict(t, "single-port") == Verdict::Pass);
    CHECK(verdict(t, "postcondition") == Verdict::Pass);
  }
}

TEST_CASE("recursive doubling with the fold: floor(log2 p) + 2 steps off powers of two",
          "[timing]") {
  for (std::uint32_t p = 2; p <= 12; ++p) {
    for (auto dom : {DomainKind::Exact, DomainKind::Ordered}) {
      INFO("p = " << p << ", " << domain_name(dom));
      RunOptions o;
      o.domain = dom;
      Trace t = run_file("allreduce_recdbl_mpich.coll", "complete:" + std::to_string(p), o);
      REQUIRE(t.failure.kind == RunFailure::Kind::None);
      bool pow2 = (p & (p - 1)) == 0;
      CHECK(t.steps == (pow2 ? floor_log2(p) : floor_log2(p) + 2));
      CHECK(verdict(t, "single-port") == Verdict::Pass);
      CHECK(verdict(t, "postcondition") == Verdict::Pass);
      CHECK(verdict(t, "deadlock") == Verdict::Pass);
    }
  }
}

TEST_CASE("a rank idle in the fold's round goes ahead, then waits for its partner", "[timing]") {
  // p = 6: rem = 2, newranks 1->0, 3->1, 4->2, 5->3. Ranks 4 and 5 have nothing to fold and
  // exchange at once (step 1); 1 and 3 exchange after the fold (step 2); then 4 <-> 1 needs 1's
  // step-2 data: step 3 (the sender's-clock rule put 4 -> 1 in step 2, beside 3 -> 1).
  Trace t = run_file("allreduce_recdbl_mpich.coll", "complete:6");
  CHECK(step_of(t, 0, 1) == 1);
  CHECK(step_of(t, 4, 5) == 1);
  CHECK(step_of(t, 3, 1) == 2);
  CHECK(step_of(t, 4, 1) == 3);
  CHECK(step_of(t, 1, 4) == 3);
  CHECK(step_of(t, 1, 0) == 4);  // the unfold
}

TEST_CASE("send then receive with the same partner is one exchange step", "[timing]") {
  Trace t = run_text(simple("  partner := my_id XOR 1;\n  send x to partner;\n  receive y from "
                            "partner;\n  x := x + y;\n"),
                     "hypercube:1");
  REQUIRE(t.failure.kind == RunFailure::Kind::None);
  CHECK(t.steps == 1);
  CHECK(verdict(t, "single-port") == Verdict::Pass);
  // Two rounds: the second send carries the first receive's data, so it is step 2.
  Trace u = run_text(simple("  partner := my_id XOR 1;\n  for i := 1 to 2 do\n    send x to "
                            "partner;\n    receive y from partner;\n    x := x + y;\n  endfor\n"),
                     "hypercube:1");
  CHECK(u.steps == 2);
}

TEST_CASE("a pipelined chain forwards each piece as it arrives: p - 1 + k - 1 steps", "[timing]") {
  for (std::uint32_t p = 2; p <= 8; ++p) {
    INFO("p = " << p);
    Trace t = run_file("chain_pipeline.coll", "line:" + std::to_string(p));
    REQUIRE(t.failure.kind == RunFailure::Kind::None);
    CHECK(t.steps == p - 1 + 3);
    CHECK(verdict(t, "steps") == Verdict::Pass);
    CHECK(verdict(t, "single-port") == Verdict::Pass);
    // Piece j leaves node i in step i + j + 1.
    std::vector<std::uint32_t> seen(p, 0);
    for (const auto& x : t.transfers) CHECK(x.step == x.src + 1 + seen[x.src]++);
  }
}

TEST_CASE("a send waits only for the receives its data depends on", "[timing]") {
  // Node 1 receives from 0, then sends its own input to 2: the send does not carry what it
  // received, so it happens in step 1 too (collv programs cannot branch on data).
  const char* own =
      "  if my_id = 0 then send x to 1; endif\n"
      "  if my_id = 1 then\n    receive y from 0;\n    send x to 2;\n  endif\n"
      "  if my_id = 2 then receive y from 1; endif\n";
  Trace a = run_text(simple(own), "line:3");
  REQUIRE(a.failure.kind == RunFailure::Kind::None);
  CHECK(step_of(a, 0, 1) == 1);
  CHECK(step_of(a, 1, 2) == 1);
  // Forwarding what it received: step 2.
  const char* fwd =
      "  if my_id = 0 then send x to 1; endif\n"
      "  if my_id = 1 then\n    receive y from 0;\n    send y to 2;\n  endif\n"
      "  if my_id = 2 then receive y from 1; endif\n";
  CHECK(step_of(run_text(simple(fwd), "line:3"), 1, 2) == 2);
  // Dependencies flow through assignments and combinations, and a variable is one unit: writing
  // part of it makes all of it depend on the receive.
  const char* part =
      "  if my_id = 0 then send x to 1; endif\n"
      "  if my_id = 1 then\n    receive y from 0;\n    z := x union x;\n"
      "    z[1] := y;\n    send z[0] to 2;\n  endif\n"
      "  if my_id = 2 then receive y from 1; endif\n";
  CHECK(step_of(run_text(simple(part), "line:3"), 1, 2) == 2);
  // A whole assignment replaces the dependency.
  const char* fresh =
      "  if my_id = 0 then send x to 1; endif\n"
      "  if my_id = 1 then\n    receive y from 0;\n    z := y;\n    z := x;\n"
      "    send z to 2;\n  endif\n"
      "  if my_id = 2 then receive y from 1; endif\n";
  CHECK(step_of(run_text(simple(fresh), "line:3"), 1, 2) == 1);
}

TEST_CASE("single-port: a node's sends, and its receives, take increasing steps", "[timing]") {
  // Three nodes send to node 0 with no data dependencies: its receive port takes them one per
  // step in program order.
  const char* body =
      "  if my_id = 0 then\n    for k := 1 to p - 1 do receive y from k; endfor\n"
      "  else\n    send x to 0;\n  endif\n";
  Trace t = run_text(simple(body, "gather"), "complete:4");
  REQUIRE(t.failure.kind == RunFailure::Kind::None);
  CHECK(step_of(t, 1, 0) == 1);
  CHECK(step_of(t, 2, 0) == 2);
  CHECK(step_of(t, 3, 0) == 3);
  CHECK(verdict(t, "single-port") == Verdict::Pass);
  // The send port: node 0 sends to each in turn.
  const char* scatter =
      "  if my_id = 0 then\n    for k := 1 to p - 1 do send x to k; endfor\n"
      "  else\n    receive y from 0;\n  endif\n";
  Trace s = run_text(simple(scatter, "broadcast"), "complete:4");
  CHECK(step_of(s, 0, 3) == 3);
  // Under --port all every link has its own port: one step each.
  RunOptions all;
  all.port = PortModel::All;
  CHECK(run_text(simple(body, "gather"), "complete:4", all).steps == 1);
  CHECK(run_text(simple(scatter, "broadcast"), "complete:4", all).steps == 1);
}

TEST_CASE("option --port all: a node sends to two neighbours in one step", "[timing]") {
  RunOptions o;
  o.root = 1;
  Trace single = run_file("bcast_both_sides.coll", "line:3", o);
  CHECK(single.steps == 2);
  CHECK(verdict(single, "single-port") == Verdict::Pass);
  o.port = PortModel::All;
  Trace all = run_file("bcast_both_sides.coll", "line:3", o);
  REQUIRE(all.failure.kind == RunFailure::Kind::None);
  CHECK(all.port == PortModel::All);
  CHECK(all.steps == 1);
  CHECK(step_of(all, 1, 0) == 1);
  CHECK(step_of(all, 1, 2) == 1);
  // single-port is not the rule under --port all; congestion per directed link is.
  CHECK(verdict(all, "single-port") == Verdict::NotChecked);
  CHECK(verdict(all, "congestion") == Verdict::Pass);
  CHECK(verdict(all, "postcondition") == Verdict::Pass);
  // The same schedule judged as a single-port one fails: the check still bites.
  Trace as_single = all;
  as_single.port = PortModel::Single;
  CHECK(verdict(as_single, "single-port") == Verdict::Fail);
  // The port model travels with the trace.
  auto j = trace_to_json(all);
  CHECK(j["port"] == "all");
  CHECK(trace_from_json(j, "t.json").port == PortModel::All);
  j["port"] = "half";
  CHECK_THROWS_AS(trace_from_json(j, "t.json"), UsageError);
  j.erase("port");
  CHECK(trace_from_json(j, "t.json").port == PortModel::Single);
}

TEST_CASE("option --port all: one transfer per directed link per step, FIFO", "[timing]") {
  RunOptions o;
  o.port = PortModel::All;
  Trace t = run_text(simple("  if my_id = 0 then\n    send x to 1;\n    send x to 1;\n  else\n"
                            "    receive y from 0;\n    receive y from 0;\n  endif\n"),
                     "line:2", o);
  REQUIRE(t.transfers.size() == 2);
  CHECK(t.transfers[0].step == 1);
  CHECK(t.transfers[1].step == 2);
  CHECK(verdict(t, "congestion") == Verdict::Pass);
}

TEST_CASE("option --port all: a value is ready when every receive before its newest one is",
          "[timing]") {
  // Node 0 receives a late message from 2 (2 first waits for 1's), then an early one from 1,
  // and forwards only the early one: under --port all it still waits for the late receive,
  // which comes before in program order (the documented conservative rule).
  const char* body =
      "  if my_id = 1 then\n    send x to 2;\n    send x to 0;\n  endif\n"
      "  if my_id = 2 then\n    receive y from 1;\n    send y to 0;\n  endif\n"
      "  if my_id = 0 then\n    receive a from 2;\n    receive b from 1;\n"
      "    send b to 3;\n  endif\n"
      "  if my_id = 3 then receive y from 0; endif\n";
  RunOptions o;
  o.port = PortModel::All;
  Trace t = run_text(simple(body), "complete:4", o);
  REQUIRE(t.failure.kind == RunFailure::Kind::None);
  CHECK(step_of(t, 1, 0) == 1);
  CHECK(step_of(t, 2, 0) == 2);
  CHECK(step_of(t, 0, 3) == 3);
}

TEST_CASE("contradicting port orders are a deadlock of the ports under single-port", "[timing]") {
  Trace t = run_file("port_order_cycle.coll", "complete:4");
  REQUIRE(t.failure.kind == RunFailure::Kind::Deadlock);
  CHECK(t.failure.cycle_closed);
  CHECK(t.failure.message.find("deadlock of the ports (--port single)") != std::string::npos);
  CHECK(t.failure.waiting == std::vector<NodeId>{0, 1, 2, 3});
  CHECK(t.failure.waiting_cycle.size() == 4);
  CHECK(verdict(t, "deadlock") == Verdict::Fail);
  // The values are right (sends are buffered) and --port all has no such order.
  RunOptions o;
  o.port = PortModel::All;
  Trace a = run_file("port_order_cycle.coll", "complete:4", o);
  CHECK(a.failure.kind == RunFailure::Kind::None);
  CHECK(a.steps == 2);
}

TEST_CASE("the timing pass handles long dependency chains without recursion", "[timing]") {
  // 2 x 50000 transfers, each depending on the one before: one chain of 100000.
  Trace t = run_text(simple("  for i := 1 to 50000 do\n    if my_id = 0 then\n      send x to 1;"
                            "\n      receive x from 1;\n    else\n      receive x from 0;\n"
                            "      send x to 0;\n    endif\n  endfor\n"),
                     "line:2");
  REQUIRE(t.failure.kind == RunFailure::Kind::None);
  CHECK(t.steps == 100000);
}

TEST_CASE("assign_steps on a hand-made record: data, send port and receive port", "[timing]") {
  Trace t;
  t.topology = Topology::parse("complete:3");
  // 0 -> 1, 2 -> 1, then 1 -> 2 carrying what came from 0.
  t.transfers = {{0, 0, 1, 0, 0, 0}, {0, 2, 1, 0, 0, 0}, {0, 1, 2, 0, 0, 0}};
  TimingRecord rec;
  rec.dep = {kNoTransfer, kNoTransfer, 0};
  rec.prev_recv = {kNoTransfer, 0, kNoTransfer};  // 1 receives from 0, then from 2
  TimingOutcome o = assign_steps(t, rec, PortModel::Single);
  CHECK(o.cycle.empty());
  CHECK(t.transfers[0].step == 1);
  CHECK(t.transfers[1].step == 2);  // 1's receive port
  CHECK(t.transfers[2].step == 2);  // data from step 1; 1 sends and receives in step 2
  assign_steps(t, rec, PortModel::All);
  CHECK(t.transfers[1].step == 1);
  CHECK(t.transfers[2].step == 2);
}

TEST_CASE("the step limit: stopped while running, or a schedule longer than it", "[timing]") {
  // Sending for ever on one link stops under both port models (a lower bound on the step is the
  // number of sends on the port, or on the link).
  const char* forever =
      "  while 1 = 1 do\n    send x to (my_id + 1) mod p;\n"
      "    receive x from (my_id - 1) mod p;\n  endwhile\n";
  for (auto port : {PortModel::Single, PortModel::All}) {
    RunOptions o;
    o.port = port;
    o.max_steps = 40;
    Trace t = run_text(simple(forever), "ring:4", o);
    CHECK(t.failure.kind == RunFailure::Kind::StepLimit);
    CHECK(t.steps == 40);
  }
  // Each node sends once, but the root's receive port makes the schedule 3 steps long.
  const char* gather =
      "  if my_id = 0 then\n    for k := 1 to p - 1 do receive y from k; endfor\n"
      "  else\n    send x to 0;\n  endif\n";
  RunOptions o;
  o.max_steps = 2;
  Trace t = run_text(simple(gather, "gather"), "complete:4", o);
  CHECK(t.failure.kind == RunFailure::Kind::StepLimit);
  CHECK(t.failure.message.find("the schedule takes 3 steps, past the step limit 2") !=
        std::string::npos);
  o.max_steps = 3;
  CHECK(run_text(simple(gather, "gather"), "complete:4", o).failure.kind == RunFailure::Kind::None);
}

TEST_CASE("collv run and verify take --port", "[timing]") {
  std::string model = kDir + "bcast_both_sides.coll";
  auto run = [&](const std::string& args) {
    std::string text;
    int rc = test::run_cli(args, text);
    return std::make_pair(rc, text);
  };
  auto [rc1, s1] = run("run " + model + " -t line:3 -s 1 --port all");
  CHECK(rc1 == 0);
  CHECK(s1.find("port       all") != std::string::npos);
  CHECK(s1.find("steps      1") != std::string::npos);
  auto [rc2, s2] = run("run " + model + " -t line:3 -s 1");
  CHECK(s2.find("port       single") != std::string::npos);
  CHECK(s2.find("steps      2") != std::string::npos);
  auto [rc3, s3] = run("verify " + model + " -t line:3 -s 1 --port all --quiet");
  CHECK(rc3 == 0);
  auto [rc4, s4] = run("run " + model + " -t line:3 -s 1 --port half");
  CHECK(rc4 == 2);
  CHECK(s4.find("--port") != std::string::npos);
}
