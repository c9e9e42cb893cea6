// Reports that say each thing once (issue 26, item 6): after a deadlock or a runtime error the
// checks that follow from it are not-checked with the reason, not extra failures; an order-only
// difference in a commutative model is commutative-only whatever else fails in the run.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli.hpp"

namespace fs = std::filesystem;

namespace {

const std::string kRoot = COLLV_SOURCE_DIR;

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::string write_model(const std::string& name, const std::string& text) {
  std::string path = collv::test::unique_temp(name) + ".coll";
  std::ofstream(path) << text;
  return path;
}

// Every node but 0 sends to 0 and waits for an answer; node 0 takes one message and finishes.
// The deadlock leaves 2 -> 0 unreceived in step 1 beside 1 -> 0: the old report also failed
// single-port (node 0 "receives 2 transfers"), match, postcondition and final-buffers.
const char* kDeadlock = R"(model dl_noise
  collective allgather
  topology   complete
  input      x
  output     x
procedure DL(my_id, x)
begin
    if my_id = 0 then
        receive y from 1;
    else
        send x to 0;
        receive y from 0;
    endif;
end DL
)";

// The twin: node 0 answers every node, then nobody waits (it fails the postcondition on its own,
// as it gathers nothing: that failure is reported, since nothing stopped the run).
const char* kNoDeadlock = R"(model dl_twin
  collective allgather
  topology   complete
  input      x
  output     x
procedure DL(my_id, x)
begin
    if my_id = 0 then
        receive y from 1;
        receive y from 2;
        send x to 1;
        send x to 2;
    else
        send x to 0;
        receive y from 0;
    endif;
end DL
)";

// A runtime error at step 2 of a ring allgather: index 5 of a buffer of 2 items.
const char* kRuntime = R"(model rt_noise
  collective allgather
  topology   ring
  input      x
  output     x
procedure RT(my_id, x)
begin
    send x to right;
    receive y from left;
    x := x union y;
    z := x[5];
end RT
)";

nlohmann::json results_of(const std::string& args) {
  std::string out;
  int rc = collv::test::run_cli(args + " --json -", out, kRoot, 60);
  INFO(out);
  REQUIRE(rc == 1);
  auto j = nlohmann::json::parse(out);
  REQUIRE(!j["results"].empty());
  return j["results"];
}

// The failing checks of a JSON result.
std::vector<std::string> failing(const nlohmann::json& r) {
  std::vector<std::string> out;
  for (auto it = r["checks"].begin(); it != r["checks"].end(); ++it)
    if (it.value() == "fail") out.push_back(it.key());
  return out;
}

}  // namespace

TEST_CASE("a deadlock is the one failure: what follows from it is not-checked with the reason",
          "[robust][report]") {
  std::string f = write_model("dl_noise", kDeadlock);
  std::string out;
  int rc = collv::test::run_cli("verify " + f + " -t complete:3", out, kRoot, 60);
  INFO(out);
  CHECK(rc == 1);
  CHECK(has(out, "deadlock: 2 runs"));
  CHECK(has(out,
            "not-checked: single-port, congestion, dataflow, match, postcondition, "
            "final-buffers: the run deadlocked after step 1 (see the deadlock check)"));
  for (const char* noise : {"single-port: 2 runs", "match: 2 runs", "postcondition: 2 runs",
                            "final-buffers: 2 runs", "receives 2 transfers", "never received"})
    CHECK_FALSE(has(out, noise));
  for (const auto& r : results_of("verify " + f + " -t complete:3")) {
    CHECK(failing(r) == std::vector<std::string>{"deadlock"});
    REQUIRE(r["violations"].size() == 1);
    CHECK(r["violations"][0]["invariant"] == "deadlock");
    for (const char* name :
         {"single-port", "congestion", "dataflow", "match", "postcondition", "final-buffers"}) {
      CHECK(r["checks"][name] == "not-checked");
      CHECK(r["not_checked"][name] == "the run deadlocked after step 1 (see the deadlock check)");
    }
    CHECK(r["checks"]["route"] == "pass");  // a transfer made is judged on its own
    CHECK(r["checks"]["nodup"] == "pass");
  }
  // The twin that finishes: its own postcondition failure is reported as one.
  std::string g = write_model("dl_twin", kNoDeadlock);
  for (const auto& r : results_of("verify " + g + " -t complete:3")) {
    CHECK(r["checks"]["deadlock"] == "pass");
    CHECK(r["checks"]["postcondition"] == "fail");
    CHECK(r["checks"]["match"] == "pass");
    CHECK_FALSE((r.contains("not_checked") && r["not_checked"].contains("postcondition")));
  }
}

