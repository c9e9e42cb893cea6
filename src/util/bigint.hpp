// Exact integers and rationals of bounded size, for header formulas (docs/language.md, "Header
// formulas"): `2^70 mod 3` is 1, not the 0 that double arithmetic gives. Sizes are bounded by the
// caller (HeaderEval refuses values beyond kMaxExactBits), so every operation is fast.
//
//   collv::BigInt a = collv::BigInt::pow(collv::BigInt(2), 70);
//   collv::BigInt q, r;
//   collv::BigInt::divmod(a, collv::BigInt(3), q, r);  // r == 1
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace collv {

class BigInt {
 public:
  BigInt() = default;
  BigInt(std::int64_t v);  // NOLINT: implicit, as for a built-in integer
  static BigInt from_u64(std::uint64_t v);

  bool is_zero() const { return mag_.empty(); }
  bool negative() const { return neg_; }
  int sign() const { return mag_.empty() ? 0 : neg_ ? -1 : 1; }
  // Bits of |x| (0 for 0).
  std::uint64_t bits() const;
  std::size_t limbs() const { return mag_.size(); }
  bool is_power_of_two() const;  // |x| = 2^k, k >= 0
  bool is_odd() const { return !mag_.empty() && (mag_[0] & 1); }

  std::optional<std::int64_t> to_i64() const;
  // The nearest double (for |x| < 2^1023; larger is +-inf), and x / 2^shift as a double.
  double to_double() const;
  // log2(|x|) for x != 0, accurate to double precision whatever the size.
  double log2_abs() const;
  std::string str() const;  // decimal

  BigInt operator-() const;
  BigInt abs() const;
  friend BigInt operator+(const BigInt& a, const BigInt& b);
  friend BigInt operator-(const BigInt& a, const BigInt& b);
  friend BigInt operator*(const BigInt& a, const BigInt& b);
  BigInt shl(std::uint64_t k) const;  // x * 2^k
  BigInt shr(std::uint64_t k) const;  // |x| / 2^k truncated, sign kept
  // Truncated division (q rounds toward zero, r has a's sign); b != 0.
  static void divmod(const BigInt& a, const BigInt& b, BigInt& q, BigInt& r);
  // Floor division and the matching remainder (r has b's sign); b != 0.
  static void floor_divmod(const BigInt& a, const BigInt& b, BigInt& q, BigInt& r);
  static BigInt gcd(BigInt a, BigInt b);
  static int cmp(const BigInt& a, const BigInt& b);
  static int cmp_abs(const BigInt& a, const BigInt& b);
  // floor(sqrt(x)) for x >= 0.
  static BigInt isqrt(const BigInt& x);

  friend bool operator==(const BigInt& a, const BigInt& b) { return cmp(a, b) == 0; }
  friend bool operator!=(const BigInt& a, const BigInt& b) { return cmp(a, b) != 0; }
  friend bool operator<(const BigInt& a, const BigInt& b) { return cmp(a, b) < 0; }

 private:
  void trim();
  static std::vector<std::uint32_t> add_mag(const std::vector<std::uint32_t>& a,
                                            const std::vector<std::uint32_t>& b);
  // a - b for |a| >= |b|.
  static std::vector<std::uint32_t> sub_mag(const std::vector<std::uint32_t>& a,
                                            const std::vector<std::uint32_t>& b);
  static int cmp_mag(const std::vector<std::uint32_t>& a, const std::vector<std::uint32_t>& b);
  static void divmod_mag(const std::vector<std::uint32_t>& a, const std::vector<std::uint32_t>& b,
                         std::vector<std::uint32_t>& q, std::vector<std::uint32_t>& r);
  bool neg_ = false;
  std::vector<std::uint32_t> mag_;  // little-endian limbs, no leading zero limb; 0 = empty
};

// A rational number num/den in lowest terms, den > 0.
struct Rational {
  BigInt num{0}, den{1};
  Rational() = default;
  Rational(BigInt n) : num(std::move(n)) {}  // NOLINT: implicit, as for an integer
  // n/d reduced; d != 0.
  static Rational make(BigInt n, BigInt d);
  bool is_integer() const { return den == BigInt(1); }
  double to_double() const;
  BigInt floor() const;
  BigInt ceil() const;
  std::uint64_t bits() const { return std::max(num.bits(), den.bits()); }
  std::string str() const;  // "7", "-7/2"
  friend Rational operator+(const Rational& a, const Rational& b);
  friend Rational operator-(const Rational& a, const Rational& b);
  friend Rational operator*(const Rational& a, const Rational& b);
  // a / b; b != 0.
  friend Rational operator/(const Rational& a, const Rational& b);
  static int cmp(const Rational& a, const Rational& b);
};

}  // namespace collv
