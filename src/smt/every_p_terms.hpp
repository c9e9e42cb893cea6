// SMT-LIB2 integer terms for the every-p prover (smt/every_p.hpp): arithmetic with constant
// folding, and the checked reading of the terms a proof file writes.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>

namespace collv::everyp {

std::optional<long long> as_int(const std::string& t);
std::string num(long long v);  // SMT-LIB2 spelling: 5, (- 5)
std::string add(const std::string& a, const std::string& b);
std::string sub(const std::string& a, const std::string& b);
std::string mul(const std::string& a, const std::string& b);
std::string op2(const char* op, const std::string& a, const std::string& b);
std::string ite(const std::string& c, const std::string& a, const std::string& b);

// Checks a proof file's term: balanced parentheses, one term, atoms that are integer literals,
// the names in `vars` or the operators the invariant language allows (+ - * div mod abs ite and or
// not = < <= > >= => distinct it sm ss none). Returns "" or why it is refused. A term can therefore
// not close the definition it is written into or name anything but what the prover binds.
std::string check_user_term(const std::string& t, const std::set<std::string>& vars);

// Replaces whole identifiers of a checked term.
std::string rename(const std::string& t, const std::map<std::string, std::string>& ren);

}  // namespace collv::everyp
