// Listed topologies (dgx1, nvswitch:N, topology files) and judging schedules under the machine
// they were written for: bandwidths in chunks per step, routes through switches only, the real
// schedule files under DGX-1 and NVSwitch boxes.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include <catch2/catch.hpp>

#include "app/verify_cmd.hpp"
#include "check/checks.hpp"
#include "cli.hpp"
#include "exec/executor.hpp"
#include "import/import.hpp"
#include "lang/ast.hpp"
#include "topology/topology.hpp"
#include "util/error.hpp"

using namespace collv;
namespace fs = std::filesystem;

namespace {

const std::string kRoot = COLLV_SOURCE_DIR;
const std::string kShared = COLLV_SOURCE_DIR + "/../shared/data/schedules/";

std::string write_temp(const std::string& name, const std::string& text) {
  std::string path = collv::test::unique_temp(name) + ".json";
  std::ofstream(path) << text;
  return path;
}

std::string spec_error(const std::string& spec) {
  try {
    Topology::parse(spec);
  } catch (const SpecError& e) {
    return e.what();
  }
  return "";
}

VerifyReport verify_under(std::vector<std::string> targets, std::vector<std::string> topologies) {
  VerifyOptions o;
  o.targets = std::move(targets);
  o.models_dir = kRoot + "/models";
  o.topologies = std::move(topologies);
  o.quiet = true;
  std::ostringstream err;
  return verify(o, nullptr, err);
}

Verdict verdict_of(const VerifyRun& r, const std::string& name) {
  for (const auto& c : r.checks)
    if (c.name == name) return c.verdict;
  FAIL("no check " << name);
  return Verdict::NotChecked;
}

}  // namespace

TEST_CASE("dgx1 is the hybrid cube-mesh with NVLink counts as bandwidths", "[topology]") {
  Topology t = Topology::parse("dgx1");
  CHECK(t.num_processors() == 8);
  CHECK(t.num_links() == 16);  // 4 neighbours each
  CHECK(t.min_degree() == 4);
  CHECK(t.diameter() == 2);
  CHECK(t.declares_bandwidth());
  CHECK(t.bandwidth(0, 1) == 2);  // two NVLinks
  CHECK(t.bandwidth(0, 2) == 1);
  CHECK(t.bandwidth(0, 4) == 2);  // across the quads
  CHECK(t.bandwidth(0, 5) == 0);  // no link
  CHECK_FALSE(t.adjacent(0, 5));
  // Processors do not forward: 0 -> 5 has no route, and is left as one non-link hop.
  CHECK(t.route(0, 5) == std::vector<NodeId>{0, 5});
  // The generated families keep one transfer per link per step.
  Topology r = Topology::parse("ring:4");
  CHECK_FALSE(r.declares_bandwidth());
  CHECK(r.bandwidth(0, 1) == 1);
  CHECK(r.bandwidth(0, 2) == 0);
}

TEST_CASE("nvswitch:N routes every pair through its switch", "[topology]") {
  Topology t = Topology::parse("nvswitch:4");
  CHECK(t.num_processors() == 4);
  CHECK(t.num_nodes() == 5);
  CHECK(t.kind(4) == NodeKind::Switch);
  CHECK(t.label(4) == "s0");
  CHECK(t.bandwidth(0, 4) == 3);
  CHECK(t.route(0, 3) == std::vector<NodeId>{0, 4, 3});
  CHECK(spec_error("nvswitch:1").find("from 2 to") != std::string::npos);
  CHECK(spec_error("nvswitch:x").find("bad size") != std::string::npos);
  CHECK(spec_error("dgx1*ring:2").find("listed topology") != std::string::npos);
}

