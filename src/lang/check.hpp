// Static checks of a parsed model: names, variable slots and types (docs/language.md, "Types"),
// and, for a given topology, whether every environment name the model uses exists there.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "lang/ast.hpp"
#include "topology/topology.hpp"

namespace collv {

// Resolves names to slots and infers types; throws ModelError at the first problem.
// parse_model() calls it, so a Model in hand has passed it.
void check_model(Model& m);

// The values of the environment names on `t` (p, d where p is a power of two, n, rows, cols).
std::map<std::string, std::int64_t> topology_env(const Topology& t);

// Throws ModelError at the first use of an environment name (or function) that `t` does not have.
void check_names_on(const Model& m, const Topology& t);

// Evaluates a header expression (requires, steps, cost) with real arithmetic. Returns nullopt if it
// names something `env` does not define.
std::optional<double> eval_header_expr(const Expr& e, const std::map<std::string, double>& env);

}  // namespace collv
