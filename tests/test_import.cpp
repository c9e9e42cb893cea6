// Schedules from other tools: every real file in ../shared/data/schedules is read and judged, and
// mutants of real files under tests/data/import are caught by the check their name says.
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <set>
#include <string>

#include <catch2/catch.hpp>

#include "import/import.hpp"
#include "util/error.hpp"

using namespace collv;
namespace fs = std::filesystem;

namespace {

const std::string kShared = COLLV_SOURCE_DIR + "/../shared/data/schedules/";
const std::string kMutants = COLLV_SOURCE_DIR + "/tests/data/import/";

std::map<std::string, Verdict> verdicts(const ImportedSchedule& s) {
  std::map<std::string, Verdict> out;
  for (const auto& r : check_imported(s, CheckOptions{})) out[r.name] = r.verdict;
  return out;
}

std::set<std::string> failing(const ImportedSchedule& s) {
  std::set<std::string> out;
  for (const auto& [name, v] : verdicts(s))
    if (v == Verdict::Fail) out.insert(name);
  return out;
}

const char* kOneStepAllgather =
    R"(<algo name="t" proto="Simple" nchannels="1" nchunksperloop="2" ngpus="2" coll="allgather" inplace="0" outofplace="1" minBytes="0" maxBytes="0">
  <!-- two gpus -->
  <gpu id="0" i_chunks="1" o_chunks="2" s_chunks="0">
    <tb id="0" send="1" recv="1" chan="0">
      <step s="0" type="s" srcbuf="i" srcoff="0" dstbuf="o" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="1" type="r" srcbuf="i" srcoff="0" dstbuf="o" dstoff="1" cnt="1" depid="-1" deps="-1" hasdep="0"/>
    </tb>
    <tb id="1" send="-1" recv="-1" chan="0">
      <step s="0" type="cpy" srcbuf="i" srcoff="0" dstbuf="o" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
    </tb>
  </gpu>
  <gpu id="1" i_chunks="1" o_chunks="2" s_chunks="0">
    <tb id="0" send="0" recv="0" chan="0">
      <step s="0" type="s" srcbuf="i" srcoff="0" dstbuf="o" dstoff="1" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="1" type="r" srcbuf="i" srcoff="0" dstbuf="o" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="2" type="cpy" srcbuf="i" srcoff="0" dstbuf="o" dstoff="1" cnt="1" depid="-1" deps="-1" hasdep="0"/>
    </tb>
  </gpu>
</algo>
)";

}  // namespace

TEST_CASE("the real MSCCL-XML files are read and judged right", "[import]") {
  // msccl-tools' files of 2022 target microsoft/msccl: msccl-executor-nccl refuses them (no
  // outofplace, minBytes, maxBytes), and only for that.
  for (const char* f : {"msccl-xml/generated_allgather_ring_4gpus_1ch.xml",
                        "msccl-xml/generated_allreduce_ring_4gpus_1ch.xml"}) {
    INFO(f);
    CHECK(failing(import_schedule(kShared + f)) == std::set<std::string>{"runtime"});
  }
  // All four are correct schedules (docs/formats.md explains each verdict).
  MscclOptions msccl;
  msccl.runtime = MscclRuntime::Msccl;
  for (const char* f : {"msccl-xml/generated_allgather_ring_4gpus_1ch.xml",
                        "msccl-xml/generated_allreduce_ring_4gpus_1ch.xml",
                        "msccl-xml/msccl-scheduler_ncv4_ag_hier_4_LL.xml",
                        "msccl-xml/msccl-scheduler_ndv4_a2a2ll.xml"}) {
    INFO(f);
    ImportedSchedule s = import_schedule(kShared + f, msccl);
    CHECK(s.format == ScheduleFormat::MscclXml);
    CHECK(failing(s).empty());
    auto v = verdicts(s);
    for (const char* c :
         {"postcondition", "dataflow", "match", "deadlock", "attributes", "bounds", "race"})
      CHECK(v[c] == Verdict::Pass);
    CHECK(s.trace.failure.kind == RunFailure::Kind::None);
    CHECK(s.trace.unreceived.empty());
  }
}

