// The portfolio of ways to ask Z3 one query (see portfolio.hpp).
#include "smt/portfolio.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <optional>
#include <thread>

#include <fmt/format.h>

#include "util/deadline.hpp"
#include "util/error.hpp"
#include "util/read_file.hpp"

extern char** environ;

namespace collv::smt {

const std::vector<Way>& default_ways() {
  // The z3 executable reads a file through its command reader, with its own context: another
  // order of terms than the API's parse, which moves Z3's search (on Open MPI's recursive halving
  // each way answered queries the other did not, docs/smt.md). Seeds and the arithmetic solver
  // move it further; the tactic preprocesses before the search.
  static const std::vector<Way> ways = {
      {"api", "", "", true},
      {"reader", "", "", false},
      {"reader-seed-1", "(set-option :smt.random_seed 1)\n", "", false},
      {"reader-seed-2", "(set-option :smt.random_seed 2)\n", "", false},
      {"reader-arith-2", "(set-option :smt.arith.solver 2)\n", "", false},
      {"reader-tactic", "", "(then simplify propagate-values solve-eqs elim-term-ite simplify smt)",
       false},
  };
  return ways;
}

namespace {

std::string check_of(const Way& way, const std::vector<std::string>& assumptions) {
  std::string names;
  for (std::size_t i = 0; i < assumptions.size(); ++i) names += (i ? " " : "") + assumptions[i];
  if (way.tactic.empty()) return "(check-sat-assuming (" + names + "))\n";
  // check-sat-using takes no assumptions: they are asserted, which asks the same question.
  std::string out;
  for (const auto& a : assumptions) out += "(assert " + a + ")\n";
  return out + "(check-sat-using " + way.tactic + ")\n";
}

std::string describe(const Way& way) {
  if (way.name == "none")
    return "no way answered; this is the question, for z3 FILE to try (its answer is unknown)";
  if (way.api)
    return "collv's API way: the script parsed, added to a solver, checked with the assumptions; "
           "z3 FILE reads it through the command reader instead";
  return "the z3 executable on this file, as z3 FILE runs it" +
         std::string(way.options.empty() && way.tactic.empty() ? "" : ", with the options below");
}

// The z3 executable on `file` (`z3 -st [rlimit=N] FILE`, stdout and stderr to `out_file`),
// stopped at `ms` of wall clock. Returns false when it could not be started.
bool run_z3(const std::string& file, const std::string& out_file, unsigned ms, std::uint64_t rlimit,
            bool& stopped) {
  std::vector<std::string> args = {"z3", "-st"};
  if (rlimit)
    args.push_back(fmt::format("rlimit={}", std::min<std::uint64_t>(rlimit, 0xFFFFFFFFu)));
  args.push_back(file);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, out_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  pid_t pid = -1;
  const int rc = posix_spawnp(&pid, "z3", &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return false;
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  int status = 0;
  stopped = false;
  for (;;) {
    const pid_t w = ::waitpid(pid, &status, WNOHANG);
    if (w == pid || (w < 0 && errno != EINTR)) break;
    if (std::chrono::steady_clock::now() >= end || deadline_passed()) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      stopped = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  // 127: the shell's "not found" (posix_spawnp may report it through the child's exit).
  return !(WIFEXITED(status) && WEXITSTATUS(status) == 127);
}

// `text` run by the z3 executable, as `z3 FILE` (scripts/recheck-certificates.sh) runs it; for
// sat, the values of `value_names` from a second run with (get-value ...) after the check.
Result run_executable(const std::string& text, unsigned timeout_ms, std::uint64_t rlimit,
                      const std::vector<std::string>& value_names) {
  Result r;
  static std::atomic<unsigned> counter{0};
  namespace fs = std::filesystem;
  const fs::path base =
      fs::temp_directory_path() / fmt::format("collv_portfolio_{}_{}", ::getpid(), counter++);
  const std::string file = base.string() + ".smt2", out = base.string() + ".out";
  struct Cleanup {
    std::string a, b;
    ~Cleanup() {
      std::error_code ec;
      fs::remove(a, ec);
      fs::remove(b, ec);
    }
  } cleanup{file, out};
  auto t0 = std::chrono::steady_clock::now();
  check_deadline("the Z3 query");
  const unsigned ms = static_cast<unsigned>(
      std::min<std::uint64_t>(timeout_ms, std::max<std::uint64_t>(1, deadline_remaining_ms())));
  auto run = [&](const std::string& script, bool& stopped) {
    write_file_checked(file, script);
    if (!run_z3(file, out, ms, rlimit, stopped)) return std::string("\n");
    return read_file_bounded(out, 64 << 20, "z3's output");
  };
  bool stopped = false;
  const std::string o = run(text, stopped);
  if (o == "\n") {
    r.reason = "skipped: the z3 executable was not found (install z3)";
    return r;
  }
  // The answer lines in order (the last check's is the question's); the statistics of -st.
  std::string last;
  bool error = false;
  for (std::size_t at = 0; at < o.size();) {
    auto nl = o.find('\n', at);
    if (nl == std::string::npos) nl = o.size();
    const std::string line = o.substr(at, nl - at);
    if (line == "sat" || line == "unsat" || line == "unknown" || line == "timeout") last = line;
    if (line.rfind("(error", 0) == 0) error = true;
    at = nl + 1;
  }
  const auto rc = o.find(":rlimit-count");
  if (rc != std::string::npos) {
    const auto b = o.find_first_of("0123456789", rc);
    if (b != std::string::npos) r.rlimit_used = std::stoull(o.substr(b, 20));
  }
  if (error && !stopped) {
    // The script is collv's own text: an error is collv's bug, not an answer.
    throw InternalError("internal error: the z3 executable rejected a query collv built: " +
                        o.substr(0, std::min<std::size_t>(o.size(), 300)));
  }
  if (last == "unsat") r.answer = Answer::Unsat;
  if (last == "sat") r.answer = Answer::Sat;
  if (r.answer == Answer::Unknown) {
    r.reason = stopped ? fmt::format("timeout after {} ms", ms)
               : rlimit && r.rlimit_used >= rlimit
                   ? fmt::format("stopped at the resource limit of {} units (rlimit)", rlimit)
                   : "unknown";
  }
  if (r.answer == Answer::Sat && !value_names.empty()) {
    std::string q = "(get-value (";
    for (std::size_t i = 0; i < value_names.size(); ++i) q += (i ? " " : "") + value_names[i];
    bool again = false;
    const std::string v = run(text + q + "))\n", again);
    // "((p 3)\n (count 0))": each name followed by its value.
    for (const auto& n : value_names) {
      const auto at = v.find("(" + n + " ");
      if (at == std::string::npos) continue;
      const auto b = at + n.size() + 2;
      int depth = 0;
      std::size_t e = b;
      for (; e < v.size(); ++e) {
        if (v[e] == '(') ++depth;
        if (v[e] == ')' && depth-- == 0) break;
      }
      r.values[n] = v.substr(b, e - b);
    }
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace

std::string way_certificate(const Way& way, const std::string& script,
                            const std::vector<std::string>& assumptions,
                            const std::string& comment) {
  // The header and the script as Solver writes them (no context is made for the text alone),
  // the way named in a last comment line, then the way's check.
  Solver text;
  text.add(way.options + script);
  const std::string named = "answered by: " + way.name + " (" + describe(way) + ")";
  return text.to_smt2_checks(Answer::Unsat, {}, comment.empty() ? named : comment + "\n" + named) +
         check_of(way, assumptions);
}

Answered solve_portfolio(const std::string& script, const std::vector<std::string>& assumptions,
                         const std::vector<std::string>& value_names, const Limits& limits,
                         const std::string& comment, const std::vector<Way>& ways,
                         double confirm_above) {
  Answered out;
  const Way none{"none", "", "", false};
  {
    // The size cap (one term per 8 bytes of text) and --max-memory, before any way builds it.
    Solver cap(limits);
    if (!cap.reserve(script.size() / 8 + 16)) {
      out.result.reason = cap.refusal();
      out.certificate = way_certificate(none, script, assumptions, comment);
      return out;
    }
  }
  std::optional<Result> api_unsat;  // a long API answer, waiting for the executable's
  const Way* api_way = nullptr;
  for (const Way& way : ways) {
    Result r;
    const std::string text = way_certificate(way, script, assumptions, comment);
    double cpu = 0;  // the API way's CPU seconds (this process's: Z3 runs in it)
    if (way.api) {
      const std::clock_t c0 = std::clock();
      Solver s(limits);
      s.reserve(script.size() / 8 + 16);
      s.add(script);
      r = s.check(assumptions, value_names);
      cpu = static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC;
    } else {
      // A confirmation (the API answered) only picks the certificate: its tries get four times
      // the API's wall time (at least 30 s, at most the limit), not a whole try each.
      const unsigned ms =
          api_unsat ? static_cast<unsigned>(std::min<double>(
                          limits.timeout_ms, std::max(30000.0, 4000.0 * api_unsat->seconds)))
                    : limits.timeout_ms;
      r = run_executable(text, ms, limits.rlimit, value_names);
    }
    out.seconds += r.seconds;
    out.tries.push_back(fmt::format("{}: {} ({} units, {:.1f} s{})", way.name,
                                    answer_name(r.answer), r.rlimit_used, r.seconds,
                                    r.answer == Answer::Unknown ? ", " + r.reason : ""));
    if (way.api && r.answer == Answer::Unsat && confirm_above > 0 && cpu > confirm_above &&
        &way != &ways.back()) {
      // A long unsat of the API way: z3 FILE searches otherwise and may not answer it, so the
      // ways after it look for a certificate the executable answers (kept: the API's answer).
      api_unsat = r;
      api_way = &way;
      continue;
    }
    if (api_unsat && r.answer == Answer::Sat) {
      // Two ways disagree on the same question: a solver bug, never a proof.
      out.result.reason =
          "the ways disagree (the API way unsat, " + way.name + " sat): " + "not decided";
      out.certificate = way_certificate(none, script, assumptions, comment);
      return out;
    }
    const bool last = &way == &ways.back();
    if (r.answer != Answer::Unknown || last || deadline_passed()) {
      if (r.answer != Answer::Unknown) {
        out.way = way.name;
        out.result = std::move(r);
        out.certificate = text;
      } else if (api_unsat) {
        // No executable's way answered: the API's answer stands, its certificate names it.
        out.way = api_way->name;
        out.result = *api_unsat;
        out.certificate = way_certificate(*api_way, script, assumptions, comment);
        out.unconfirmed = true;
      } else {
        out.result = std::move(r);
        out.certificate = way_certificate(none, script, assumptions, comment);
        std::string all;
        for (const auto& t : out.tries) all += (all.empty() ? "" : "; ") + t;
        out.result.reason = "no way answered: " + all;
      }
      return out;
    }
  }
  return out;
}

}  // namespace collv::smt
