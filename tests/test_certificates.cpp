// Certificates that could fail: no emitted query compares a term with itself, and breaking one
// transfer of each proved schedule turns its postcondition certificate sat. Also the SMT engine's
// verdict when a derivation is missing, commutative-only as the executor reports it, engine
// attribution in `collv verify --engine both`, and synthesis re-checked under all-port rules.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>
#include "app/commands.hpp"
#include "app/smt_cmds.hpp"
#include "app/verify_cmd.hpp"
#include "check/dataflow.hpp"
#include "exec/executor.hpp"
#include "exec/trace.hpp"
#include "smt/lemmas.hpp"
#include "smt/prove.hpp"
#include "smt/solver.hpp"
#include "smt/synth.hpp"

using namespace collv;
namespace fs = std::filesystem;

namespace {

const std::string kRoot = COLLV_SOURCE_DIR;

fs::path fresh_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("collv_test_cert_" + name);
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// A minimal S-expression reader: comments dropped, atoms and lists, printed back with single
// spaces, so two terms that differ only in whitespace print the same.
struct Sexp {
  std::string atom;
  std::vector<Sexp> list;
  bool is_list = false;
  std::string print() const {
    if (!is_list) return atom;
    std::string s = "(";
    for (std::size_t i = 0; i < list.size(); ++i) s += (i ? " " : "") + list[i].print();
    return s + ")";
  }
};

std::vector<Sexp> parse_sexps(const std::string& text) {
  std::vector<Sexp> stack(1);
  stack[0].is_list = true;
  std::size_t i = 0;
  while (i < text.size()) {
    char c = text[i];
    if (c == ';') {
      while (i < text.size() && text[i] != '\n') ++i;
    } else if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
    } else if (c == '(') {
      Sexp s;
      s.is_list = true;
      stack.push_back(s);
      ++i;
    } else if (c == ')') {
      REQUIRE(stack.size() > 1);
      Sexp s = std::move(stack.back());
      stack.pop_back();
      stack.back().list.push_back(std::move(s));
      ++i;
    } else if (c == '|' || c == '"') {
      std::size_t j = text.find(c, i + 1);
      REQUIRE(j != std::string::npos);
      Sexp s;
      s.atom = text.substr(i, j - i + 1);
      stack.back().list.push_back(s);
      i = j + 1;
    } else {
      std::size_t j = i;
      while (j < text.size() && !std::isspace(static_cast<unsigned char>(text[j])) &&
             text[j] != '(' && text[j] != ')')
        ++j;
      Sexp s;
      s.atom = text.substr(i, j - i);
      stack.back().list.push_back(s);
      i = j;
    }
  }
  REQUIRE(stack.size() == 1);
  return stack[0].list;
}

// Every comparison (=, distinct) anywhere in the script with two sides that are the same term once
// definitions are expanded: `define-fun` (with or without parameters) and `let` are macros, so
// `(define-fun a () Int (+ x y)) (define-fun b () Int (+ x y)) (assert (not (= a b)))` compares a
// term with itself. Terms are hash-consed after expansion (a DAG, not text), so shared
// definitions are expanded once; `forall`/`exists` variables shadow definitions.
class ExpandedScan {
 public:
  std::vector<std::string> out;

  void command(const Sexp& c) {
    if (!c.is_list || c.list.empty() || c.list[0].is_list) return;
    const std::string& head = c.list[0].atom;
    if (head == "assert" && c.list.size() == 2) {
      expand(c.list[1], {});
    } else if (head == "define-fun" && c.list.size() == 5 && !c.list[1].is_list) {
      const Sexp& params = c.list[2];
      if (params.is_list && params.list.empty()) {
        defs_[c.list[1].atom] = expand(c.list[4], {});
      } else {
        std::vector<std::string> names;
        for (const auto& p : params.list)
          if (p.is_list && !p.list.empty()) names.push_back(p.list[0].atom);
        fns_[c.list[1].atom] = {names, c.list[4]};
        // the body alone, parameters as opaque atoms
        Env env;
        for (const auto& n : names) env[n] = atom_id("?" + n);
        expand(c.list[4], env);
      }
    }
  }

 private:
  using Env = std::map<std::string, int>;
  struct Fn {
    std::vector<std::string> params;
    Sexp body;
  };
  std::map<std::string, int> atoms_;
  std::map<std::vector<int>, int> lists_;
  std::map<std::string, int> defs_;
  std::map<std::string, Fn> fns_;
  int next_ = 0;

