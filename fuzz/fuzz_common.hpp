// Shared by the harnesses: a crude size of a topology spec, to skip the ones that are legal but
// slow to build under ASan (2^16 .. 2^25 nodes take seconds to minutes each and would turn the
// fuzzer into a benchmark of the builder). Larger ones are still parsed: the parser's own limits
// must refuse them up front, quickly.
#pragma once

#include <cctype>
#include <cstdint>
#include <string_view>

inline bool expensive_spec(std::string_view spec) {
  auto sat_mul = [](std::uint64_t a, std::uint64_t b) {
    std::uint64_t r;
    return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
  };
  std::uint64_t total = 1;
  std::size_t i = 0;
  while (i < spec.size()) {
    std::size_t end = spec.find('*', i);
    if (end == std::string_view::npos) end = spec.size();
    std::string_view f = spec.substr(i, end - i);
    std::uint64_t size = 1;
    bool pow2 = f.find("hypercube") != f.npos || f.find("debruijn") != f.npos;
    bool fact = f.find("star") != f.npos;
    bool square = f.find("complete") != f.npos;
    for (std::size_t k = 0; k < f.size();) {
      if (!std::isdigit(static_cast<unsigned char>(f[k]))) {
        ++k;
        continue;
      }
      std::uint64_t n = 0;
      while (k < f.size() && std::isdigit(static_cast<unsigned char>(f[k]))) {
        n = n > UINT64_MAX / 16 ? UINT64_MAX : n * 10 + static_cast<unsigned>(f[k] - '0');
        ++k;
      }
      std::uint64_t v = n;
      if (pow2) v = n >= 63 ? UINT64_MAX : (std::uint64_t{1} << n);
      if (fact) {
        v = 1;
        for (std::uint64_t j = 2; j <= n && v != UINT64_MAX; ++j) v = sat_mul(v, j);
      }
      if (square) v = sat_mul(n, n);
      size = sat_mul(size, v == 0 ? 1 : v);
    }
    total = sat_mul(total, size);
    i = end + 1;
  }
  return total > (1u << 16) && total < (1u << 26);
}
