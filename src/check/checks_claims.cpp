// The model's and the file's claims: steps, and cost with the message sizes (see checks.hpp).
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "check/check_util.hpp"
#include "util/number_text.hpp"

namespace collv {

// The model's `port single` line under --port all.
static std::string single_port_claim_note(const char* claim) {
  return fmt::format(
      "the model states its {} claim for --port single (`port single`: a single-port formula); "
      "this run uses --port all",
      claim);
}

// --port all: collv's schedule delayed transfers where senders' routes met on a link (Trace::
// link_waits), so what it takes is one schedule's, an upper bound; a claim below it is unknown.
static std::string link_waits_note(const Trace& t, const std::string& got,
                                   const std::string& claimed) {
  return fmt::format(
      "under --port all collv's schedule takes {}, but it delayed {} transfer(s) where routes of "
      "different senders met on a directed link (a list schedule: an upper bound); another order "
      "may take the claimed {}",
      got, t.link_waits, claimed);
}

CheckResult check_steps(const Trace& t, const CheckOptions& o) {
  if (!t.claimed_steps && !t.claimed_steps_real && !t.recorded_steps && t.recorded_disagree.empty())
    return not_checked("steps", "the model claims no step count here");
  if (t.failure.kind != RunFailure::Kind::None)
    return not_checked("steps", "the run did not finish");
  CheckResult r = make("steps");
  if (t.recorded_steps && *t.recorded_steps != static_cast<std::int64_t>(t.steps)) {
    Counterexample c;
    c.message = fmt::format("the file records \"steps\": {}, but its transfers take {} steps",
                            *t.recorded_steps, t.steps);
    add_violation(r, o, std::move(c));
  }
  for (const auto& m : t.recorded_disagree) {
    Counterexample c;
    c.message = "the file's recorded statistics disagree with its transfers: " + m;
    add_violation(r, o, std::move(c));
  }
  if (!t.claimed_steps && !t.claimed_steps_real) return r;
  if (t.claims_single_port && t.port == PortModel::All) {  // the claim is not judged
    if (r.violations.empty()) {
      r.verdict = Verdict::NotChecked;
      r.note = single_port_claim_note("steps");
    }
    return r;
  }
  if (t.claimed_steps_real) {  // not a whole number, or beyond 2^53: it cannot hold
    Counterexample c;
    double v = *t.claimed_steps_real;
    c.message = fmt::format("the run takes {} steps; the model claims {:.6g} steps{}", t.steps, v,
                            v == std::floor(v) ? "" : ", not a whole number");
    add_violation(r, o, std::move(c));
  } else if (t.steps_at_most ? static_cast<std::int64_t>(t.steps) > *t.claimed_steps
                             : static_cast<std::int64_t>(t.steps) != *t.claimed_steps) {
    if (t.link_waits > 0 && static_cast<std::int64_t>(t.steps) > *t.claimed_steps &&
        r.violations.empty()) {
      r.verdict = Verdict::Unknown;
      r.note =
          link_waits_note(t, fmt::format("{} steps", t.steps), fmt::format("{}", *t.claimed_steps));
      return r;
    }
    Counterexample c;
    c.message = fmt::format("the run takes {} steps; the model claims {}{}", t.steps,
                            t.steps_at_most ? "at most " : "", *t.claimed_steps);
    add_violation(r, o, std::move(c));
  }
  if (t.steps_at_most)
    r.note = fmt::format("a bound: {} steps, at most {} claimed", t.steps, *t.claimed_steps);
  return r;
}

// The message-size claims (Trace::words_per_message, Trace::claimed_words) against the payloads:
// an item is one word.
void check_words(const Trace& t, const CheckOptions& o, CheckResult& r) {
  for (auto i : t.ordered_transfers()) {
    const Transfer& x = t.transfers[i];
    std::string claim;
    if (!t.claimed_words.empty() && t.claimed_words[i] != kNoWordsClaim &&
        t.claimed_words[i] != x.payload_len)
      claim = fmt::format("its \"words\" says {}", t.claimed_words[i]);
    else if (t.words_per_message && x.payload_len > *t.words_per_message)
      claim = fmt::format("the schedule claims at most {} word(s) per message (words_per_message)",
                          *t.words_per_message);
    if (claim.empty()) continue;
    Counterexample c;
    c.step = x.step;
    set_list(c.nodes, {x.src, x.dst});
    set_list(c.transfers, {i});
    c.buffers.push_back({x.src, "sent", payload_to_string(t, x)});
    c.message = fmt::format("step {}: transfer #{} ({} -> {}) carries {} word(s) {}, but {}",
                            x.step, i, t.topology.label(x.src), t.topology.label(x.dst),
                            x.payload_len, payload_to_string(t, x), claim);
    add_violation(r, o, std::move(c));
  }
}

CheckResult check_cost(const Trace& t, const CheckOptions& o) {
  const bool words = t.words_per_message || !t.claimed_words.empty();
  if (!t.claimed_ts && !t.recorded_ts && !words)
    return not_checked("cost", "the model claims no cost formula here");
  if (t.failure.kind != RunFailure::Kind::None)
    return not_checked("cost", "the run did not finish");
  CheckResult r = make("cost");
  if (words) {
    check_words(t, o, r);
    if (t.words_per_message)
      r.note =
          fmt::format("message size judged: at most {} word(s) per message", *t.words_per_message);
  }
  auto near = [](double a, double b) {
    return std::fabs(a - b) <= 1e-6 * std::max(1.0, std::fabs(b));
  };
  auto f = [](double x) { return number_text(x); };
  if (t.recorded_ts && !(near(t.cost_ts, *t.recorded_ts) && near(t.cost_tw, *t.recorded_tw))) {
    Counterexample c;
    c.message = fmt::format(
        "the file records \"cost\": {} ts + {} tw*m, but its transfers cost {} ts + {} tw*m",
        f(*t.recorded_ts), f(*t.recorded_tw), f(t.cost_ts), f(t.cost_tw));
    add_violation(r, o, std::move(c));
  }
  if (!t.claimed_ts) return r;
  if (t.claims_single_port && t.port == PortModel::All) {  // the claim is not judged
    if (r.violations.empty()) {
      r.verdict = Verdict::NotChecked;
      r.note = (r.note.empty() ? "" : r.note + "; ") + single_port_claim_note("cost");
    }
    return r;
  }
  auto within = [&](double got, double bound) {
    return got <= bound + 1e-6 * std::max(1.0, bound);
  };
  bool holds = t.cost_at_most ? within(t.cost_ts, *t.claimed_ts) && within(t.cost_tw, *t.claimed_tw)
                              : near(t.cost_ts, *t.claimed_ts) && near(t.cost_tw, *t.claimed_tw);
  if (!holds && t.link_waits > 0 && r.violations.empty() &&
      (t.cost_ts > *t.claimed_ts || t.cost_tw > *t.claimed_tw)) {
    r.verdict = Verdict::Unknown;
    r.note = link_waits_note(t, fmt::format("{} ts + {} tw*m", f(t.cost_ts), f(t.cost_tw)),
                             fmt::format("{} ts + {} tw*m", f(*t.claimed_ts), f(*t.claimed_tw)));
    return r;
  }
  if (!holds) {
    Counterexample c;
    c.message = fmt::format("the run costs {} ts + {} tw*m; the model claims {}{} ts + {} tw*m",
                            f(t.cost_ts), f(t.cost_tw), t.cost_at_most ? "at most " : "",
                            f(*t.claimed_ts), f(*t.claimed_tw));
    add_violation(r, o, std::move(c));
  }
  return r;
}

}  // namespace collv