  int atom_id(const std::string& a) {
    auto [it, fresh] = atoms_.emplace(a, next_);
    if (fresh) ++next_;
    return it->second;
  }
  int list_id(const std::vector<int>& ks) {
    auto [it, fresh] = lists_.emplace(ks, next_);
    if (fresh) ++next_;
    return it->second;
  }
  int expand(const Sexp& s, const Env& env) {
    if (!s.is_list) {
      if (auto f = env.find(s.atom); f != env.end()) return f->second;
      if (auto f = defs_.find(s.atom); f != defs_.end()) return f->second;
      return atom_id(s.atom);
    }
    if (s.list.empty()) return list_id({});
    const std::string head = s.list[0].is_list ? "" : s.list[0].atom;
    if (head == "let" && s.list.size() == 3 && s.list[1].is_list) {
      Env inner = env;
      for (const auto& b : s.list[1].list)
        if (b.is_list && b.list.size() == 2) inner[b.list[0].atom] = expand(b.list[1], env);
      return expand(s.list[2], inner);
    }
    if ((head == "forall" || head == "exists") && s.list.size() == 3 && s.list[1].is_list) {
      Env inner = env;
      for (const auto& b : s.list[1].list)
        if (b.is_list && !b.list.empty()) inner[b.list[0].atom] = atom_id("?" + b.list[0].atom);
      return list_id({atom_id(head), expand(s.list[1], {}), expand(s.list[2], inner)});
    }
    std::vector<int> ks;
    for (const auto& c : s.list) ks.push_back(expand(c, env));
    if (auto f = fns_.find(head); f != fns_.end() && f->second.params.size() + 1 == s.list.size()) {
      Env call;
      for (std::size_t i = 0; i < f->second.params.size(); ++i)
        call[f->second.params[i]] = ks[i + 1];
      return expand(f->second.body, call);
    }
    if (head == "=" || head == "distinct")
      for (std::size_t a = 1; a < ks.size(); ++a)
        for (std::size_t b = a + 1; b < ks.size(); ++b)
          if (ks[a] == ks[b]) out.push_back(s.print().substr(0, 200));
    return list_id(ks);
  }
};

std::vector<std::string> self_comparisons(const std::string& text) {
  ExpandedScan scan;
  for (const auto& s : parse_sexps(text)) scan.command(s);
  return scan.out;
}

// The emitted certificates of every file in `dir` (recursively not), scanned.
std::size_t scan_dir(const fs::path& dir) {
  std::size_t n = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() != ".smt2") continue;
    INFO(e.path().string());
    auto bad = self_comparisons(slurp(e.path()));
    CHECK(bad.empty());
    for (const auto& b : bad) UNSCOPED_INFO(b);
    ++n;
  }
  return n;
}

const CheckResult& named(const std::vector<CheckResult>& rs, const std::string& n) {
  for (const auto& r : rs)
    if (r.name == n) return r;
  FAIL("no result named " << n);
  return rs.front();
}

// The payload item that a node's final buffer uses last (a Received part of a final derivation):
// breaking it must change that node's result.
std::optional<std::uint32_t> used_payload(const Dataflow& df) {
  for (const auto& node : df.final_output)
    for (const auto& dv : node)
      for (auto it = dv.parts.rbegin(); it != dv.parts.rend(); ++it)
        if (it->kind == HeldRef::Kind::Received) return it->index;
  return std::nullopt;
}

// For each `kind model` obligation in proofs/ that expects pass and whose topology passes
// `want`: the proof passes; with one transfer's derivation broken (replaced by the sender's own
// input, or by nothing when that is what it was), the postcondition is sat, and its emitted
// certificate is sat under Z3 alone.
int break_each_schedule(const std::function<bool(const std::string&)>& want) {
  int broken = 0;
  std::vector<fs::path> files;
  for (const char* sub : {"/proofs", "/proofs/slow"})
    for (const auto& e : fs::directory_iterator(kRoot + sub)) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (const auto& path : files) {
    if (path.extension() != ".proof") continue;
    ProofObligation po = parse_proof_file(path.string());
    if (po.get("kind") != "model" || po.get("expect", "pass") != "pass") continue;
    if (!want(po.get("topology"))) continue;
    INFO(path.string());
    Model m = parse_model_file(resolve_model_path(po.get("model"), kRoot + "/models"));
    RunOptions ro;
    ro.domain = DomainKind::Ordered;
    Trace t = run_model(m, Topology::parse(po.get("topology")), ro);
    Dataflow df = analyze_dataflow(t, {});
    REQUIRE(df.dataflow.verdict == Verdict::Pass);
    SmtOptions so;
    CHECK(named(smt_check_trace(t, df, so), "postcondition").verdict == Verdict::Pass);
    auto k = used_payload(df);
    REQUIRE(k);
    Derivation& dv = df.payload[*k];
    Derivation own;
    own.found = true;
    own.parts = {HeldRef{HeldRef::Kind::Input, 0}};
    dv = dv.parts == own.parts ? Derivation{{}, true} : own;
    fs::path dir = fresh_dir("broken");
    so.emit_dir = dir.string();
    auto rs = smt_check_trace(t, df, so);
    CHECK(named(rs, "postcondition").verdict == Verdict::Fail);
    std::string cert;
    for (const auto& f : fs::directory_iterator(dir))
      if (f.path().string().find("-postcondition.smt2") != std::string::npos) cert = f.path();
    REQUIRE(!cert.empty());
    std::string text = slurp(cert);
    CHECK(smt::expected_answer_of(text) == smt::Answer::Sat);
    CHECK(smt::run_smt2_script(text, 60000, 1ull << 32).answer == smt::Answer::Sat);
    ++broken;
  }
  return broken;
}

