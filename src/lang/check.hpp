// Static checks of a parsed model: names, variable slots and types (docs/language.md, "Types"),
// and, for a given topology, whether every environment name the model uses exists there.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "lang/ast.hpp"
#include "topology/topology.hpp"
#include "util/bigint.hpp"

namespace collv {

// Resolves names to slots and infers types; throws ModelError at the first problem.
// parse_model() calls it, so a Model in hand has passed it.
void check_model(Model& m);

// The values of the environment names on `t` (p, d where p is a power of two, n, rows, cols).
std::map<std::string, std::int64_t> topology_env(const Topology& t);

// Throws ModelError at the first use of an environment name (or function) that `t` does not have.
void check_names_on(const Model& m, const Topology& t);

// Why name `n` (an environment name) is not defined on t, or "" if it is.
std::string undefined_on(const std::string& n, const Topology& t);

// A header formula's value: exact (a rational) unless it went through log2 or sqrt of a number
// that is not a power of two or a square, or a fractional power; `approx` is always the nearest
// double (finite: values are bounded by 2^1000).
struct HeaderNumber {
  bool exact = true;
  Rational value;  // when exact
  double approx = 0;
};

// Evaluates a header formula (requires, steps, cost, elements) exactly (docs/language.md, "Header
// formulas"); `and`, `or` and `if C then A else B` evaluate only the operands that decide. Throws
// ModelError at the position of a name `env` lacks (t, if given, says why it lacks it) or of an
// operation that is undefined there (log2(0), division by zero, ...) or whose value is too large
// (beyond 2^1000); the message starts with `what` (e.g. "'steps' on ring:6").
HeaderNumber eval_header_exact(const Expr& e, const std::map<std::string, double>& env,
                               const std::string& what, const Topology* t = nullptr);
// The same, as the nearest double.
double eval_header_expr(const Expr& e, const std::map<std::string, double>& env,
                        const std::string& what, const Topology* t = nullptr);

// A `cost` claim: the formula's value at ts = 1, tw = 0 (the coefficient of ts) and at ts = 0,
// tw = 1 (of tw*m), with m and the header names from the environment. A part that names neither
// ts nor tw counts in both.
struct CostClaim {
  HeaderNumber ts, tw;
};

// The values of a model's header formulas computed so far, by formula, environment and `what`: a
// formula is evaluated once per model and size, not once per run (a `cost` summing 10^6 terms
// took 1.6 s, and a verify sweep makes thousands of runs). Shared by the runs of one model.
struct HeaderMemo {
  std::mutex mu;
  std::map<std::string, HeaderNumber> values;
  std::map<std::string, CostClaim> costs;
  std::uint64_t evaluations = 0;  // formulas evaluated (not found here): values and costs
};

// eval_header_exact through h's memo (h.memo null: evaluated each time). e is one of h's formulas
// or a part of one. Errors are not kept: they are thrown again by each call.
HeaderNumber header_value(const ModelHeader& h, const Expr& e,
                          const std::map<std::string, double>& env, const std::string& what,
                          const Topology* t = nullptr);

// A `cost` formula's claim through h's memo, from one evaluation: the loader has checked that
// the formula uses ts and tw linearly only (docs/language.md), so it is evaluated once as
// c + a*ts + b*tw (its parts without ts and tw once), not once for ts and again for tw. env
// holds m and the header names, not ts and tw.
CostClaim header_cost(const ModelHeader& h, const Expr& e, const std::map<std::string, double>& env,
                      const std::string& what, const Topology* t = nullptr);

// Where the expression's text starts (an operator node's own position is its operator's).
const SourceLoc& expr_start(const Expr& e);

// The expression as it could be written in a model (with the parentheses precedence needs).
std::string expr_to_string(const Expr& e);

// s with control bytes, DEL and malformed UTF-8 escaped as \xNN: input text that is safe to echo
// in an error message.
std::string printable(const std::string& s);

}  // namespace collv