TEST_CASE("a runtime error is the one failure: what follows from it is not-checked",
          "[robust][report]") {
  std::string f = write_model("rt_noise", kRuntime);
  std::string out;
  int rc = collv::test::run_cli("verify " + f + " -t ring:4 -d exact", out, kRoot, 60);
  INFO(out);
  CHECK(rc == 1);
  CHECK(has(out, "runtime: 1 run"));
  CHECK(has(out, "index 5 is out of range"));
  CHECK(has(out, "the run stopped at a runtime error after step 1 (see the runtime check)"));
  CHECK_FALSE(has(out, "postcondition: 1 run"));
  CHECK_FALSE(has(out, "final-buffers: 1 run"));
  for (const auto& r : results_of("verify " + f + " -t ring:4 -d exact")) {
    CHECK(failing(r) == std::vector<std::string>{"runtime"});
    for (const char* name : {"postcondition", "final-buffers", "match", "dataflow"}) {
      CHECK(r["checks"][name] == "not-checked");
      CHECK(has(r["not_checked"][name].get<std::string>(), "the run stopped at a runtime error"));
    }
  }
}

TEST_CASE("an order-only difference is commutative-only even beside a failing cost claim",
          "[robust][report]") {
  std::string f = collv::test::edited_copy(kRoot + "/models/allreduce_hypercube.coll",
                                           "cost       (ts + tw*m) * log2(p)",
                                           "cost       (ts + tw*m) * log2(p) * 2", "comm_cost");
  std::string out;
  int rc = collv::test::run_cli("verify " + f + " -t hypercube:2 -d ordered", out, kRoot, 60);
  INFO(out);
  CHECK(rc == 1);
  CHECK(has(out, "cost: 1 run"));
  CHECK(has(out, "commutative-only: 1 run"));
  CHECK(has(out, "postcondition: operand order only, expected under `operator commutative`"));
  CHECK_FALSE(has(out, "postcondition: 1 run"));
  CHECK_FALSE(has(out, "final-buffers: 1 run"));
  auto rs = results_of("verify " + f + " -t hypercube:2 -d ordered");
  REQUIRE(rs.size() == 1);
  const auto& r = rs[0];
  CHECK(r["status"] == "fail");
  CHECK(failing(r) == std::vector<std::string>{"cost"});
  CHECK(r["checks"]["postcondition"] == "commutative-only");
  for (const auto& v : r["violations"]) CHECK(v["invariant"] == "cost");
  REQUIRE(!r["order_only"].empty());
  CHECK(r["order_only"][0]["invariant"] == "postcondition");
  // JUnit: the cost is the one failure; the order-only differences are skipped.
  rc = collv::test::run_cli("verify " + f + " -t hypercube:2 -d ordered --junit -", out, kRoot, 60);
  CHECK(has(out, "failures=\"1\""));
  // The twin, the model's own cost claim: commutative-only, exit 0.
  rc = collv::test::run_cli("verify allreduce_hypercube -t hypercube:2 -d ordered", out, kRoot, 60);
  CHECK(rc == 0);
  CHECK(has(out, "1 commutative-only"));
}