bool small_star(const std::string& spec) { return spec == "star:3" || spec == "star:4"; }

}  // namespace

TEST_CASE("certificate scan: the scanner finds a comparison of a term with itself", "[smt][cert]") {
  CHECK(self_comparisons("(assert (not (= v63 v63)))").size() == 1);
  CHECK(self_comparisons("(assert (=> a (not (=  (+ x1  x2)\n (+ x1 x2)))))").size() == 1);
  CHECK(self_comparisons("(assert (distinct x (seq.unit y) x))").size() == 1);
  CHECK(self_comparisons("; (= v v)\n(assert (not (= (+ x1 x2) (+ x2 x1))))").empty());
  CHECK(self_comparisons("(assert (= w_step 3))").empty());
  // Definitions are expanded: two names defined as the same term are the same term (the
  // allgather_star certificates before 2026-11-26: o0_10 and e1 both (seq.unit x1_0)).
  CHECK(self_comparisons("(define-fun o0_10 () (Seq Int) (seq.unit x1_0))\n"
                         "(define-fun e1 () (Seq Int) (seq.unit x1_0))\n"
                         "(assert (=> a (or false (not (= o0_10 e1)))))")
            .size() == 1);
  CHECK(self_comparisons("(define-fun m1 () Int (+ x1 x2))(define-fun o0 () Int m1)"
                         "(define-fun e0 () Int (+ x1 x2))(assert (not (= o0 e0)))")
            .size() == 1);
  CHECK(self_comparisons("(assert (let ((a (+ x 1)) (b (+ x 1))) (not (= a b))))").size() == 1);
  CHECK(self_comparisons("(define-fun f ((y Int)) Int (+ y 1))(assert (distinct (f x) (+ x 1)))")
            .size() == 1);
  // ... but not a comparison that needs a theory (order of a sum) or rests on a declared fact.
  CHECK(self_comparisons("(define-fun o () Int (+ x2 x1))(define-fun e () Int (+ x1 x2))"
                         "(assert (not (= o e)))")
            .empty());
  CHECK(self_comparisons("(declare-const m7 Int)(assert (= m7 (+ x1 x2)))"
                         "(define-fun e () Int (+ x1 x2))(assert (not (= m7 e)))")
            .empty());
  CHECK(self_comparisons("(assert (let ((a x)) (forall ((x Int)) (not (= a x)))))").empty());
}

// By hand: `COLLV_SCAN_DIR=DIR collv_tests "[scan]"` scans the certificates in DIR (e.g. written by
// `collv prove proofs --emit-smt2 DIR`) and lists every comparison of equal terms.
TEST_CASE("certificate scan of $COLLV_SCAN_DIR", "[.scan][manual]") {
  const char* d = std::getenv("COLLV_SCAN_DIR");
  REQUIRE(d);
  std::size_t n = 0;
  for (const auto& e : fs::directory_iterator(d)) {
    if (e.path().extension() != ".smt2") continue;
    auto bad = self_comparisons(slurp(e.path()));
    if (!bad.empty())
      WARN(e.path().filename().string()
           << ": " << bad.size() << " comparisons of equal terms, e.g. " << bad[0]);
    n += bad.size();
  }
  CHECK(n == 0);
}

TEST_CASE("certificates of the proofs (star:3, star:4) are no tautologies", "[smt][cert][heavy]") {
  fs::path src = fresh_dir("small_src"), dir = fresh_dir("small");
  for (const auto& e : fs::directory_iterator(kRoot + "/proofs")) {
    if (e.path().extension() != ".proof") continue;
    std::string text = slurp(e.path());
    if (text.find("star:3") == std::string::npos && text.find("star:4") == std::string::npos &&
        text.find("kind recurrence") == std::string::npos &&
        text.find("kind claim") == std::string::npos)
      continue;
    if (text.find("kind synth") != std::string::npos) continue;  // timed by other tests
    fs::copy_file(e.path(), src / e.path().filename());
  }
  ProveCommandOptions o;
  o.paths = {src.string()};
  o.emit_dir = dir.string();
  o.models_dir = kRoot + "/models";
  std::ostringstream out, err;
  CHECK(run_prove_command(o, out, err) == 0);
  INFO(out.str() << err.str());
  CHECK(scan_dir(dir) >= 20);
}