TEST_CASE("topology files: collv JSON and SCCL's links matrix", "[topology]") {
  // A two-box machine: GPUs 0,1 on switch 4, GPUs 2,3 on switch 5, the switches joined.
  std::string f = write_temp("machine", R"({"name": "two boxes", "processors": 4, "switches": 2,
    "links": [{"a": 0, "b": 4, "bandwidth": 2}, {"a": 1, "b": 4}, {"a": 2, "b": 5},
              {"a": 3, "b": 5}, {"a": 4, "b": 5, "bandwidth": 4}]})");
  Topology t = Topology::parse("file:" + f);
  CHECK(t.num_processors() == 4);
  CHECK(t.num_nodes() == 6);
  CHECK(t.bandwidth(0, 4) == 2);
  CHECK(t.bandwidth(4, 5) == 4);
  CHECK(t.route(0, 3) == std::vector<NodeId>{0, 4, 5, 3});
  CHECK(t.family() == "file");
  // A path ending in .json works without the prefix, and the spec parses back.
  CHECK(Topology::parse(f).spec() == "file:" + f);
  CHECK(Topology::parse(Topology::parse(f).spec()).num_links() == t.num_links());

  // SCCL's matrix, links[dst][src]: asymmetric bandwidths are kept per direction.
  std::string m = write_temp("matrix", R"({"links": [[0, 1, 0], [3, 0, 1], [0, 1, 0]]})");
  Topology s = Topology::parse(m);
  CHECK(s.bandwidth(0, 1) == 3);  // links[1][0]
  CHECK(s.bandwidth(1, 0) == 1);
  CHECK(s.bandwidth(1, 2) == 1);
  CHECK(s.bandwidth(0, 2) == 0);

  // The DGX-1 algorithm file of msccl-tools carries the same matrix as the built-in.
  Topology d = Topology::parse("file:" + kShared + "sccl-json/Allgather.n8-DGX1-steps2.msccl.json");
  Topology g = Topology::parse("dgx1");
  for (NodeId a = 0; a < 8; ++a)
    for (NodeId b = 0; b < 8; ++b) CHECK(d.bandwidth(a, b) == g.bandwidth(a, b));
}

TEST_CASE("bad topology files are refused with the key and the reason", "[topology]") {
  auto err_of = [](const std::string& text) { return spec_error(write_temp("bad", text)); };
  CHECK(err_of(R"({"processors": 2, "links": [{"a": 0, "b": 0}]})").find("itself") !=
        std::string::npos);
  CHECK(err_of(R"({"processors": 3, "links": [{"a": 0, "b": 1}]})").find("not connected") !=
        std::string::npos);
  CHECK(err_of(R"({"processors": 2, "links": [{"a": 0, "b": 7}]})").find("links[0].b") !=
        std::string::npos);
  CHECK(err_of(R"({"processors": 2, "links": [{"a": 0, "b": 1, "bw": 2}]})")
            .find("unknown key 'bw'") != std::string::npos);
  CHECK(err_of(R"({"processors": 2, "links": [{"a": 0, "b": 1, "bandwidth": 0}]})")
            .find("bandwidth") != std::string::npos);
  CHECK(err_of(R"({"processors": 5000, "links": []})").find("processors") != std::string::npos);
  CHECK(err_of(R"({"links": [[0, 1], [1]]})").find("square") != std::string::npos);
  CHECK(err_of("{not json").find("not valid JSON") != std::string::npos);
  CHECK(err_of(R"({"processors": 2})").find("missing key 'links'") != std::string::npos);
  CHECK(spec_error("file:/no/such/topology.json").find("cannot read") != std::string::npos);
}

TEST_CASE("congestion on a listed topology compares chunks with the link's bandwidth",
          "[topology][verify]") {
  // Recursive doubling fits the DGX-1 (its partners 1, 2, 4 apart are NVLink neighbours). One
  // element per message fits every link; two elements overflow the links of one NVLink.
  VerifyOptions o;
  o.targets = {kRoot + "/models/mpich/allreduce_recursive_doubling.coll"};
  o.models_dir = kRoot + "/models";
  o.topologies = {"dgx1"};
  o.domain = "exact";
  o.quiet = true;
  std::ostringstream err;
  VerifyReport one = verify(o, nullptr, err);
  REQUIRE(one.runs.size() == 1);
  CHECK(verdict_of(one.runs[0], "route") == Verdict::Pass);
  CHECK(verdict_of(one.runs[0], "congestion") == Verdict::Pass);
  o.counts = {2, 2};
  VerifyReport two = verify(o, nullptr, err);
  REQUIRE(two.runs.size() == 1);
  REQUIRE(verdict_of(two.runs[0], "congestion") == Verdict::Fail);
  const CheckResult* c = nullptr;
  for (const auto& r : two.runs[0].checks)
    if (r.name == "congestion") c = &r;
  REQUIRE(c != nullptr);
  CHECK(c->violations.front().message.find("bandwidth in dgx1 is 1 chunks per step") !=
        std::string::npos);
  CHECK(two.exit_code == 1);
}

