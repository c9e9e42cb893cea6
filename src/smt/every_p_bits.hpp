// Bit operations of the every-p prover as linear integer arithmetic (docs/smt.md, "Every p from
// the model", binomial trees). A bit operation whose other operand is a numeral c >= 0 (a doubling
// mask once its loop is unrolled: p < 2^31, so the mask takes the values 2^0 .. 2^31 only) is
// written with div and mod by numerals, which Z3 decides as linear integer arithmetic; a query
// never mixes Int with bit-vectors (docs/smt.md, "XOR partners: encoding experiments": those
// mixes and div/mod by a symbolic 2^k were the slow encodings).
//
//   bit_of("r", 3)                   -> "(mod (div r 8) 2)"   bit 3 of r (0 or 1)
//   bitop_numeral(Op::BitAnd, "r", 8) -> "(* 8 (mod (div r 8) 2))"
//   bitop_numeral(Op::BitXor, "r", 8) -> r + 8 - 16 * bit 3 of r
//
// Exact for every integer x, negative ones too, read as infinite two's complement (the executor's
// 64-bit AND, OR, XOR agree for |x| < 2^62): SMT-LIB's div by a positive numeral rounds down and
// its mod is in 0 .. d - 1, so (mod (div x 2^j) 2) is bit j of x's two's complement.
#pragma once

#include <optional>
#include <string>

#include "lang/ast.hpp"

namespace collv::everyp {

// Ranks are 32-bit: numerals of bit operations are at most this (2^32: a mask doubled past p).
inline constexpr long long kBitsMaxNumeral = 1LL << 32;

// Bit j (0 <= j <= 32) of x as an Int term in {0, 1}.
std::string bit_of(const std::string& x, int j);

// The bits lemma's instance for x, j = 0 .. maxj: (mod x 2^(j+1)) = (mod x 2^j) + 2^j * bit j of
// x. Valid for every integer x (`bits-lemma-j`, one query per j with x free, proves it; Z3 answers
// each in milliseconds, all 33 as one conjunction not in 10 s). Z3 does not relate the bits of one
// value by itself: a query that tests bits 0..k of a rank and of its parent took 6 s to over 60 s
// at k = 11..14 without these instances and 0.2-1.4 s with them (the binomial tree's match queries;
// a chain of div by 2 was no better).
std::string bit_lemmas(const std::string& x, int maxj);
// One instance, for bit j (0 <= j <= 32).
std::string bit_lemma(const std::string& x, int j);

// The prefix form of a binomial tree's receive loop (every_p_tree.cpp): `zero` is the conjunction
// of the negated bit tests of iterations 0 .. k - 1 and `test` iteration k's (over the free name
// x); the claim, for every integer x: zero iff (mod x 2^k) = 0, zero and test iff (mod x 2^(k+1))
// = 2^k, zero and not test iff (mod x 2^(k+1)) = 0. Valid when iteration j's test is bit j of x
// (`bits-prefix-kK` proves it, assuming bit_lemmas(x, k): 0.02 s each where the claim alone took
// 20-40 s or timed out at k >= 13). `test` empty: the first equivalence only.
std::string bits_prefix_claim(const std::string& x, const std::string& zero,
                              const std::string& test, int k);

// A round term over the sender (Open MPI's scatter: the sum of b + 1 over the relative rank's set
// bits b) read at a receive compares the bits of two ranks' values, x at the receiver and y at
// its source; Z3 does not relate the bits of two numbers by itself (a query with 31 bits of each
// gave no answer in 60 s). The bits are then written as a chain of halvings, halvings(x, b) =
// (div (div x 2) ... 2), b deep, bit b = (mod (halvings x b) 2), and the queries assume instances
// of two lemmas, each proved for all integers (Z3: milliseconds each):
//   bits_shift_lemma(x, y, k): y = x - 2^k and (mod x 2^(k+1)) = 2^k (x's lowest set bit is k)
//     imply halvings(y, k + 1) = halvings(x, k + 1) (so every higher halving, and bit, is equal
//     by congruence), bits 0 .. k of y are 0, bits 0 .. k - 1 of x are 0 and bit k is 1;
//   bits_range_lemma(x): 0 <= x < 2^b implies halvings(x, b) = 0, for b = 0 .. 32.
std::string halvings(const std::string& x, int b);
std::string bits_shift_lemma(const std::string& x, const std::string& y, int k);
// Its hypothesis and its claim. The lemma's certificate (`bits-shift-kK`) states the claim for
// x = 2^(k+1) q + 2^k and y = 2^(k+1) q, q a free integer: exactly the pairs of the hypothesis,
// in a form Z3's rewriter makes linear (milliseconds; the implication over free x and y gave no
// answer in 10 s for k = 20 under check-sat-assuming, which skips the preprocessing that
// solves the equations).
std::string bits_shift_hyp(const std::string& x, const std::string& y, int k);
std::string bits_shift_claim(const std::string& x, const std::string& y, int k);
std::string bits_range_lemma(const std::string& x);

// x OP c for OP in BitAnd, BitOr, BitXor and a numeral 0 <= c <= kBitsMaxNumeral, as a linear
// Int term (a sum over c's set bits). nullopt for another OP or c outside that range.
std::optional<std::string> bitop_numeral(Op op, const std::string& x, long long c);

// x OP y for two numerals (constant folding), nullopt for another OP.
std::optional<long long> bitop_fold(Op op, long long x, long long y);

}  // namespace collv::everyp
