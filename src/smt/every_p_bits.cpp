// Bit operations as linear integer arithmetic (see every_p_bits.hpp).
#include "smt/every_p_bits.hpp"

#include <fmt/format.h>

#include "smt/every_p_terms.hpp"

namespace collv::everyp {

std::string bit_of(const std::string& x, int j) {
  return j == 0 ? fmt::format("(mod {} 2)", x) : fmt::format("(mod (div {} {}) 2)", x, 1LL << j);
}

std::string bit_lemma(const std::string& x, int j) {
  return fmt::format("(= (mod {} {}) (+ {} (* {} {})))", x, 1LL << (j + 1),
                     j == 0 ? std::string("0") : fmt::format("(mod {} {})", x, 1LL << j), 1LL << j,
                     bit_of(x, j));
}

std::string bit_lemmas(const std::string& x, int maxj) {
  std::string out = "true";
  for (int j = 0; j <= maxj && j <= 32; ++j) out = fmt::format("(and {} {})", out, bit_lemma(x, j));
  return out;
}

std::string bits_prefix_claim(const std::string& x, const std::string& zero,
                              const std::string& test, int k) {
  const long long w = 1LL << k;
  std::string first = fmt::format("(= {} (= (mod {} {}) 0))", zero, x, w);
  if (test.empty()) return first;
  return fmt::format(
      "(and {} (= (and {} {}) (= (mod {} {}) {})) (= (and {} (not {})) (= (mod {} {}) 0)))", first,
      zero, test, x, 2 * w, w, zero, test, x, 2 * w);
}

std::string halvings(const std::string& x, int b) {
  std::string t = x;
  for (int i = 0; i < b; ++i) t = fmt::format("(div {} 2)", t);
  return t;
}

std::string bits_shift_hyp(const std::string& x, const std::string& y, int k) {
  return fmt::format("(and (= {} (- {} {})) (= (mod {} {}) {}))", y, x, 1LL << k, x, 1LL << (k + 1),
                     1LL << k);
}

std::string bits_shift_claim(const std::string& x, const std::string& y, int k) {
  std::string c = fmt::format("(= {} {})", halvings(y, k + 1), halvings(x, k + 1));
  for (int b = 0; b <= k; ++b)
    c += fmt::format(" (= (mod {} 2) 0) (= (mod {} 2) {})", halvings(y, b), halvings(x, b),
                     b == k ? 1 : 0);
  return "(and " + c + ")";
}

std::string bits_shift_lemma(const std::string& x, const std::string& y, int k) {
  return fmt::format("(=> {} {})", bits_shift_hyp(x, y, k), bits_shift_claim(x, y, k));
}

std::string bits_range_lemma(const std::string& x) {
  std::string c;
  for (int b = 0; b <= 32; ++b)
    c += fmt::format("{}(=> (and (<= 0 {}) (< {} {})) (= {} 0))", b ? " " : "", x, x, 1LL << b,
                     halvings(x, b));
  return "(and " + c + ")";
}

std::optional<std::string> bitop_numeral(Op op, const std::string& x, long long c) {
  if (op != Op::BitAnd && op != Op::BitOr && op != Op::BitXor) return std::nullopt;
  if (c < 0 || c > kBitsMaxNumeral) return std::nullopt;
  // AND: sum of 2^j * bit j over c's set bits; OR: x plus 2^j for each set bit j of c that is
  // clear in x; XOR: x plus 2^j where bit j is clear, minus 2^j where it is set.
  std::string out = op == Op::BitAnd ? "0" : x;
  for (int j = 0; j <= 32; ++j) {
    if (((c >> j) & 1) == 0) continue;
    std::string b = bit_of(x, j), w = num(1LL << j);
    if (op == Op::BitAnd)
      out = add(out, mul(w, b));
    else if (op == Op::BitOr)
      out = add(out, mul(w, sub("1", b)));
    else
      out = add(out, mul(w, sub("1", mul("2", b))));
  }
  return out;
}

std::optional<long long> bitop_fold(Op op, long long x, long long y) {
  if (op == Op::BitAnd) return x & y;
  if (op == Op::BitOr) return x | y;
  if (op == Op::BitXor) return x ^ y;
  return std::nullopt;
}

}  // namespace collv::everyp
