// The interop corpus (../shared/data/schedules/corpus): real schedule files written by other tools,
// each with the verdict `collv verify` must give (expected.tsv; the corpus README says why). Every
// row runs `collv verify corpus/PATH [-t TOPOLOGY] [-s ROOT] --json -` with a timeout; the exit
// code must be the row's, and for an expected failure each named check must be "fail" in some
// results[].checks or be the invariant of a violation. One test case per format, so a format's rows
// run by name: collv_tests "corpus: sccl-json*". COLLV_CORPUS overrides the folder (a worktree has
// no ../shared); a missing folder or a format with no rows fails, never passes with zero rows.
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "cli.hpp"

namespace {

std::string corpus_dir() {
  if (const char* env = std::getenv("COLLV_CORPUS")) return env;
  return COLLV_SOURCE_DIR + "/../shared/data/schedules/corpus";
}

struct Row {
  std::size_t line = 0;
  std::string path, format, topology, root, expected, checks, why, cls, collective;
};

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  std::istringstream in(s);
  while (std::getline(in, cur, sep)) out.push_back(cur);
  if (!s.empty() && s.back() == sep) out.emplace_back();
  return out;
}

// The rows of expected.tsv; the header must name the columns the README lists.
std::vector<Row> read_rows(const std::string& dir) {
  std::ifstream in(dir + "/expected.tsv");
  REQUIRE(in.good());
  std::string line;
  REQUIRE(std::getline(in, line));
  std::vector<std::string> head = split(line, '\t');
  REQUIRE(head.size() >= 9);
  const std::vector<std::string> want = {"path",   "format", "topology", "root",      "expected",
                                         "checks", "why",    "class",    "collective"};
  for (std::size_t k = 0; k < want.size(); ++k) REQUIRE(head[k] == want[k]);
  std::vector<Row> rows;
  std::size_t n = 1;
  while (std::getline(in, line)) {
    ++n;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    std::vector<std::string> f = split(line, '\t');
    INFO("expected.tsv line " << n << ": " << line);
    REQUIRE(f.size() >= 9);
    rows.push_back({n, f[0], f[1], f[2], f[3], f[4], f[5], f[6], f[7], f[8]});
  }
  return rows;
}

// Runs collv in the corpus folder; the JSON report on stdout, stderr apart. Returns the exit code
// (-1: it did not exit, e.g. killed by the timeout).
int run_row(const std::string& dir, const Row& r, bool name_collective, const std::string& extra,
            std::string& json_out, std::string& err_out) {
  std::string args = "verify '" + r.path + "'";
  if (r.topology != "-") args += " -t '" + r.topology + "'";
  if (r.root != "-") args += " -s '" + r.root + "'";
  if (name_collective && r.collective != "-") args += " --collective '" + r.collective + "'";
  args += extra + " --json -";
  std::string out = collv::test::unique_temp("collv_corpus_out");
  std::string err = collv::test::unique_temp("collv_corpus_err");
  std::string cmd = "cd '" + dir + "' && timeout 60 " + std::string(COLLV_BINARY) + " " + args +
                    " >'" + out + "' 2>'" + err + "'";
  int rc = std::system(cmd.c_str());
  json_out = collv::test::slurp(out);
  err_out = collv::test::slurp(err);
  std::error_code ec;
  std::filesystem::remove(out, ec);
  std::filesystem::remove(err, ec);
  if (!WIFEXITED(rc)) return -1;
  int code = WEXITSTATUS(rc);
  return code == 124 ? -1 : code;  // timeout's own exit code
}

