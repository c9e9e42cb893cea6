// `collv verify FILE --engine smt|both` on schedule files: the SMT engine judges a file with the
// executor's reading of it (the file's own required output, the checks its format leaves open),
// Z3 is credited only with what it decides, and NODUP counts an item twice in one message. Every
// test runs the collv binary on a small file written here, or on the files under tests/data.
#include <filesystem>
#include <fstream>
#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "cli.hpp"

namespace fs = std::filesystem;

namespace {

const std::string kRoot = COLLV_SOURCE_DIR;

struct Outcome {
  int rc = -1;
  nlohmann::json run;  // the one results[] entry
  std::string text;    // the JSON report, for messages
};

// `collv verify FILE ARGS --json -` with one run in its report.
Outcome verify_json(const std::string& file, const std::string& args) {
  Outcome o;
  std::string out = collv::test::unique_temp("collv_engines_out");
  std::string cmd = std::string(COLLV_BINARY) + " verify '" + file + "' " + args + " --json - >'" +
                    out + "' 2>/dev/null";
  int rc = std::system(cmd.c_str());
  o.rc = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  o.text = collv::test::slurp(out);
  std::error_code ec;
  fs::remove(out, ec);
  INFO(cmd << "\n" << o.text);
  auto j = nlohmann::json::parse(o.text);
  REQUIRE(j["results"].size() == 1);
  o.run = j["results"][0];
  return o;
}

std::string verdict(const Outcome& o, const std::string& check) {
  return o.run["checks"].value(check, std::string("(absent)"));
}
std::string decided(const Outcome& o, const std::string& check) {
  return o.run.contains("decided_by") ? o.run["decided_by"].value(check, std::string("(none)"))
                                      : std::string("(none)");
}

std::string write(const std::string& name, const std::string& text) {
  fs::path dir = fs::path(collv::test::unique_temp("collv_engines"));
  fs::create_directories(dir);
  std::ofstream(dir / name) << text;
  return (dir / name).string();
}

// A 2-GPU out-of-place allgather: each GPU sends its input chunk and receives the other's into
// o[recv_off], and copies its own input to o[cpy_off] (GPU 1 is always right).
std::string allgather2(int recv_off, int cpy_off) {
  std::string step =
      R"(      <step s="{S}" type="{T}" srcbuf="i" srcoff="0" dstbuf="o" dstoff="{O}" cnt="1" depid="-1" deps="-1" hasdep="0"/>
)";
  auto st = [&](int s, const char* type, int off) {
    std::string x = step;
    x.replace(x.find("{S}"), 3, std::to_string(s));
    x.replace(x.find("{T}"), 3, type);
    x.replace(x.find("{O}"), 3, std::to_string(off));
    return x;
  };
  auto gpu = [&](int id, int r, int c) {
    return "  <gpu id=\"" + std::to_string(id) +
           "\" i_chunks=\"1\" o_chunks=\"2\" s_chunks=\"0\">\n    <tb id=\"0\" send=\"" +
           std::to_string(1 - id) + "\" recv=\"" + std::to_string(1 - id) + "\" chan=\"0\">\n" +
           st(0, "s", 0) + st(1, "r", r) + st(2, "cpy", c) + "    </tb>\n  </gpu>\n";
  };
  return R"(<algo name="ag2" proto="Simple" nchannels="1" nchunksperloop="2" ngpus="2" coll="allgather" inplace="0" outofplace="1" minBytes="0" maxBytes="0">
)" + gpu(0, recv_off, cpy_off) +
         gpu(1, 0, 1) + "</algo>\n";
}

}  // namespace