TEST_CASE("schedule files judged under the machine they were written for", "[import][verify]") {
  // The DGX-1 allgather of msccl-tools: right on dgx1 and on its own links (no -t).
  std::string dgx = kShared + "sccl-json/Allgather.n8-DGX1-steps2.msccl.json";
  VerifyReport own = verify_under({dgx}, {});
  REQUIRE(own.runs.size() == 1);
  CHECK(own.runs[0].topology == "file:" + dgx);
  CHECK(own.runs[0].status == "pass");
  VerifyReport on_dgx = verify_under({dgx}, {"dgx1"});
  REQUIRE(on_dgx.runs.size() == 1);
  CHECK(on_dgx.runs[0].status == "pass");

  // A ring allgather over 0..7 needs the link 7 - 0, which a DGX-1 lacks: route fails.
  VerifyReport ring = verify_under({kShared + "sccl-json/sccl-ring8-allgather.json"}, {"dgx1"});
  REQUIRE(ring.runs.size() == 1);
  CHECK(verdict_of(ring.runs[0], "route") == Verdict::Fail);
  CHECK(ring.exit_code == 1);

  // The 8-GPU all-to-all of msccl-scheduler (NDv4: NVSwitch): every multi-channel level fits an
  // NVSwitch box in time, so it passes there; on a DGX-1 it sends over missing links.
  std::string a2a = kShared + "msccl-xml/msccl-scheduler_ndv4_a2a2ll.xml";
  VerifyReport nv = verify_under({a2a}, {"nvswitch:8", "dgx1"});
  REQUIRE(nv.runs.size() == 2);
  CHECK(nv.runs[0].topology == "nvswitch:8");
  CHECK(nv.runs[0].status == "pass");
  CHECK(verdict_of(nv.runs[1], "route") == Verdict::Fail);

  // A machine with another number of processors never passes: the MSCCL runtimes use a file
  // only for a communicator of ngpus ranks (the runtime check fails, naming both).
  VerifyReport wrong =
      verify_under({kShared + "msccl-xml/generated_allgather_ring_4gpus_1ch.xml"}, {"dgx1"});
  REQUIRE(wrong.runs.size() == 1);
  CHECK(wrong.runs[0].status == "fail");
  CHECK(verdict_of(wrong.runs[0], "runtime") == Verdict::Fail);
  CHECK(wrong.exit_code == 1);
}

TEST_CASE("level-synchronous time of a file on a machine", "[import]") {
  ImportedSchedule s = import_schedule(kShared + "msccl-xml/msccl-scheduler_ndv4_a2a2ll.xml");
  Trace t = s.trace;
  std::uint64_t levels = t.steps;
  t.topology = Topology::parse("nvswitch:8");
  std::uint64_t on_switch = level_synchronous_steps(t);
  CHECK(on_switch >= levels);  // never faster than its dependency levels
  // Halving every GPU's switch bandwidth can only lengthen it; one chunk per step is the longest.
  std::string slow = write_temp("slow", R"({"processors": 8, "switches": 1, "links": [
    {"a": 0, "b": 8}, {"a": 1, "b": 8}, {"a": 2, "b": 8}, {"a": 3, "b": 8},
    {"a": 4, "b": 8}, {"a": 5, "b": 8}, {"a": 6, "b": 8}, {"a": 7, "b": 8}]})");
  t.topology = Topology::parse(slow);
  std::uint64_t on_slow = level_synchronous_steps(t);
  CHECK(on_slow > on_switch);
  // With bandwidth 1 each GPU's busiest level needs as many steps as chunks it sends in it.
  std::uint64_t sent = 0;
  for (const Transfer& x : t.transfers) sent += x.payload_len;
  CHECK(on_slow <= sent);
}