TEST_CASE("collv prove proofs/ --emit-smt2: no certificate is a tautology and z3 alone agrees",
          "[smt][cert][slow]") {
  fs::path dir = fresh_dir("all");
  std::string cmd = std::string(COLLV_BINARY) + " prove " + kRoot + "/proofs --quiet --emit-smt2 " +
                    dir.string() + " > " + (dir / "out.txt").string() + " 2>&1";
  int rc = std::system(cmd.c_str());
  INFO(slurp(dir / "out.txt"));
  CHECK(WIFEXITED(rc));
  CHECK(WEXITSTATUS(rc) == 0);
  CHECK(scan_dir(dir) >= 60);
  // and z3 alone, without collv, gives every certificate the answer it names
  std::string recheck = "bash " + kRoot + "/scripts/recheck-certificates.sh " + dir.string() +
                        " > " + (dir / "recheck.txt").string() + " 2>&1";
  rc = std::system(recheck.c_str());
  INFO(slurp(dir / "recheck.txt"));
  CHECK(WIFEXITED(rc));
  CHECK(WEXITSTATUS(rc) == 0);
  CHECK(slurp(dir / "recheck.txt").find(" 0 not") != std::string::npos);
}

TEST_CASE("breaking one transfer of each proved schedule makes its certificate sat (star:3, 4)",
          "[smt][cert]") {
  CHECK(break_each_schedule(small_star) >= 4);
}

// About 6 minutes on this 2-core machine (the star:5 and star:6 schedules): run by hand with
// `collv_tests "[manual]"`; the suite runs the star:3 and star:4 schedules above.
TEST_CASE("breaking one transfer of each proved schedule makes its certificate sat (all)",
          "[smt][cert][.manual]") {
  CHECK(break_each_schedule([](const std::string&) { return true; }) >= 8);
}

TEST_CASE("allgather_star on star:3: its certificates rest on the transfers", "[smt][cert]") {
  Model m = parse_model_file(resolve_model_path("allgather_star", kRoot + "/models"));
  RunOptions ro;
  ro.domain = DomainKind::Ordered;
  Trace t = run_model(m, Topology::parse("star:3"), ro);
  Dataflow df = analyze_dataflow(t, {});
  fs::path dir = fresh_dir("allgather3");
  SmtOptions so;
  so.emit_dir = dir.string();
  auto rs = smt_check_trace(t, df, so);
  CHECK(named(rs, "postcondition").verdict == Verdict::Pass);
  CHECK(named(rs, "final-buffers").verdict == Verdict::Pass);
  // single-port and congestion are counts of collv's transfer list: the executor's, no query, no
  // certificate
  CHECK(named(rs, "single-port").verdict == Verdict::NotChecked);
  CHECK(named(rs, "congestion").note.find("decided by the executor") != std::string::npos);
  CHECK_FALSE(fs::exists(dir / "allgather_star-star_3-single-port.smt2"));
  CHECK_FALSE(fs::exists(dir / "allgather_star-star_3-congestion.smt2"));
  std::string post = slurp(dir / "allgather_star-star_3-postcondition.smt2");
  CHECK(self_comparisons(post).empty());
  CHECK(smt::run_smt2_script(post, 60000, 1ull << 30).answer == smt::Answer::Unsat);
  // Every final item another node sent is reached through transfer facts: deleting the fact of
  // the item a final buffer uses last makes the certificate sat (z3 alone, no collv terms).
  auto k = used_payload(df);
  REQUIRE(k);
  std::string fact = "(assert (= m" + std::to_string(*k) + " ";
  auto at = post.find(fact);
  REQUIRE(at != std::string::npos);
  std::string cut = post;
  cut.erase(at, post.find('\n', at) - at);
  CHECK(smt::run_smt2_script(cut, 60000, 1ull << 30).answer == smt::Answer::Sat);
  // Breaking that transfer (its sender forwards its own input instead) turns the postcondition
  // and its emitted certificate sat.
  Derivation& dv = df.payload[*k];
  Derivation own;
  own.found = true;
  own.parts = {HeldRef{HeldRef::Kind::Input, 0}};
  dv = dv.parts == own.parts ? Derivation{{}, true} : own;
  fs::path dir2 = fresh_dir("allgather3_broken");
  so.emit_dir = dir2.string();
  rs = smt_check_trace(t, df, so);
  CHECK(named(rs, "postcondition").verdict == Verdict::Fail);
  std::string broken = slurp(dir2 / "allgather_star-star_3-postcondition.smt2");
  CHECK(smt::expected_answer_of(broken) == smt::Answer::Sat);
  CHECK(smt::run_smt2_script(broken, 60000, 1ull << 30).answer == smt::Answer::Sat);
}

