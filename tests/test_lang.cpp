// Parser and checker: positions and messages of errors, and what a good model parses to.
#include <catch2/catch.hpp>

#include "lang/ast.hpp"
#include "lang/check.hpp"

using namespace collv;

namespace {

const char* kHeader = R"(model t
  collective allreduce
  topology hypercube
  input x
  output x
)";

// Parses `body` (inside begin/end) and returns the error message, or "" if it parsed.
std::string error_of(const std::string& text) {
  try {
    parse_model(text, "bad.coll");
  } catch (const ModelError& e) {
    return e.what();
  }
  return "";
}

std::string with_body(const std::string& body) {
  return std::string(kHeader) + "procedure P\nbegin\n" + body + "end P\n";
}

}  // namespace

TEST_CASE("a well-formed model parses with its header", "[lang]") {
  Model m = parse_model(R"(model prefix
  source "Grama et al., Algorithm 4.9"
  collective scan
  topology hypercube, ring
  operator commutative
  input my_number
  output result
  requires p = 2^d
  steps d
  cost (ts + tw*m) * d
  note "2i means 2^i"
procedure PREFIX_SUMS_HCUBE(my_id, my_number, d, result)
begin
    result := my_number;
    msg := result;
    for i := 0 to d - 1 do
        partner := my_id XOR 2^i;
        send msg to partner;
        receive number from partner;
        msg := msg + number;
        if (partner < my_id) then result := result + number;
    endfor;
end PREFIX_SUMS_HCUBE
)",
                        "prefix.coll");
  CHECK(m.header.name == "prefix");
  CHECK(m.header.collective == Collective::Scan);
  CHECK(m.header.topologies == std::vector<std::string>{"hypercube", "ring"});
  CHECK(m.header.op_class == OperatorClass::Commutative);
  CHECK(m.header.notes.size() == 1);
  REQUIRE(m.body.size() == 3);
  CHECK(m.body[2]->kind == StmtKind::For);
  // The one-line 'if' without endif, as Algorithm 4.9 prints it, holds one statement.
  const Stmt& loop = *m.body[2];
  REQUIRE(loop.body.size() == 5);
  CHECK(loop.body[4]->kind == StmtKind::If);
  CHECK(loop.body[4]->body.size() == 1);
  // Types: msg, number, result are buffers; i and partner are numbers.
  auto type_of = [&](const std::string& n) {
    for (std::size_t i = 0; i < m.var_names.size(); ++i)
      if (m.var_names[i] == n) return m.var_types[i];
    return Type::Unknown;
  };
  CHECK(type_of("msg") == Type::Data);
  CHECK(type_of("number") == Type::Data);
  CHECK(type_of("result") == Type::Data);
  CHECK(type_of("partner") == Type::Int);
  CHECK(type_of("i") == Type::Int);
}

TEST_CASE("syntax errors name the position and what was expected", "[lang]") {
  CHECK(error_of(with_body("  y := 1 +;\n")) ==
        "bad.coll:8:11: error: expected an expression, found ';'");
  CHECK(error_of(with_body("  if 1 = 1 \n  y := 2;\n  endif\n")) ==
        "bad.coll:9:3: error: expected 'then' after the condition of 'if', found 'y'");
  CHECK(error_of(with_body("  for i := 0 to 3 do\n    y := i;\n")) ==
        "bad.coll:10:1: error: expected 'endfor' to close the 'for' at line 8, found 'end'");
  CHECK(error_of(with_body("  y = 3;\n")) ==
        "bad.coll:8:5: error: expected ':=' in an assignment ('=' compares), found '='");
  CHECK(error_of(with_body("  send x too 3;\n")) ==
        "bad.coll:8:10: error: expected 'to' or 'along link' in 'send', found 'too'");
  CHECK(error_of("model m\n  collective allreduce\n  input x\n  output x\nprocedure P\nbegin\n  y "
                 ":= @;\nend P\n") == "bad.coll:7:8: error: unexpected character: '@'");
  CHECK(error_of("model m\n  colective allreduce\n")
            .find("bad.coll:2:3: error: unknown header key 'colective'") == 0);
  CHECK(error_of("model m\n  collective allsum\n")
            .find("bad.coll:2:14: error: unknown collective 'allsum'") == 0);
  CHECK(error_of("model m\n  collective allreduce\n  output x\nprocedure P begin end P\n")
            .find("error: the header has no 'input' line") != std::string::npos);
  CHECK(error_of(with_body("  y := \"s\";\n")) ==
        "bad.coll:8:8: error: expected an expression, found string \"s\"");
  CHECK(error_of(with_body("  /* never closed\n"))
            .find("bad.coll:8:3: error: unterminated comment") == 0);
  // Columns count characters, not bytes: '≠' is one column.
  CHECK(error_of(with_body("  if 1 ≠ 2 then y := ; endif\n")) ==
        "bad.coll:8:22: error: expected an expression, found ';'");
}