TEST_CASE("collv topology, run and synth take listed topologies", "[topology][cli]") {
  std::string out;
  CHECK(collv::test::run_cli("topology dgx1", out) == 0);
  CHECK(out.find("bandwidth  1 to 2 chunks per step") != std::string::npos);
  CHECK(collv::test::run_cli("run " + kRoot + "/models/mpich/allgather_bruck.coll -t dgx1", out) ==
        0);
  CHECK(out.find("steps      3") != std::string::npos);
  CHECK(collv::test::run_cli("synth allgather -t dgx1 --steps 2 --port all", out) == 0);
  CHECK(out.find("congestion=pass") != std::string::npos);
  CHECK(collv::test::run_cli("topology file:/no/such.json", out) == 2);
}

namespace {

// Each transfer as (src, dst, its items as sorted (rank, element) pairs), whatever the domain's
// numbering of elements: the same transfers compare equal across export and import.
std::multiset<std::tuple<NodeId, NodeId, std::vector<std::pair<std::uint32_t, std::uint32_t>>>>
transfer_set(const Trace& t) {
  std::multiset<std::tuple<NodeId, NodeId, std::vector<std::pair<std::uint32_t, std::uint32_t>>>>
      out;
  const std::uint32_t e = t.domain->elems();
  for (const Transfer& x : t.transfers)
    for (std::uint32_t k = 0; k < x.payload_len; ++k) {
      std::vector<std::pair<std::uint32_t, std::uint32_t>> parts;
      for (auto term : t.domain->terms(t.payload[x.payload_begin + k]))
        parts.emplace_back(term / e, term % e);
      std::sort(parts.begin(), parts.end());
      out.emplace(x.src, x.dst, parts);
    }
  return out;
}

}  // namespace

TEST_CASE("export --msccl-xml: the file re-imports to the same transfers and verdicts",
          "[export][import]") {
  struct Case {
    std::string model, spec;
    std::uint32_t count;
  };
  const Case cases[] = {{"mpich/allgather_bruck", "complete:6", 1},
                        {"mpich/allgather_bruck", "nvswitch:5", 2},
                        {"nccl/allreduce_ring_nccl", "complete:5", 3},
                        {"openmpi/allreduce_ring", "complete:4", 1},
                        {"mpich/allreduce_rabenseifner", "complete:6", 1}};
  for (const Case& c : cases) {
    INFO(c.model << " on " << c.spec << " count " << c.count);
    std::string xml = collv::test::unique_temp("export") + ".xml";
    std::string out;
    REQUIRE(collv::test::run_cli(fmt::format("export {}/models/{}.coll -t {} -c {} --msccl-xml {}",
                                             kRoot, c.model, c.spec, c.count, xml),
                                 out) == 0);
    // The run as export made it: exact domain, all-port.
    Model m = parse_model_file(kRoot + "/models/" + c.model + ".coll");
    RunOptions ro;
    ro.domain = DomainKind::Exact;
    ro.port = PortModel::All;
    ro.count = c.count;
    Trace run = run_model(m, Topology::parse(c.spec), ro);
    ImportedSchedule back = import_schedule(xml);
    CHECK(back.trace.collective == run.collective);
    CHECK(transfer_set(back.trace) == transfer_set(run));
    for (const auto& r : check_imported(back, CheckOptions{})) {
      INFO(r.name);
      CHECK(r.verdict != Verdict::Fail);
    }
    // And judged on the machine as a user would.
    CHECK(collv::test::run_cli(fmt::format("verify {} -t {} --quiet", xml, c.spec), out) == 0);
    fs::remove(xml);
  }
}

