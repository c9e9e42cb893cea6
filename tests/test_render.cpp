// The Graphviz renderer: DOT of known schedules against hand-computed arrows, counterexample and
// deadlock pictures, step panels, size refusal, bad extensions, and the child process (missing
// program, timeout).
#include <catch2/catch.hpp>

#include <unistd.h>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "app/commands.hpp"
#include "app/render_cmd.hpp"
#include "check/checks.hpp"
#include "exec/executor.hpp"
#include "render/render.hpp"

using namespace collv;
namespace fs = std::filesystem;

namespace {

Trace run_named(const std::string& name, const std::string& spec, RunOptions o = {}) {
  Model m = parse_model_file(resolve_model_path(name, default_models_dir()));
  return run_model(m, Topology::parse(spec), o);
}

// Every labelled arrow of a DOT text as "from->to label" (node names n<id> -> ids).
std::multiset<std::string> labelled_edges(const std::string& dot) {
  std::multiset<std::string> out;
  std::regex re(R"re(^\s*n(\d+) -> n(\d+) \[(.*)\];$)re");
  std::regex lab(R"re((?:^|, )label="([^"]*)")re");
  std::istringstream in(dot);
  std::string line;
  while (std::getline(in, line)) {
    std::smatch m, l;
    if (!std::regex_match(line, m, re)) continue;
    std::string attrs = m[3];
    if (std::regex_search(attrs, l, lab))
      out.insert(m[1].str() + "->" + m[2].str() + " " + l[1].str());
  }
  return out;
}

std::size_t count_of(const std::string& s, const std::string& what) {
  std::size_t n = 0;
  for (auto p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

bool have_program(const char* name) {
  std::string path = std::getenv("PATH") ? std::getenv("PATH") : "";
  std::stringstream ss(path);
  std::string dir;
  while (std::getline(ss, dir, ':'))
    if (!dir.empty() && ::access((fs::path(dir) / name).c_str(), X_OK) == 0) return true;
  return false;
}

fs::path temp_dir(const std::string& tag) {
  fs::path d =
      fs::temp_directory_path() / ("collv_render_test_" + tag + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

const char* kDeadlockRing = R"(model deadlock_ring
  collective allgather
  topology ring
  input my_msg
  output result
procedure DL(my_id, my_msg, p, result)
begin
    result := my_msg;
    receive msg from left;
    send result to right;
    result := result ∪ msg;
end DL
)";

}  // namespace

TEST_CASE("schedule DOT of allgather_ring on ring:4 has exactly the hand-computed arrows",
          "[render]") {
  Trace t = run_named("allgather_ring", "ring:4");
  std::string dot = schedule_dot(t);
  // Algorithm 4.4: in step s (1..3) node i sends to i+1 (mod 4) the message that started at node
  // i - (s - 1): its own in step 1, then what it received from the left in the step before.
  std::multiset<std::string> expected;
  for (int s = 1; s <= 3; ++s)
    for (int i = 0; i < 4; ++i)
      expected.insert(std::to_string(i) + "->" + std::to_string((i + 1) % 4) + " " +
                      std::to_string(s) + " (x" + std::to_string(((i - (s - 1)) % 4 + 4) % 4) +
                      ")");
  CHECK(labelled_edges(dot) == expected);
  CHECK(dot.find("layout=neato") != std::string::npos);
  CHECK(dot.find("pos=\"") != std::string::npos);  // pinned circle
}

TEST_CASE("routed transfers are drawn hop by hop, labelled on the first hop", "[render]") {
  // broadcast_ring on ring:8 from 0 (Figure 4.2): step 1 is 0 -> 4, routed 0,1,2,3,4 (tie: +1).
  Trace t = run_named("broadcast_ring", "ring:8");
  std::string dot = schedule_dot(t);
  auto edges = labelled_edges(dot);
  CHECK(edges.count("0->1 1 (x0)") == 1);
  CHECK(edges.count("0->4 1 (x0)") == 0);
  // Step 2: 0 -> 2 and 4 -> 6; step 3: 0->1, 2->3, 4->5, 6->7: seven labelled arrows in all.
  std::multiset<std::string> expected = {"0->1 1 (x0)", "0->1 2 (x0)", "4->5 2 (x0)", "0->1 3 (x0)",
                                         "2->3 3 (x0)", "4->5 3 (x0)", "6->7 3 (x0)"};
  CHECK(edges == expected);
  // The unlabelled later hops of 0 -> 4 are dashed.
  CHECK(dot.find(
            "n3 -> n4 [color=\"#1b9e77\", fontcolor=\"#1b9e77\", penwidth=1.2, style=dashed];") !=
        std::string::npos);
  // --steps: only the chosen steps.
  RenderOptions o;
  o.steps = {3};
  CHECK(labelled_edges(schedule_dot(t, o)).size() == 4);
}

TEST_CASE("step panels show the input and what was delivered so far", "[render]") {
  Trace t = run_named("allgather_ring", "ring:4");
  std::string s0 = step_dot(t, 0);
  CHECK(s0.find("label=\"0\\n(x0)\"") != std::string::npos);
  CHECK(labelled_edges(s0).empty());
  std::string s1 = step_dot(t, 1);
  CHECK(s1.find("label=\"1\\n(x1, x0)\\nknows x0,x1\"") != std::string::npos);
  CHECK(labelled_edges(s1).size() == 4);
  std::string s3 = step_dot(t, 3);
  CHECK(s3.find("knows x0..x3") != std::string::npos);
  CHECK(s3.find("out [") != std::string::npos);
}

TEST_CASE("a counterexample picture names the invariant, the step and the nodes", "[render]") {
  Trace t = run_named("allgather_hypercube", "ring:8");
  Counterexample c;
  c.invariant = "congestion";
  c.step = 3;
  c.nodes = {3, 4};
  c.loads = {{3, 4, 4, 16}, {1, 2, 1, 4}};
  c.buffers = {{3, "held", "x0+x1"}, {4, "received", "x7"}};
  c.message = "step 3: link 3 -> 4 carries 4 transfers";
  for (std::uint32_t i = 0; i < t.transfers.size(); ++i)
    if (t.transfers[i].step == 3 && t.transfers[i].src == 0) c.transfers.push_back(i);
  std::string dot = counterexample_dot(t, c);
  CHECK(dot.find("violation of congestion at step 3 (nodes 3, 4)") != std::string::npos);
  CHECK(dot.find("step 3: link 3 -> 4 carries 4 transfers") != std::string::npos);
  CHECK(dot.find("held: x0+x1") != std::string::npos);
  CHECK(dot.find("received: x7") != std::string::npos);
  CHECK(dot.find("load 4 (16 items) 3->4") != std::string::npos);
  CHECK(dot.find("load 1 (4 items)") == std::string::npos);  // uncongested loads are not drawn
  CHECK(count_of(dot, "color=red") >= 8);                    // step 3's transfers
  CHECK(count_of(dot, "color=gray70") >= 8);                 // step 2 as context
  // The step's transfers in red carry their labels: 0 -> 4 goes 0,1,2,3,4 with x0..x3.
  CHECK(dot.find("label=\"3 (x0, x1, x2, x3)\"") != std::string::npos);
}

TEST_CASE("a deadlock is drawn as its waiting cycle", "[render]") {
  Model m = parse_model(kDeadlockRing, "dl.coll");
  Trace t = run_model(m, Topology::parse("ring:4"), {});
  REQUIRE(t.failure.kind == RunFailure::Kind::Deadlock);
  std::string dot = deadlock_dot(t);
  std::size_t arrows = t.failure.waiting_cycle.size() - 1 + (t.failure.cycle_closed ? 1 : 0);
  CHECK(count_of(dot, "tooltip=\"waits for\"") == arrows);
  CHECK(arrows == 4);
  // Every node waits for its left neighbour.
  for (NodeId v = 0; v < 4; ++v)
    CHECK(dot.find("n" + std::to_string(v) + " -> n" + std::to_string((v + 3) % 4) +
                   " [color=red, penwidth=2.2, style=bold, tooltip=\"waits for\"") !=
          std::string::npos);
}

namespace {

// The text labels of the edges of a DOT picture as Graphviz places them (neato -Tjson): text,
// left x, baseline y, width, font size.
struct PlacedText {
  std::string text;
  double x0, y, w, size;
};

std::vector<PlacedText> placed_edge_texts(const std::string& dot, const std::string& tag) {
  fs::path d = temp_dir(tag);
  std::ofstream(d / "p.dot") << dot;
  std::string cmd = "neato -Tjson " + (d / "p.dot").string() + " > " + (d / "p.json").string();
  REQUIRE(std::system(cmd.c_str()) == 0);
  std::ifstream in(d / "p.json");
  auto j = nlohmann::json::parse(in);
  std::vector<PlacedText> out;
  for (const auto& e : j.value("edges", nlohmann::json::array()))
    for (const char* k : {"_ldraw_", "_tldraw_", "_hldraw_", "_xldraw_"}) {
      if (!e.contains(k)) continue;
      double size = 10;
      for (const auto& op : e[k]) {
        if (op["op"] == "F") size = op["size"].get<double>();
        if (op["op"] != "T") continue;
        double x = op["pt"][0].get<double>(), y = op["pt"][1].get<double>();
        double w = op["width"].get<double>();
        std::string align = op["align"];
        double x0 = align == "c" ? x - w / 2 : align == "l" ? x : x - w;
        out.push_back({op["text"].get<std::string>(), x0, y, w, size});
      }
    }
  fs::remove_all(d);
  return out;
}

// Pairs of labels whose boxes (the text's width plus 1.5 points each side, one font size high)
// overlap or touch: a pile-up a reader cannot take apart.
std::vector<std::string> piled_up(const std::vector<PlacedText>& ts) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < ts.size(); ++i)
    for (std::size_t k = i + 1; k < ts.size(); ++k) {
      const auto &a = ts[i], &b = ts[k];
      bool x = a.x0 - 1.5 < b.x0 + b.w + 1.5 && b.x0 - 1.5 < a.x0 + a.w + 1.5;
      bool y = std::fabs(a.y - b.y) < std::min(a.size, b.size);
      if (x && y) out.push_back("'" + a.text + "' and '" + b.text + "'");
    }
  return out;
}

const Counterexample& first_violation(const std::vector<CheckResult>& rs, const std::string& name) {
  for (const auto& r : rs)
    if (r.name == name && !r.violations.empty()) return r.violations.front();
  throw std::runtime_error("no violation of " + name);
}

}  // namespace

TEST_CASE("far exchanges on a star: one dotted line per pair, each label at its sender",
          "[render]") {
  Model m = parse_model_file(std::string(COLLV_SOURCE_DIR) +
                             "/tests/mutants/route_star_far_exchange.coll");
  Trace t = run_model(m, Topology::parse("star:3"), {});
  auto checks = check_trace(t, CheckOptions{});
  std::string dot = counterexample_dot(t, first_violation(checks, "route"));
  // 213 <-> 231 (ids 2 and 3) exchange across the hexagon: one line, arrowheads at both ends.
  CHECK(count_of(dot, "n2 -> n3 [") + count_of(dot, "n3 -> n2 [") == 1);
  CHECK(dot.find("dir=both") != std::string::npos);
  CHECK(dot.find("xlabel") == std::string::npos);
  CHECK(dot.find("no link between the ends, labelled at the sender") != std::string::npos);
  // Every transfer of the step keeps its label, and no label is at the middle of a dotted line.
  for (int x = 0; x < 6; ++x) CHECK(count_of(dot, "1 (x" + std::to_string(x) + ")") == 1);
  std::regex mid(R"re(style=dotted[^\]]*, label=)re");
  CHECK_FALSE(std::regex_search(dot, mid));
}

TEST_CASE("counterexample pictures place no label on another", "[render][graphviz]") {
  if (!have_program("neato")) return;
  std::string dir = std::string(COLLV_SOURCE_DIR) + "/tests/mutants/";
  struct Case {
    std::string file, spec, check;
    std::size_t min_labels;
  };
  for (const Case& c : {Case{"route_star_far_exchange", "star:3", "route", 6},
                        Case{"route_star_far_exchange", "star:4", "route", 1},
                        Case{"route_star_rank_neighbour", "star:3", "route", 4},
                        Case{"congestion_hcube_pattern_on_ring", "ring:8", "congestion", 8},
                        Case{"deadlock_ring_wait_finished", "ring:6", "deadlock", 0}}) {
    INFO(c.file << " on " << c.spec);
    Model m = parse_model_file(dir + c.file + ".coll");
    Trace t = run_model(m, Topology::parse(c.spec), {});
    auto checks = check_trace(t, CheckOptions{});
    auto texts = placed_edge_texts(counterexample_dot(t, first_violation(checks, c.check)), "pile");
    CHECK(texts.size() >= c.min_labels);
    auto bad = piled_up(texts);
    for (const auto& b : bad) UNSCOPED_INFO("labels on one another: " << b);
    CHECK(bad.empty());
  }
  // The check itself sees a pile-up: two labels at one point.
  CHECK(piled_up({{"1 (x3)", 210.9, 163.5, 29, 10}, {"no link", 239.9, 163.5, 34, 10}}).size() ==
        1);
  CHECK(piled_up({{"1 (x0)", 159.2, 254.9, 29, 10}, {"1 (x5)", 151.4, 266.0, 29, 10}}).empty());
}

TEST_CASE("deadlock and end-state counterexample pictures have no placeholder text", "[render]") {
  Model m = parse_model(kDeadlockRing, "dl.coll");
  Trace t = run_model(m, Topology::parse("ring:4"), {});
  REQUIRE(t.failure.kind == RunFailure::Kind::Deadlock);
  auto checks = check_trace(t, CheckOptions{});
  for (const auto& r : checks) {
    if (r.verdict != Verdict::Fail) continue;
    for (const auto& c : r.violations) {
      INFO(r.name << ": " << c.message);
      std::string dot = counterexample_dot(t, c);
      std::smatch title;
      REQUIRE(
          std::regex_search(dot, title, std::regex(R"re(label="((?:[^"\\]|\\.)*)", comment)re")));
      CHECK(title[1].str().find('?') == std::string::npos);
      CHECK(title[1].str().find("a waits for b") != std::string::npos);
    }
  }
  // A counterexample with no invariant, step or transfers still says what is drawn.
  Counterexample bare;
  bare.message = "something is wrong";
  std::string dot = counterexample_dot(t, bare);
  CHECK(dot.find('?') == std::string::npos);
  CHECK(dot.find("violation\\nsomething is wrong") != std::string::npos);
  CHECK(dot.find("no transfer was made before the deadlock") != std::string::npos);
  // With transfers before the deadlock, they are the grey context.
  Model m2 = parse_model_file(std::string(COLLV_SOURCE_DIR) +
                              "/tests/mutants/deadlock_ring_wait_finished.coll");
  Trace t2 = run_model(m2, Topology::parse("ring:6"), {});
  REQUIRE(t2.failure.kind == RunFailure::Kind::Deadlock);
  std::string dot2 = counterexample_dot(t2, bare);
  CHECK(dot2.find(fmt::format("grey: the {} transfers made before the deadlock",
                              t2.transfers.size())) != std::string::npos);
  CHECK(count_of(dot2, "color=gray70") > 0);
}

TEST_CASE("layouts fit the topology", "[render]") {
  auto L = layout_topology(Topology::parse("mesh:3x4"));
  CHECK(L.name == "grid");
  CHECK(L.pos[5].first == Approx(1.0));  // (1,1)
  CHECK(L.pos[5].second == Approx(-1.0));
  CHECK(layout_topology(Topology::parse("hypercube:3")).name == "nested-squares");
  CHECK(layout_topology(Topology::parse("hypercube:5")).name == "circle");
  auto T = layout_topology(Topology::parse("tree:4"));
  CHECK(T.name == "tree");
  CHECK(T.pos[4].second > T.pos[5].second);  // root above its children
  CHECK(T.pos[4].first == Approx((T.pos[1].first + T.pos[2].first) / 2));
  auto S = layout_topology(Topology::parse("star:4"));
  CHECK(S.clusters.size() == 4);
  for (const auto& [label, members] : S.clusters) CHECK(members.size() == 6);
  // Distinct positions.
  std::set<std::pair<long, long>> seen;
  for (auto& p : S.pos) seen.insert({std::lround(p.first * 100), std::lround(p.second * 100)});
  CHECK(seen.size() == 24);
}

TEST_CASE("star:7 is refused at once with a message", "[render]") {
  auto dir = temp_dir("big");
  RenderCommandOptions o;
  o.model = "allreduce_star";
  o.topology = "star:7";
  o.output = (dir / "big.svg").string();
  std::ostringstream out, err;
  auto t0 = std::chrono::steady_clock::now();
  int rc = run_render_command(o, out, err);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(rc == 2);
  CHECK(err.str().find("5040 nodes") != std::string::npos);
  CHECK(err.str().find("--force") != std::string::npos);
  CHECK(secs < 10);
  CHECK(!fs::exists(dir / "big.svg"));
  fs::remove_all(dir);
}

TEST_CASE("bad output extension and missing outputs are usage errors", "[render]") {
  RenderCommandOptions o;
  o.model = "allgather_ring";
  o.topology = "ring:4";
  o.output = "picture.jpg";
  std::ostringstream out, err;
  CHECK(run_render_command(o, out, err) == 2);
  CHECK(err.str().find(".svg, .png or .dot") != std::string::npos);
  o.output.clear();
  CHECK(run_render_command(o, out, err) == 2);
  o.output = "-";
  o.model = "no_such_model";
  CHECK(run_render_command(o, out, err) == 2);
  CHECK_THROWS_AS(picture_format("x.svgz"), UsageError);
  CHECK(picture_format("X.PNG") == PictureFormat::Png);
  CHECK(picture_format("a.gv") == PictureFormat::Dot);
}

TEST_CASE("render command writes DOT to stdout and pictures by extension", "[render]") {
  RenderCommandOptions o;
  o.model = "allgather_ring";
  o.topology = "ring:4";
  o.output = "-";
  std::ostringstream out, err;
  REQUIRE(run_render_command(o, out, err) == 0);
  CHECK(labelled_edges(out.str()).size() == 12);
  if (!have_program("neato")) return;
  auto dir = temp_dir("pics");
  o.output = (dir / "s.svg").string();
  o.per_step_dir = (dir / "steps").string();
  std::ostringstream out2, err2;
  REQUIRE(run_render_command(o, out2, err2) == 0);
  std::ifstream f(o.output);
  std::string svg((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  CHECK(svg.find("<svg") != std::string::npos);
  for (int s = 0; s <= 3; ++s)
    CHECK(fs::exists(dir / "steps" / ("step-" + std::to_string(s) + ".svg")));
  // Counterexample mode on Figure 4.12's setting.
  o.model = "allgather_hypercube";
  o.topology = "ring:8";
  o.per_step_dir.clear();
  o.output = (dir / "cex.png").string();
  o.counterexample = true;
  o.cex_step = 3;
  std::ostringstream out3, err3;
  CHECK(run_render_command(o, out3, err3) == 1);
  CHECK(fs::file_size(o.output) > 1000);
  fs::remove_all(dir);
}

TEST_CASE("the Graphviz child process: missing program, failure, timeout", "[render]") {
  GraphvizOptions g;
  g.program = "collv-no-such-graphviz-program";
  try {
    run_graphviz("digraph { a -> b }", "svg", g);
    FAIL("expected GraphvizError");
  } catch (const GraphvizError& e) {
    CHECK(std::string(e.what()).find("not found") != std::string::npos);
  }
  auto dir = temp_dir("gv");
  fs::path slow = dir / "slow-graphviz";
  {
    std::ofstream f(slow);
    f << "#!/bin/sh\nexec sleep 30\n";
  }
  fs::permissions(slow, fs::perms::owner_all);
  g.program = slow.string();
  g.timeout_seconds = 0.5;
  auto t0 = std::chrono::steady_clock::now();
  try {
    run_graphviz("digraph { a -> b }", "svg", g);
    FAIL("expected a timeout");
  } catch (const GraphvizError& e) {
    CHECK(std::string(e.what()).find("did not finish") != std::string::npos);
  }
  CHECK(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < 5);
  fs::path bad = dir / "bad-graphviz";
  {
    std::ofstream f(bad);
    f << "#!/bin/sh\ncat >/dev/null\necho 'syntax error in line 1' >&2\nexit 1\n";
  }
  fs::permissions(bad, fs::perms::owner_all);
  g.program = bad.string();
  g.timeout_seconds = 10;
  try {
    run_graphviz(std::string(200000, ' '), "svg", g);
    FAIL("expected a failure");
  } catch (const GraphvizError& e) {
    CHECK(std::string(e.what()).find("syntax error in line 1") != std::string::npos);
  }
  fs::remove_all(dir);
  if (have_program("neato")) {
    std::string svg = run_graphviz("digraph { a -> b }", "svg");
    CHECK(svg.find("<svg") != std::string::npos);
  }
}