TEST_CASE("invalid UTF-8: read with its byte offset, written replaced, never the library's text",
          "[robust][utf8]") {
  const std::string repro =
      kRoot + "/../shared/data/reproducers/trace-turn3-invalid-utf8-json-report.json";
  std::string out;
  // Reading: collv's message names the file and the byte (the file is {"\xE6": 1}).
  int rc = collv::test::run_cli("verify --trace " + repro, out, kRoot, 60);
  INFO(out);
  CHECK(rc == 2);
  CHECK(has(out,
            "trace-turn3-invalid-utf8-json-report.json: byte 2 (line 1, column 3): byte 0xE6 "
            "is not valid UTF-8"));
  CHECK_FALSE(has(out, "json.exception"));
  CHECK_FALSE(has(out, "\xE6"));  // the message itself is UTF-8
  // Writing: the JSON and JUnit reports of that run are written, not thrown.
  std::string json = collv::test::unique_temp("utf8_report") + ".json";
  rc = collv::test::run_cli("verify --trace " + repro + " --json " + json, out, kRoot, 60);
  INFO(out);
  CHECK(rc == 2);
  CHECK_FALSE(has(out, "json.exception"));
  auto j = nlohmann::json::parse(collv::test::slurp(json));
  CHECK(j["summary"]["errors"] == 1);
  rc = collv::test::run_cli("verify --trace " + repro + " --junit -", out, kRoot, 60);
  CHECK(rc == 2);
  CHECK(has(out, "<error message="));
  CHECK_FALSE(has(out, "json.exception"));
  // A name copied from input that is not UTF-8 (the model file's name): `run --json` writes it
  // with U+FFFD in place of the byte.
  std::string dir = collv::test::unique_temp("utf8_dir");
  fs::create_directories(dir);
  std::string model = dir + "/ring\xFF.coll";
  fs::copy_file(kRoot + "/models/allgather_ring.coll", model);
  rc = collv::test::run_cli("run '" + model + "' -t ring:4 --quiet --json -", out, kRoot, 60);
  INFO(out);
  CHECK(rc == 0);
  CHECK_FALSE(has(out, "json.exception"));
  auto t = nlohmann::json::parse(out);
  CHECK(has(t["file"].get<std::string>(), "ring\xEF\xBF\xBD.coll"));
  // The twin: a valid file with a UTF-8 key reads past the bytes to the schema check.
  std::string good = collv::test::unique_temp("utf8_ok") + ".json";
  std::ofstream(good) << "{\"\xC3\xA9\": 1}\n";
  rc = collv::test::run_cli("verify --trace " + good, out, kRoot, 60);
  INFO(out);
  CHECK(rc == 2);
  CHECK_FALSE(has(out, "not valid UTF-8"));
}

TEST_CASE("timeout: --timeout 1 stops run, verify and synth with exit 3 and the limit's message",
          "[robust][timeout]") {
  std::string loop = write_model("loop_forever_t", R"(model t
  collective allgather
  topology ring
  input x
  output x
procedure P
begin
  y := 0;
  while y >= 0 do y := y + 1; endwhile;
end P
)");
  const std::string limit = "stopped at the time limit of --timeout 1 ms";
  std::string out;
  for (const std::string args :
       {"run " + loop + " -t ring:4 --max-ops 1000000000000 --timeout 1",
        "verify " + loop + " -t ring:4 -d exact --timeout 1",  // the run's own check
        std::string("verify allgather_ring --timeout 1"),      // a sweep of short runs
        std::string("synth allgather -t ring:64 --steps 40 --timeout 1")}) {
    int rc = collv::test::run_cli(args, out, kRoot, 60);
    INFO(args << "\n" << out);
    CHECK(rc == 3);
    CHECK(has(out, limit));
  }
  // The twin: a limit that is not reached changes nothing.
  int rc = collv::test::run_cli("verify allgather_ring -t ring:4 --timeout 60000 --quiet", out,
                                kRoot, 60);
  CHECK(rc == 0);
}

TEST_CASE("verify --max-p and --max-star: an absurd bound is refused at once with its range",
          "[robust][limits]") {
  std::string out;
  CHECK(collv::test::run_cli("verify allgather_ring --max-p 100000000 --max-memory 300", out) == 2);
  CHECK(out.find("4096") != std::string::npos);
  CHECK(collv::test::run_cli("verify allreduce_star --max-star 40", out) == 2);
  CHECK(out.find("13") != std::string::npos);
  // The correct twin: a bound inside the range runs.
  CHECK(collv::test::run_cli("verify allgather_ring --max-p 8 --quiet", out) == 0);
}
