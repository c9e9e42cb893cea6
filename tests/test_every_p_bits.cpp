// The every-p prover's bit operations as linear integer arithmetic (smt/every_p_bits.hpp): each
// term, for numeral operands, is what the executor's AND, OR and XOR compute (Z3 checks one
// conjunction of the equalities, and finds a wrong expected value); a bit operation with no numeral
// operand is refused.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include "smt/every_p_bits.hpp"
#include "smt/solver.hpp"

using namespace collv;
using namespace collv::everyp;

namespace {

std::string num_smt(long long v) { return v < 0 ? fmt::format("(- {})", -v) : std::to_string(v); }

// The answer to: some of the equalities term(x, c) = expected fails.
smt::Answer check(bool off_by_one) {
  const long long xs[] = {
      0, 1, 5, 6, 12, 255, 1023, 2147483647, 2147483648LL, -1, -6, -2147483648LL};
  const long long cs[] = {1, 2, 8, 5, 12, 1LL << 30, 1LL << 31, 1LL << 32};
  std::string all = "true";
  int n = 0;
  for (Op op : {Op::BitAnd, Op::BitOr, Op::BitXor})
    for (long long x : xs)
      for (long long c : cs) {
        auto t = bitop_numeral(op, "x" + std::to_string(n), c);
        REQUIRE(t);
        long long want = *bitop_fold(op, x, c);
        if (off_by_one && n == 40) ++want;
        all = fmt::format("(and {} (let ((x{} {})) (= {} {})))", all, n, num_smt(x), *t,
                          num_smt(want));
        ++n;
      }
  return smt::run_smt2_script(fmt::format("(assert (not {}))\n(check-sat)\n", all), 60000, 1 << 24)
      .answer;
}

}  // namespace

TEST_CASE("every-p bits: AND OR XOR with a numeral are linear terms equal to the executor's",
          "[every-p][every-p-bits]") {
  CHECK(bit_of("r", 0) == "(mod r 2)");
  CHECK(bit_of("r", 3) == "(mod (div r 8) 2)");
  CHECK(*bitop_numeral(Op::BitAnd, "r", 8) == "(* 8 (mod (div r 8) 2))");
  CHECK(check(false) == smt::Answer::Unsat);
  // The check can fail: one expected value off by one is found.
  CHECK(check(true) == smt::Answer::Sat);
  // Outside the encoding: another operator, a negative or too large numeral.
  CHECK_FALSE(bitop_numeral(Op::Add, "r", 8));
  CHECK_FALSE(bitop_numeral(Op::BitAnd, "r", -1));
  CHECK_FALSE(bitop_numeral(Op::BitAnd, "r", (1LL << 32) + 1));
}

TEST_CASE("every-p bits: the bits lemma holds for every integer and fails when misstated",
          "[every-p][every-p-bits]") {
  auto ask = [](const std::string& lemma) {
    return smt::run_smt2_script(
               fmt::format("(declare-const x Int)\n(assert (not {}))\n(check-sat)\n", lemma), 60000,
               1 << 24)
        .answer;
  };
  for (int j = 0; j <= 32; ++j) CHECK(ask(bit_lemma("x", j)) == smt::Answer::Unsat);
  // Misstated (bit j weighted 2^(j+1)): found.
  std::string bad = bit_lemmas("x", 4);
  auto at = bad.find("(* 8 ");
  REQUIRE(at != std::string::npos);
  bad.replace(at, 5, "(* 16 ");
  CHECK(ask(bad) == smt::Answer::Sat);
}

TEST_CASE(
    "every-p bits: the prefix claim (bits 0 .. k - 1 clear iff x mod 2^k = 0) holds for the "
    "tree's tests and fails on tests of the wrong bits",
    "[every-p][every-p-bits]") {
  // The tests as the tree's receive loop writes them, `(x AND 2^j) <> 0`, with the mask of
  // iteration j shifted by `shift` bits; the claim at k, assuming bit_lemmas(x, k + shift).
  auto ask = [](int k, int shift, bool with_test) {
    std::string zero = "true", test;
    for (int j = 0; j <= k; ++j) {
      std::string t =
          fmt::format("(not (= {} 0))", *bitop_numeral(Op::BitAnd, "x", 1LL << (j + shift)));
      if (j == k)
        test = t;
      else
        zero = fmt::format("(and {} (not {}))", zero, t);
    }
    std::string claim = bits_prefix_claim("x", zero, with_test ? test : "", k);
    return smt::run_smt2_script(
               fmt::format("(declare-const x Int)\n(assert {})\n(assert (not {}))\n(check-sat)\n",
                           bit_lemmas("x", k + shift), claim),
               60000, 1 << 24)
        .answer;
  };
  for (int k : {0, 1, 5, 13, 31})
    for (bool t : {true, false}) CHECK(ask(k, 0, t) == smt::Answer::Unsat);
  // Tests of bits 1 .. k + 1 (a mask starting at 2): the claim fails (at k = 0 without the test
  // it is (mod x 1) = 0, true for every x).
  CHECK(ask(0, 1, true) == smt::Answer::Sat);
  for (int k : {5, 13})
    for (bool t : {true, false}) CHECK(ask(k, 1, t) == smt::Answer::Sat);
}

TEST_CASE(
    "every-p bits: the shift and range lemmas of a round term over the sender hold and fail when "
    "misstated",
    "[every-p][every-p-bits]") {
  auto ask = [](const std::string& decls, const std::string& claim) {
    return smt::run_smt2_script(fmt::format("{}(assert (not {}))\n(check-sat)\n", decls, claim),
                                60000, 1 << 24)
        .answer;
  };
  CHECK(halvings("x", 0) == "x");
  CHECK(halvings("x", 2) == "(div (div x 2) 2)");
  // The lemma for every x, y of its hypothesis, and in the q form its certificate states.
  for (int k : {0, 3, 17, 30}) {
    CHECK(ask("(declare-const x Int)\n(declare-const y Int)\n", bits_shift_lemma("x", "y", k)) ==
          smt::Answer::Unsat);
    const std::string x = fmt::format("(+ (* {} q) {})", 1LL << (k + 1), 1LL << k);
    const std::string y = fmt::format("(* {} q)", 1LL << (k + 1));
    CHECK(ask("(declare-const q Int)\n", bits_shift_claim(x, y, k)) == smt::Answer::Unsat);
  }
  // Misstated: y one bit too low (x - 2^(k-1)), or x's lowest bit one higher: found.
  CHECK(ask("(declare-const q Int)\n", bits_shift_claim("(+ (* 64 q) 32)", "(+ (* 64 q) 16)", 5)) ==
        smt::Answer::Sat);
  CHECK(ask("(declare-const q Int)\n", bits_shift_claim("(+ (* 64 q) 32)", "(* 64 q)", 4)) ==
        smt::Answer::Sat);
  CHECK(ask("(declare-const x Int)\n", bits_range_lemma("x")) == smt::Answer::Unsat);
  std::string bad = bits_range_lemma("x");
  auto at = bad.find("(< x 8)");
  REQUIRE(at != std::string::npos);
  bad.replace(at, 7, "(< x 9)");
  CHECK(ask("(declare-const x Int)\n", bad) == smt::Answer::Sat);
}
