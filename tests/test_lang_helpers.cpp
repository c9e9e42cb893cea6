// The language for real algorithms: `break`, the conditional in the procedure and helper
// functions (`def`): what they compute, and the errors, each with file:line:col.
#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "check/checks.hpp"
#include "exec/executor.hpp"
#include "exec/trace.hpp"
#include "lang/ast.hpp"
#include "lang/check.hpp"

using namespace collv;

namespace {

std::string error_of(const std::string& text) {
  try {
    parse_model(text, "m.coll");
  } catch (const ModelError& e) {
    return e.what();
  }
  return "";
}

Verdict verdict(const Trace& t, const std::string& name) {
  for (const auto& c : check_trace(t, CheckOptions{}))
    if (c.name == name) return c.verdict;
  FAIL("no check " << name);
  return Verdict::NotChecked;
}

Trace run_text(const std::string& text, const std::string& spec) {
  Model m = parse_model(text, "m.coll");
  RunOptions o;
  o.domain = DomainKind::Exact;
  return run_model(m, Topology::parse(spec), o);
}

// Recursive-doubling all-reduce on a hypercube, its loop left with `break`; `stop` is the mask
// at which it stops (p for the right algorithm).
std::string allreduce_with_break(const std::string& stop) {
  return R"(model rd_break
  collective allreduce
  topology hypercube
  operator commutative
  input x
  output x
  def partner(r, k) = r XOR k
  steps d
procedure RD(my_id, x)
begin
    mask := 1;
    while 1 = 1 do
        if mask >= )" +
         stop + R"( then break;
        send x to partner(my_id, mask);
        receive y from partner(my_id, mask);
        x := x + y;
        mask := mask * 2;
    endwhile;
end RD
)";
}

}  // namespace

TEST_CASE("break leaves the innermost loop", "[lang]") {
  Trace t = run_text(allreduce_with_break("p"), "hypercube:3");
  CHECK(t.failure.kind == RunFailure::Kind::None);
  CHECK(t.steps == 3);
  CHECK(verdict(t, "postcondition") == Verdict::Pass);
  // Leaving one round early leaves half the contributions out: the break is what stops it.
  Trace early = run_text(allreduce_with_break("p / 2"), "hypercube:3");
  CHECK(early.steps == 2);
  CHECK(verdict(early, "postcondition") == Verdict::Fail);
  // In a for loop nested in a while, break leaves the for only.
  Trace nested = run_text(R"(model nested
  collective allreduce
  topology complete
  operator commutative
  input x
  output x
procedure P(my_id, x)
begin
    rounds := 0;
    while rounds < 1 do
        for k := 1 to p - 1 do
            if k = 2 then break;
            send x to (my_id + k) mod p;
            receive y from (my_id - k) mod p;
        endfor;
        rounds := rounds + 1;
    endwhile;
end P
)",
                          "complete:4");
  CHECK(nested.failure.kind == RunFailure::Kind::None);
  CHECK(nested.transfers.size() == 4);  // only k = 1 sent
  CHECK(error_of(R"(model b
  collective allreduce
  topology complete
  input x
  output x
procedure P(my_id, x)
begin
    break;
end P
)") == "m.coll:8:5: error: 'break' outside a loop (it leaves the innermost for or while)");
}

TEST_CASE("the conditional in the procedure evaluates only the branch taken", "[lang]") {
  Trace t = run_text(R"(model cond
  collective allreduce
  topology complete
  operator commutative
  input x
  output x
procedure P(my_id, x)
begin
    half := p div 2;
    partner := if my_id < half then my_id + half else my_id - half;
    guard := if my_id = 0 then 0 else 12 div my_id;
    send x to partner;
    receive y from partner;
    x := x + y;
end P
)",
                     "complete:2");
  CHECK(t.failure.kind == RunFailure::Kind::None);  // 12 div 0 is never evaluated
  CHECK(verdict(t, "postcondition") == Verdict::Pass);
  CHECK(error_of(R"(model c
  collective allreduce
  topology complete
  input x
  output x
procedure P(my_id, x)
begin
    x := if my_id = 0 then x else x;
end P
)") == "m.coll:8:10: error: 'x' is a buffer (it is received into, combined or indexed) but is "
       "assigned a number here");
}