TEST_CASE("engines: the SMT postcondition of an MSCCL-XML allgather is the file's positional one",
          "[engines]") {
  // Before: Z3 asked for one extra element per rank (the reader's uninitialized-memory element
  // taken as input): "node 0 ends with [3, 4] but allgather requires [3, 0, 4, 0]".
  std::string ok = write("ag2.xml", allgather2(1, 0));
  for (const char* engine : {"smt", "both"}) {
    INFO(engine);
    Outcome o = verify_json(ok, std::string("--engine ") + engine);
    CHECK(o.rc == 0);
    CHECK(verdict(o, "postcondition") == "pass");
    CHECK(decided(o, "postcondition") == (std::string(engine) == "smt" ? "smt" : "exec+smt"));
    CHECK(verdict(o, "final-buffers") == "pass");
  }
  // GPU 0 puts its own chunk where GPU 1's belongs: every value is derivable, the positions are
  // wrong; Z3 finds it on the file's layout, as the executor does.
  std::string swapped = write("ag2_swapped.xml", allgather2(0, 1));
  Outcome s = verify_json(swapped, "--engine smt");
  CHECK(s.rc == 1);
  CHECK(verdict(s, "postcondition") == "fail");
  CHECK(decided(s, "postcondition") == "smt");
  Outcome b = verify_json(swapped, "--engine both");
  CHECK(b.rc == 1);
  CHECK(verdict(b, "postcondition") == "fail");
  CHECK(decided(b, "postcondition") == "exec+smt");
  CHECK_FALSE(b.run.contains("engines_disagree"));
  // The same on the real files named in issue 36.
  for (const char* f : {"allgather_bruck_8gpus.xml", "allreduce_ring_8gpus.xml"}) {
    INFO(f);
    Outcome r = verify_json(kRoot + "/examples/msccl-ci/schedules/" + f, "--engine both");
    CHECK(r.rc == 0);
    CHECK(decided(r, "postcondition") == "exec+smt");
  }
}

TEST_CASE("engines: a GOAL reduce with --collective reduce: data checks open in both engines",
          "[engines]") {
  // Before: Z3 judged the sizes-only file as an all-reduce with empty outputs ("allreduce
  // requires [0]"), whatever --collective said.
  std::string goal = write("reduce4.goal", R"(num_ranks 4

rank 0 {
l1: recv 8b from 1 tag 0
l2: recv 8b from 2 tag 0
l2 requires l1
}

rank 1 {
l1: send 8b to 0 tag 0
}

rank 2 {
l1: recv 8b from 3 tag 0
l2: send 8b to 0 tag 0
l2 requires l1
}

rank 3 {
l1: send 8b to 2 tag 0
}
)");
  for (const char* engine : {"smt", "both"}) {
    INFO(engine);
    Outcome o = verify_json(goal, std::string("--collective reduce --engine ") + engine);
    CHECK(o.rc == 0);
    for (const char* c : {"postcondition", "final-buffers", "nodup", "dataflow"}) {
      INFO(c);
      CHECK(verdict(o, c) == "not-checked");
      CHECK(decided(o, c) == "exec");
    }
    CHECK(verdict(o, "flow") == "pass");
    CHECK(verdict(o, "route") == "pass");
  }
  // The engines line credits neither engine with what was not checked.
  std::string out;
  CHECK(collv::test::run_cli("verify '" + goal + "' --collective reduce --engine both", out) == 0);
  INFO(out);
  auto line = out.substr(out.find("engines (which engine decided each check)"));
  CHECK(line.find("exec+smt: route") != std::string::npos);
  CHECK(line.find("not checked: ") != std::string::npos);
  CHECK(line.find("postcondition", line.find("not checked: ")) != std::string::npos);
  // The flow rule still judges the file: rank 3 never reaches root 1.
  Outcome wrong = verify_json(goal, "--collective reduce -s 1 --engine both");
  CHECK(wrong.rc == 1);
  CHECK(verdict(wrong, "flow") == "fail");
}

