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

TEST_CASE("verify, export and render take --max-ops: a loop for ever stops with exit 3 naming it",
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
  // render runs the model too: the picture of what ran is written, and the limit is exit 3
  // (it was exit 1, as a deadlock, with no --max-ops to raise).
  std::string dot = test::unique_temp("budget_render") + ".dot";
  rc = cli("render " + loop + " -t ring:4 -o " + dot + " --max-ops 1000", out, 30);
  INFO(out);
  CHECK(rc == 3);
  CHECK(has(out, "the run exceeded 1000 operations per node on average"));
  rc = cli("render allgather_ring -t ring:4 -o " + dot + " --max-ops 1000000", out, 30);
  INFO(out);
  CHECK(rc == 0);
  rc = cli("render allgather_ring -t ring:8 -o " + dot + " --max-ops 5", out, 30);
  INFO(out);
  CHECK(rc == 3);  // the option reaches the run
  fs::remove(dot);
  // The range is checked at once, the same for run, verify, export and render.
  for (const std::string cmd : {"run", "verify", "export", "render"}) {
    for (const std::string bad : {"0", "1000000000000001"}) {
      std::string more = cmd == "export"   ? " --msccl-xml " + xml
                         : cmd == "render" ? " -o x.dot"
                                           : "";
      rc = cli(cmd + " allgather_ring -t ring:4" + more + " --max-ops " + bad, out, 30);
      INFO(cmd << " --max-ops " << bad << "\n" << out);
      CHECK(rc == 2);
      CHECK(has(out, "--max-ops: Value " + bad + " not in range 1 to 1000000000000000"));
    }
  }
  fs::remove(xml);
}

TEST_CASE("a run stopped at a limit says the limit once, what follows is not-checked",
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

namespace {

// Large schedule files of each format, built in a fraction of a second; `n` sets the size.
std::string goal_file(int n) {
  std::string s = "num_ranks 2\nrank 0 {\n";
  for (int k = 0; k < n; ++k) s += "send 8b to 1\n";
  s += "}\nrank 1 {\n";
  for (int k = 0; k < n; ++k) s += "recv 8b from 0\n";
  return s + "}\n";
}

std::string trace_file(int n) {
  std::string s =
      R"({"collective": "allreduce", "topology": "ring:4", "domain": "exact", "transfers": [)";
  for (int k = 0; k < n; ++k)
    s += (k ? "," : "") + std::string(R"({"step": )") + std::to_string(k + 1) +
         R"(, "src": 0, "dst": 1, "items": ["x0"]})";
  return s + "]}";
}

// Two gpus, one threadblock each: gpu 0 sends chunk 0 n times, gpu 1 receives it n times.
std::string msccl_file(int n) {
  std::string s = R"(<algo name="big" proto="Simple" nchannels="1" nchunksperloop="2" ngpus="2" )"
                  R"(coll="allgather" inplace="1" outofplace="0" minBytes="0" maxBytes="0">)"
                  "\n";
  for (int g = 0; g < 2; ++g) {
    s += "  <gpu id=\"" + std::to_string(g) + R"(" i_chunks="1" o_chunks="2" s_chunks="0">)" +
         "\n" +
         (g == 0 ? R"(    <tb id="0" send="1" recv="-1" chan="0">)"
                 : R"(    <tb id="0" send="-1" recv="0" chan="0">)") +
         "\n";
    for (int k = 0; k < n; ++k)
      s += "      <step s=\"" + std::to_string(k) + "\" type=\"" + (g == 0 ? "s" : "r") +
           R"(" srcbuf="o" srcoff="0" dstbuf="o" dstoff="0" cnt="1" depid="-1" deps="-1" )"
           R"(hasdep="0"/>)"
           "\n";
    s += "    </tb>\n  </gpu>\n";
  }
  return s + "</algo>\n";
}

// An SCCL/msccl allgather on 2 ranks whose one step is repeated n times (steps claims n).
std::string sccl_file(int n) {
  std::string s = R"({"msccl_type": "algorithm", "name": "big", "instance": {"msccl_type": )"
                  R"("instance", "steps": )" +
                  std::to_string(n) +
                  R"(, "extra_rounds": 0, "chunks": 1, "pipeline": null, "extra_memory": null, )"
                  R"("allow_exchange": false}, "input_map": {"0": [0], "1": [1]}, "output_map": )"
                  R"({"0": [0, 1], "1": [0, 1]}, "steps": [)";
  for (int k = 0; k < n; ++k)
    s += std::string(k ? ", " : "") +
         R"({"msccl_type": "step", "rounds": 1, "sends": [[0, 0, 1], [1, 1, 0]]})";
  s +=
      R"J(], "collective": {"msccl_type": "collective", "name": "Allgather(n=2)", "nodes": 2, )J"
      R"J("chunks": [{"msccl_type": "chunk", "pre": [0], "post": [0, 1], "addr": 0}, )J"
      R"J({"msccl_type": "chunk", "pre": [1], "post": [0, 1], "addr": 1}], "triggers": {}, "runtime_name": )J"
      R"J("allgather"}, "topology": {"msccl_type": "topology", "name": "Ring(n=2)", "links": )J"
      R"J([[0, 1], [1, 0]], "switches": []}})J";
  return s;
}

}  // namespace