TEST_CASE("smt engine: a missing derivation is not proved, never a pass", "[smt][cert]") {
  Model m = parse_model_file(resolve_model_path("allreduce_star", kRoot + "/models"));
  RunOptions ro;
  ro.domain = DomainKind::Ordered;
  Trace t = run_model(m, Topology::parse("star:3"), ro);
  Dataflow df = analyze_dataflow(t, {});
  REQUIRE(named(smt_check_trace(t, df, {}), "postcondition").verdict == Verdict::Pass);
  df.payload[0].found = false;
  auto rs = smt_check_trace(t, df, {});
  for (const char* n : {"postcondition", "final-buffers", "nodup"}) {
    INFO(n);
    CHECK(named(rs, n).verdict == Verdict::Unknown);
    CHECK(named(rs, n).note.find("not proved") != std::string::npos);
  }
  CHECK(named(rs, "route").verdict == Verdict::Pass);  // ground: no data involved
  // A derivation that uses a value the sender did not hold yet is no derivation either.
  Dataflow df2 = analyze_dataflow(t, {});
  std::uint32_t last = static_cast<std::uint32_t>(t.payload.size() - 1);
  df2.payload[0].parts = {HeldRef{HeldRef::Kind::Received, last}};
  CHECK(named(smt_check_trace(t, df2, {}), "postcondition").verdict == Verdict::Unknown);
}

TEST_CASE("smt engine: NODUP is asked of the derivation terms", "[smt][cert]") {
  Model m = parse_model_file(resolve_model_path("allreduce_star", kRoot + "/models"));
  RunOptions ro;
  ro.domain = DomainKind::Ordered;
  Trace t = run_model(m, Topology::parse("star:3"), ro);
  Dataflow df = analyze_dataflow(t, {});
  CHECK(named(smt_check_trace(t, df, {}), "nodup").verdict == Verdict::Pass);
  // Node's own input added once more to an item it sends: counted twice.
  auto k = used_payload(df);
  REQUIRE(k);
  // Find the sender's derivation of *k and add its own input to it twice.
  df.payload[*k].parts.push_back(HeldRef{HeldRef::Kind::Input, 0});
  df.payload[*k].parts.push_back(HeldRef{HeldRef::Kind::Input, 0});
  auto rs = smt_check_trace(t, df, {});
  CHECK(named(rs, "nodup").verdict == Verdict::Fail);
  CHECK(named(rs, "postcondition").verdict == Verdict::Fail);
}

TEST_CASE("verify --engine smt on a commutative model: commutative-only, exit 0, as the executor",
          "[smt][verify]") {
  VerifyOptions o;
  o.targets = {"allreduce_star"};
  o.models_dir = kRoot + "/models";
  o.topologies = {"star:3"};
  o.quiet = true;
  ExtraEngine smt = [](const Model& m, const Topology& t, const RunOptions& ro, const Trace& tr) {
    return smt_verify_engine(m, t, ro, tr, SmtOptions{});
  };
  std::ostringstream err;
  VerifyReport ex = verify(o, smt, err);
  o.engine = "smt";
  VerifyReport sm = verify(o, smt, err);
  REQUIRE(ex.runs.size() == 2);
  REQUIRE(sm.runs.size() == 2);
  CHECK(sm.exit_code == 0);
  CHECK(ex.exit_code == 0);
  for (std::size_t i = 0; i < 2; ++i) {
    INFO(ex.runs[i].domain);
    CHECK(sm.runs[i].status == ex.runs[i].status);
  }
  CHECK(sm.runs[1].status == "commutative-only");
  const CheckResult& post = named(sm.runs[1].checks, "postcondition");
  CHECK(post.decided_by == "smt");
  CHECK(post.order_only);
}

