// collv prove and collv synth (see smt_cmds.hpp).
#include "app/smt_cmds.hpp"

#include "render/render.hpp"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "app/commands.hpp"
#include "app/every_p_cmd.hpp"
#include "check/checks.hpp"
#include "check/dataflow.hpp"
#include "exec/executor.hpp"
#include "smt/lemmas.hpp"
#include "smt/star_induction.hpp"
#include "util/deadline.hpp"
#include "util/exit_codes.hpp"
#include "util/read_file.hpp"
#include "util/text.hpp"

namespace collv {

namespace {

namespace fs = std::filesystem;

enum class Status { Ok, Contradicted, Inconclusive };

struct Outcome {
  Status status = Status::Inconclusive;
  std::string answer;  // what was found
  double seconds = 0;
  std::string note;
};

smt::Answer parse_answer(const std::string& s, const std::string& where) {
  if (s == "sat") return smt::Answer::Sat;
  if (s == "unsat") return smt::Answer::Unsat;
  throw UsageError(where + ": expect must be 'sat' or 'unsat', not '" + s + "'");
}

Outcome compare(smt::Answer got, smt::Answer want, double secs, const std::string& reason) {
  Outcome o;
  o.seconds = secs;
  o.answer = smt::answer_name(got);
  if (got == smt::Answer::Unknown) {
    o.status = Status::Inconclusive;
    o.note = reason;
  } else {
    o.status = got == want ? Status::Ok : Status::Contradicted;
    if (got != want) o.note = fmt::format("expected {}", smt::answer_name(want));
  }
  return o;
}

int parse_int(const std::string& s, const std::string& where) {
  try {
    std::size_t k = 0;
    int v = std::stoi(s, &k);
    if (k != s.size()) throw std::invalid_argument(s);
    return v;
  } catch (const std::exception&) {
    throw UsageError(where + ": '" + s + "' is not a whole number");
  }
}

// Refuses the numbers in an SMT-LIB script that make Z3 allocate or loop before its timeout
// applies: an index of an indexed identifier `(_ NAME N ...)` (BitVec, bvK, zero_extend,
// sign_extend, repeat, extract, ...) above 2^16, and `(push N)` / `(pop N)` above 1,000. Comments
// and string literals are skipped. LimitError names the file, the line and the number.
void check_smt2_sizes(const std::string& text, const std::string& path) {
  constexpr std::uint64_t kMaxIndex = 65536, kMaxScopes = 1000;
  int line = 1;
  auto numeral = [&](std::size_t& i, std::uint64_t& v) {
    while (i < text.size() &&
           (text[i] == ' ' || text[i] == '\t' || text[i] == '\r' || text[i] == '\n')) {
      if (text[i] == '\n') ++line;
      ++i;
    }
    if (i >= text.size() || text[i] < '0' || text[i] > '9') return false;
    v = 0;
    for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i)
      v = v > UINT64_MAX / 20 ? UINT64_MAX / 2 : v * 10 + static_cast<std::uint64_t>(text[i] - '0');
    return true;
  };
  auto symbol = [&](std::size_t& i) {
    while (i < text.size() && (text[i] == ' ' || text[i] == '\t' || text[i] == '\r')) ++i;
    std::size_t b = i;
    while (i < text.size() && !std::isspace(static_cast<unsigned char>(text[i])) &&
           text[i] != '(' && text[i] != ')')
      ++i;
    return text.substr(b, i - b);
  };
  DeadlineTick tick;
  for (std::size_t i = 0; i < text.size();) {
    tick([&] { return fmt::format("reading {} (at line {})", path, line); });
    char c = text[i];
    if (c == '\n') {
      ++line;
      ++i;
    } else if (c == ';') {  // comment to the end of the line
      while (i < text.size() && text[i] != '\n') ++i;
    } else if (c == '"' || c == '|') {  // a string literal or quoted symbol
      for (++i; i < text.size() && text[i] != c; ++i)
        if (text[i] == '\n') ++line;
      ++i;
    } else if (c == '(') {
      ++i;
      std::size_t j = i;
      std::string head = symbol(j);
      std::uint64_t v = 0;
      if (head == "_") {
        std::string name = symbol(j);
        while (numeral(j, v))
          if (v > kMaxIndex)
            throw LimitError(fmt::format(
                "{}:{}: (_ {} {}): an index above {} is refused (Z3 would allocate it before "
                "any timeout applies)",
                path, line, printable(name, 40), v, kMaxIndex));
      } else if (head == "push" || head == "pop") {
        if (numeral(j, v) && v > kMaxScopes)
          throw LimitError(fmt::format("{}:{}: ({} {}): more than {} scopes at once is refused",
                                       path, line, head, v, kMaxScopes));
      }
    } else {
      ++i;
    }
  }
}

Outcome run_smt2(const std::string& path, std::optional<smt::Answer> want_field,
                 const ProveCommandOptions& o) {
  // Bounded before Z3 sees it: the file's size (a file that never ends is refused), and the sizes
  // Z3 would allocate or loop over before its timeout applies.
  std::string text = read_file_bounded(path, std::uint64_t{64} << 20, "an SMT-LIB file");
  check_smt2_sizes(text, path);
  auto want = want_field ? want_field : smt::expected_answer_of(text);
  if (!want || *want == smt::Answer::Unknown)
    throw UsageError(path + ": no '; expected: sat|unsat' line");
  smt::Result r = smt::run_smt2_script(text, o.timeout_ms, o.max_terms * 64);
  // Several checks (a synth lower bound: pruning lemmas, then the question): every check but the
  // last must be unsat, or the certificate does not prove what it says.
  if (std::string lf = smt::lemma_failure(r); !lf.empty()) {
    Outcome out = compare(r.answer, *want, r.seconds, r.reason);
    out.status = Status::Contradicted;
    out.note = lf;
    return out;
  }
  return compare(r.answer, *want, r.seconds, r.reason);
}

Outcome run_model_obligation(const ProofObligation& po, const ProveCommandOptions& o) {
  std::string where = po.path;
  std::string models = o.models_dir.empty() ? default_models_dir() : o.models_dir;
  Model m = parse_model_file(resolve_model_path(po.get("model"), models));
  Topology topo = Topology::parse(po.get("topology"));
  RunOptions ro;
  ro.domain = DomainKind::Ordered;
  if (auto ok = model_applies(m, topo, ro); ok && !*ok)
    throw UsageError(where + ": the model's 'requires' does not hold on " + topo.spec());
  auto t0 = std::chrono::steady_clock::now();
  Trace t = run_model(m, topo, ro);
  SmtOptions so;
  so.timeout_ms = o.timeout_ms;
  so.max_terms = o.max_terms;
  so.emit_dir = o.emit_dir;
  std::string alg = po.get("algebra");
  if (alg == "commutative")
    so.algebra = SmtAlgebra::Commutative;
  else if (alg == "associative")
    so.algebra = SmtAlgebra::Associative;
  else if (!alg.empty())
    throw UsageError(where + ": algebra must be commutative or associative");
  auto rs = smt_check_trace(t, so);
  // single-port and congestion are counts of the transfer list, which Z3 does not decide: the
  // executor's checks judge them, so the obligation still covers the schedule's port rules.
  for (auto& r : rs)
    if (r.name == "single-port")
      r = check_single_port(t, CheckOptions{});
    else if (r.name == "congestion")
      r = check_congestion(t, CheckOptions{});
  Outcome out;
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  bool fail = false, unknown = false;
  std::string failed, unknown_note;
  for (auto& r : rs) {
    if (r.verdict == Verdict::Fail) {
      fail = true;
      failed += (failed.empty() ? "" : ", ") + r.name;
      if (!r.violations.empty() && failed.find(':') == std::string::npos)
        failed += ": " + r.violations[0].message;
    }
    if (r.verdict == Verdict::Unknown) {
      unknown = true;
      unknown_note = r.name + ": " + r.note;
    }
  }
  if (t.failure.kind != RunFailure::Kind::None) {
    fail = true;
    failed += (failed.empty() ? "" : ", ") + std::string("run: ") + t.failure.message;
  }
  std::string expect = po.get("expect", "pass");
  if (expect != "pass" && expect != "fail")
    throw UsageError(where + ": expect must be pass or fail for kind model");
  if (fail) {
    out.answer = "fail (sat)";
    out.status = expect == "fail" ? Status::Ok : Status::Contradicted;
    out.note = failed;
  } else if (unknown) {
    out.answer = "unknown";
    out.status = Status::Inconclusive;
    out.note = unknown_note;
  } else {
    out.answer = "pass (unsat)";
    out.status = expect == "pass" ? Status::Ok : Status::Contradicted;
    out.note = fmt::format(
        "{} invariants proved for all inputs, {} operators; single-port and congestion judged by "
        "the executor's counts",
        std::count_if(rs.begin(), rs.end(),
                      [](auto& r) { return r.verdict == Verdict::Pass && smt_decides(r.name); }),
        (so.algebra == SmtAlgebra::Associative ||
         (so.algebra == SmtAlgebra::Auto && t.op_class == OperatorClass::Associative))
            ? "associative"
            : "commutative");
  }
  return out;
}

Outcome run_steps_obligation(const ProofObligation& po, const ProveCommandOptions& o) {
  // Theorem 3 on one n: the run's step count T satisfies 2T = n(n-1) (ground query on the count
  // the executor measured; the recurrence itself is proved for symbolic n by kind recurrence).
  std::string models = o.models_dir.empty() ? default_models_dir() : o.models_dir;
  Model m = parse_model_file(resolve_model_path(po.get("model"), models));
  Topology topo = Topology::parse(po.get("topology"));
  auto n = topo.params().find("n");
  if (n == topo.params().end()) throw UsageError(po.path + ": kind steps needs a star topology");
  RunOptions ro;
  Trace t = run_model(m, topo, ro);
  if (t.failure.kind != RunFailure::Kind::None) {
    Outcome out;
    out.status = Status::Contradicted;
    out.answer = "run failed";
    out.note = t.failure.message;
    return out;
  }
  LemmaQuery q;
  q.name = fmt::format("consistency-steps-{}-{}", po.get("model"), topo.spec());
  std::replace(q.name.begin(), q.name.end(), ':', '_');
  q.description = fmt::format(
      "consistency check (not a proof): on {} the run of {} took T = {} steps (measured by "
      "the executor) and 2T = n(n-1) for n = {}",
      topo.spec(), po.get("model"), t.steps, n->second);
  q.script = fmt::format(
      "; {}\n(declare-const a Bool)\n(declare-const n Int)\n(declare-const T Int)\n"
      "(assert (= n {}))\n(assert (= T {}))\n(assert (=> a (not (= (* 2 T) (* n (- n 1))))))\n",
      q.description, n->second, t.steps);
  q.size = 32;
  q.logic = "QF_NIA";
  smt::Result r = solve_lemma(q, smt::Limits{o.timeout_ms, o.max_terms}, o.emit_dir);
  auto out =
      compare(r.answer, parse_answer(po.get("expect", "unsat"), po.path), r.seconds, r.reason);
  out.note += (out.note.empty() ? "" : "; ") + fmt::format("{} steps", t.steps);
  return out;
}

// Theorems 1-3 for every n from the model's own program (smt/star_induction.hpp), beside the
// executor's runs on star:2..check-up-to (their counterexamples are concrete) and a cross-check of
// the symbolic step count against the steps the executor measured.
Outcome run_induction_obligation(const ProofObligation& po, const ProveCommandOptions& o) {
  std::string where = po.path;
  std::string models = o.models_dir.empty() ? default_models_dir() : o.models_dir;
  std::string arg = po.get("model");
  // A model given as a .coll path is relative to the proof file (mutants live beside theirs).
  if (fs::path(arg).extension() == ".coll" && fs::path(arg).is_relative())
    arg = (fs::path(po.path).parent_path() / arg).string();
  Model m = parse_model_file(resolve_model_path(arg, models));
  int up_to = parse_int(po.get("check-up-to", "5"), where);
  if (up_to < 2 || up_to > 7) throw UsageError(where + ": check-up-to must be in 2..7");
  std::string expect = po.get("expect", "proved");
  if (expect != "proved" && expect != "disproved")
    throw UsageError(where + ": expect must be proved or disproved for kind induction");
  std::string executor = po.get("executor", "yes");
  if (executor != "yes" && executor != "no")
    throw UsageError(where + ": executor must be yes or no");
  auto t0 = std::chrono::steady_clock::now();
  std::vector<std::string> exec_failures, failures, unknowns;

  // 1. The executor on star:2..up_to, every check (exact domain). `executor no` leaves the
  //    verdict to the induction alone (tests show its obligations failing on their own).
  std::vector<std::pair<int, std::uint32_t>> measured;
  for (int n = 2; executor == "yes" && n <= up_to; ++n) {
    Topology topo = Topology::parse(fmt::format("star:{}", n));
    RunOptions ro;
    if (auto ok = model_applies(m, topo, ro); ok && !*ok) continue;
    Trace t = run_model(m, topo, ro);
    if (t.failure.kind != RunFailure::Kind::None) {
      exec_failures.push_back(fmt::format("executor, star:{}: {}", n, t.failure.message));
      continue;
    }
    measured.emplace_back(n, t.steps);
    for (const auto& r : check_trace(t, CheckOptions{})) {
      if (r.verdict != Verdict::Fail) continue;
      exec_failures.push_back(fmt::format("executor, star:{}: {}: {}", n, r.name,
                                          r.violations.empty() ? r.note : r.violations[0].message));
      break;
    }
  }

  // 2. The symbolic induction.
  StarInduction a = analyze_star_induction(m);
  std::vector<InductionObligation> obs = a.obligations;
  if (!a.exchanges_per_level.empty() && !measured.empty()) {
    InductionObligation x;
    x.name = "steps-executor";
    x.description =
        "cross-check: c(2) + ... + c(n) equals the steps the executor measured on star:2..";
    x.script = "; " + x.description + "\n(declare-const a Bool)\n" + a.exchanges_fun();
    std::string any = "false";
    for (auto [n, steps] : measured) {
      std::string sum = "0";
      for (int k = 2; k <= n; ++k) sum = fmt::format("(+ {} (c {}))", sum, k);
      any = fmt::format("(or {} (not (= {} {})))", any, steps, sum);
    }
    x.script += fmt::format("(assert (=> a {}))\n", any);
    obs.push_back(std::move(x));
  }
  std::size_t proved = 0;
  for (const auto& ob : obs) {
    smt::Solver s(smt::Limits{o.timeout_ms, o.max_terms});
    s.reserve(ob.script.size() / 8 + 16);
    s.add(ob.script);
    smt::Result r = s.check({"a"}, ob.witnesses);
    if (!o.emit_dir.empty()) {
      make_dir_checked(o.emit_dir, "--emit-smt2");
      s.emit_smt2((fs::path(o.emit_dir) / (m.header.name + "-" + ob.name + ".smt2")).string(),
                  smt::Answer::Unsat, {"a"}, "unsat = the statement holds (proof by negation)");
    }
    if (r.answer == smt::Answer::Unsat) {
      ++proved;
    } else if (r.answer == smt::Answer::Sat) {
      std::string vals;
      for (const auto& [k, v] : r.values) {
        if (k.find('!') != std::string::npos && k.find("!a") == std::string::npos &&
            k.find("!b") == std::string::npos)
          continue;
        vals += fmt::format("{}{} = {}", vals.empty() ? "" : ", ", k, v);
      }
      failures.push_back(fmt::format("{} (line {}) is violated{}", ob.name, ob.loc.line,
                                     vals.empty() ? "" : " at " + vals));
    } else {
      unknowns.push_back(ob.name + ": " + r.reason);
    }
  }

  Outcome out;
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!failures.empty() || !exec_failures.empty()) {
    out.answer = "disproved";
    out.status = expect == "disproved" ? Status::Ok : Status::Contradicted;
    auto first = [](const std::vector<std::string>& v) {
      return v.size() > 1 ? fmt::format("{} (and {} more)", v[0], v.size() - 1) : v[0];
    };
    if (!exec_failures.empty()) out.note = first(exec_failures);
    if (!failures.empty())
      out.note += (out.note.empty() ? "induction: " : "; induction: ") + first(failures);
    if (!a.refusal.empty())
      out.note +=
          fmt::format("; the induction refuses at line {}: {}", a.refusal_loc.line, a.refusal);
  } else if (!a.refusal.empty() || !unknowns.empty()) {
    out.answer = "not proved";
    out.status = Status::Inconclusive;
    out.note = !a.refusal.empty()
                   ? fmt::format("outside the method at line {}: {}", a.refusal_loc.line, a.refusal)
                   : unknowns[0];
  } else {
    out.answer = "proved for every n >= 2";
    out.status = expect == "proved" ? Status::Ok : Status::Contradicted;
    std::string vars;
    for (const auto& v : a.invariant_vars) vars += (vars.empty() ? "" : ", ") + v;
    out.note = fmt::format(
        "{} obligations unsat: every node's output holds every contribution once (level "
        "invariant: {} = G_(k-1)), {}{}",
        proved, vars,
        a.steps_proved_obligations ? "the `steps` claim is the level-by-level sum"
                                   : "steps not proved (" + a.steps_note + ")",
        executor == "yes" ? fmt::format("; executor agrees on star:2..{}", up_to) : "");
  }
  return out;
}