// What is wrong with a row's outcome ("" when it is right).
std::string judge(const Row& r, int rc, const std::string& json_text, const std::string& err) {
  // --engine both: the two engines must never disagree (verify's JSON lists the checks where
  // they did under results[].engines_disagree).
  if (json_text.find("\"engines_disagree\"") != std::string::npos) {
    std::string which;
    try {
      for (const auto& res : nlohmann::json::parse(json_text).value("results", nlohmann::json()))
        if (res.contains("engines_disagree")) which += res["engines_disagree"].dump();
    } catch (const std::exception&) {
    }
    return "ENGINES DISAGREE on " + which;
  }
  std::string got = "exit " + std::to_string(rc);
  auto first_line = [](const std::string& s) {
    std::string l = s.substr(0, s.find('\n'));
    return l.size() > 300 ? l.substr(0, 300) + "..." : l;
  };
  if (std::to_string(rc) != r.expected) {
    std::string why = got;
    if (!err.empty()) why += " (" + first_line(err) + ")";
    // The failing checks, so that a wrong verdict says what collv found.
    try {
      auto j = nlohmann::json::parse(json_text);
      std::string failing;
      for (const auto& res : j.value("results", nlohmann::json::array())) {
        for (auto it = res["checks"].begin(); it != res["checks"].end(); ++it)
          if (it.value() == "fail") failing += (failing.empty() ? "" : ",") + it.key();
        if (res.contains("error")) why += " error: " + first_line(res["error"].get<std::string>());
      }
      if (!failing.empty()) why += " failing: " + failing;
    } catch (const std::exception&) {
    }
    return "expected exit " + r.expected + ", got " + why;
  }
  if (r.expected != "1" || r.checks == "-") return "";
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(json_text);
  } catch (const std::exception& e) {
    return "exit 1 as expected, but the JSON report does not parse: " + std::string(e.what());
  }
  std::string missing;
  for (const std::string& check : split(r.checks, ',')) {
    bool found = false;
    for (const auto& res : j.value("results", nlohmann::json::array())) {
      if (res.contains("checks") && res["checks"].contains(check) && res["checks"][check] == "fail")
        found = true;
      for (const auto& v : res.value("violations", nlohmann::json::array()))
        if (v.value("invariant", std::string()) == check) found = true;
    }
    if (!found) missing += (missing.empty() ? "" : ", ") + check;
  }
  if (missing.empty()) return "";
  return "exit 1 as expected, but check(s) " + missing + " not reported failing (expected " +
         r.checks + ")";
}

// name_collective: GOAL rows also get `--collective` with the row's collective (the flow rule
// per collective and root), besides the default question of the plain command.
// extra: more options for every row (e.g. " --engine both").
void run_format(const std::string& format, bool name_collective = false,
                const std::string& extra = "") {
  const std::string dir = corpus_dir();
  INFO("corpus folder: " << dir << " (set COLLV_CORPUS to move it)");
  REQUIRE(std::filesystem::is_directory(dir));
  std::vector<Row> rows = read_rows(dir);
  std::size_t ran = 0;
  std::vector<std::string> wrong;
  for (const Row& r : rows) {
    if (r.format != format) continue;
    ++ran;
    std::string json_text, err;
    int rc = run_row(dir, r, name_collective, extra, json_text, err);
    std::string w = judge(r, rc, json_text, err);
    if (!w.empty())
      wrong.push_back(
          r.path + (r.topology != "-" ? " -t " + r.topology : "") +
          (r.root != "-" ? " -s " + r.root : "") +
          (name_collective && r.collective != "-" ? " --collective " + r.collective : "") + extra +
          " [" + r.cls + "]: " + w);
  }
  INFO(format << ": " << ran << " rows");
  REQUIRE(ran > 0);
  std::string report;
  for (const auto& w : wrong) report += "\n  " + w;
  INFO(wrong.size() << " of " << ran << " rows wrong:" << report);
  CHECK(wrong.empty());
}

}  // namespace

TEST_CASE("corpus: msccl-xml files get their verdicts", "[corpus]") { run_format("msccl-xml"); }

TEST_CASE("corpus: msccl-xml-op files get their verdicts", "[corpus]") {
  run_format("msccl-xml-op");
}

TEST_CASE("corpus: sccl-json files get their verdicts", "[corpus]") { run_format("sccl-json"); }

TEST_CASE("corpus: goal files get their verdicts", "[corpus]") { run_format("goal"); }

TEST_CASE("corpus: goal files get their verdicts with --collective", "[corpus]") {
  run_format("goal", true);
}

// The SMT engine judges every file as the executor does (the file's own output, the checks its
// format leaves open): under --engine both, every row gets its verdict and the engines agree.
TEST_CASE("corpus: every file gets its verdict under --engine both, the engines agreeing",
          "[corpus][engines][slow]") {
  for (const char* format : {"msccl-xml", "msccl-xml-op", "sccl-json", "goal"}) {
    INFO(format);
    run_format(format, false, " --engine both");
  }
  run_format("goal", true, " --engine both");
}