TEST_CASE("verify --engine both: which engine decided each check, disagreements flagged",
          "[smt][verify]") {
  VerifyOptions o;
  o.targets = {kRoot + "/tests/mutants/post_broadcast_skips_node.coll"};
  o.models_dir = kRoot + "/models";
  o.sizes = std::make_pair(3, 3);
  o.domain = "exact";
  o.source = "0";
  o.quiet = true;
  o.engine = "both";
  ExtraEngine real = [](const Model& m, const Topology& t, const RunOptions& ro, const Trace& tr) {
    return smt_verify_engine(m, t, ro, tr, SmtOptions{});
  };
  std::ostringstream err;
  VerifyReport rep = verify(o, real, err);
  REQUIRE(!rep.runs.empty());
  for (const auto& r : rep.runs) {
    CHECK(named(r.checks, "postcondition").decided_by == "exec+smt");
    CHECK(named(r.checks, "postcondition").verdict == Verdict::Fail);
    CHECK_FALSE(named(r.checks, "postcondition").engines_disagree);
    CHECK(named(r.checks, "steps").decided_by == "exec");
  }
  // An engine that passes everything disagrees with the executor on the postcondition.
  ExtraEngine lenient = [](const Model&, const Topology&, const RunOptions&, const Trace&) {
    std::vector<CheckResult> rs;
    for (const char* n : {"single-port", "postcondition"}) {
      CheckResult c;
      c.name = n;
      c.verdict = Verdict::Pass;
      rs.push_back(c);
    }
    return rs;
  };
  VerifyReport bad = verify(o, lenient, err);
  REQUIRE(!bad.runs.empty());
  const CheckResult& post = named(bad.runs[0].checks, "postcondition");
  CHECK(post.engines_disagree);
  CHECK(post.verdict == Verdict::Fail);
  std::string json = report_to_json(bad);
  CHECK(json.find("\"engines_disagree\"") != std::string::npos);
  CHECK(json.find("\"decided_by\"") != std::string::npos);
  std::ostringstream out;
  run_verify_command(
      [&] {
        auto x = o;
        x.quiet = false;
        return x;
      }(),
      lenient, out, err);
  CHECK(out.str().find("ENGINES DISAGREE on postcondition") != std::string::npos);
  CHECK(out.str().find("exec+smt:") != std::string::npos);
}

TEST_CASE("verify --trace --engine smt|both: the SMT engine judges the file, or says it cannot",
          "[smt][verify]") {
  ExtraEngine real = [](const Model& m, const Topology& t, const RunOptions& ro, const Trace& tr) {
    return smt_verify_engine(m, t, ro, tr, SmtOptions{});
  };
  fs::path dir = fresh_dir("trace_engine");
  auto write = [&](const std::string& domain, const std::string& name) {
    Model m = parse_model_file(resolve_model_path("allreduce_star", kRoot + "/models"));
    RunOptions ro;
    ro.domain = domain == "exact" ? DomainKind::Exact : DomainKind::Fingerprint;
    Trace t = run_model(m, Topology::parse("star:3"), ro);
    std::ofstream(dir / name) << trace_to_json(t).dump(1);
    return (dir / name).string();
  };
  std::string exact = write("exact", "exact.json"), fp = write("fingerprint", "fp.json");
  for (const char* engine : {"smt", "both"}) {
    INFO(engine);
    VerifyOptions o;
    o.trace_files = {exact};
    o.quiet = true;
    o.engine = engine;
    std::ostringstream err;
    VerifyReport rep = verify(o, real, err);
    REQUIRE(rep.runs.size() == 1);
    CHECK(rep.exit_code == 0);
    const CheckResult& post = named(rep.runs[0].checks, "postcondition");
    CHECK(post.decided_by == (std::string(engine) == "smt" ? "smt" : "exec+smt"));
    CHECK(post.verdict == Verdict::Pass);
    // the fingerprint domain keeps no terms: inconclusive (exit 3) with the reason, never a pass
    o.trace_files = {fp};
    VerifyReport rfp = verify(o, real, err);
    REQUIRE(rfp.runs.size() == 1);
    CHECK(rfp.exit_code == 3);
    CHECK(named(rfp.runs[0].checks, "postcondition").verdict == Verdict::Unknown);
    CHECK(named(rfp.runs[0].checks, "postcondition").note.find("fingerprint domain") !=
          std::string::npos);
  }
  // A broken file: the SMT engine finds it too (one transfer dropped).
  std::string text = slurp(exact);
  auto j = nlohmann::json::parse(text);
  j["transfers"].erase(j["transfers"].begin());
  std::ofstream(dir / "broken.json") << j.dump(1);
  VerifyOptions o;
  o.trace_files = {(dir / "broken.json").string()};
  o.quiet = true;
  o.engine = "smt";
  std::ostringstream err;
  VerifyReport rb = verify(o, real, err);
  REQUIRE(rb.runs.size() == 1);
  CHECK(rb.exit_code != 0);
}