// A `kind every-p` proof file (app/every_p_cmd.hpp), judged against its `expect`.
Outcome run_every_p_obligation(const std::string& path, const ProveCommandOptions& o) {
  EveryPProof pf = parse_every_p_proof(path);
  std::string arg = pf.model;
  if (fs::path(arg).extension() == ".coll" && fs::path(arg).is_relative())
    arg = (fs::path(path).parent_path() / arg).string();
  Model m = parse_model_file(
      resolve_model_path(arg, o.models_dir.empty() ? default_models_dir() : o.models_dir));
  EveryPOutcome r = prove_every_p(m, pf, o);
  Outcome out;
  out.seconds = r.seconds;
  out.answer = r.answer;
  out.note = r.note;
  int want = pf.expect == "proved"      ? kExitOk
             : pf.expect == "disproved" ? kExitViolation
                                        : kExitInconclusive;
  out.status = r.exit == want                                             ? Status::Ok
               : r.exit == kExitInconclusive && want != kExitInconclusive ? Status::Inconclusive
                                                                          : Status::Contradicted;
  return out;
}

bool is_every_p_proof(const std::string& path) {
  std::string text = read_file_bounded(path, std::uint64_t{1} << 20, "a proof file");
  std::istringstream is(text);
  std::string line;
  while (std::getline(is, line)) {
    std::istringstream ls(line.substr(0, line.find('#')));
    std::string k, v;
    if ((ls >> k >> v) && k == "kind") return v == "every-p";
  }
  return false;
}