TEST_CASE("type and name errors are found before the run", "[lang]") {
  CHECK(error_of(with_body("  y := zz + 1;\n")).find("bad.coll:8:8: error: unknown name 'zz'") ==
        0);
  CHECK(error_of(with_body("  y := x * 2;\n")).find("bad.coll:8:8: error: 'x' is a buffer") == 0);
  CHECK(error_of(with_body("  x := 5;\n")).find("bad.coll:8:8: error: 'x' is a buffer") == 0);
  CHECK(error_of(with_body("  my_id := 5;\n")).find("'my_id' is a built-in name") !=
        std::string::npos);
  CHECK(error_of(with_body("  y := frob(2);\n")).find("unknown function 'frob'") !=
        std::string::npos);
  CHECK(error_of(with_body("  y := min(2);\n")).find("'min' takes 2 arguments") !=
        std::string::npos);
  // 0 is the identity and may stand for a buffer (Algorithm 4.5's `recv := 0`).
  CHECK(error_of(with_body("  r := 0;\n  receive r from 1;\n")) == "");
}

TEST_CASE("names a topology lacks are refused with their position", "[lang]") {
  Model m = parse_model(with_body("  send x along link n;\n  receive x along link n;\n"), "s.coll");
  CHECK_NOTHROW(check_names_on(m, Topology::parse("star:3")));
  try {
    check_names_on(m, Topology::parse("hypercube:3"));
    FAIL("expected a ModelError");
  } catch (const ModelError& e) {
    CHECK(std::string(e.what()) ==
          "s.coll:8:21: error: the model uses a name hypercube:3 does not have: 'n' is defined "
          "only on star graphs");
  }
  Model h = parse_model(with_body("  y := d;\n"), "h.coll");
  CHECK_NOTHROW(check_names_on(h, Topology::parse("ring:8")));
  CHECK_THROWS_AS(check_names_on(h, Topology::parse("ring:6")), ModelError);
}

TEST_CASE("header expressions evaluate with real arithmetic", "[lang]") {
  Model m = parse_model(
      std::string(kHeader) +
          "  steps n*(n-1)/2\n  cost (ts + tw*m*p/2)*(p-1)\nprocedure P\nbegin\nend P\n",
      "h.coll");
  std::map<std::string, double> env{{"n", 5}, {"p", 5}, {"ts", 0}, {"tw", 1}, {"m", 1}};
  CHECK(eval_header_expr(*m.header.steps, env, "'steps'") == 10);
  CHECK(eval_header_expr(*m.header.cost, env, "'cost'") == Approx(10.0));  // 5/2 * 4
  env.erase("p");
  // A name the environment lacks is an error at its position, never a value or a skip.
  try {
    eval_header_expr(*m.header.cost, env, "'cost'");
    FAIL("expected a ModelError");
  } catch (const ModelError& e) {
    CHECK(std::string(e.what()) == "h.coll:7:19: error: 'cost': 'p' is not defined here");
  }
}
