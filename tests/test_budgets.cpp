// Budgets of every command (issue 26): --max-ops for each command that runs models, a limit
// reported once (its dependent checks not-checked with the reason), the readers' --timeout, the
// benchmark executables' clean exits, and the SMT engine's memory estimate.
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "cli.hpp"

using namespace collv;
namespace fs = std::filesystem;

namespace {

const std::string kRoot = COLLV_SOURCE_DIR;

int cli(const std::string& args, std::string& out, int seconds = 60) {
  return test::run_cli(args, out, kRoot, seconds);
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::size_t count_of(const std::string& text, const std::string& part) {
  std::size_t n = 0;
  for (auto at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

std::string write_temp(const std::string& name, const std::string& text) {
  std::string path = test::unique_temp(name);
  std::ofstream(path) << text;
  return path;
}

// A model that loops for ever, making arrays (no sends: only the operation limit stops it).
std::string loop_model() {
  return write_temp("loop_forever.coll",
                    "model t\n  collective allgather\n  topology ring\n  input x\n  output x\n"
                    "procedure P\nbegin\n  while 1 = 1 do array a[1048576]; endwhile;\nend P\n");
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

TEST_CASE("verify and export take --max-ops: a loop for ever stops with exit 3 naming it",
          "[robust][budget]") {
  std::string out, loop = loop_model();
  auto t0 = std::chrono::steady_clock::now();
  int rc = cli("verify " + loop + " -t ring:4 --max-ops 1000", out, 30);
  INFO(out);
  CHECK(rc == 3);
  CHECK(has(out, "the run exceeded 1000 operations per node on average"));
  CHECK(has(out, "raise --max-ops"));
  CHECK(seconds_since(t0) < 10);
  // The option reaches the runs: a correct model stops at a tiny limit and passes under a
  // generous one.
  rc = cli("verify allgather_ring -t ring:8 --max-ops 5", out, 30);
  INFO(out);
  CHECK(rc == 3);
  CHECK(has(out, "the run exceeded 5 operations per node"));
  rc = cli("verify allgather_ring -t ring:8 --max-ops 1000000000 --quiet", out, 30);
  INFO(out);
  CHECK(rc == 0);
  // export runs the model too: a limit is exit 3 there as well, and a run within it is written.
  std::string xml = test::unique_temp("budget_export") + ".xml";
  rc = cli("export " + loop + " -t ring:4 --msccl-xml " + xml + " --max-ops 1000", out, 30);
  INFO(out);
  CHECK(rc == 3);
  CHECK(has(out, "raise --max-ops"));
  CHECK_FALSE(fs::exists(xml));
  rc = cli("export allgather_ring -t ring:4 --msccl-xml " + xml + " --max-ops 1000000", out, 30);
  INFO(out);
  CHECK(rc == 0);
  CHECK(fs::exists(xml));
  // The range is checked at once, the same for run, verify and export.
  for (const std::string cmd : {"run", "verify", "export"}) {
    for (const std::string bad : {"0", "1000000000000001"}) {
      std::string more = cmd == "export" ? " --msccl-xml " + xml : "";
      rc = cli(cmd + " allgather_ring -t ring:4" + more + " --max-ops " + bad, out, 30);
      INFO(cmd << " --max-ops " << bad << "\n" << out);
      CHECK(rc == 2);
      CHECK(has(out, "--max-ops: Value " + bad + " not in range 1 to 1000000000000000"));
    }
  }
  fs::remove(xml);
}

TEST_CASE("a run stopped at a limit says the limit once; what follows is not-checked",
          "[robust][budget]") {
  std::string out, loop = loop_model();
  const std::string limit = "the run exceeded 1000 operations per node on average";
  int rc = cli("verify " + loop + " -t ring:4 -d exact --max-ops 1000", out, 30);
  INFO(out);
  CHECK(rc == 3);
  CHECK(count_of(out, limit) == 1);
  CHECK(count_of(out, "inconclusive:") == 1);
  CHECK(has(out, "deadlock: inconclusive: " + limit));
  CHECK(count_of(out, "the run stopped at --max-ops before it finished") == 1);
  CHECK(has(out,
            "not-checked: single-port, route, congestion, nodup, dataflow, match, "
            "postcondition, final-buffers, runtime: the run stopped at --max-ops"));
  // The JSON: the limit once, as the one inconclusive check; the rest not-checked with the reason.
  rc = cli("verify " + loop + " -t ring:4 -d exact --max-ops 1000 --json -", out, 30);
  CHECK(rc == 3);
  auto j = nlohmann::json::parse(out);
  CHECK(count_of(out, limit) == 1);
  const auto& r = j["results"][0];
  CHECK(r["status"] == "inconclusive");
  CHECK(r["inconclusive"].size() == 1);
  CHECK(r["inconclusive"]["deadlock"].get<std::string>().rfind(limit, 0) == 0);
  for (const auto& [name, verdict] : r["checks"].items()) {
    INFO(name);
    CHECK(verdict == (name == "deadlock" ? "unknown" : "not-checked"));
  }
  CHECK(r["not_checked"]["postcondition"] ==
        "the run stopped at --max-ops before it finished (see the deadlock check)");
  // The twin: a violation in the prefix of a run stopped at a limit stands (exit 1), beside the
  // one limit line; --max-steps is named as --max-ops is.
  std::string twice = write_temp("loop_sends.coll",
                                 "model t\n  collective allgather\n  topology ring\n  input x\n"
                                 "  output x\nprocedure P\nbegin\n  while 1 = 1 do\n"
                                 "    send x to (my_id + 1) mod p;\n"
                                 "    receive y from (my_id - 1) mod p;\n  endwhile;\nend P\n");
  rc = cli("verify " + twice + " -t ring:4 -d exact --max-steps 10", out, 30);
  INFO(out);
  CHECK(rc == 1);
  CHECK(has(out, "nodup: step 2: 0 receives x3 from 3, but it already holds x3"));
  CHECK(count_of(out, "past the step limit 10") == 1);
  CHECK(count_of(out, "inconclusive:") == 1);
  CHECK(has(out, "the run stopped at --max-steps before it finished"));
  // And a run that finishes reports no limit at all.
  rc = cli("verify allgather_ring -t ring:4 -d exact --max-ops 1000000 --json -", out, 30);
  CHECK(rc == 0);
  j = nlohmann::json::parse(out);
  CHECK_FALSE(j["results"][0].contains("inconclusive"));
  CHECK(j["results"][0]["checks"]["postcondition"] == "pass");
}