TEST_CASE("export refuses what MSCCL-XML cannot say and runs that fail", "[export]") {
  std::string xml = collv::test::unique_temp("refused") + ".xml";
  std::string out;
  // A gather has no layout in the runtimes; a scan no collective at all.
  CHECK(collv::test::run_cli("export gather_hypercube --msccl-xml " + xml, out) == 2);
  CHECK(out.find("a gather cannot be written") != std::string::npos);
  CHECK(collv::test::run_cli("export scan_hypercube --msccl-xml " + xml, out) == 2);
  CHECK(out.find("the runtimes load no such collective") != std::string::npos);
  CHECK_FALSE(fs::exists(xml));
  // A wrong schedule is not exported right: the rotated Bruck's data land in the wrong place.
  CHECK(collv::test::run_cli("export " + kRoot +
                                 "/tests/mutants/postcondition_allgather_bruck_rotated.coll -t "
                                 "complete:5 --msccl-xml " +
                                 xml,
                             out) == 1);
  CHECK(out.find("fails its own checks") != std::string::npos);
  CHECK_FALSE(fs::exists(xml));
  // A sum the sender never stored (x1+x2 at rank 0, whose buffer holds x0+x1+x2) has no step.
  CHECK(collv::test::run_cli("export " + kRoot +
                                 "/tests/data/export/allreduce_sends_unheld_sum.coll -t "
                                 "complete:4 --msccl-xml " +
                                 xml,
                             out) == 2);
  CHECK(out.find("gpu 0 sends x1+x2, a value it does not hold") != std::string::npos);
  CHECK_FALSE(fs::exists(xml));
}

TEST_CASE("export keeps in scratch what is sent on later: the paper's star all-reduce loads",
          "[export]") {
  // Theorem 2's all-reduce forwards values it received (x3+x5 at 123 in step 3 of star:3) while
  // it sums them: each such value is received into scratch and reduced into the sum by a local
  // `re`; MPICH's recursive doubling on 6 ranks sends older partial results, kept likewise.
  for (const std::string args :
       {std::string("allreduce_star -t star:3"),
        std::string("allreduce_star -t star:4 --out-of-place"),
        kRoot + "/models/mpich/allreduce_recursive_doubling.coll -t complete:6"}) {
    INFO(args);
    std::string xml = collv::test::unique_temp("scratch") + ".xml";
    std::string out;
    REQUIRE(collv::test::run_cli("export " + args + " --msccl-xml " + xml, out) == 0);
    std::string text = collv::test::slurp(xml);
    CHECK((text.find("type=\"re\"") != std::string::npos) ==
          (args.find("allreduce_star") != std::string::npos));
    CHECK((text.find("s_chunks=\"0\"") == std::string::npos ||
           args.find("recursive_doubling") != std::string::npos));
    CHECK(collv::test::run_cli("verify " + xml + " --quiet", out) == 0);
    if (args.find("recursive_doubling") != std::string::npos) {
      // Its older partial result is kept by receiving the new sum into scratch (rrc).
      const std::string kept = "type=\"rrc\" srcbuf=\"i\" srcoff=\"0\" dstbuf=\"s\" dstoff=\"1\"";
      auto k = text.find(kept);
      REQUIRE(k != std::string::npos);
      // Summed in place instead, the older value sent later is the new sum: counted twice.
      text.replace(k, kept.size(),
                   "type=\"rrc\" srcbuf=\"i\" srcoff=\"0\" dstbuf=\"i\" dstoff=\"0\"");
      std::ofstream(xml) << text;
      CHECK(collv::test::run_cli("verify " + xml + " --quiet", out) == 1);
      fs::remove(xml);
      continue;
    }
    // Without the local reductions the sums miss what was kept: the replay fails the file.
    std::string broken;
    for (std::size_t at = 0, nl; at < text.size(); at = nl + 1) {
      nl = text.find('\n', at);
      if (nl == std::string::npos) nl = text.size();
      std::string line = text.substr(at, nl - at);
      if (auto k = line.find("type=\"re\""); k != std::string::npos)
        line.replace(k, 9, "type=\"nop\"");
      broken += line + "\n";
    }
    std::ofstream(xml) << broken;
    CHECK(collv::test::run_cli("verify " + xml + " --quiet", out) == 1);
    fs::remove(xml);
  }
}