TEST_CASE("MSCCL-XML replay: transfers, steps and buffers of the ring allgather", "[import]") {
  ImportedSchedule s =
      import_schedule(kShared + "msccl-xml/generated_allgather_ring_4gpus_1ch.xml");
  const Trace& t = s.trace;
  REQUIRE(t.topology.num_processors() == 4);
  CHECK(t.collective == Collective::Allgather);
  CHECK(t.port == PortModel::All);
  // A ring of 4: every gpu sends 3 chunks, one per step, to its successor.
  CHECK(t.transfers.size() == 12);
  CHECK(t.steps == 3);
  for (const auto& x : t.transfers) CHECK(x.dst == (x.src + 1) % 4);
  // Step 1 carries each gpu's own chunk; step 3 the chunk of the gpu two behind the sender.
  for (const auto& x : t.transfers) {
    REQUIRE(x.payload_len == 1);
    Item it = t.payload[x.payload_begin];
    std::uint32_t origin = (x.src + 4 - (x.step - 1)) % 4;
    CHECK(it == t.domain->leaf(origin, 0));
  }
  for (NodeId v = 0; v < 4; ++v)
    for (std::uint32_t j = 0; j < 4; ++j) CHECK(t.final_output[v][j] == t.domain->leaf(j, 0));
}

TEST_CASE("MSCCL-XML replay: the ring allreduce reduces every chunk over all gpus", "[import]") {
  ImportedSchedule s =
      import_schedule(kShared + "msccl-xml/generated_allreduce_ring_4gpus_1ch.xml");
  const Trace& t = s.trace;
  CHECK(t.collective == Collective::Allreduce);
  CHECK(t.steps == 6);  // 3 reduce-scatter steps, 3 allgather steps
  for (NodeId v = 0; v < 4; ++v) {
    REQUIRE(t.final_output[v].size() == 4);
    for (std::uint32_t k = 0; k < 4; ++k) {
      auto terms = t.domain->terms(t.final_output[v][k]);
      CHECK(terms.size() == 4);  // x0.k + x1.k + x2.k + x3.k, each once
      for (std::uint32_t j = 0; j < 4; ++j)
        CHECK(std::count(terms.begin(), terms.end(), j * t.domain->elems() + k) == 1);
    }
  }
}

TEST_CASE("MSCCL-XML mutants of real files are caught by the checks they name", "[import]") {
  struct Case {
    const char* file;
    std::vector<const char*> must_fail;
  };
  std::vector<Case> cases = {
      {"ag_ring_wrong_offset.xml", {"postcondition", "dataflow"}},
      {"ar_ring_double_count.xml", {"postcondition", "dataflow"}},
      {"ag_hier_recv_wrong_buffer.xml", {"bounds", "postcondition"}},
      {"ag_hier_dep_without_hasdep.xml", {"deadlock"}},
      {"ag_ring_dep_cycle.xml", {"deadlock"}},
      {"a2a_race_same_chunk.xml", {"race", "postcondition"}},
      {"a2a_unreceived_send.xml", {"match", "postcondition"}},
  };
  for (const auto& c : cases) {
    INFO(c.file);
    ImportedSchedule s = import_schedule(kMutants + c.file);
    auto f = failing(s);
    for (const char* name : c.must_fail) CHECK(f.count(name) == 1);
  }
  // The double count is visible in the values: 2*x0.0 in gpu 0's chunk 0.
  ImportedSchedule dc = import_schedule(kMutants + "ar_ring_double_count.xml");
  auto terms = dc.trace.domain->terms(dc.trace.final_output[0][0]);
  CHECK(std::count(terms.begin(), terms.end(), 0u) == 2);
  // The deadlock names the threadblock that waits and what for.
  ImportedSchedule dl = import_schedule(kMutants + "ag_hier_dep_without_hasdep.xml");
  CHECK(dl.trace.failure.kind == RunFailure::Kind::Deadlock);
  CHECK(dl.trace.failure.message.find("gpu 0 tb 4 step 0") != std::string::npos);
  CHECK(dl.trace.failure.message.find("waits for step 1 of tb 0") != std::string::npos);
  ImportedSchedule cy = import_schedule(kMutants + "ag_ring_dep_cycle.xml");
  CHECK(cy.trace.failure.cycle_closed);
  // The unreceived send is recorded for the match check.
  ImportedSchedule ur = import_schedule(kMutants + "a2a_unreceived_send.xml");
  CHECK(ur.trace.unreceived.size() == 1);
}

