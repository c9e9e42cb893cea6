// SMT-LIB2 integer terms for the every-p prover (see every_p_terms.hpp).
#include "smt/every_p_terms.hpp"

#include <cctype>
#include <vector>

#include <fmt/format.h>

namespace collv::everyp {

std::optional<long long> as_int(const std::string& t) {
  if (t.empty()) return std::nullopt;
  std::string s = t;
  bool neg = false;
  if (s.rfind("(- ", 0) == 0 && s.back() == ')') {
    s = s.substr(3, s.size() - 4);
    neg = true;
  }
  if (s.empty() || s.size() > 17) return std::nullopt;
  for (char c : s)
    if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
  long long v = std::stoll(s);
  return neg ? -v : v;
}

std::string num(long long v) { return v < 0 ? fmt::format("(- {})", -v) : std::to_string(v); }

namespace {
constexpr long long kFold = 1LL << 40;  // fold only small constants (no overflow)
bool small(std::optional<long long> v) { return v && *v > -kFold && *v < kFold; }
}  // namespace

std::string add(const std::string& a, const std::string& b) {
  auto x = as_int(a), y = as_int(b);
  if (small(x) && small(y)) return num(*x + *y);
  if (x && *x == 0) return b;
  if (y && *y == 0) return a;
  return fmt::format("(+ {} {})", a, b);
}

std::string sub(const std::string& a, const std::string& b) {
  auto x = as_int(a), y = as_int(b);
  if (small(x) && small(y)) return num(*x - *y);
  if (y && *y == 0) return a;
  return fmt::format("(- {} {})", a, b);
}

std::string mul(const std::string& a, const std::string& b) {
  auto x = as_int(a), y = as_int(b);
  // Both small and the product too (|x * y| < 2^40: a doubling mask times 2 folds up to 2^32).
  if (small(x) && small(y) &&
      (*x == 0 || (*y > -kFold / (*x < 0 ? -*x : *x) && *y < kFold / (*x < 0 ? -*x : *x))))
    return num(*x * *y);
  if ((x && *x == 0) || (y && *y == 0)) return "0";
  if (x && *x == 1) return b;
  if (y && *y == 1) return a;
  return fmt::format("(* {} {})", a, b);
}

std::string op2(const char* op, const std::string& a, const std::string& b) {
  return fmt::format("({} {} {})", op, a, b);
}

std::string ite(const std::string& c, const std::string& a, const std::string& b) {
  if (c == "true") return a;
  if (c == "false" || a == b) return b;
  return fmt::format("(ite {} {} {})", c, a, b);
}

namespace {
std::vector<std::string> tokens(const std::string& t, std::string* bad) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < t.size()) {
    char c = t[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
    } else if (c == '(' || c == ')') {
      out.emplace_back(1, c);
      ++i;
    } else {
      std::size_t j = i;
      while (j < t.size() && !std::isspace(static_cast<unsigned char>(t[j])) && t[j] != '(' &&
             t[j] != ')')
        ++j;
      out.push_back(t.substr(i, j - i));
      i = j;
    }
  }
  (void)bad;
  return out;
}

bool is_name(const std::string& a) {
  if (a.empty() || !(std::isalpha(static_cast<unsigned char>(a[0])) || a[0] == '_')) return false;
  for (char c : a)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  return true;
}
}  // namespace

std::string check_user_term(const std::string& t, const std::set<std::string>& vars) {
  static const std::set<std::string> ops = {
      "+",   "-",    "*",    "div",   "mod",  "abs",   "ite", "and",      "or",
      "not", "=",    "<",    "<=",    ">",    ">=",    "=>",  "distinct", "it",
      "sm",  "none", "true", "false", "pow2", "clog2", "ss"};
  std::string bad;
  auto ts = tokens(t, &bad);
  if (ts.empty()) return "an empty term";
  int depth = 0;
  std::size_t closed_at = 0;
  for (std::size_t k = 0; k < ts.size(); ++k) {
    const auto& a = ts[k];
    if (a == "(") {
      if (depth == 0 && k > 0) return "more than one term";
      ++depth;
    } else if (a == ")") {
      if (--depth < 0) return "a ')' without its '('";
      if (depth == 0) closed_at = k;
    } else {
      if (depth == 0 && ts.size() > 1) return "more than one term";
      bool digits = !a.empty();
      for (char c : a) digits = digits && std::isdigit(static_cast<unsigned char>(c));
      if (digits && a.size() <= 18) continue;
      if (ops.count(a) || (is_name(a) && vars.count(a))) continue;
      return fmt::format(
          "'{}' is not a number, an operator of the invariant language or one of "
          "the names the prover binds",
          a.substr(0, 40));
    }
  }
  if (depth != 0) return "unbalanced parentheses";
  if (ts[0] == "(" && closed_at + 1 != ts.size()) return "more than one term";
  return "";
}

std::string rename(const std::string& t, const std::map<std::string, std::string>& ren) {
  std::string out;
  std::size_t i = 0;
  auto ident = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  while (i < t.size()) {
    if (ident(t[i])) {
      std::size_t j = i;
      while (j < t.size() && ident(t[j])) ++j;
      std::string id = t.substr(i, j - i);
      auto f = ren.find(id);
      out += f == ren.end() ? id : f->second;
      i = j;
    } else {
      out += t[i++];
    }
  }
  return out;
}

}  // namespace collv::everyp
