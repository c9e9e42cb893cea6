// The invariant checkers (see checks.hpp): the verdicts, the run's end (deadlock, runtime), and
// check_trace, which runs every check and marks what a stopped run leaves undecided. The checks
// themselves live by group: checks_links.cpp (single-port, route, congestion), checks_nodup.cpp,
// checks_outputs.cpp (postcondition, final-buffers), checks_claims.cpp (steps, cost), and
// dataflow.cpp (dataflow, match). Each one reads the Trace only.
#include "check/checks.hpp"

#include <algorithm>
#include <exception>
#include <string_view>
#include <thread>

#include <fmt/format.h>

#include "check/check_util.hpp"
#include "check/dataflow.hpp"

namespace collv {

const char* verdict_name(Verdict v) {
  switch (v) {
    case Verdict::Pass:
      return "pass";
    case Verdict::Fail:
      return "fail";
    case Verdict::Unknown:
      return "unknown";
    case Verdict::NotChecked:
      return "not-checked";
  }
  return "?";
}

CheckResult not_checked(const char* name, std::string why) {
  CheckResult r;
  r.name = name;
  r.verdict = Verdict::NotChecked;
  r.note = std::move(why);
  return r;
}

CheckResult check_deadlock(const Trace& t, const CheckOptions& o) {
  CheckResult r = make("deadlock");
  const RunFailure& f = t.failure;
  switch (f.kind) {
    case RunFailure::Kind::None:
      break;
    case RunFailure::Kind::StepLimit:
    case RunFailure::Kind::OpLimit:
      r.verdict = Verdict::Unknown;
      r.note = f.message;
      break;
    case RunFailure::Kind::RuntimeError:
      r.verdict = Verdict::NotChecked;
      r.note = "the run stopped at a runtime error (see the runtime check)";
      break;
    case RunFailure::Kind::Deadlock: {
      if (f.order_unexplored) {  // a cycle through collv's conservative data rule: not judged
        r.verdict = Verdict::Unknown;
        r.note = f.message;
        break;
      }
      Counterexample c;
      c.nodes = f.waiting_cycle;
      c.message = f.message;
      add_violation(r, o, std::move(c));
      break;
    }
  }
  return r;
}

CheckResult check_runtime(const Trace& t, const CheckOptions& o) {
  CheckResult r = make("runtime");
  if (t.failure.kind == RunFailure::Kind::RuntimeError) {
    Counterexample c;
    c.message = t.failure.message;
    add_violation(r, o, std::move(c));
  }
  return r;
}

// The transfer checks of a streamed run (Trace::streamed), from what the run established while it
// went: every transfer went to a neighbour (the executor refuses others), the single-port timing
// gave each node's sends, and its receives, strictly increasing steps (StreamTiming), so at most
// one transfer crosses each directed link in a step; every transfer was received unless
// stream_incomplete says otherwise. nodup and dataflow need each node's holdings over the whole
// run and are not judged.
std::vector<CheckResult> streamed_transfer_checks(const Trace& t, const CheckOptions& o) {
  auto unknown = [&](const char* name) {
    CheckResult r = make(name);
    r.verdict = Verdict::Unknown;
    r.note = "streamed run: " + t.stream_incomplete + "; the stored trace is needed to judge it";
    return r;
  };
  auto kept = [&](const char* name) {
    // nodup says why it does not apply (no claim, the fingerprint domain) without the trace.
    if (std::string_view(name) == "nodup" && (!t.nodup_claimed || !t.domain->inspectable()))
      return check_nodup(t, o);
    return not_checked(name,
                       "a streamed run keeps no trace; this check needs each node's holdings "
                       "over the whole run (--stream off, or a smaller size)");
  };
  // A run stopped by a runtime error or a limit leaves transfers unreceived because it stopped
  // (in a partitioned run, another process's messages of the round it stopped in): the checks
  // the stop decides are marked by it (follows_from_stop), the others judged as far as it ran.
  const bool stopped = t.failure.kind == RunFailure::Kind::RuntimeError ||
                       t.failure.kind == RunFailure::Kind::OpLimit ||
                       t.failure.kind == RunFailure::Kind::StepLimit;
  if (!t.stream_incomplete.empty() && !stopped)
    return {unknown("single-port"), unknown("route"), unknown("congestion"),
            kept("nodup"),          kept("dataflow"), unknown("match")};
  CheckResult congestion = make("congestion");
  congestion.note = fmt::format("largest load on one directed link in one step: {}",
                                t.streamed_transfers > 0 ? 1 : 0);
  return {make("single-port"), make("route"),    std::move(congestion),
          kept("nodup"),       kept("dataflow"), check_match(t, o)};  // every transfer received
}
// A check that follows from where the run stopped: not-checked, with the stop as its reason.
static void follows_from_stop(CheckResult& r, const std::string& why) {
  r.verdict = Verdict::NotChecked;
  r.violations.clear();
  r.violation_count = 0;
  r.order_only = false;
  r.after_stop = true;
  r.note = why;
}

std::vector<CheckResult> check_trace(const Trace& t, const CheckOptions& o) {
  std::vector<CheckResult> all;
  if (t.streamed) {
    all = streamed_transfer_checks(t, o);
  } else {
    // One step index for every check that reads the steps. On a large trace (the threads
    // option's rule) nodup, then single-port, route and congestion (one pass), run on a second
    // thread beside dataflow (about even halves of the work on the star all-reduce); each check
    // reads the trace only, and the results keep their order.
    const StepIndex steps = by_step(t);
    const bool beside = o.threads != 1 && (o.threads > 1 || t.transfers.size() >= 200000);
    CheckResult nodup, single_port, route, congestion;
    std::exception_ptr beside_error;
    std::thread worker;
    auto links = [&] { link_checks(t, o, steps, &single_port, &route, &congestion); };
    if (beside)
      worker = std::thread([&] {
        try {
          nodup = nodup_check(t, o, steps);
          links();
        } catch (...) {
          beside_error = std::current_exception();
        }
      });
    auto join = [&] {
      if (worker.joinable()) worker.join();
    };
    try {
      auto [dataflow, match] = check_dataflow_and_match(t, o);
      if (!beside) {
        links();
        nodup = nodup_check(t, o, steps);
      }
      join();
      if (beside_error) std::rethrow_exception(beside_error);
      all.push_back(std::move(single_port));
      all.push_back(std::move(route));
      all.push_back(std::move(congestion));
      all.push_back(std::move(nodup));
      all.push_back(std::move(dataflow));
      all.push_back(std::move(match));
    } catch (...) {
      join();
      throw;
    }
  }
  for (auto* f : {check_postcondition, check_final_buffers, check_steps, check_cost, check_deadlock,
                  check_runtime})
    all.push_back(f(t, o));
  // A run stopped at a limit is unfinished: a violation found in its prefix is real, but a
  // pass is not, and its final buffers mean nothing. The limit is said once, by the deadlock
  // check (unknown, with the limit's message); what needed the whole run is not-checked with
  // that reason (after_stop), as after a deadlock or a runtime error.
  bool limit =
      t.failure.kind == RunFailure::Kind::StepLimit || t.failure.kind == RunFailure::Kind::OpLimit;
  if (limit) {
    const std::string why =
        fmt::format("the run stopped at {} before it finished (see the deadlock check)",
                    t.failure.kind == RunFailure::Kind::StepLimit ? "--max-steps" : "--max-ops");
    for (auto& r : all) {
      if (r.name == "deadlock") continue;
      bool about_end = r.name == "postcondition" || r.name == "final-buffers";
      bool follows = r.verdict == Verdict::Pass || (about_end && r.verdict == Verdict::Fail) ||
                     (r.verdict == Verdict::Unknown &&
                      r.note.rfind("the run stopped at a limit", 0) == 0) ||  // match
                     (r.verdict == Verdict::NotChecked &&
                      r.note.rfind("the run did not finish", 0) == 0);  // steps, cost
      if (!follows) continue;  // a violation in the prefix, or a reason of its own, stands
      follows_from_stop(r, why);
    }
  }
  mark_stopped_run(all, t);
  return all;
}

std::string stopped_run_reason(const Trace& t) {
  const RunFailure& f = t.failure;
  if (f.kind == RunFailure::Kind::Deadlock && f.ports)
    return "the run has a deadlock of the ports: no single-port schedule exists, so its steps "
           "are not a schedule (see the deadlock check)";
  std::string when = t.steps == 0 ? std::string("before its first transfer")
                                  : fmt::format("after step {}", t.steps);
  if (f.kind == RunFailure::Kind::Deadlock)
    return fmt::format("the run deadlocked {} (see the deadlock check)", when);
  if (f.kind == RunFailure::Kind::RuntimeError)
    return fmt::format("the run stopped at a runtime error {} (see the runtime check)", when);
  return "";
}

void mark_stopped_run(std::vector<CheckResult>& all, const Trace& t) {
  const std::string why = stopped_run_reason(t);
  if (why.empty()) return;
  // A deadlock of the ports computed every value and received every message: only what rests on
  // the steps follows from it. A deadlock of the values or a runtime error left nodes unfinished:
  // their buffers, the messages they would have received and the steps they would have taken are
  // not the algorithm's. route and nodup judge each transfer made on its own, and stand.
  static const std::vector<std::string_view> steps_only = {"single-port", "congestion", "steps",
                                                           "cost"};
  static const std::vector<std::string_view> unfinished = {
      "single-port",   "congestion",    "dataflow", "match",
      "postcondition", "final-buffers", "steps",    "cost"};
  const auto& names = t.failure.ports ? steps_only : unfinished;
  for (auto& r : all) {
    if (std::find(names.begin(), names.end(), r.name) == names.end()) continue;
    // Not checked for a reason of its own (no claim, --port all, ...): that reason stands.
    if (r.verdict == Verdict::NotChecked && r.note.rfind("the run did not finish", 0) != 0 &&
        r.note.rfind("the run stopped at a runtime error", 0) != 0)
      continue;
    follows_from_stop(r, why);
  }
}

}  // namespace collv
