// Exact integers and rationals of bounded size (see bigint.hpp).
#include "util/bigint.hpp"

#include <algorithm>
#include <cmath>

namespace collv {

using Mag = std::vector<std::uint32_t>;

BigInt::BigInt(std::int64_t v) {
  neg_ = v < 0;
  // |v| as unsigned: well defined for INT64_MIN too.
  std::uint64_t u = neg_ ? 0 - static_cast<std::uint64_t>(v) : static_cast<std::uint64_t>(v);
  while (u) {
    mag_.push_back(static_cast<std::uint32_t>(u));
    u >>= 32;
  }
}

BigInt BigInt::from_u64(std::uint64_t v) {
  BigInt r;
  while (v) {
    r.mag_.push_back(static_cast<std::uint32_t>(v));
    v >>= 32;
  }
  return r;
}

void BigInt::trim() {
  while (!mag_.empty() && mag_.back() == 0) mag_.pop_back();
  if (mag_.empty()) neg_ = false;
}

std::uint64_t BigInt::bits() const {
  if (mag_.empty()) return 0;
  return 32 * (mag_.size() - 1) + (32 - static_cast<std::uint64_t>(__builtin_clz(mag_.back())));
}

bool BigInt::is_power_of_two() const {
  if (mag_.empty()) return false;
  for (std::size_t i = 0; i + 1 < mag_.size(); ++i)
    if (mag_[i]) return false;
  return (mag_.back() & (mag_.back() - 1)) == 0;
}

std::optional<std::int64_t> BigInt::to_i64() const {
  if (mag_.size() > 2) return std::nullopt;
  std::uint64_t u = 0;
  for (std::size_t i = mag_.size(); i-- > 0;) u = (u << 32) | mag_[i];
  if (!neg_) {
    if (u > static_cast<std::uint64_t>(INT64_MAX)) return std::nullopt;
    return static_cast<std::int64_t>(u);
  }
  if (u > static_cast<std::uint64_t>(INT64_MAX) + 1) return std::nullopt;
  return static_cast<std::int64_t>(0 - u);
}

double BigInt::to_double() const {
  double r = 0;
  for (std::size_t i = mag_.size(); i-- > 0;) r = r * 4294967296.0 + mag_[i];
  return neg_ ? -r : r;
}

double BigInt::log2_abs() const {
  std::uint64_t b = bits();
  if (b <= 64) return std::log2(std::fabs(to_double()));
  // The top 64 bits carry all a double can hold.
  return std::log2(shr(b - 64).abs().to_double()) + static_cast<double>(b - 64);
}

std::string BigInt::str() const {
  if (mag_.empty()) return "0";
  std::string digits;
  Mag cur = mag_;
  while (!cur.empty()) {
    std::uint64_t rem = 0;
    for (std::size_t i = cur.size(); i-- > 0;) {
      std::uint64_t x = (rem << 32) | cur[i];
      cur[i] = static_cast<std::uint32_t>(x / 1000000000u);
      rem = x % 1000000000u;
    }
    while (!cur.empty() && cur.back() == 0) cur.pop_back();
    for (int k = 0; k < 9; ++k) {
      digits.push_back(static_cast<char>('0' + rem % 10));
      rem /= 10;
      if (cur.empty() && rem == 0) break;
    }
  }
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  if (neg_) digits.push_back('-');
  std::reverse(digits.begin(), digits.end());
  return digits;
}

BigInt BigInt::operator-() const {
  BigInt r = *this;
  if (!r.mag_.empty()) r.neg_ = !r.neg_;
  return r;
}

BigInt BigInt::abs() const {
  BigInt r = *this;
  r.neg_ = false;
  return r;
}

int BigInt::cmp_mag(const Mag& a, const Mag& b) {
  if (a.size() != b.size()) return a.size() < b.size() ? -1 : 1;
  for (std::size_t i = a.size(); i-- > 0;)
    if (a[i] != b[i]) return a[i] < b[i] ? -1 : 1;
  return 0;
}

Mag BigInt::add_mag(const Mag& a, const Mag& b) {
  const Mag& x = a.size() >= b.size() ? a : b;
  const Mag& y = a.size() >= b.size() ? b : a;
  Mag r(x.size() + 1);
  std::uint64_t carry = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    std::uint64_t s = carry + x[i] + (i < y.size() ? y[i] : 0);
    r[i] = static_cast<std::uint32_t>(s);
    carry = s >> 32;
  }
  r[x.size()] = static_cast<std::uint32_t>(carry);
  while (!r.empty() && r.back() == 0) r.pop_back();
  return r;
}

