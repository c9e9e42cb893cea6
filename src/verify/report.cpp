// The verify report's tallies and writers (see report.hpp).
#include "verify/report.hpp"

#include <algorithm>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "util/number_text.hpp"
#include "util/text.hpp"

namespace collv {

namespace {

// A failure to report as one: an expected order-only difference (CheckResult::commutative_only)
// is reported as commutative-only instead.
bool failed(const CheckResult& c) { return c.verdict == Verdict::Fail && !c.commutative_only; }

std::string short_cost(double ts, double tw) {
  auto f = [](double x) { return number_text(x); };
  return f(ts) + "ts+" + f(tw) + "tw";
}

}  // namespace

void Tally::add(const VerifyRun& r) {
  ++runs;
  if (r.status == "pass") ++passed;
  if (r.status == "commutative-only") ++commutative_only;
  if (r.status == "fail") ++failed;
  if (r.status == "inconclusive") ++inconclusive;
  if (r.status == "error") ++errors;
}

Tally VerifyReport::tally() const {
  Tally t;
  for (const auto& r : runs) t.add(r);
  return t;
}

Tally VerifyReport::tally(std::size_t group) const {
  Tally t;
  for (const auto& r : runs)
    if (r.group == group) t.add(r);
  return t;
}

std::vector<std::size_t> VerifyReport::nothing_checked() const {
  std::vector<std::size_t> out;
  if (runs.empty()) {
    for (std::size_t g = 0; g < groups.size(); ++g) out.push_back(g);
    return out;
  }
  // A model named on the command line none of whose families ran.
  std::map<std::string, bool> ran;
  for (const auto& r : runs) ran[r.file] = true;
  for (std::size_t g = 0; g < groups.size(); ++g)
    if (groups[g].named && !ran[groups[g].file]) out.push_back(g);
  return out;
}

namespace {

// The sizes a group's runs covered, by processors then in run order.
std::vector<std::string> covered_specs(const VerifyReport& rep, std::size_t g) {
  std::vector<std::pair<std::uint32_t, std::string>> seen;
  for (const auto& r : rep.runs)
    if (r.group == g && (seen.empty() || seen.back().second != r.topology))
      seen.emplace_back(r.p, r.topology);
  std::stable_sort(seen.begin(), seen.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::string> out;
  for (auto& [p, spec] : seen)
    if (std::find(out.begin(), out.end(), spec) == out.end()) out.push_back(spec);
  return out;
}

nlohmann::json cex_json(const Counterexample& c) {
  nlohmann::json j;
  j["invariant"] = c.invariant;
  j["message"] = c.message;
  if (c.step) j["step"] = *c.step;
  j["nodes"] = c.nodes;
  j["transfers"] = c.transfers;
  if (!c.loads.empty()) {
    auto& l = j["loads"] = nlohmann::json::array();
    for (const auto& x : c.loads)
      l.push_back({{"from", x.from}, {"to", x.to}, {"transfers", x.transfers}, {"items", x.items}});
  }
  if (!c.buffers.empty()) {
    auto& b = j["buffers"] = nlohmann::json::array();
    for (const auto& x : c.buffers)
      b.push_back({{"node", x.node}, {"what", x.what}, {"contents", x.contents}});
  }
  return j;
}

std::string xml_escape(const std::string& in) {
  const std::string s = utf8_replaced(in);  // XML text must be UTF-8 too
  std::string o;
  for (char c : s) {
    switch (c) {
      case '&':
        o += "&amp;";
        break;
      case '<':
        o += "&lt;";
        break;
      case '>':
        o += "&gt;";
        break;
      case '"':
        o += "&quot;";
        break;
      case '\'':
        o += "&apos;";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t') {
          o += ' ';
        } else {
          o += c;
        }
    }
  }
  return o;
}

// Where a run ran: "ring:4 from 2 (exact)".
std::string run_where(const VerifyRun& r) {
  if (r.topology.empty() && r.domain.empty()) return "the file as read";  // a file left unread
  std::string s = r.topology;
  if (r.source) s += fmt::format(" from {}", *r.source);
  if (r.shift) s += fmt::format(" q={}", *r.shift);
  if (r.count != 1) s += fmt::format(" count {}", r.count);
  return s + " (" + r.domain + ")";
}

}  // namespace

std::string run_label(const VerifyRun& r) { return r.model + " on " + run_where(r); }

std::string report_to_json(const VerifyReport& rep) {
  nlohmann::json j;
  auto& results = j["results"] = nlohmann::json::array();
  for (const auto& r : rep.runs) {
    nlohmann::json x;
    x["model"] = r.model;
    x["file"] = r.file;
    x["topology"] = r.topology;
    x["p"] = r.p;
    x["source"] = r.source ? nlohmann::json(*r.source) : nlohmann::json(nullptr);
    if (r.shift) x["q"] = *r.shift;
    x["domain"] = r.domain;
    x["count"] = r.count;
    x["steps"] = r.steps;
    x["cost"] = {{"ts", r.cost_ts}, {"tw", r.cost_tw}};
    if (r.streamed) x["streamed"] = true;
    if (r.data_not_checked) x["data_checked"] = false;  // GOAL: no data to judge
    x["status"] = r.status;
    auto& checks = x["checks"] = nlohmann::json::object();
    auto& viol = x["violations"] = nlohmann::json::array();
    for (const auto& c : r.checks) {
      checks[c.name] = c.commutative_only ? "commutative-only" : verdict_name(c.verdict);
      // Expected order-only differences apart from the failures; why a check was not judged.
      for (const auto& v : c.violations)
        (c.commutative_only ? x["order_only"] : viol).push_back(cex_json(v));
      if (c.verdict == Verdict::NotChecked && !c.note.empty()) x["not_checked"][c.name] = c.note;
      if (c.verdict == Verdict::Unknown && !c.note.empty()) x["inconclusive"][c.name] = c.note;
      // --engine smt|both: which engine decided each check, and the disagreements.
      if (!c.decided_by.empty()) x["decided_by"][c.name] = c.decided_by;
      if (c.engines_disagree) x["engines_disagree"].push_back(c.name);
    }
    if (!r.error.empty()) x["error"] = r.error;  // an error, or the limit that stopped the run
    if (!r.loosened.empty()) x["loosened"] = r.loosened;
    results.push_back(std::move(x));
  }
  auto counts = [](const Tally& t, nlohmann::json& x) {
    x["runs"] = t.runs;
    x["passed"] = t.passed;
    x["commutative_only"] = t.commutative_only;
    x["failed"] = t.failed;
    x["inconclusive"] = t.inconclusive;
    x["errors"] = t.errors;
  };
  auto& models = j["models"] = nlohmann::json::array();
  for (std::size_t g = 0; g < rep.groups.size(); ++g) {
    const VerifyGroup& G = rep.groups[g];
    nlohmann::json x;
    x["model"] = G.model;
    x["file"] = G.file;
    x["family"] = G.family;
    x["sizes"] = covered_specs(rep, g);
    x["sizes_tried"] = G.specs.size();
    counts(rep.tally(g), x);
    x["skipped_runs"] = G.skipped_runs;
    if (!G.no_run.empty()) x["no_run"] = G.no_run;
    if (!G.every_p.empty()) x["every_p"] = G.every_p;
    models.push_back(std::move(x));
  }
  nlohmann::json summary;
  counts(rep.tally(), summary);
  summary["skipped_runs"] = rep.skipped_runs;
  summary["exit_code"] = rep.exit_code;
  j["summary"] = std::move(summary);
  // Names and messages copied from input may hold bytes that are not UTF-8: replaced (U+FFFD),
  // never a throw.
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

std::string report_to_junit(const VerifyReport& rep) {
  std::size_t tests = 0, failures = 0, errors = 0, skipped = 0;
  std::string body;
  for (const auto& r : rep.runs) {
    std::string cls = xml_escape(run_label(r));
    if (r.status == "error") {
      ++tests;
      ++errors;
      body += fmt::format(
          "    <testcase classname=\"{}\" name=\"run\">\n      <error message=\"{}\"/>\n    "
          "</testcase>\n",
          cls, xml_escape(r.error));
      continue;
    }
    for (const auto& c : r.checks) {
      ++tests;
      body += fmt::format("    <testcase classname=\"{}\" name=\"{}\">\n", cls, xml_escape(c.name));
      if (c.name == "postcondition" && !r.loosened.empty())
        body += fmt::format(
            "      <properties><property name=\"loosened\" value=\"{}\"/></properties>\n",
            xml_escape(r.loosened));
      if (c.commutative_only) {
        ++skipped;
        body +=
            "      <skipped message=\"operand order only; the model declares a commutative "
            "operator\"/>\n";
      } else if (c.verdict == Verdict::Fail) {
        ++failures;
        std::string msg = c.violations.empty() ? c.name : c.violations.front().message;
        std::string all;
        for (const auto& v : c.violations) all += v.message + "\n";
        body += fmt::format("      <failure message=\"{}\">{}</failure>\n", xml_escape(msg),
                            xml_escape(all));
      } else if (c.verdict == Verdict::Unknown) {
        ++errors;
        body += fmt::format("      <error message=\"inconclusive: {}\"/>\n", xml_escape(c.note));
      } else if (c.verdict == Verdict::NotChecked) {
        ++skipped;
        body += fmt::format("      <skipped message=\"{}\"/>\n", xml_escape(c.note));
      }
      body += "    </testcase>\n";
    }
  }
  // `verify --every-p`: one testcase per model with a proof. Informational, as in the text and
  // JSON reports (verify's exit code is its runs'): proved passes, anything else is skipped with
  // what stopped the proof, never a pass.
  for (const auto& G : rep.groups) {
    if (G.every_p.empty()) continue;
    ++tests;
    body += fmt::format("    <testcase classname=\"{}\" name=\"every-p\">\n",
                        xml_escape(G.model + " on " + G.family));
    body +=
        fmt::format("      <properties><property name=\"every_p\" value=\"{}\"/></properties>\n",
                    xml_escape(G.every_p));
    if (G.every_p.rfind("proved for every p", 0) != 0) {
      ++skipped;
      body += fmt::format("      <skipped message=\"not proved for every p: {}\"/>\n",
                          xml_escape(G.every_p));
    }
    body += "    </testcase>\n";
  }
  // A model that ran nothing is an error, not an empty pass.
  for (std::size_t g : rep.nothing_checked()) {
    const VerifyGroup& G = rep.groups[g];
    ++tests;
    ++errors;
    body += fmt::format(
        "    <testcase classname=\"{}\" name=\"run\">\n      <error message=\"nothing "
        "checked: {}\"/>\n    </testcase>\n",
        xml_escape(G.model + " on " + G.family), xml_escape(G.no_run));
  }
  return fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"collv verify\" tests=\"{}\" "
      "failures=\"{}\" errors=\"{}\" skipped=\"{}\">\n  <testsuite name=\"collv verify\" "
      "tests=\"{}\" "
      "failures=\"{}\" errors=\"{}\" skipped=\"{}\">\n{}  </testsuite>\n</testsuites>\n",
      tests, failures, errors, skipped, tests, failures, errors, skipped, body);
}

namespace {

// "2..64" for families sized by one number (ring:2 .. ring:64), "p=4..64" (processors)
// otherwise, with the number of sizes when they are not every value of the range; the spec itself
// when there is one.
std::string sizes_text(const VerifyReport& rep, std::size_t g) {
  std::vector<std::string> specs = covered_specs(rep, g);
  if (specs.empty()) return "-";
  if (specs.size() == 1) return specs.front();
  std::vector<long long> nums;
  for (const auto& sp : specs) {
    auto colon = sp.find(':');
    std::string v = colon == std::string::npos ? "" : sp.substr(colon + 1);
    if (v.empty() || v.size() > 9 || !std::all_of(v.begin(), v.end(), ::isdigit)) {
      nums.clear();
      break;
    }
    nums.push_back(std::stoll(v));
  }
  std::string prefix;
  if (nums.empty()) {  // meshes, tori, products: by processors
    prefix = "p=";
    for (const auto& r : rep.runs)
      if (r.group == g) nums.push_back(r.p);
  }
  std::sort(nums.begin(), nums.end());
  nums.erase(std::unique(nums.begin(), nums.end()), nums.end());
  std::string s = fmt::format("{}{}..{}", prefix, nums.front(), nums.back());
  if (specs.size() != static_cast<std::size_t>(nums.back() - nums.front() + 1))
    s += fmt::format(" ({} sizes)", specs.size());
  return s;
}

std::string seconds_text(double s) {
  return s < 10 ? fmt::format("{:.2f}s", s) : fmt::format("{:.0f}s", s);
}

// The first counterexample of one check, in full: message, buffers, loaded links.
void write_check_failure(std::string& o, const CheckResult& c, const std::string& indent) {
  if (c.verdict == Verdict::Unknown) {
    o += fmt::format("{}{}: inconclusive: {}\n", indent, c.name, c.note);
    return;
  }
  if (!failed(c)) return;
  if (c.violations.empty()) {
    o += fmt::format("{}{}: fails\n", indent, c.name);
    return;
  }
  const auto& v = c.violations.front();
  o += fmt::format("{}{}: {}", indent, c.name, v.message);
  if (c.violation_count > 1) o += fmt::format(" (and {} more)", c.violation_count - 1);
  o += "\n";
  for (const auto& b : v.buffers)
    o += fmt::format("{}  node {} {}: {}\n", indent, b.node, b.what, b.contents);
  for (std::size_t k = 0; k < v.loads.size() && k < 6; ++k)
    o += fmt::format("{}  link {} -> {}: {} transfers, {} items\n", indent, v.loads[k].from,
                     v.loads[k].to, v.loads[k].transfers, v.loads[k].items);
}

// The checks a run did not judge because it stopped at a deadlock or a runtime error, on one line
// with the reason: "not-checked: single-port, postcondition: the run deadlocked after step 3 ...".
std::string follows_text(const VerifyRun& r, const std::string& indent) {
  std::string names, why;
  for (const auto& c : r.checks)
    if (c.after_stop) {
      names += (names.empty() ? "" : ", ") + c.name;
      why = c.note;
    }
  if (names.empty()) return "";
  return fmt::format("{}not-checked: {}: {}\n", indent, names, why);
}

// A run's expected order-only differences (CheckResult::commutative_only), one line each.
std::string order_text(const VerifyRun& r, const std::string& indent) {
  std::string o;
  for (const auto& c : r.checks)
    if (c.commutative_only)
      o += fmt::format(
          "{}{}: operand order only, expected under `operator commutative`: {}{}\n", indent, c.name,
          c.violations.empty() ? c.note : c.violations.front().message,
          c.violation_count > 1 ? fmt::format(" (and {} more)", c.violation_count - 1) : "");
  return o;
}

bool reported(const VerifyRun& r) {
  return r.status == "fail" || r.status == "inconclusive" || r.status == "error";
}

std::string runs_table(const VerifyReport& rep) {
  std::string o;
  std::size_t w0 = 5, w1 = 8;
  for (const auto& r : rep.runs) {
    w0 = std::max(w0, r.model.size());
    w1 = std::max(w1, r.topology.size());
  }
  o += fmt::format("{:<{}}  {:<{}}  {:>4}  {:<11}  {:>5}  {:<14}  {}\n", "MODEL", w0, "TOPOLOGY",
                   w1, "SRC", "DOMAIN", "STEPS", "COST", "RESULT");
  for (const auto& r : rep.runs) {
    std::string src = r.source  ? std::to_string(*r.source)
                      : r.shift ? "q" + std::to_string(*r.shift)
                                : "-";
    std::string result = r.status;
    if (r.status == "fail" || r.status == "inconclusive") {
      std::string names;
      for (const auto& c : r.checks)
        if (failed(c) || c.verdict == Verdict::Unknown)
          names += (names.empty() ? "" : ",") + c.name;
      result += " (" + names + ")";
      std::string order;
      for (const auto& c : r.checks)
        if (c.commutative_only) order += (order.empty() ? "" : ",") + c.name;
      if (!order.empty()) result += "; commutative-only (" + order + ")";
    }
    if (!r.error.empty()) result += ": " + r.error;
    if (!r.loosened.empty()) result += " (loosened: --strict fails it)";
    o += fmt::format("{:<{}}  {:<{}}  {:>4}  {:<11}  {:>5}  {:<14}  {}\n", r.model, w0, r.topology,
                     w1, src, r.domain, r.steps, short_cost(r.cost_ts, r.cost_tw), result);
  }
  bool header = false;
  for (const auto& r : rep.runs) {
    if (r.status != "fail" && r.status != "inconclusive") continue;
    if (!header) {
      o += "\ncounterexamples (the first of each failing run)\n";
      header = true;
    }
    o += fmt::format("- {}\n", run_label(r));
    for (const auto& c : r.checks) write_check_failure(o, c, "    ");
    o += follows_text(r, "    ");
  }
  return o;
}

std::string model_table(const VerifyReport& rep) {
  std::string o;
  std::vector<std::string> sizes;
  std::size_t w0 = 5, w1 = 6, w2 = 5;
  for (std::size_t g = 0; g < rep.groups.size(); ++g) {
    sizes.push_back(sizes_text(rep, g));
    w0 = std::max(w0, rep.groups[g].model.size());
    w1 = std::max(w1, rep.groups[g].family.size());
    w2 = std::max(w2, sizes.back().size());
  }
  auto row = [&](const std::string& a, const std::string& b, const std::string& c,
                 const std::string& d, const std::string& e, const std::string& f,
                 const std::string& g, const std::string& h, const std::string& i,
                 const std::string& j, const std::string& k) {
    return fmt::format(
        "{:<{}}  {:<{}}  {:<{}}  {:>5}  {:>6}  {:>9}  {:>6}  {:>7}  {:>6}  {:>7}  {:>6}\n", a, w0,
        b, w1, c, w2, d, e, f, g, h, i, j, k);
  };
  o += row("MODEL", "FAMILY", "SIZES", "RUNS", "PASSED", "COMM-ONLY", "FAILED", "INCONCL", "ERRORS",
           "SKIPPED", "TIME");
  for (std::size_t g = 0; g < rep.groups.size(); ++g) {
    const VerifyGroup& G = rep.groups[g];
    Tally t = rep.tally(g);
    auto n = [](std::size_t x) { return std::to_string(x); };
    o +=
        row(G.model, G.family, sizes[g], n(t.runs), n(t.passed), n(t.commutative_only), n(t.failed),
            n(t.inconclusive), n(t.errors), n(G.skipped_runs), seconds_text(G.seconds));
    if (!G.no_run.empty()) o += fmt::format("  ^ nothing checked: {}\n", G.no_run);
    if (!G.every_p.empty()) o += fmt::format("  ^ every p: {}\n", G.every_p);
  }
  o += "COMM-ONLY: fails on operand order only, under the ordered domain, in a model that "
       "declares\na commutative operator (expected). SKIPPED: size, source and domain combinations "
       "where\nthe model's `requires` is false. SIZES: the sizes that ran.\n";
  return o;
}

// The failures of each model and family, one entry per check: how many runs fail it, and the
// first counterexample in full; then runs that ended in an error, the same way.
std::string failures_text(const VerifyReport& rep) {
  std::string o;
  constexpr std::size_t kListed = 8;
  for (std::size_t g = 0; g < rep.groups.size(); ++g) {
    std::vector<const VerifyRun*> bad;
    for (const auto& r : rep.runs)
      if (r.group == g && reported(r)) bad.push_back(&r);
    if (bad.empty()) continue;
    const VerifyGroup& G = rep.groups[g];
    Tally t = rep.tally(g);
    o += fmt::format("\n{} on {} ({}): {} of {} runs failed, {} inconclusive, {} errors\n", G.model,
                     G.family, G.file, t.failed, t.runs, t.inconclusive, t.errors);
    // Check names in the order the runs report them (any list of checks).
    std::vector<std::string> names;
    for (const VerifyRun* r : bad)
      for (const auto& c : r->checks)
        if ((failed(c) || c.verdict == Verdict::Unknown) &&
            std::find(names.begin(), names.end(), c.name) == names.end())
          names.push_back(c.name);
    auto listing = [&](const std::vector<const VerifyRun*>& rs) {
      std::string s;
      for (std::size_t k = 1; k < rs.size() && k <= kListed; ++k)
        s += (s.empty() ? "" : ", ") + run_where(*rs[k]);
      if (rs.size() > kListed + 1)
        s += fmt::format(", +{} more (--runs lists every run)", rs.size() - kListed - 1);
      return s;
    };
    for (const auto& name : names) {
      std::vector<const VerifyRun*> rs;
      const CheckResult* first = nullptr;
      for (const VerifyRun* r : bad)
        for (const auto& c : r->checks)
          if (c.name == name && (failed(c) || c.verdict == Verdict::Unknown)) {
            if (!first) first = &c;
            rs.push_back(r);
          }
      o += fmt::format("  {}: {} run{}; the first: {}\n", name, rs.size(),
                       rs.size() == 1 ? "" : "s", run_where(*rs.front()));
      write_check_failure(o, *first, "    ");
      if (rs.size() > 1) o += "    also: " + listing(rs) + "\n";
    }
    // What the failing runs did not judge because they stopped, and their expected order-only
    // differences: said once each, never as failures.
    for (bool order : {false, true}) {
      std::vector<const VerifyRun*> rs;
      for (const VerifyRun* r : bad)
        if (std::any_of(r->checks.begin(), r->checks.end(), [&](const CheckResult& c) {
              return order ? c.commutative_only : c.after_stop;
            }))
          rs.push_back(r);
      if (rs.empty()) continue;
      o +=
          fmt::format("  {}: {} run{}; the first: {}\n", order ? "commutative-only" : "not-checked",
                      rs.size(), rs.size() == 1 ? "" : "s", run_where(*rs.front()));
      o += order ? order_text(*rs.front(), "    ") : follows_text(*rs.front(), "    ");
      if (rs.size() > 1) o += "    also: " + listing(rs) + "\n";
    }
    // Runs that ended in an error, and runs stopped by a limit before any check (--timeout):
    // their message, which names the limit.
    for (const char* status : {"error", "inconclusive"}) {
      std::vector<const VerifyRun*> errs;
      for (const VerifyRun* r : bad)
        if (r->status == status && !r->error.empty()) errs.push_back(r);
      if (errs.empty()) continue;
      o += fmt::format("  {}: {} run{}; the first: {}\n    {}\n", status, errs.size(),
                       errs.size() == 1 ? "" : "s", run_where(*errs.front()), errs.front()->error);
      if (errs.size() > 1) o += "    also: " + listing(errs) + "\n";
    }
  }
  return o;
}

}  // namespace

std::string summary_line(const VerifyReport& rep) {
  Tally t = rep.tally();
  // A pass of a format without data (GOAL) judged no data: say so, not hide it in the pass
  // (at the end, so that "P passed, F failed" still reads as one phrase).
  std::size_t blind = 0;
  for (const auto& r : rep.runs) blind += r.data_not_checked && r.status == "pass";
  return fmt::format(
      "{} runs: {} passed, {} failed, {} inconclusive, {} commutative-only (expected under the "
      "ordered domain), {} errors; {} runs skipped by `requires`{}\n",
      t.runs, t.passed, t.failed, t.inconclusive, t.commutative_only, t.errors, rep.skipped_runs,
      blind ? fmt::format("; {} of the passes judged no data (the format carries none)", blind)
            : "");
}

// The runs whose verdict held only under the rules their file or model loosened.
std::string loosened_text(const VerifyReport& rep) {
  std::vector<const VerifyRun*> rs;
  for (const auto& r : rep.runs)
    if (!r.loosened.empty()) rs.push_back(&r);
  if (rs.empty()) return "";
  // Two lines whatever the count: the first run in full; --runs and --json name each one.
  return fmt::format(
      "\nloosened: {} run{} held only under rules the file or model loosened (--strict judges by "
      "the collective's own; --runs and --json name each)\n  the first: {}: {}\n",
      rs.size(), rs.size() == 1 ? "" : "s", run_label(*rs.front()), rs.front()->loosened);
}

std::string report_to_text(const VerifyReport& rep, bool runs, bool quiet) {
  if (quiet) return summary_line(rep);
  std::string o = runs ? runs_table(rep) : model_table(rep) + failures_text(rep);
  return o + loosened_text(rep) + "\n" + summary_line(rep);
}

}  // namespace collv
