// Numbers in reports.
#pragma once

#include <cmath>
#include <cstdio>
#include <string>

namespace collv {

// A number for a report: whole numbers below 2^53 in full ("12"), others with 4 significant digits
// ("2.5", "3.689e+19"); never a cast of a value that does not fit (inf and nan are spelt out).
inline std::string number_text(double x) {
  char buf[48];
  if (x == std::floor(x) && std::fabs(x) < 9007199254740992.0)
    std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(x));
  else
    std::snprintf(buf, sizeof buf, "%.4g", x);
  return buf;
}

}  // namespace collv