Mag BigInt::sub_mag(const Mag& a, const Mag& b) {
  Mag r(a.size());
  std::int64_t borrow = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    std::int64_t d = static_cast<std::int64_t>(a[i]) - (i < b.size() ? b[i] : 0) - borrow;
    borrow = d < 0;
    if (d < 0) d += std::int64_t{1} << 32;
    r[i] = static_cast<std::uint32_t>(d);
  }
  while (!r.empty() && r.back() == 0) r.pop_back();
  return r;
}

int BigInt::cmp_abs(const BigInt& a, const BigInt& b) { return cmp_mag(a.mag_, b.mag_); }

int BigInt::cmp(const BigInt& a, const BigInt& b) {
  if (a.sign() != b.sign()) return a.sign() < b.sign() ? -1 : 1;
  int c = cmp_mag(a.mag_, b.mag_);
  return a.neg_ ? -c : c;
}

BigInt operator+(const BigInt& a, const BigInt& b) {
  BigInt r;
  if (a.neg_ == b.neg_) {
    r.mag_ = BigInt::add_mag(a.mag_, b.mag_);
    r.neg_ = a.neg_;
  } else if (BigInt::cmp_mag(a.mag_, b.mag_) >= 0) {
    r.mag_ = BigInt::sub_mag(a.mag_, b.mag_);
    r.neg_ = a.neg_;
  } else {
    r.mag_ = BigInt::sub_mag(b.mag_, a.mag_);
    r.neg_ = b.neg_;
  }
  r.trim();
  return r;
}

BigInt operator-(const BigInt& a, const BigInt& b) { return a + (-b); }

BigInt operator*(const BigInt& a, const BigInt& b) {
  BigInt r;
  if (a.is_zero() || b.is_zero()) return r;
  r.mag_.assign(a.mag_.size() + b.mag_.size(), 0);
  for (std::size_t i = 0; i < a.mag_.size(); ++i) {
    std::uint64_t carry = 0;
    for (std::size_t j = 0; j < b.mag_.size(); ++j) {
      std::uint64_t t = static_cast<std::uint64_t>(a.mag_[i]) * b.mag_[j] + r.mag_[i + j] + carry;
      r.mag_[i + j] = static_cast<std::uint32_t>(t);
      carry = t >> 32;
    }
    r.mag_[i + b.mag_.size()] = static_cast<std::uint32_t>(carry);
  }
  r.neg_ = a.neg_ != b.neg_;
  r.trim();
  return r;
}

BigInt BigInt::shl(std::uint64_t k) const {
  if (is_zero()) return *this;
  BigInt r;
  std::size_t words = k / 32, sh = k % 32;
  r.mag_.assign(words, 0);
  std::uint32_t carry = 0;
  for (std::uint32_t w : mag_) {
    r.mag_.push_back(sh ? (w << sh) | carry : w);
    carry = sh ? w >> (32 - sh) : 0;
  }
  if (carry) r.mag_.push_back(carry);
  r.neg_ = neg_;
  r.trim();
  return r;
}

BigInt BigInt::shr(std::uint64_t k) const {
  BigInt r;
  std::size_t words = k / 32, sh = k % 32;
  if (words >= mag_.size()) return r;
  for (std::size_t i = words; i < mag_.size(); ++i) {
    std::uint32_t lo = mag_[i] >> sh;
    std::uint32_t hi = (sh && i + 1 < mag_.size()) ? mag_[i + 1] << (32 - sh) : 0;
    r.mag_.push_back(lo | hi);
  }
  r.neg_ = neg_;
  r.trim();
  return r;
}