TEST_CASE(
    "engines: single-port and congestion are the executor's, and what a file leaves open stays",
    "[engines]") {
  // Before: Z3 reported a congestion witness on MSCCL files, whose congestion the executor leaves
  // not-checked (parallel channels), and the engines line credited Z3 with single-port and
  // congestion, whose queries only compared collv's own counts.
  std::string ok = write("ag2.xml", allgather2(1, 0));
  Outcome o = verify_json(ok, "--engine both");
  CHECK(o.rc == 0);
  CHECK(verdict(o, "congestion") == "not-checked");
  CHECK(decided(o, "congestion") == "exec");
  CHECK(decided(o, "single-port") == "exec");
  Outcome s = verify_json(ok, "--engine smt");
  CHECK(verdict(s, "congestion") == "not-checked");
  CHECK(decided(s, "congestion") == "exec");
  // A model: Z3 decides route, nodup, postcondition; single-port and congestion are the
  // executor's, and the engines line says so.
  std::string out;
  int rc = collv::test::run_cli(
      "verify allreduce_star -t star:3 -d exact --engine both --models " + kRoot + "/models", out);
  INFO(out);
  CHECK(rc == 0);
  auto line = out.substr(out.find("engines (which engine decided each check)"));
  CHECK(line.find("exec: single-port,congestion,") != std::string::npos);
  CHECK(line.find("exec+smt: route,nodup,postcondition,final-buffers") != std::string::npos);
  CHECK(line.find("ENGINES DISAGREE") == std::string::npos);
}

TEST_CASE("engines: NODUP under --engine smt catches an item twice in one message", "[engines]") {
  // Before: the SMT engine compared an item only with what the destination held before the step,
  // so [x0, x0] in one message passed under --engine smt.
  auto trace = [](const std::string& items) {
    return R"({"collective": "broadcast", "topology": "line:2", "p": 2, "domain": "exact",
 "source": 0, "transfers": [{"step": 1, "src": 0, "dst": 1, "items": )" +
           items + R"(}],
 "final": [{"node": 0, "output": ["x0"]}, {"node": 1, "output": ["x0"]}]})";
  };
  std::string twice = write("twice.json", trace(R"(["x0", "x0"])"));
  std::string once = write("once.json", trace(R"(["x0"])"));
  for (const char* engine : {"smt", "both"}) {
    INFO(engine);
    Outcome bad = verify_json(twice, std::string("--engine ") + engine);
    CHECK(bad.rc == 1);
    CHECK(verdict(bad, "nodup") == "fail");
    CHECK_FALSE(bad.run.contains("engines_disagree"));
    Outcome good = verify_json(once, std::string("--engine ") + engine);
    CHECK(good.rc == 0);
    CHECK(verdict(good, "nodup") == "pass");
  }
  Outcome s = verify_json(twice, "--engine smt");
  CHECK(decided(s, "nodup") == "smt");
  CHECK(s.text.find("sends contribution x0_0, which 1 already holds (Z3 witness)") !=
        std::string::npos);
}

TEST_CASE("engines: every schedule file under tests/data gets the executor's verdict under both",
          "[engines]") {
  std::size_t n = 0;
  for (const char* sub : {"/tests/data", "/tests/data/import"})
    for (const auto& e : fs::directory_iterator(kRoot + sub)) {
      std::string ext = e.path().extension().string();
      if (!e.is_regular_file() || (ext != ".json" && ext != ".xml" && ext != ".goal")) continue;
      ++n;
      std::string f = e.path().string();
      INFO(f);
      std::string out;
      int exec = collv::test::run_cli("verify '" + f + "'", out);
      int both = collv::test::run_cli("verify '" + f + "' --engine both", out);
      INFO(out);
      CHECK(both == exec);
      CHECK(out.find("ENGINES DISAGREE") == std::string::npos);
      CHECK(collv::test::run_cli("verify '" + f + "' --engine smt", out) == exec);
    }
  CHECK(n >= 15);
  // An executor failure stands when Z3 cannot decide (GPU 2 sends uninitialized memory: no
  // derivation, "not proved"); a deadlocked run leaves final-buffers open in both engines.
  Outcome w = verify_json(kRoot + "/tests/data/import/ag_ring_wrong_offset.xml", "--engine both");
  CHECK(verdict(w, "postcondition") == "fail");
  CHECK(decided(w, "postcondition") == "exec (smt inconclusive)");
  Outcome d =
      verify_json(kRoot + "/tests/data/import/ag_hier_dep_without_hasdep.xml", "--engine both");
  CHECK(verdict(d, "deadlock") == "fail");
  CHECK(verdict(d, "final-buffers") == "not-checked");
}
