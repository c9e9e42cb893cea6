// collv verify: every mutant is caught by the check it names, the sources' own cases, the JSON
// and JUnit reports, exit codes and determinism.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "app/smt_cmds.hpp"
#include "app/verify_cmd.hpp"

using namespace collv;
namespace fs = std::filesystem;

namespace {

const std::string kRoot = COLLV_SOURCE_DIR;

VerifyOptions opts_for(std::vector<std::string> targets) {
  VerifyOptions o;
  o.targets = std::move(targets);
  o.models_dir = kRoot + "/models";
  o.quiet = true;
  return o;
}

const CheckResult& check_named(const VerifyRun& r, const std::string& name) {
  for (const auto& c : r.checks)
    if (c.name == name) return c;
  throw std::runtime_error("no check " + name);
}

std::string first_line_value(const std::string& path, const std::string& key) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("# " + key + ": ", 0) == 0) return line.substr(key.size() + 4);
  return "";
}

// A small well-formedness check of XML: every tag closes in order and attributes are quoted.
bool well_formed_xml(const std::string& s, std::string& why) {
  std::vector<std::string> stack;
  std::size_t i = 0;
  if (s.rfind("<?xml", 0) == 0) i = s.find("?>") + 2;
  std::regex attr(R"(^\s*[A-Za-z_:][-A-Za-z0-9_:.]*="[^"<]*")");
  while ((i = s.find('<', i)) != std::string::npos) {
    std::size_t j = s.find('>', i);
    if (j == std::string::npos) return why = "unclosed tag", false;
    std::string tag = s.substr(i + 1, j - i - 1);
    i = j + 1;
    if (tag.empty()) return why = "empty tag", false;
    if (tag[0] == '/') {
      if (stack.empty() || stack.back() != tag.substr(1))
        return why = "mismatched </" + tag.substr(1) + ">", false;
      stack.pop_back();
      continue;
    }
    bool self = tag.back() == '/';
    if (self) tag.pop_back();
    std::size_t sp = tag.find_first_of(" \n\t");
    std::string name = tag.substr(0, sp);
    std::string rest = sp == std::string::npos ? "" : tag.substr(sp);
    std::smatch m;
    while (!rest.empty() && rest.find_first_not_of(" \n\t") != std::string::npos) {
      if (!std::regex_search(rest, m, attr))
        return why = "bad attribute in <" + name + ">: " + rest, false;
      rest = m.suffix();
    }
    if (!self) stack.push_back(name);
  }
  if (!stack.empty()) return why = "unclosed <" + stack.back() + ">", false;
  return true;
}

int run_collv(const std::string& args, std::string* out = nullptr) {
  std::string file = (fs::temp_directory_path() / "collv_test_out.txt").string();
  int rc = std::system((std::string(COLLV_BINARY) + " " + args + " >" + file + " 2>&1").c_str());
  if (out) {
    std::ifstream in(file);
    std::stringstream ss;
    ss << in.rdbuf();
    *out = ss.str();
  }
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

}  // namespace

TEST_CASE("each mutant is caught by the check it names", "[verify][mutants]") {
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(kRoot + "/tests/mutants"))
    if (e.path().extension() == ".coll" || e.path().extension() == ".json")
      files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  REQUIRE(files.size() >= 20);
  std::map<std::string, int> per_check;
  for (const auto& f : files) {
    // A schedule file (single-port: a run of a model never breaks it, docs/language.md) names
    // its check in the key "expect".
    bool schedule = fs::path(f).extension() == ".json";
    std::string expect = schedule ? nlohmann::json::parse(std::ifstream(f)).value("expect", "")
                                  : first_line_value(f, "expect");
    std::string topo = schedule ? "" : first_line_value(f, "topology");
    INFO(f << " should fail " << expect);
    REQUIRE_FALSE(expect.empty());
    // The newer checks' mutants are named after them: match_, dataflow_, runtime_.
    std::string base = fs::path(f).filename().string();
    for (const char* pre : {"match", "dataflow", "runtime"})
      if (base.rfind(std::string(pre) + "_", 0) == 0) CHECK(expect == pre);
    VerifyOptions o = opts_for(schedule ? std::vector<std::string>{} : std::vector{f});
    if (schedule) o.trace_files = {f};
    o.max_p = 16;
    o.max_star = 4;
    if (!topo.empty()) o.topologies = {topo};
    std::ostringstream err;
    VerifyReport rep = verify(o, nullptr, err);
    REQUIRE_FALSE(rep.runs.empty());
    std::size_t caught = 0;
    for (const auto& r : rep.runs)
      if (check_named(r, expect).verdict == Verdict::Fail) ++caught;
    CHECK(caught > 0);
    CHECK(rep.exit_code == 1);
    ++per_check[expect];
  }
  for (const char* name : kCheckNames) {
    INFO("mutants for " << name);
    CHECK(per_check[name] >= 2);
  }
}