Outcome run_obligation(const std::string& path, const ProveCommandOptions& opts,
                       std::string& kind) {
  if (fs::path(path).extension() == ".smt2") {
    kind = "smt2";
    return run_smt2(path, std::nullopt, opts);
  }
  if (is_every_p_proof(path)) {
    kind = "every-p";
    return run_every_p_obligation(path, opts);
  }
  ProofObligation po = parse_proof_file(path);
  ProveCommandOptions o = opts;
  // `timeout MS` in a proof file raises the per-query limit for that obligation.
  if (!po.get("timeout").empty())
    o.timeout_ms =
        std::max(o.timeout_ms, static_cast<unsigned>(parse_int(po.get("timeout"), path)));
  kind = po.get("kind");
  smt::Limits lim{o.timeout_ms, o.max_terms};
  if (kind == "smt2") {
    fs::path f = fs::path(path).parent_path() / po.get("file");
    std::optional<smt::Answer> want;
    if (!po.get("expect").empty()) want = parse_answer(po.get("expect"), path);
    return run_smt2(f.string(), want, o);
  }
  if (kind == "model") return run_model_obligation(po, o);
  if (kind == "steps") return run_steps_obligation(po, o);
  if (kind == "induction") return run_induction_obligation(po, o);
  if (kind == "claim") {
    std::string ns = po.get("n");
    int n = ns == "symbolic" ? 0 : parse_int(ns, path);
    LemmaQuery q = claim_query(n, po.get("variant") == "false");
    smt::Result r = solve_lemma(q, lim, o.emit_dir);
    return compare(r.answer, parse_answer(po.get("expect", "unsat"), path), r.seconds, r.reason);
  }
  if (kind == "recurrence") {
    LemmaQuery q = recurrence_query(po.get("part"), po.get("variant") == "false");
    smt::Result r = solve_lemma(q, lim, o.emit_dir);
    return compare(r.answer, parse_answer(po.get("expect", "unsat"), path), r.seconds, r.reason);
  }
  if (kind == "synth") {
    SynthOptions so;
    so.collective = po.get("collective");
    so.topology = po.get("topology");
    so.steps = static_cast<unsigned>(parse_int(po.get("steps"), path));
    std::string port = po.get("port", "single");
    if (port != "single" && port != "all") throw UsageError(path + ": port must be single or all");
    so.port = port == "all" ? PortModel::All : PortModel::Single;
    so.timeout_ms = o.timeout_ms;
    so.max_terms = std::max<std::uint64_t>(o.max_terms, 30'000'000);
    so.emit_dir = o.emit_dir;
    so.uniform = po.get("uniform", "no") == "yes";
    SynthResult r = synthesize(so);
    const auto& a = r.attempts.back();
    auto out = compare(a.answer, parse_answer(po.get("expect"), path), a.seconds, a.reason);
    if (r.trace && a.answer == smt::Answer::Sat) {
      // Re-check the synthesized schedule with the executor's checkers and the data flow, under
      // the machine model it was synthesized for.
      std::string why;
      if (!synthesized_ok(recheck_synthesized(*r.trace, so.port), &why)) {
        out.status = Status::Contradicted;
        out.note = "the synthesized schedule fails " + why;
      }
    }
    return out;
  }
  throw UsageError(path + ": unknown kind '" + kind +
                   "' (model, induction, steps, claim, recurrence, synth, smt2)");
}