// Knuth's algorithm D (TAOCP vol. 2, 4.3.1) on 32-bit limbs.
void BigInt::divmod_mag(const Mag& a, const Mag& b, Mag& q, Mag& r) {
  q.clear();
  r.clear();
  if (cmp_mag(a, b) < 0) {
    r = a;
    return;
  }
  if (b.size() == 1) {
    q.assign(a.size(), 0);
    std::uint64_t rem = 0;
    for (std::size_t i = a.size(); i-- > 0;) {
      std::uint64_t x = (rem << 32) | a[i];
      q[i] = static_cast<std::uint32_t>(x / b[0]);
      rem = x % b[0];
    }
    while (!q.empty() && q.back() == 0) q.pop_back();
    if (rem) r.push_back(static_cast<std::uint32_t>(rem));
    return;
  }
  const std::size_t n = b.size(), m = a.size() - b.size();
  const int s = __builtin_clz(b.back());
  // Normalize so that the divisor's top bit is set.
  Mag v(n), u(a.size() + 1);
  for (std::size_t i = n; i-- > 0;)
    v[i] =
        (b[i] << s) |
        (s && i > 0 ? static_cast<std::uint32_t>(static_cast<std::uint64_t>(b[i - 1]) >> (32 - s))
                    : 0);
  u[a.size()] =
      s ? static_cast<std::uint32_t>(static_cast<std::uint64_t>(a.back()) >> (32 - s)) : 0;
  for (std::size_t i = a.size(); i-- > 0;)
    u[i] =
        (a[i] << s) |
        (s && i > 0 ? static_cast<std::uint32_t>(static_cast<std::uint64_t>(a[i - 1]) >> (32 - s))
                    : 0);
  q.assign(m + 1, 0);
  const std::uint64_t base = std::uint64_t{1} << 32;
  for (std::size_t j = m + 1; j-- > 0;) {
    std::uint64_t num = (static_cast<std::uint64_t>(u[j + n]) << 32) | u[j + n - 1];
    std::uint64_t qhat = num / v[n - 1], rhat = num % v[n - 1];
    while (qhat >= base || qhat * v[n - 2] > ((rhat << 32) | u[j + n - 2])) {
      --qhat;
      rhat += v[n - 1];
      if (rhat >= base) break;
    }
    // u[j .. j+n] -= qhat * v
    std::int64_t borrow = 0;
    std::uint64_t carry = 0;
    for (std::size_t i = 0; i < n; ++i) {
      std::uint64_t p = qhat * v[i] + carry;
      carry = p >> 32;
      std::int64_t t =
          static_cast<std::int64_t>(u[i + j]) - borrow - static_cast<std::int64_t>(p & 0xFFFFFFFFu);
      u[i + j] = static_cast<std::uint32_t>(t);
      borrow = t < 0;
    }
    std::int64_t t =
        static_cast<std::int64_t>(u[j + n]) - borrow - static_cast<std::int64_t>(carry);
    u[j + n] = static_cast<std::uint32_t>(t);
    if (t < 0) {  // qhat was one too large: add v back
      --qhat;
      std::uint64_t c = 0;
      for (std::size_t i = 0; i < n; ++i) {
        std::uint64_t sum = static_cast<std::uint64_t>(u[i + j]) + v[i] + c;
        u[i + j] = static_cast<std::uint32_t>(sum);
        c = sum >> 32;
      }
      u[j + n] = static_cast<std::uint32_t>(u[j + n] + c);
    }
    q[j] = static_cast<std::uint32_t>(qhat);
  }
  while (!q.empty() && q.back() == 0) q.pop_back();
  // Unnormalize the remainder.
  r.assign(n, 0);
  for (std::size_t i = 0; i < n; ++i)
    r[i] = (u[i] >> s) |
           (s ? static_cast<std::uint32_t>(static_cast<std::uint64_t>(u[i + 1]) << (32 - s)) : 0);
  while (!r.empty() && r.back() == 0) r.pop_back();
}