TEST_CASE("the hypercube all-to-all broadcast on ring:8 fails congestion with loads 1, 2, 4",
          "[verify]") {
  VerifyOptions o = opts_for({"allgather_hypercube"});
  o.topologies = {"ring:8"};
  o.domain = "exact";
  std::ostringstream err;
  VerifyReport rep = verify(o, nullptr, err);
  REQUIRE(rep.runs.size() == 1);
  const CheckResult& c = check_named(rep.runs[0], "congestion");
  REQUIRE(c.verdict == Verdict::Fail);
  REQUIRE(c.violations.size() == 2);  // steps 2 and 3; step 1 has load 1
  CHECK(*c.violations[0].step == 2);
  CHECK(c.violations[0].loads.front().transfers == 2);
  CHECK(*c.violations[1].step == 3);
  CHECK(c.violations[1].loads.front().transfers == 4);
  CHECK(c.note == "largest load on one directed link in one step: 4");
  CHECK(rep.exit_code == 1);
  // On its own family it is congestion-free.
  VerifyOptions h = opts_for({"allgather_hypercube"});
  h.topologies = {"hypercube:3"};
  VerifyReport ok = verify(h, nullptr, err);
  for (const auto& r : ok.runs) CHECK(check_named(r, "congestion").verdict == Verdict::Pass);
}

TEST_CASE("Algorithm 4.9 as printed fails the ordered domain and passes the exact one",
          "[verify]") {
  VerifyOptions o = opts_for({"scan_hypercube", "scan_hypercube_ordered"});
  o.topologies = {"hypercube:3"};
  std::ostringstream err;
  VerifyReport rep = verify(o, nullptr, err);
  REQUIRE(rep.runs.size() == 4);
  for (const auto& r : rep.runs) {
    INFO(r.model << " " << r.domain);
    const CheckResult& post = check_named(r, "postcondition");
    if (r.model == "scan_hypercube" && r.domain == "ordered") {
      CHECK(post.verdict == Verdict::Fail);
      CHECK(post.order_only);
      CHECK(r.status == "commutative-only");
    } else {
      CHECK(post.verdict == Verdict::Pass);
      CHECK(r.status == "pass");
    }
  }
  CHECK(rep.exit_code == 0);
}

TEST_CASE("a model that declares an associative operator fails, not 'commutative-only'",
          "[verify]") {
  std::string path = (fs::temp_directory_path() / "collv_assoc_scan.coll").string();
  std::ifstream in(kRoot + "/models/scan_hypercube.coll");
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text =
      std::regex_replace(ss.str(), std::regex("operator   commutative"), "operator   associative");
  std::ofstream(path) << text;
  VerifyOptions o = opts_for({path});
  o.topologies = {"hypercube:2"};
  o.domain = "ordered";
  std::ostringstream err;
  VerifyReport rep = verify(o, nullptr, err);
  REQUIRE(rep.runs.size() == 1);
  CHECK(rep.runs[0].status == "fail");
  CHECK(rep.exit_code == 1);
}

TEST_CASE("the JSON and JUnit reports are valid and complete", "[verify]") {
  VerifyOptions o =
      opts_for({"allgather_hypercube", kRoot + "/tests/mutants/deadlock_exchange_recv_first.coll"});
  o.topologies = {"hypercube:2", "ring:4"};
  std::ostringstream err;
  VerifyReport rep = verify(o, nullptr, err);
  auto j = nlohmann::json::parse(report_to_json(rep));
  REQUIRE(j["results"].size() == rep.runs.size());
  for (const auto& r : j["results"]) {
    for (const char* k :
         {"model", "topology", "p", "source", "domain", "steps", "cost", "checks", "violations"})
      CHECK(r.contains(k));
    CHECK(r["cost"].contains("ts"));
    CHECK(r["cost"].contains("tw"));
    for (const char* name : kCheckNames) {
      REQUIRE(r["checks"].contains(name));
      std::string v = r["checks"][name];
      CHECK((v == "pass" || v == "fail" || v == "unknown" || v == "not-checked"));
    }
  }
  auto s = j["summary"];
  CHECK(s["runs"] == rep.runs.size());
  CHECK(s["failed"].get<int>() > 0);
  CHECK(s["passed"].get<int>() + s["failed"].get<int>() + s["inconclusive"].get<int>() +
            s["errors"].get<int>() ==
        s["runs"].get<int>());
  std::string xml = report_to_junit(rep), why;
  CHECK(well_formed_xml(xml, why));
  INFO(why);
  CHECK(xml.find("<failure message=\"") != std::string::npos);
  std::regex tests_attr(R"re(<testsuite name="collv verify" tests="(\d+)")re");
  std::smatch m;
  REQUIRE(std::regex_search(xml, m, tests_attr));
  CHECK(std::stoul(m[1]) == rep.runs.size() * std::size(kCheckNames));
  std::string broken = "<a><b></a></b>";
  CHECK_FALSE(well_formed_xml(broken, why));
}