TEST_CASE("readers stop at --timeout inside their loops: exit 3 naming the limit",
          "[robust][budget][timeout]") {
  struct Case {
    const char* name;
    std::string (*make)(int);
    int big, small;
    std::string args;
  };
  // Each big file takes a second or more to read and judge in a release build (far more under
  // ASan); the limit stops it inside the reader, long before. The small twin is judged in time.
  const std::vector<Case> cases = {
      {"big.goal", goal_file, 400000, 3, "--collective broadcast -s 0"},
      {"big.json", trace_file, 300000, 3, ""},
      {"big.xml", msccl_file, 150000, 3, ""},
      {"big.msccl.json", sccl_file, 60000, 1, ""}};
  for (const auto& c : cases) {
    std::string dir = test::unique_temp("budget_readers");
    fs::create_directories(dir);
    std::string big = dir + "/" + c.name, small = dir + "/small_" + c.name;
    std::ofstream(big) << c.make(c.big);
    std::ofstream(small) << c.make(c.small);
    std::string out;
    auto t0 = std::chrono::steady_clock::now();
    int rc = cli("verify " + big + " " + c.args + " --timeout 100", out, 60);
    INFO(c.name << ": " << out);
    CHECK(rc == 3);
    CHECK(has(out, "stopped at the time limit of --timeout 100 ms"));
    CHECK((has(out, "reading " + big) || has(out, "judging " + big) ||
           has(out, "replaying " + big) || has(out, "matching the ops of " + big)));
    CHECK_FALSE(has(out, "verify, after"));  // the reader's own check, not the one between files
    CHECK(seconds_since(t0) < 10);
    // The twin: the same format, small, is judged within the same limit.
    rc = cli("verify " + small + " " + c.args + " --timeout 100", out, 60);
    INFO(out);
    CHECK((rc == 0 || rc == 1));
    CHECK_FALSE(has(out, "time limit"));
    fs::remove_all(dir);
  }
}

TEST_CASE("prove --timeout bounds the whole command: a long SMT-LIB script stops with exit 3",
          "[robust][budget][timeout]") {
  // 60,000 declarations: Z3 takes about 2 s to read them in a release build; at the limit a
  // watchdog interrupts it, and the answer is inconclusive, not a verdict.
  std::string big = test::unique_temp("budget_big") + ".smt2";
  {
    std::ofstream f(big);
    f << "; expected: sat\n";
    for (int i = 0; i < 60000; ++i)
      f << "(declare-const x" << i << " Int)\n(assert (> x" << i << " " << i << "))\n";
    f << "(check-sat)\n";
  }
  std::string out;
  int rc = cli("prove " + big + " --timeout 200", out, 60);
  INFO(out);
  CHECK(rc == 3);
  // Z3's reading of the script is interrupted (a release build), or, on a slower build (the
  // sanitizers under load), collv's own reading of the file reaches the limit first: either
  // way the limit is named, with where it stopped.
  CHECK((has(out, "running the SMT-LIB script stopped at the time limit of --timeout 200 ms") ||
         has(out, "stopped at the time limit of --timeout 200 ms; raise --timeout")));
  // The twin: a short script is answered within the same limit.
  std::string small = test::unique_temp("budget_small") + ".smt2";
  std::ofstream(small) << "; expected: sat\n(declare-const x Int)\n(assert (> x 1))\n(check-sat)\n";
  rc = cli("prove " + small + " --timeout 200", out, 60);
  INFO(out);
  CHECK(rc == 0);
  fs::remove(big);
  fs::remove(small);
}

TEST_CASE("the SMT engine counts nodup's bit vectors before it builds a query",
          "[robust][budget][smt]") {
  // scatter_hypercube on hypercube:9 (exact): 301,036 terms (0.3 GiB at 1 KiB each) but a peak
  // of 5.4 GB, most of it the bit-vector numerals of nodup (2^18 contributions: 4 GiB). Counted
  // by terms alone it passed a 2 GiB limit and ran to 5.4 GB; now it is refused before it is built.
  std::string out;
  auto t0 = std::chrono::steady_clock::now();
  int rc =
      cli("verify scatter_hypercube -t hypercube:9 -s 0 -d exact --engine smt "
          "--max-memory 2048",
          out, 120);
  INFO(out);
  CHECK(rc == 3);
  CHECK(has(out,
            "about 301036 terms need about 4.3 GiB (at 1024 bytes per term, and 4.0 GiB of "
            "bit vectors), over --max-memory 2.0 GiB"));
  CHECK(seconds_since(t0) < 20);
  // The twin: hypercube:7 (25,068 terms and 16 MiB of bit vectors; peak about 120 MiB) fits.
  rc =
      cli("verify scatter_hypercube -t hypercube:7 -s 0 -d exact --engine smt --max-memory 1024 "
          "--quiet",
          out, 120);
  INFO(out);
  CHECK(rc == 0);
}