TEST_CASE("synth --port all: the schedule is re-checked under all-port rules and exits 0",
          "[smt][synth]") {
  SynthCommandOptions o;
  o.synth.collective = "allgather";
  o.synth.topology = "ring:8";
  o.synth.steps = 4;
  o.synth.port = PortModel::All;
  std::ostringstream out, err;
  CHECK(run_synth_command(o, out, err) == 0);
  INFO(out.str() << err.str());
  CHECK(out.str().find("(all-port)") != std::string::npos);
  CHECK(out.str().find("dataflow=pass") != std::string::npos);
  // The same schedule under the single-port rule fails it (so the rule really is not applied).
  SynthOptions so = o.synth;
  SynthResult r = synthesize(so);
  REQUIRE(r.trace);
  Trace as_single = *r.trace;
  as_single.port = PortModel::Single;
  CHECK(named(check_trace(as_single, {}), "single-port").verdict == Verdict::Fail);
  auto all = recheck_synthesized(*r.trace, PortModel::All);
  CHECK(named(all, "single-port").verdict == Verdict::NotChecked);
  CHECK(synthesized_ok(all, nullptr));
  // Two transfers on one directed link in one step still fail under all-port.
  Trace t2 = *r.trace;
  t2.transfers.push_back(t2.transfers.front());
  std::string why;
  CHECK_FALSE(synthesized_ok(recheck_synthesized(t2, PortModel::All), &why));
  CHECK(why.find("congestion") != std::string::npos);
}

namespace {

// The certificate `collv synth ... --emit-smt2` writes for one question.
std::string synth_certificate(const std::string& coll, const std::string& spec, unsigned T,
                              const fs::path& dir) {
  SynthOptions so;
  so.collective = coll;
  so.topology = spec;
  so.steps = T;
  so.emit_dir = dir.string();
  SynthResult r = synthesize(so);
  REQUIRE(r.attempts.size() == 1);
  REQUIRE_FALSE(r.attempts[0].file.empty());
  return slurp(r.attempts[0].file);
}

// The names a `(assert (= pruningT (and true (not x) ...)))` line sets false.
std::vector<std::string> pruned_names(const std::string& text, unsigned t) {
  std::string head = "(assert (= pruning" + std::to_string(t) + " (and true";
  auto at = text.find(head);
  REQUIRE(at != std::string::npos);
  std::string line = text.substr(at, text.find('\n', at) - at);
  std::vector<std::string> out;
  for (std::size_t p = line.find("(not "); p != std::string::npos; p = line.find("(not ", p + 1))
    out.push_back(line.substr(p + 5, line.find(')', p) - p - 5));
  return out;
}

}  // namespace

TEST_CASE(
    "synth lower-bound certificates prove collv's distance pruning inside the file (issue 21)",
    "[smt][cert][issue21]") {
  fs::path dir = fresh_dir("lb");
  std::string text = synth_certificate("allreduce", "star:3", 2, dir);
  // z3 alone: two lemma checks (pruning1, pruning2 follow from the step relation) and the
  // question, all unsat; nothing in it compares equal terms.
  smt::Result r = smt::run_smt2_script(text, 60000, 1ull << 30);
  REQUIRE(r.answers.size() == 3);
  for (auto a : r.answers) CHECK(a == smt::Answer::Unsat);
  CHECK(smt::lemma_failure(r).empty());
  CHECK(self_comparisons(text).empty());
  // The question does not need collv's word: asked of the constraints alone (no lemma, no
  // pruning assumed) it is unsat too.
  std::string bare =
      text.substr(0, text.find("(check-sat-assuming")) + "(check-sat-assuming (goal))\n";
  CHECK(smt::run_smt2_script(bare, 60000, 1ull << 30).answer == smt::Answer::Unsat);
  // A wrong distance: pruning1 claims that a neighbour of node 0 cannot have 0's contribution
  // after step 1, which a message in step 1 can give it; the lemma check answers sat.
  std::vector<std::string> far1 = pruned_names(text, 1);
  std::string near;  // s0_<v>_0_1: node 0 sends its own contribution to neighbour v in step 1
  for (std::size_t p = text.find("(declare-const s0_"); p != std::string::npos;
       p = text.find("(declare-const s0_", p + 1)) {
    std::string name = text.substr(p + 15, text.find(' ', p + 15) - p - 15);
    if (name.size() > 4 && name.compare(name.size() - 4, 4, "_0_1") == 0) near = name;
  }
  REQUIRE_FALSE(near.empty());
  CHECK(std::find(far1.begin(), far1.end(), near) == far1.end());
  std::string wrong = text;
  wrong.replace(wrong.find("(assert (= pruning1 (and true") + 29, 0, " (not " + near + ")");
  smt::Result rw = smt::run_smt2_script(wrong, 60000, 1ull << 30);
  CHECK(rw.answers.at(0) == smt::Answer::Sat);
  CHECK_FALSE(smt::lemma_failure(rw).empty());
  // A step relation left out (the constraint that a pruned variable needs a held atom): the
  // variable is free and the lemma check of its step answers sat.
  std::string var = far1.at(0);
  std::string support = "(assert (=> " + var + " (or";
  auto at = text.find(support);
  REQUIRE(at != std::string::npos);
  std::string cut = text;
  cut.erase(at, text.find('\n', at) + 1 - at);
  CHECK_FALSE(smt::lemma_failure(smt::run_smt2_script(cut, 60000, 1ull << 30)).empty());
  // collv prove re-checks such a file the same way: the broken one is a failure (exit 1).
  std::ofstream(dir / "wrong.smt2") << wrong;
  ProveCommandOptions po;
  po.paths = {(dir / "wrong.smt2").string()};
  std::ostringstream out, err;
  CHECK(run_prove_command(po, out, err) == 1);
  CHECK(out.str().find("lemma check 1") != std::string::npos);
  po.paths = {(dir / "synth-allreduce-star_3-single-T2.smt2").string()};
  std::ostringstream out2, err2;
  CHECK(run_prove_command(po, out2, err2) == 0);
}