TEST_CASE("MSCCL-XML: a missing attribute is an error with file:line:col", "[import]") {
  try {
    import_schedule(kMutants + "ar_ring_missing_hasdep.xml");
    FAIL("no error");
  } catch (const UsageError& e) {
    std::string m = e.what();
    CHECK(m.find("ar_ring_missing_hasdep.xml:29:8: error:") != std::string::npos);
    CHECK(m.find("'hasdep'") != std::string::npos);
  }
}

TEST_CASE("MSCCL-XML: malformed input gives errors, never a crash", "[import]") {
  std::string good = kOneStepAllgather;
  CHECK(failing(import_msccl_xml(good, "t.xml")).empty());
  auto err = [&](std::string text) -> std::string {
    try {
      import_msccl_xml(text, "t.xml");
    } catch (const UsageError& e) {
      return e.what();
    }
    return "";
  };
  auto replace = [&](std::string from, std::string to) {
    std::string s = good;
    auto k = s.find(from);
    REQUIRE(k != std::string::npos);
    return s.replace(k, from.size(), to);
  };
  CHECK(err("<algo") != "");
  CHECK(err("").find("t.xml") == 0);
  CHECK(err(replace("type=\"cpy\"", "type=\"copy\"")).find("type=\"copy\"") != std::string::npos);
  CHECK(err(replace("srcbuf=\"i\"", "srcbuf=\"x\"")).find("t.xml:5:") == 0);
  CHECK(err(replace("cnt=\"1\"", "cnt=\"one\"")).find("not an integer") != std::string::npos);
  CHECK(err(replace("<gpu id=\"1\"", "<gpu id=\"0\"")).find("twice") != std::string::npos);
  CHECK(err(replace("send=\"1\" recv=\"1\"", "send=\"0\" recv=\"1\"")).find("own gpu") !=
        std::string::npos);
  CHECK(err(replace("send=\"-1\" recv=\"-1\" chan=\"0\">\n      <step s=\"0\" type=\"cpy\"",
                    "send=\"-1\" recv=\"-1\" chan=\"0\">\n      <step s=\"0\" type=\"s\""))
            .find("no send peer") != std::string::npos);
  CHECK(err(replace("chan=\"0\"", "chan=\"3\"")).find("nchannels") != std::string::npos);
  CHECK(err(replace("coll=\"allgather\"", "coll=\"gather\"")).find("coll") != std::string::npos);
  // Steps numbered out of order are misread by the runtime: an attributes violation.
  auto s =
      import_msccl_xml(replace("<step s=\"1\" type=\"r\"", "<step s=\"5\" type=\"r\""), "t.xml");
  CHECK(failing(s).count("attributes") == 1);
  // A receive whose count differs from the matching send's.
  s = import_msccl_xml(replace("dstoff=\"1\" cnt=\"1\"", "dstoff=\"1\" cnt=\"2\""), "t.xml");
  CHECK(failing(s).count("attributes") == 1);
  CHECK(failing(s).count("bounds") == 1);  // o[1..2] with o_chunks=2
}