void BigInt::divmod(const BigInt& a, const BigInt& b, BigInt& q, BigInt& r) {
  BigInt qq, rr;
  divmod_mag(a.mag_, b.mag_, qq.mag_, rr.mag_);
  qq.neg_ = a.neg_ != b.neg_;
  rr.neg_ = a.neg_;
  qq.trim();
  rr.trim();
  q = std::move(qq);
  r = std::move(rr);
}

void BigInt::floor_divmod(const BigInt& a, const BigInt& b, BigInt& q, BigInt& r) {
  divmod(a, b, q, r);
  if (!r.is_zero() && r.negative() != b.negative()) {
    q = q - BigInt(1);
    r = r + b;
  }
}

BigInt BigInt::gcd(BigInt a, BigInt b) {
  a = a.abs();
  b = b.abs();
  while (!b.is_zero()) {
    BigInt q, r;
    divmod(a, b, q, r);
    a = std::move(b);
    b = std::move(r);
  }
  return a;
}

BigInt BigInt::isqrt(const BigInt& x) {
  if (x.sign() <= 0) return BigInt(0);
  // Newton's iteration from above: r_{k+1} = (r_k + x / r_k) / 2 decreases to floor(sqrt(x)).
  BigInt r = BigInt(1).shl((x.bits() + 1) / 2 + 1);
  for (;;) {
    BigInt q, rem;
    divmod(x, r, q, rem);
    BigInt next = (r + q).shr(1);
    if (cmp(next, r) >= 0) return r;
    r = std::move(next);
  }
}

Rational Rational::make(BigInt n, BigInt d) {
  if (d.negative()) {
    n = -n;
    d = -d;
  }
  Rational r;
  BigInt g = BigInt::gcd(n, d);
  if (g == BigInt(1) || g.is_zero()) {
    r.num = std::move(n);
    r.den = std::move(d);
  } else {
    BigInt rem;
    BigInt::divmod(n, g, r.num, rem);
    BigInt::divmod(d, g, r.den, rem);
  }
  if (r.num.is_zero()) r.den = BigInt(1);
  return r;
}

double Rational::to_double() const {
  if (is_integer()) return num.to_double();
  if (num.is_zero()) return 0;
  // Scale so that the quotient has 64 significant bits, then divide exactly.
  std::int64_t shift =
      static_cast<std::int64_t>(den.bits()) - static_cast<std::int64_t>(num.bits()) + 64;
  BigInt n = shift > 0 ? num.shl(static_cast<std::uint64_t>(shift)) : num;
  BigInt d = shift < 0 ? den.shl(static_cast<std::uint64_t>(-shift)) : den;
  BigInt q, r;
  BigInt::divmod(n, d, q, r);
  return std::ldexp(q.to_double(), static_cast<int>(-std::max<std::int64_t>(shift, 0)) +
                                       static_cast<int>(std::max<std::int64_t>(-shift, 0)));
}

BigInt Rational::floor() const {
  BigInt q, r;
  BigInt::floor_divmod(num, den, q, r);
  return q;
}

BigInt Rational::ceil() const { return -Rational::make(-num, den).floor(); }

std::string Rational::str() const { return is_integer() ? num.str() : num.str() + "/" + den.str(); }

Rational operator+(const Rational& a, const Rational& b) {
  if (a.is_integer() && b.is_integer()) return Rational(a.num + b.num);
  return Rational::make(a.num * b.den + b.num * a.den, a.den * b.den);
}

Rational operator-(const Rational& a, const Rational& b) {
  if (a.is_integer() && b.is_integer()) return Rational(a.num - b.num);
  return Rational::make(a.num * b.den - b.num * a.den, a.den * b.den);
}

Rational operator*(const Rational& a, const Rational& b) {
  if (a.is_integer() && b.is_integer()) return Rational(a.num * b.num);
  return Rational::make(a.num * b.num, a.den * b.den);
}

Rational operator/(const Rational& a, const Rational& b) {
  return Rational::make(a.num * b.den, a.den * b.num);
}

int Rational::cmp(const Rational& a, const Rational& b) {
  if (a.is_integer() && b.is_integer()) return BigInt::cmp(a.num, b.num);
  return BigInt::cmp(a.num * b.den, b.num * a.den);
}

}  // namespace collv