TEST_CASE("helper functions expand where they are called, in the header and the procedure",
          "[lang]") {
  Model m = parse_model(allreduce_with_break("p"), "m.coll");
  // The helper's call became its formula: no call of 'partner' is left.
  std::string body;
  for (const auto& s : m.body) body += s->loc.str();
  CHECK(m.header.steps != nullptr);
  Model h = parse_model(R"(model h
  collective allreduce
  topology complete
  input x
  output x
  def rounds(n) = clog2(n)
  def twice(a) = 2 * a
  steps twice(rounds(p))
procedure P(my_id, x)
begin
    x := x;
end P
)",
                        "h.coll");
  CHECK(expr_to_string(*h.header.steps) == "2 * clog2(p)");

  const std::string head = R"(model e
  collective allreduce
  topology complete
  input x
  output x
)";
  const std::string tail = "procedure P(my_id, x)\nbegin\n    x := x;\nend P\n";
  CHECK(error_of(head + "  def f(a, b) = a + b\n  steps f(p)\n" + tail) ==
        "m.coll:7:9: error: helper 'f' takes 2 arguments, given 1");
  CHECK(error_of(head + "  def floor(a) = a\n" + tail) ==
        "m.coll:6:7: error: 'floor' is a built-in function; a helper needs another name");
  CHECK(error_of(head + "  def f(a, a) = a\n" + tail) ==
        "m.coll:6:12: error: parameter 'a' appears twice");
  // A helper cannot call itself: inside its own formula it is not defined yet.
  CHECK(error_of(head + "  def f(a) = f(a)\n  steps f(p)\n" + tail).find("unknown function 'f'") !=
        std::string::npos);
  // Expansion is bounded: each helper doubles the formula of the one before.
  std::string chain = head + "  def f0(x) = x + x\n";
  for (int k = 1; k <= 17; ++k)
    chain += "  def f" + std::to_string(k) + "(x) = f" + std::to_string(k - 1) + "(f" +
             std::to_string(k - 1) + "(x))\n";
  CHECK(error_of(chain + tail).find("expands to more than 65536 operators") != std::string::npos);
}

namespace {

std::string array_model(const std::string& body) {
  return R"(model arr
  collective allreduce
  topology complete
  operator commutative
  input x
  output x
procedure P(my_id, x)
begin
)" + body +
         "end P\n";
}

std::string run_error(const std::string& text, const std::string& spec) {
  Trace t = run_text(text, spec);
  return t.failure.message;
}

}  // namespace

TEST_CASE("integer arrays: local to a node, zero-filled, bounds-checked", "[lang]") {
  // Offsets of uneven segments, kept in an array and used to pick what to send: rank r sends
  // element off[r] .. off[r + 1] - 1 of a count-element buffer to rank r + 1.
  Trace t = run_text(array_model(R"(    array off[p + 1];
    for b := 0 to p - 1 do
        off[b + 1] := off[b] + count div p + (if b < count mod p then 1 else 0);
    endfor;
    send x[off[my_id] .. off[my_id + 1] - 1] to (my_id + 1) mod p;
    receive y from (my_id - 1) mod p;
)"),
                     "complete:3");
  REQUIRE(t.failure.kind == RunFailure::Kind::None);
  // count 1 on 3 ranks: segments of 1, 0, 0 elements.
  std::size_t items = 0;
  for (const Transfer& x : t.transfers) items += x.payload_len;
  CHECK(t.transfers.size() == 3);
  CHECK(items == 1);

  CHECK(run_error(array_model("    array a[2];\n    a[2] := 1;\n"), "complete:2") ==
        "m.coll:10:6: runtime error at node 0 (0): index 2 is out of range for 'a' of 2 elements");
  CHECK(
      run_error(array_model("    k := 0;\n    if k = 1 then array a[2]; endif;\n    k := a[0];\n"),
                "complete:2") ==
      "m.coll:11:11: runtime error at node 0 (0): 'a' is used "
      "before its 'array' statement ran");
  CHECK(run_error(array_model("    array a[0 - 1];\n"), "complete:2")
            .find("array 'a' of -1 elements (at most 1048576)") != std::string::npos);
  CHECK(run_error(array_model("    array a[2 ^ 30];\n"), "complete:2").find("at most 1048576") !=
        std::string::npos);
  CHECK(error_of(array_model("    array a[2];\n    k := a;\n")) ==
        "m.coll:10:10: error: 'a' is an integer array: use one element, 'a[i]'");
  CHECK(error_of(array_model("    array a[2];\n    receive a from 0;\n")) ==
        "m.coll:10:13: error: 'a' is an integer array; data is received into buffers");
  CHECK(error_of(array_model("    array a[2];\n    send a[0] to 1;\n")) ==
        "m.coll:10:11: error: 'a[...]' is a number, but a buffer is needed here");
  CHECK(error_of(array_model("    array a[2];\n    k := a[0 .. 1];\n")) ==
        "m.coll:10:11: error: 'a' is an integer array: slices are for buffers");
}

