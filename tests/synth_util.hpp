// Helpers of the synthesis tests (test_sat.cpp, test_sat_invariant.cpp).
#pragma once

#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <cstdlib>
#include <string>

#include "check/checks.hpp"
#include "exec/trace.hpp"

namespace collv::test {

// Every check the executor runs passes on a synthesized schedule. nodup is not claimed for
// all-reduce, whose messages are partial sums, nor under the all-port model, where a node may
// get one item from two neighbours in a step (nodup fails that); `synth --nodup` asks for it.
inline void require_valid(const Trace& t) {
  for (auto& c : check_trace(t, {})) {
    if (c.name == "nodup" && (t.collective == Collective::Allreduce || t.port == PortModel::All))
      continue;
    INFO(c.name << ": " << (c.violations.empty() ? "" : c.violations[0].message));
    CHECK(c.verdict != Verdict::Fail);
  }
}

// Runs a shell command; its exit code, -1 when it did not exit.
inline int shell(const std::string& cmd) {
  int rc = std::system(cmd.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

}  // namespace collv::test