TEST_CASE("examples/msccl-ci: the gate passes the right files and fails the broken one",
          "[export][cli]") {
  const std::string ex = kRoot + "/examples/msccl-ci";
  auto gate = [&](const std::string& args) {
    std::string dir = collv::test::unique_temp("msccl_ci");
    fs::create_directories(dir);
    std::string cmd = "cd '" + dir + "' && COLLV='" + std::string(COLLV_BINARY) + "' bash '" + ex +
                      "/gate.sh' " + args + " >/dev/null 2>&1";
    int rc = std::system(cmd.c_str());
    bool report = fs::exists(dir + "/msccl-report.xml");
    fs::remove_all(dir);
    return std::make_pair(WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, report);
  };
  CHECK(gate("'" + ex + "/schedules'") == std::make_pair(0, true));
  CHECK(gate("'" + ex + "/broken'") == std::make_pair(1, true));
  CHECK(gate("'" + ex + "/schedules' dgx1") == std::make_pair(1, true));
  CHECK(gate("'" + ex + "/no-such-dir'").first == 2);
}

TEST_CASE("the DGX-1 topology file is the built-in, in run, verify and synth", "[topology][cli]") {
  const std::string file = kRoot + "/examples/machines/dgx1.json";
  Topology f = Topology::parse(file), b = Topology::parse("dgx1");
  REQUIRE(f.num_processors() == b.num_processors());
  CHECK(f.num_links() == b.num_links());
  for (NodeId x = 0; x < 8; ++x)
    for (NodeId y = 0; y < 8; ++y) CHECK(f.bandwidth(x, y) == b.bandwidth(x, y));
  std::string out;
  CHECK(collv::test::run_cli("run " + kRoot + "/models/mpich/allgather_bruck.coll -t " + file,
                             out) == 0);
  CHECK(collv::test::run_cli("verify " + kRoot +
                                 "/models/mpich/allreduce_recursive_doubling.coll -t " + file +
                                 " --quiet",
                             out) == 0);
  CHECK(collv::test::run_cli("synth allgather -t " + file + " --steps 2 --port all", out) == 0);
  CHECK(out.find("postcondition=pass") != std::string::npos);
  // The two-box machine: cross-box traffic shares the switch-to-switch link of bandwidth 2.
  Topology two = Topology::parse(kRoot + "/examples/machines/two_boxes.json");
  CHECK(two.route(0, 5) == std::vector<NodeId>{0, 8, 9, 5});
  CHECK(two.bandwidth(8, 9) == 2);
  // Open MPI's ring all-reduce crosses the boxes once each way per step: it fits (count 8: at
  // count < p Open MPI runs recursive doubling instead, whose distance-4 round sends all four
  // pairs across at once).
  CHECK(collv::test::run_cli("verify " + kRoot + "/models/openmpi/allreduce_ring.coll -t " + kRoot +
                                 "/examples/machines/two_boxes.json -d exact -c 8 --quiet",
                             out) == 0);
  // All-to-all broadcast on the hypercube sends four chunks across in its last step: congestion.
  CHECK(collv::test::run_cli("verify allgather_hypercube -t " + kRoot +
                                 "/examples/machines/two_boxes.json -d exact --runs",
                             out) == 1);
  CHECK(out.find("bandwidth in file:") != std::string::npos);
}

TEST_CASE("fuzz-found: JSON library exceptions in the readers are input errors",
          "[import][robust]") {
  // fuzz_import (tests/fuzz-corpus/import/crash-sccl-number-overflow): a number past double's
  // range made nlohmann throw out_of_range, which the SCCL reader did not catch (abort).
  auto usage = [](auto&& f) {
    try {
      f();
    } catch (const UsageError& e) {
      return std::string(e.what());
    } catch (const SpecError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(usage([] { import_msccl_json("5e21667213", "x.json"); }).find("not valid JSON") !=
        std::string::npos);
  CHECK(usage([] {
          import_msccl_json(R"({"msccl_type": "algorithm", "collective": {"nodes": 5e99999}})",
                            "x.json");
        }).find("x.json") != std::string::npos);
  CHECK(usage([] { import_msccl_json("[1, 2]", "x.json"); }) == "x.json: expected a JSON object");
  std::string topo = write_temp("weird", R"({"processors": 2, "links": [[0, 1], {"a": 1}]})");
  CHECK(spec_error(topo).find("expected") != std::string::npos);
}
