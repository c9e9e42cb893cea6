// Certificates that could fail: no emitted query compares a term with itself, and breaking one
// transfer of each proved schedule turns its postcondition certificate sat. Also the SMT engine's
// verdict when a derivation is missing, commutative-only as the executor reports it, engine
// attribution in `collv verify --engine both`, and synthesis re-checked under all-port rules.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include "app/commands.hpp"
#include "app/smt_cmds.hpp"
#include "app/verify_cmd.hpp"
#include "check/dataflow.hpp"
#include "exec/executor.hpp"
#include "smt/lemmas.hpp"
#include "smt/prove.hpp"
#include "smt/solver.hpp"

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

// Every comparison (=, distinct) anywhere in the script with two syntactically identical sides.
void find_self_comparisons(const Sexp& s, std::vector<std::string>& out) {
  if (!s.is_list) return;
  if (!s.list.empty() && !s.list[0].is_list &&
      (s.list[0].atom == "=" || s.list[0].atom == "distinct")) {
    for (std::size_t a = 1; a < s.list.size(); ++a)
      for (std::size_t b = a + 1; b < s.list.size(); ++b)
        if (s.list[a].print() == s.list[b].print()) out.push_back(s.print().substr(0, 200));
  }
  for (const auto& c : s.list) find_self_comparisons(c, out);
}

std::vector<std::string> self_comparisons(const std::string& text) {
  std::vector<std::string> out;
  for (const auto& s : parse_sexps(text)) find_self_comparisons(s, out);
  return out;
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
}

TEST_CASE("certificates of the proofs (star:3, star:4) are no tautologies", "[smt][cert]") {
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
  CHECK(named(rs, "single-port").verdict == Verdict::Pass);  // ground: no data involved
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