std::vector<std::string> expand(const std::vector<std::string>& paths) {
  std::vector<std::string> out;
  for (const auto& p : paths) {
    if (fs::is_directory(p)) {
      std::vector<std::string> files;
      for (auto& e : fs::directory_iterator(p)) {
        auto ext = e.path().extension();
        if (e.is_regular_file() && (ext == ".proof" || ext == ".smt2"))
          files.push_back(e.path().string());
      }
      std::sort(files.begin(), files.end());
      out.insert(out.end(), files.begin(), files.end());
    } else if (fs::exists(p)) {
      out.push_back(p);
    } else {
      throw UsageError("no such file or directory: " + p);
    }
  }
  return out;
}

}  // namespace

std::vector<CheckResult> recheck_synthesized(const Trace& t, PortModel port) {
  // synth's model: a transfer carries every item the sender chooses, one transfer per directed
  // link per step; chunk bandwidths of a listed topology (dgx1, files) are not part of it.
  CheckOptions co;
  co.congestion_in_transfers = true;
  std::vector<CheckResult> rs = check_trace(t, co);
  if (t.topology.declares_bandwidth())
    for (auto& c : rs)
      if (c.name == "congestion")
        c.note += fmt::format(
            "; synth's message model: one transfer per directed link per step, "
            "{}'s bandwidths in chunks not modelled",
            t.topology.spec());
  if (port == PortModel::All)
    for (auto& c : rs)
      if (c.name == "single-port") {
        c = CheckResult{};
        c.name = "single-port";
        c.verdict = Verdict::NotChecked;
        c.note =
            "all-port schedule: the single-port rule does not apply (congestion checks at most one "
            "transfer per directed link per step)";
      }
  bool has_dataflow =
      std::any_of(rs.begin(), rs.end(), [](const CheckResult& c) { return c.name == "dataflow"; });
  if (!has_dataflow) {
    Dataflow df = analyze_dataflow(t, {});
    rs.push_back(std::move(df.dataflow));
    rs.push_back(std::move(df.match));
  }
  return rs;
}