TEST_CASE("steps at most and cost at most are bounds that can fail", "[lang][claims]") {
  auto with_claims = [](const std::string& claims) {
    return R"(model b
  collective allreduce
  topology hypercube
  operator commutative
  input x
  output x
)" + claims +
           R"(procedure P(my_id, x)
begin
    for i := 0 to d - 1 do
        send x to my_id XOR 2^i;
        receive y from my_id XOR 2^i;
        x := x + y;
    endfor;
end P
)";
  };
  auto verdict_of = [&](const std::string& claims, const std::string& check) {
    return verdict(run_text(with_claims(claims), "hypercube:3"), check);
  };
  // 3 steps, each moving one item: 3 ts + 3 tw*m.
  CHECK(verdict_of("  steps at most d\n", "steps") == Verdict::Pass);
  CHECK(verdict_of("  steps at most d + 4\n", "steps") == Verdict::Pass);
  CHECK(verdict_of("  steps at most d - 1\n", "steps") == Verdict::Fail);
  CHECK(verdict_of("  steps d + 1\n", "steps") == Verdict::Fail);  // an exact claim stays exact
  CHECK(verdict_of("  cost at most d * (ts + tw*m)\n", "cost") == Verdict::Pass);
  CHECK(verdict_of("  cost at most d * ts + (d - 1) * tw*m\n", "cost") == Verdict::Fail);
  CHECK(verdict_of("  cost at most (d - 1) * ts + 9 * tw*m\n", "cost") == Verdict::Fail);
  Trace t = run_text(with_claims("  steps at most d - 1\n"), "hypercube:3");
  for (const auto& c : check_trace(t, CheckOptions{}))
    if (c.name == "steps") {
      REQUIRE(!c.violations.empty());
      CHECK(c.violations[0].message == "the run takes 3 steps; the model claims at most 2");
    }
  // The bound travels with a schedule file, and a file's bound is checked against the replay.
  CHECK(trace_to_json(t)["claimed"]["steps_at_most"] == true);
  Trace back = trace_from_json(trace_to_json(t), "t.json", std::uint64_t{1} << 30);
  CHECK(back.steps_at_most);
  CHECK(verdict(back, "steps") == Verdict::Fail);
}

TEST_CASE("sum in header formulas: bounded, its variable bound in its body only",
          "[lang][claims]") {
  const std::string head = R"(model s
  collective allreduce
  topology complete
  input x
  output x
)";
  const std::string tail = "procedure P(my_id, x)\nbegin\n    x := x;\nend P\n";
  auto value = [&](const std::string& f, double p) {
    Model m = parse_model(head + "  steps " + f + "\n" + tail, "m.coll");
    return eval_header_expr(*m.header.steps, {{"p", p}}, "steps", nullptr);
  };
  CHECK(value("sum(k, 1, p, k)", 10) == 55);
  CHECK(value("sum(k, 0, p - 1, 2 ^ k)", 5) == 31);
  CHECK(value("sum(k, 3, 2, k)", 5) == 0);  // empty range
  CHECK(
      error_of(head + "  steps sum(k, 0, p, k) + k\n" + tail).find("unknown name 'k' in 'steps'") !=
      std::string::npos);
  CHECK(error_of(head + "  steps sum(p, 0, 3, p)\n" + tail)
            .find("'p' is a header name; the variable of 'sum' needs another") !=
        std::string::npos);
  CHECK(error_of(head + "  steps sum(i, 0, 3, sum(j, 0, i, j))\n" + tail)
            .find("a 'sum' inside a 'sum' is not supported") != std::string::npos);
  CHECK(error_of(head + "  steps sum(0, 1, 2)\n" + tail)
            .find("'sum' takes a variable and three formulas") != std::string::npos);
  Model big = parse_model(head + "  steps sum(k, 0, p, 1)\n" + tail, "m.coll");
  CHECK_THROWS_WITH(eval_header_expr(*big.header.steps, {{"p", 5e6}}, "steps", nullptr),
                    Catch::Contains("more than 1000000 terms"));
}