TEST_CASE("synth certificates: gossip and broadcast lower bounds re-check with z3 alone",
          "[smt][cert][issue21]") {
  fs::path dir = fresh_dir("lb2");
  std::string g = synth_certificate("allgather", "star:4", 5, dir);
  smt::Result r = smt::run_smt2_script(g, 60000, 1ull << 30);
  CHECK(r.answers.size() == 6);  // five lemma checks and the question
  CHECK(r.answer == smt::Answer::Unsat);
  CHECK(smt::lemma_failure(r).empty());
  CHECK(self_comparisons(g).empty());
  std::string b = synth_certificate("broadcast", "hypercube:3", 2, dir);
  r = smt::run_smt2_script(b, 60000, 1ull << 30);
  CHECK(r.answers.size() == 3);
  CHECK(r.answer == smt::Answer::Unsat);
  CHECK(smt::lemma_failure(r).empty());
  // the question alone, from the constraints: unsat without the lemmas
  std::string bare = b.substr(0, b.find("(check-sat-assuming")) + "(check-sat-assuming (goal))\n";
  CHECK(smt::run_smt2_script(bare, 60000, 1ull << 30).answer == smt::Answer::Unsat);
  // a sat answer's certificate is the pruned query (a model of it is a schedule): one check
  std::string s = synth_certificate("broadcast", "hypercube:3", 3, dir);
  r = smt::run_smt2_script(s, 60000, 1ull << 30);
  CHECK(r.answers.size() == 1);
  CHECK(r.answer == smt::Answer::Sat);
}

namespace {
// Runs collv with `args`; returns the exit code and fills `out` with stdout and stderr.
int collv_cli(const std::string& args, std::string& out) {
  fs::path f = fs::temp_directory_path() / "collv_test_cert_cli.txt";
  int rc =
      std::system((std::string(COLLV_BINARY) + " " + args + " > " + f.string() + " 2>&1").c_str());
  out = slurp(f);
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}
}  // namespace

TEST_CASE("synth and the SMT engine refuse a query over --max-memory before building it (issue 26)",
          "[smt][issue26]") {
  std::string out;
  // complete:1024 broadcast, 2 steps: about 10 M terms, about 10 GiB: refused at the default 8 GiB
  CHECK(collv_cli("synth broadcast -t complete:1024 --steps 2 --quiet", out) == 3);
  CHECK(out.find("--max-memory") != std::string::npos);
  // complete:4096: refused from the topology's size, before the distances are computed
  CHECK(collv_cli("synth broadcast -t complete:4096 --steps 2 --quiet", out) == 3);
  CHECK(out.find("refused before it was built") != std::string::npos);
  // the twin that fits: answered
  CHECK(collv_cli("synth broadcast -t complete:8 --steps 3 --quiet", out) == 0);
  CHECK(collv_cli("verify scatter_hypercube -t hypercube:10 -s 0 -d exact --engine smt "
                  "--max-memory 1024 --models " +
                      kRoot + "/models",
                  out) == 3);
  CHECK(out.find("refused before it was built") != std::string::npos);
  CHECK(collv_cli("verify scatter_hypercube -t hypercube:3 -s 0 -d exact --engine smt "
                  "--max-memory 1024 --quiet --models " +
                      kRoot + "/models",
                  out) == 0);
}

TEST_CASE("synth and verify --timeout: the whole command stops with exit 3 (issue 26)",
          "[smt][issue26]") {
  std::string out;
  CHECK(collv_cli("synth broadcast -t complete:512 --steps 2 --timeout 1000 --quiet", out) == 3);
  CHECK(out.find("--timeout 1000 ms") != std::string::npos);
  CHECK(collv_cli("verify allgather_ring -t ring:3000 --timeout 300 --quiet --models " + kRoot +
                      "/models",
                  out) == 3);
  CHECK(collv_cli(
            "verify allgather_ring -t ring:8 --timeout 30000 --quiet --models " + kRoot + "/models",
            out) == 0);
}