bool synthesized_ok(const std::vector<CheckResult>& rs, std::string* why) {
  for (const auto& c : rs)
    if (c.verdict == Verdict::Fail && c.name != "nodup") {
      if (why)
        *why = c.name + (c.violations.empty() ? std::string() : ": " + c.violations[0].message);
      return false;
    }
  return true;
}

std::vector<CheckResult> smt_verify_engine(const Model& m, const Topology& topo,
                                           const RunOptions& ro, const Trace& trace,
                                           const SmtOptions& so_in) {
  // The question of the run's domain: the exact and fingerprint domains are commutative (integer
  // sums); the ordered domain asks the model's own operator, and for a commutative operator
  // compares operand order too, so that an order-only difference is reported as the executor's
  // ordered domain reports it (commutative-only).
  SmtOptions so = so_in;
  DomainKind k = trace.domain ? trace.domain->kind() : DomainKind::Fingerprint;
  if (so.algebra == SmtAlgebra::Auto && ro.domain != DomainKind::Ordered)
    so.algebra = SmtAlgebra::Commutative;
  bool seq = so.algebra == SmtAlgebra::Associative ||
             (so.algebra == SmtAlgebra::Auto && trace.op_class == OperatorClass::Associative);
  so.report_order = ro.domain == DomainKind::Ordered && !seq;
  auto cannot = [&](const std::string& why) {
    std::vector<CheckResult> rs;
    for (const char* n : kCheckNames) {
      CheckResult r;
      r.name = n;
      r.verdict = smt_decides(n) ? Verdict::Unknown : Verdict::NotChecked;
      r.note = smt_decides(n) ? why : smt_not_decided_note(n);
      for (const auto& [name, open] : trace.file_not_checked)  // the file leaves it open
        if (name == n) {
          r.verdict = Verdict::NotChecked;
          r.note = open;
        }
      rs.push_back(std::move(r));
    }
    return rs;
  };
  // The schedule's derivations are read from an ordered-domain run (operand order is the
  // schedule's combine structure); the schedule does not depend on the domain.
  if (k == DomainKind::Ordered) return smt_check_trace(trace, so);
  // A schedule file (no model to re-run): its own terms, when its domain has them.
  if (m.procedure.empty() && m.body.empty()) {
    if (trace.domain && trace.domain->inspectable()) {
      so.algebra = SmtAlgebra::Commutative;
      so.report_order = false;
      return smt_check_trace(trace, so);
    }
    return cannot(
        "the SMT engine cannot judge this schedule file: its values are in the fingerprint "
        "domain, which keeps no terms to build a query from (write it in the exact or ordered "
        "domain, or use --engine exec)");
  }
  RunOptions r2 = ro;
  r2.domain = DomainKind::Ordered;
  try {
    Trace t2 = run_model(m, topo, r2);
    return smt_check_trace(t2, so);
  } catch (const LimitError& e) {
    return cannot(std::string("the ordered-domain run the SMT engine needs was refused: ") +
                  e.what());
  }
}

