// Helpers of the `collv mpi` tests (tests/test_mpi*.cpp): hand-written harness files, the checks'
// verdicts, whether an MPI library is installed, and library bugs injected by a preloaded shim.
#pragma once

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "app/mpi_cmd.hpp"
#include "check/checks.hpp"
#include "cli.hpp"

namespace collv::test {

// The text report's line when some run's messages were not compared with the model (until
// 2026-11-29 the tests looked for "messages: not checked", which the report never prints).
inline const std::string kMessagesNotChecked =
    "messages (per-peer counts against the model) not checked";

// Writes rank<r>.jsonl files into a fresh directory.
inline std::string write_ranks(const std::vector<std::string>& files) {
  std::string dir = unique_temp("collv_mpi_judge");
  std::filesystem::create_directories(dir);
  for (std::size_t r = 0; r < files.size(); ++r)
    std::ofstream(std::filesystem::path(dir) / ("rank" + std::to_string(r) + ".jsonl")) << files[r];
  return dir;
}

inline std::string done(int r, int p) {
  return "{\"k\":\"done\",\"rank\":" + std::to_string(r) + ",\"size\":" + std::to_string(p) + "}\n";
}

// A rank's file of count 1: two calls (numbered 3 and 4, harness_call), each with the same "sent"
// line (the message pattern of tests/test_mpi_pattern.cpp and test_mpi_dependencies.cpp).
inline std::string sent_rank_file(int r, int p, const std::string& sent) {
  std::string s;
  for (int c = 1; c <= kHarnessCalls; ++c)
    s += "{\"k\":\"call\",\"n\":" + std::to_string(harness_call(1, c)) +
         "}\n{\"k\":\"out\",\"buf\":[]}\n" + sent + "\n";
  return s + done(r, p);
}

inline Verdict verdict(const std::vector<CheckResult>& cs, const std::string& name) {
  for (const auto& c : cs)
    if (c.name == name) return c.verdict;
  FAIL("no check " << name);
  return Verdict::NotChecked;
}

// Every violation message of the checks, one a line (what a test looks for).
inline std::string violations_text(const std::vector<CheckResult>& cs) {
  std::string t;
  for (const auto& c : cs)
    for (const auto& v : c.violations) t += c.name + ": " + v.message + "\n";
  return t;
}

inline bool all_pass(const std::vector<CheckResult>& cs) {
  for (const auto& c : cs)
    if (c.verdict == Verdict::Fail || c.verdict == Verdict::Unknown) return false;
  return true;
}

inline bool have_mpi(const std::string& cc) {
  return std::system(("command -v " + cc + " >/dev/null 2>&1").c_str()) == 0;
}

// MPICH's compiler and launcher are installed.
inline bool have_mpich() { return have_mpi("mpicc.mpich") && have_mpi("mpiexec.mpich"); }

// `collv mpi --conformance ARGS` fails (exit 1) and says `message`: a model whose messages or
// combinations are not the library's. Returns what it printed, for further checks.
inline std::string conformance_fails(const std::string& args, const std::string& message,
                                     int seconds = 120) {
  std::string out;
  const int rc = run_cli("mpi --conformance " + args, out, "", seconds);
  INFO(out);
  CHECK(rc == 1);
  CHECK_THAT(out, Catch::Contains(message));
  return out;
}

// `collv mpi --conformance ARGS` passes (exit 0), judging messages, and says `message` (a
// "pass          MODEL#nb=NAME" line). Returns what it printed, for further checks.
inline std::string conformance_passes(const std::string& args, const std::string& message,
                                      int seconds = 120) {
  std::string out;
  const int rc = run_cli("mpi --conformance " + args, out, "", seconds);
  INFO(out);
  CHECK(rc == 0);
  CHECK_THAT(out, Catch::Contains(message));
  CHECK(out.find("messages: not checked") == std::string::npos);
  return out;
}

// `collv verify` passes a model at p = 2..6 and these counts: a correct collective, whatever
// the library makes of it.
inline void verify_passes(const std::string& model, const std::string& counts) {
  std::string out;
  CHECK(run_cli("verify " + model + " --sizes 2..6 --count " + counts, out) == 0);
}

// The installed libraries (both compiler and launcher found), in a fixed order.
inline std::vector<std::string> installed_mpis() {
  std::vector<std::string> v;
  if (have_mpi("mpicc.openmpi") && have_mpi("mpirun.openmpi")) v.push_back("openmpi");
  if (have_mpi("mpicc.mpich") && have_mpi("mpiexec.mpich")) v.push_back("mpich");
  return v;
}

// A library bug (tests/data/mpi/shim.c, -D<bug>) built with impl's compiler into a shared
// library, and a launcher wrapper that preloads it into the ranks; returns the wrapper's path
// ("" when the build failed).
inline std::string shim_launcher(const std::string& impl, const std::string& bug) {
  const bool ompi = impl == "openmpi";
  const std::string so = unique_temp("collv_mpi_shim_" + bug) + ".so";
  const std::string cc = ompi ? "mpicc.openmpi" : "mpicc.mpich";
  const std::string cmd = cc + " -shared -fPIC -D" + bug + " -o " + so + " " + COLLV_SOURCE_DIR +
                          "/tests/data/mpi/shim.c";
  if (std::system(cmd.c_str()) != 0) return "";
  const std::string wrapper = unique_temp("collv_mpi_shim_run") + ".sh";
  std::ofstream(wrapper) << "#!/bin/sh\n"
                         << (ompi ? "exec mpirun.openmpi -x LD_PRELOAD=" + so + " \"$@\"\n"
                                  : "exec mpiexec.mpich -genv LD_PRELOAD " + so + " \"$@\"\n");
  std::filesystem::permissions(wrapper, std::filesystem::perms::owner_all);
  return wrapper;
}

}  // namespace collv::test
