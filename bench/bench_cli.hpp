// What every benchmark's main does with its command line (issue 26: no executable in build/ ends
// on an uncaught exception). `--help` or `-h` prints the usage (exit 0); an option (no benchmark
// takes one) or an argument the benchmark rejects prints the reason and the usage (exit 2); a
// limit is exit 3; any other exception ends with its message (exit 2), never `terminate called`.
// tests/bench_cli.cmake runs every bench_* of the build with --help and with a bad argument.
//
//   int main(int argc, char** argv) {
//     return collv::bench::guarded_main(argc, argv, kUsage, [&](const Args& a) { ...; return 0; });
//   }
#pragma once

#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "util/error.hpp"

namespace collv::bench {

using Args = std::vector<std::string>;  // argv[1..]

// A whole decimal number in lo..hi, or a UsageError naming the argument.
inline unsigned long number_arg(const std::string& s, const char* what, unsigned long lo,
                                unsigned long hi) {
  unsigned long v = 0;
  bool ok = !s.empty() && s.size() <= 9;
  for (char c : s) ok = ok && c >= '0' && c <= '9';
  if (ok) v = std::stoul(s);
  if (!ok || v < lo || v > hi)
    throw UsageError(what + std::string(" must be a number in ") + std::to_string(lo) + ".." +
                     std::to_string(hi) + ", not '" + s + "'");
  return v;
}

template <class Body>
int guarded_main(int argc, char** argv, const char* usage, Body&& body) {
  const std::string name = argc > 0 ? argv[0] : "bench";
  Args a(argv + (argc > 0 ? 1 : 0), argv + argc);
  auto fail = [&](const char* what, int rc) {
    std::fprintf(stderr, "%s: error: %s\n%s", name.c_str(), what, usage);
    return rc;
  };
  for (const auto& s : a)
    if (s == "--help" || s == "-h") {
      std::printf("%s", usage);
      return 0;
    }
  for (const auto& s : a)
    if (s.size() > 1 && s[0] == '-')
      return fail(("unknown option '" + s + "' (the benchmarks take no options)").c_str(), 2);
  try {
    return body(a);
  } catch (const LimitError& e) {
    return fail(e.what(), 3);
  } catch (const std::exception& e) {
    return fail(e.what(), 2);
  }
}

}  // namespace collv::bench