int run_prove_command(const ProveCommandOptions& o, std::ostream& out, std::ostream& err) {
  if (o.every_p) return run_every_p_command(o, out, err);
  if (o.paths.empty()) {
    err << "collv: error: prove needs a proof file or directory (e.g. collv prove proofs/)\n";
    return kExitUsage;
  }
  std::vector<std::string> files;
  try {
    files = expand(o.paths);
  } catch (const UsageError& e) {
    err << "collv: error: " << e.what() << "\n";
    return kExitUsage;
  }
  if (files.empty()) {
    err << "collv: error: no *.proof or *.smt2 files in the given paths\n";
    return kExitUsage;
  }
  std::size_t ok = 0, bad = 0, unknown = 0, broken = 0;
  for (const auto& f : files) {
    std::string kind;
    try {
      Outcome r = run_obligation(f, o, kind);
      const char* st = r.status == Status::Ok             ? "ok"
                       : r.status == Status::Contradicted ? "FAILED"
                                                          : "inconclusive";
      (r.status == Status::Ok ? ok : r.status == Status::Contradicted ? bad : unknown)++;
      if (!o.quiet || r.status != Status::Ok)
        out << fmt::format("{:<12} {}  [{}] {} in {:.3f} s{}\n", st, f, kind, r.answer, r.seconds,
                           r.note.empty() ? "" : " -- " + r.note);
    } catch (const LimitError& e) {  // refused at a limit: undecided, exit 3 (exit_codes.hpp)
      ++unknown;
      std::string what = e.what();
      out << fmt::format("{:<12} {}  -- {}\n", "inconclusive", f,
                         what.rfind(f, 0) == 0 ? what : f + ": " + what);
    } catch (const std::exception& e) {
      ++broken;
      std::string what = e.what();  // most messages start with the file already
      err << "collv: error: " << (what.rfind(f, 0) == 0 ? what : f + ": " + what) << "\n";
    }
  }
  out << fmt::format("{} obligations: {} ok, {} failed, {} inconclusive, {} unreadable\n",
                     files.size(), ok, bad, unknown, broken);
  if (bad) return kExitViolation;
  if (broken) return kExitUsage;
  if (unknown) return kExitInconclusive;
  return kExitOk;
}