TEST_CASE("MSCCL-XML: dependencies order steps of different threadblocks", "[import]") {
  // gpu 1 receives into o[0] on tb 0 and forwards it from tb 1: without a dependency the read
  // races the write; with depid/deps and hasdep=1 it is ordered and the value is right.
  std::string racy =
      R"(<algo name="fwd" nchannels="1" nchunksperloop="3" ngpus="3" coll="allgather" inplace="0">
  <gpu id="0" i_chunks="1" o_chunks="3" s_chunks="0">
    <tb id="0" send="1" recv="-1" chan="0">
      <step s="0" type="s" srcbuf="i" srcoff="0" dstbuf="o" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
    </tb>
  </gpu>
  <gpu id="1" i_chunks="1" o_chunks="3" s_chunks="0">
    <tb id="0" send="-1" recv="0" chan="0">
      <step s="0" type="r" srcbuf="o" srcoff="0" dstbuf="o" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="HD"/>
    </tb>
    <tb id="1" send="2" recv="-1" chan="0">
      <step s="0" type="s" srcbuf="o" srcoff="0" dstbuf="o" dstoff="0" cnt="1" DEP hasdep="0"/>
    </tb>
  </gpu>
  <gpu id="2" i_chunks="1" o_chunks="3" s_chunks="0">
    <tb id="0" send="-1" recv="1" chan="0">
      <step s="0" type="r" srcbuf="o" srcoff="0" dstbuf="o" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
    </tb>
  </gpu>
</algo>
)";
  auto make = [&](bool dep) {
    std::string s = racy;
    s.replace(s.find("HD"), 2, dep ? "1" : "0");
    s.replace(s.find("DEP"), 3, dep ? "depid=\"0\" deps=\"0\"" : "depid=\"-1\" deps=\"-1\"");
    return import_msccl_xml(s, "fwd.xml");
  };
  ImportedSchedule bad = make(false);
  CHECK(failing(bad).count("race") == 1);
  ImportedSchedule good = make(true);
  CHECK(failing(good).count("race") == 0);
  // With the dependency, gpu 2 receives x0.0 in step 2 (after gpu 1 received it in step 1).
  REQUIRE(good.trace.transfers.size() == 2);
  CHECK(good.trace.transfers[1].step == 2);
  CHECK(good.trace.payload[good.trace.transfers[1].payload_begin] == good.trace.domain->leaf(0, 0));
  CHECK(good.trace.final_output[2][0] == good.trace.domain->leaf(0, 0));
}

TEST_CASE("reading and verifying the largest MSCCL-XML file is fast", "[import][bench]") {
  auto t0 = std::chrono::steady_clock::now();
  ImportedSchedule s = import_schedule(kShared + "msccl-xml/msccl-scheduler_ndv4_a2a2ll.xml");
  auto checks = check_imported(s, CheckOptions{});
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(secs < 0.5);
  CHECK(s.trace.transfers.size() == 8 * 7 * 2);
}

TEST_CASE("schedule formats are told apart by content", "[import]") {
  CHECK(detect_schedule_format(kShared + "msccl-xml/generated_allgather_ring_4gpus_1ch.xml") ==
        ScheduleFormat::MscclXml);
  CHECK(detect_schedule_format(kShared + "sccl-json/sccl-ring8-allgather.json") ==
        ScheduleFormat::MscclJson);
  CHECK(detect_schedule_format(kShared + "goal/loggopsim_binary_tree_16.goal") ==
        ScheduleFormat::Goal);
  CHECK(looks_like_schedule_path("a/b.XML"));
  CHECK_FALSE(looks_like_schedule_path("models/ring.coll"));
  CHECK_THROWS_AS(import_schedule(kShared + "no-such-file.xml"), UsageError);
}

TEST_CASE("SCCL/msccl JSON: the real files pass and mutants are caught", "[import]") {
  for (const char* f :
       {"sccl-json/Allgather.n8-DGX1-steps2.msccl.json", "sccl-json/sccl-ring8-allgather.json"}) {
    INFO(f);
    ImportedSchedule s = import_schedule(kShared + f);
    CHECK(s.format == ScheduleFormat::MscclJson);
    CHECK(failing(s).empty());
    auto v = verdicts(s);
    CHECK(v["postcondition"] == Verdict::Pass);
    CHECK(v["dataflow"] == Verdict::Pass);
    CHECK(v["links"] == Verdict::Pass);
  }
  ImportedSchedule ring = import_schedule(kShared + "sccl-json/sccl-ring8-allgather.json");
  CHECK(ring.trace.steps == 4);
  CHECK(ring.trace.transfers.size() == 16 + 15 + 14 + 11);
  CHECK(
      failing(import_schedule(kMutants + "ring8_missing_send.msccl.json")).count("postcondition"));
  auto nl = failing(import_schedule(kMutants + "ring8_no_link.msccl.json"));
  CHECK(nl.count("links"));
  auto uh = failing(import_schedule(kMutants + "dgx1_send_unheld.msccl.json"));
  CHECK(uh.count("dataflow"));
  CHECK_THROWS_WITH(import_msccl_json(R"({"msccl_type": "algorithm"})", "x.json"),
                    Catch::Contains("x.json: collective: missing"));
  CHECK_THROWS_WITH(
      import_msccl_json(
          R"({"msccl_type":"algorithm","collective":{"nodes":2,"chunks":[{"pre":[0],"post":[0,5]}]}})",
          "x.json"),
      Catch::Contains("collective.chunks[0].post[1]"));
}