TEST_CASE("verify exit codes: 0 holds, 1 violation, 2 bad usage, 3 inconclusive", "[verify][cli]") {
  std::string out;
  CHECK(run_collv("verify allreduce_star --sizes 2..4 --quiet", &out) == 0);
  CHECK(out.find("passed, 0 failed") != std::string::npos);
  CHECK(run_collv("verify " + kRoot +
                  "/tests/mutants/steps_ring_claims_p.coll --sizes 3..4 --quiet") == 1);
  CHECK(run_collv("verify allreduce_star --sizes 5..2") == 2);
  CHECK(run_collv("verify no_such_model") == 2);
  CHECK(run_collv("verify allreduce_star --topology bogus:3") == 2);
  CHECK(run_collv("verify allreduce_star --sizes 3 --max-steps 2 --quiet") == 3);
  CHECK(run_collv("topology bogus:3", &out) == 2);
  CHECK(std::count(out.begin(), out.end(), '\n') == 1);
}

TEST_CASE("verify prints the same bytes twice", "[verify][cli]") {
  std::string a, b;
  run_collv("verify allgather_ring reduce_hypercube_general --sizes 2..4 --json -", &a);
  run_collv("verify allgather_ring reduce_hypercube_general --sizes 2..4 --json -", &b);
  CHECK(a == b);
  CHECK(a.size() > 1000);
}

TEST_CASE("a model with a syntax error gets file:line:col and exit code 2", "[verify][cli]") {
  std::string path = (fs::temp_directory_path() / "collv_broken.coll").string();
  std::ofstream(path)
      << "model broken\n  collective allreduce\n  input x\n  output x\n"
         "procedure P\nbegin\n  for i := 0 to 3 do\n    x := x +;\n  endfor\nend P\n";
  std::string out;
  CHECK(run_collv("run " + path + " -t ring:4", &out) == 2);
  CHECK(out == path + ":8:13: error: expected an expression, found ';'\n");
  CHECK(run_collv("verify " + path, &out) == 2);
}

namespace {

// Every run through both engines; returns the number of runs and fails on any disagreement.
// Then the same runs with --engine exec and --engine smt alone: the same status per run and the
// same exit code.
std::size_t count_engine_disagreements(VerifyOptions o, std::size_t& disagreements) {
  o.sizes = std::make_pair(2, 3);
  ExtraEngine smt = [](const Model& m, const Topology& t, const RunOptions& ro, const Trace& tr) {
    return smt_verify_engine(m, t, ro, tr, SmtOptions{});  // --algebra auto, as the CLI
  };
  std::ostringstream err;
  o.engine = "both";
  VerifyReport rep = verify(o, smt, err);
  for (const auto& r : rep.runs)
    for (const auto& c : r.checks)
      for (const auto& v : c.violations)
        if (v.message.find("the engines disagree") != std::string::npos) {
          ++disagreements;
          UNSCOPED_INFO(r.model << " on " << r.topology << " (" << r.domain << "): " << c.name
                                << ": " << v.message);
        }
  o.engine = "exec";
  VerifyReport ex = verify(o, smt, err);
  o.engine = "smt";
  VerifyReport sm = verify(o, smt, err);
  if (ex.exit_code != sm.exit_code) {
    ++disagreements;
    UNSCOPED_INFO("exit codes: exec " << ex.exit_code << ", smt " << sm.exit_code);
  }
  if (ex.runs.size() != sm.runs.size()) ++disagreements;
  for (std::size_t i = 0; i < ex.runs.size() && i < sm.runs.size(); ++i)
    if (ex.runs[i].status != sm.runs[i].status) {
      ++disagreements;
      UNSCOPED_INFO(ex.runs[i].model << " on " << ex.runs[i].topology << " (" << ex.runs[i].domain
                                     << "): exec " << ex.runs[i].status << ", smt "
                                     << sm.runs[i].status);
    }
  return rep.runs.size();
}

}  // namespace

TEST_CASE("the executor and the SMT engine agree on every model and every mutant",
          "[verify][smt][slow]") {
  std::size_t dis = 0;
  VerifyOptions models = opts_for({});
  models.all = true;
  CHECK(count_engine_disagreements(models, dis) > 200);
  VerifyOptions mutants = opts_for({kRoot + "/tests/mutants"});
  CHECK(count_engine_disagreements(mutants, dis) > 50);
  CHECK(dis == 0);
}