int run_synth_command(const SynthCommandOptions& o, std::ostream& stdout_stream,
                      std::ostream& err) {
  // `--json -` keeps standard output for the JSON alone: the text report goes to stderr.
  std::ostream& out = o.json_file == "-" ? err : stdout_stream;
  SynthResult r;
  try {
    SynthOptions so = o.synth;
    if (!o.quiet) so.progress = [&err](const std::string& line) { err << line << std::endl; };
    r = synthesize(so);
  } catch (const LimitError& e) {  // --timeout, --max-memory: inconclusive (exit_codes.hpp)
    err << "collv: error: " << e.what() << "\n";
    return kExitInconclusive;
  } catch (const SpecError& e) {
    err << "collv: error: " << e.what() << "\n";
    return kExitUsage;
  } catch (const UsageError& e) {
    err << "collv: error: " << e.what() << "\n";
    return kExitUsage;
  }
  const auto& s = o.synth;
  if (!o.quiet) {
    for (const auto& a : r.attempts)
      out << fmt::format("T = {:<3} {:<8} {:.3f} s{}{}\n", a.steps, smt::answer_name(a.answer),
                         a.seconds, a.reason.empty() ? "" : " (" + a.reason + ")",
                         a.file.empty() ? "" : "  -> " + a.file);
  }
  std::string port = s.port == PortModel::Single ? "single-port" : "all-port";
  if (r.answer == smt::Answer::Sat || (r.trace && s.least)) {
    const Trace& t = *r.trace;
    out << fmt::format("{}: a {}-step {}{}{} schedule on {} ({} transfers){}\n", s.collective,
                       r.steps, port, s.uniform ? " uniform" : "",
                       s.invariant.empty() ? ""
                                           : fmt::format(" (invariant under {}, order {})",
                                                         s.invariant, r.invariant_order),
                       t.topology.spec(), t.transfers.size(), r.note.empty() ? "" : "; " + r.note);
    if (!o.quiet && (o.schedule || t.transfers.size() <= 200)) {
      print_schedule(t, out);
    }
    // Independent re-check by the executor's checkers and the data flow, under the machine model
    // synthesized for (all-port: no single-port rule; congestion allows one transfer per
    // directed link per step).
    std::string verdicts, why;
    auto rs = recheck_synthesized(t, s.port);
    bool ok = synthesized_ok(rs, &why);
    if (ok && s.nodup)  // asked for: the executor's nodup check must pass too
      for (auto& c : rs)
        if (c.name == "nodup" && c.verdict != Verdict::Pass) {
          ok = false;
          why = "nodup (asked for with --nodup): " +
                (c.violations.empty() ? c.note : c.violations[0].message);
        }
    for (auto& c : rs) {
      if (c.verdict == Verdict::NotChecked) continue;
      verdicts += fmt::format(" {}={}", c.name, verdict_name(c.verdict));
    }
    out << fmt::format("re-checked by the executor's checkers ({}):{}\n", port, verdicts);
    if (!o.json_file.empty()) {
      std::string text =
          trace_to_json(t).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
      if (o.json_file == "-") {
        stdout_stream << text;
      } else {
        try {
          write_file_checked(o.json_file, text);
        } catch (const UsageError& e) {
          err << "collv: error: " << e.what() << "\n";
          return kExitUsage;
        }
      }
    }
    if (!o.picture.empty()) {
      try {
        write_trace_picture(t, o.picture);
        out << "wrote " << o.picture << "\n";
      } catch (const std::exception& e) {
        err << "collv: error: " << e.what() << "\n";
        return kExitUsage;
      }
    }
    if (!ok) {
      err << "collv: internal error: the synthesized schedule fails " << why
          << " (please report this bug)\n";
      return kExitInternal;
    }
    return r.answer == smt::Answer::Sat ? kExitOk : kExitInconclusive;
  }
  if (r.answer == smt::Answer::Unsat && s.uniform) {
    out << fmt::format(
        "{}: no uniform schedule (every node on the same link in each step) on {} with at most {} "
        "steps ({}: unsat). This is NOT a lower bound for general schedules.\n",
        s.collective, s.topology, r.steps, s.backend == "cadical" ? "CaDiCaL" : "Z3");
    return kExitViolation;
  }
  if (r.answer == smt::Answer::Unsat && !s.invariant.empty() && r.invariant_order > 1) {
    out << fmt::format(
        "{}: no {} schedule invariant under the group generated by {} (order {}) on {} with at "
        "most {} steps (CaDiCaL: unsat). This is NOT a lower bound for general schedules.\n",
        s.collective, port, s.invariant, r.invariant_order, s.topology, r.steps);
    return kExitViolation;
  }
  if (r.answer == smt::Answer::Unsat) {
    unsigned lb = s.least ? r.steps + 1 : s.steps + 1;
    out << fmt::format(
        "{}: no {} schedule on {} with at most {} steps ({}: unsat); lower bound: {} steps\n",
        s.collective, port, s.topology, r.steps, s.backend == "cadical" ? "CaDiCaL" : "Z3", lb);
    if (s.collective == "allgather" || s.collective == "gossip")
      out << "(every all-reduce schedule is also a gossip schedule: the bound holds for all-reduce "
             "too)\n";
    return kExitViolation;
  }
  out << fmt::format("{}: inconclusive for {} steps on {}: {}\n", s.collective, r.steps, s.topology,
                     r.attempts.empty() ? r.note : r.attempts.back().reason);
  return kExitInconclusive;
}

}  // namespace collv
