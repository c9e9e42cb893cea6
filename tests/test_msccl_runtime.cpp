// The MSCCL-XML `runtime` check (the loading rules of msccl-executor-nccl and microsoft/msccl),
// the replay's bounded buffering, the <op> form, coll="broadcast"/"custom", and the memory bound
// of the reader. Every rule is shown failing on a file the runtime refuses and passing on its
// correct twin (docs/formats.md, "MSCCL-XML").
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli.hpp"
#include "import/import.hpp"
#include "import_util.hpp"
#include "util/error.hpp"
#include "util/memory.hpp"

using namespace collv;

namespace {

const std::string kCorpus = COLLV_SOURCE_DIR + "/../shared/data/schedules/corpus/";
const std::string kRepro = COLLV_SOURCE_DIR + "/../shared/data/reproducers/";

using test::failing;
using test::results;

// The first runtime violation's text ("" when the check passes).
std::string runtime_msg(const ImportedSchedule& s) {
  auto r = results(s)["runtime"];
  return r.violations.empty() ? "" : r.violations.front().message;
}

MscclOptions rt(MscclRuntime r, int slots = -1) {
  MscclOptions o;
  o.runtime = r;
  o.slots = slots;
  return o;
}

const char* kHeaderAttrs = R"(proto="Simple" inplace="1" outofplace="0" minBytes="0" maxBytes="0")";

std::string step(int s, const char* type, const char* sb, int so, const char* db, int dof,
                 int cnt = 1, int depid = -1, int deps = -1, int hasdep = 0) {
  return fmt::format(
      R"(      <step s="{}" type="{}" srcbuf="{}" srcoff="{}" dstbuf="{}" dstoff="{}" cnt="{}" depid="{}" deps="{}" hasdep="{}"/>)"
      "\n",
      s, type, sb, so, db, dof, cnt, depid, deps, hasdep);
}

// A 2-gpu in-place allgather of c chunks per gpu: each gpu has a sending threadblock and a
// receiving one, and moves `cnt` chunks per step. `extra` goes inside gpu 0 after its
// threadblocks; `attrs` are the <algo> attributes besides the sizes.
std::string allgather2(int c, int cnt = 1, std::string attrs = kHeaderAttrs,
                       const std::string& extra = "") {
  std::string x = fmt::format(
      R"(<algo name="ag2" nchannels="1" nchunksperloop="{}" ngpus="2" coll="allgather" {}>)"
      "\n",
      2 * c, attrs);
  for (int r = 0; r < 2; ++r) {
    x += fmt::format(R"(  <gpu id="{}" i_chunks="{}" o_chunks="{}" s_chunks="0">)"
                     "\n",
                     r, c, 2 * c);
    x += fmt::format(R"(    <tb id="0" send="{}" recv="-1" chan="0">)"
                     "\n",
                     1 - r);
    for (int k = 0, s = 0; k < c; k += cnt, ++s)
      x += step(s, "s", "o", r * c + k, "o", r * c + k, std::min(cnt, c - k));
    x += "    </tb>\n";
    x += fmt::format(R"(    <tb id="1" send="-1" recv="{}" chan="0">)"
                     "\n",
                     1 - r);
    for (int k = 0, s = 0; k < c; k += cnt, ++s)
      x += step(s, "r", "o", (1 - r) * c + k, "o", (1 - r) * c + k, std::min(cnt, c - k));
    x += "    </tb>\n";
    if (r == 0) x += extra;
    x += "  </gpu>\n";
  }
  return x + "</algo>\n";
}

std::string replace(std::string s, const std::string& from, const std::string& to) {
  auto k = s.find(from);
  REQUIRE(k != std::string::npos);
  return s.replace(k, from.size(), to);
}

// An allgather over p gpus, every pair directly (one threadblock per peer and direction); the
// pair r, q talks on channel (r + q) mod nchan.
std::string allpairs(int p, int nchan) {
  std::string x = fmt::format(
      R"(<algo name="ap" nchannels="{}" nchunksperloop="{}" ngpus="{}" coll="allgather" {}>)"
      "\n",
      nchan, p, p, kHeaderAttrs);
  for (int r = 0; r < p; ++r) {
    x += fmt::format(R"(  <gpu id="{}" i_chunks="1" o_chunks="{}" s_chunks="0">)"
                     "\n",
                     r, p);
    int id = 0;
    for (int q = 0; q < p; ++q) {
      if (q == r) continue;
      x += fmt::format(R"(    <tb id="{}" send="{}" recv="-1" chan="{}">)"
                       "\n",
                       id, q, (r + q) % nchan);
      ++id;
      x += step(0, "s", "o", r, "o", r) + "    </tb>\n";
      x += fmt::format(R"(    <tb id="{}" send="-1" recv="{}" chan="{}">)"
                       "\n",
                       id, q, (r + q) % nchan);
      ++id;
      x += step(0, "r", "o", q, "o", q) + "    </tb>\n";
    }
    x += "  </gpu>\n";
  }
  return x + "</algo>\n";
}

}  // namespace

TEST_CASE("runtime: the correct twin loads under both runtimes", "[import][msccl-runtime]") {
  for (auto r : {MscclRuntime::ExecutorNccl, MscclRuntime::Msccl}) {
    ImportedSchedule s = import_msccl_xml(allgather2(4), "ag.xml", rt(r));
    CHECK(failing(s).empty());
    auto res = results(s);
    REQUIRE(res.count("runtime") == 1);
    CHECK(res["runtime"].verdict == Verdict::Pass);
    CHECK(res["runtime"].note.find(msccl_runtime_name(r)) != std::string::npos);
  }
}

TEST_CASE("runtime: <algo> attributes each runtime needs", "[import][msccl-runtime]") {
  const auto ex = rt(MscclRuntime::ExecutorNccl), ms = rt(MscclRuntime::Msccl);
  for (const char* a : {"outofplace=\"0\" ", "minBytes=\"0\" ", "maxBytes=\"0\""}) {
    INFO(a);
    std::string attrs = replace(kHeaderAttrs, a, "");
    ImportedSchedule s = import_msccl_xml(allgather2(2, 1, attrs), "ag.xml", ex);
    CHECK(failing(s) == std::set<std::string>{"runtime"});
    std::string name(a, std::string(a).find('='));
    CHECK(runtime_msg(s).find("has no " + name) != std::string::npos);
    // microsoft/msccl defaults minBytes and maxBytes and does not read outofplace.
    CHECK(failing(import_msccl_xml(allgather2(2, 1, attrs), "ag.xml", ms)).empty());
  }
  // proto: both.
  std::string noproto = replace(kHeaderAttrs, "proto=\"Simple\" ", "");
  for (const auto& o : {ex, ms}) {
    ImportedSchedule s = import_msccl_xml(allgather2(2, 1, noproto), "ag.xml", o);
    CHECK(failing(s) == std::set<std::string>{"runtime"});
    CHECK(runtime_msg(s).find("no proto") != std::string::npos);
  }
  // nchunksperloop in a <step> file.
  std::string nocpl = replace(allgather2(2), "nchunksperloop=\"4\" ", "");
  ImportedSchedule s = import_msccl_xml(nocpl, "ag.xml", ex);
  CHECK(failing(s) == std::set<std::string>{"runtime"});
  CHECK(runtime_msg(s).find("nchunksperloop") != std::string::npos);
}

TEST_CASE("runtime: MSCCL_MAX_NUM_STEPS per threadblock", "[import][msccl-runtime]") {
  const auto ex = rt(MscclRuntime::ExecutorNccl), ms = rt(MscclRuntime::Msccl);
  CHECK(failing(import_msccl_xml(allgather2(64), "ag.xml", ex)).empty());
  ImportedSchedule s = import_msccl_xml(allgather2(65), "ag.xml", ex);
  CHECK(failing(s) == std::set<std::string>{"runtime"});
  CHECK(runtime_msg(s).find("MSCCL_MAX_NUM_STEPS is 64") != std::string::npos);
  CHECK(runtime_msg(s).find("65 steps") != std::string::npos);
  // microsoft/msccl allows 256.
  CHECK(failing(import_msccl_xml(allgather2(65), "ag.xml", ms)).empty());
  CHECK(failing(import_msccl_xml(allgather2(256), "ag.xml", ms)).empty());
  s = import_msccl_xml(allgather2(257), "ag.xml", ms);
  CHECK(runtime_msg(s).find("MSCCL_MAX_NUM_STEPS is 256") != std::string::npos);
}

TEST_CASE("runtime: cnt below MSCCL_MAX_COUNT", "[import][msccl-runtime]") {
  CHECK(failing(import_msccl_xml(allgather2(71, 71), "ag.xml")).empty());
  ImportedSchedule s = import_msccl_xml(allgather2(72, 72), "ag.xml");
  CHECK(failing(s) == std::set<std::string>{"runtime"});
  CHECK(runtime_msg(s).find("cnt=72; MSCCL_MAX_COUNT is 72") != std::string::npos);
}

TEST_CASE("runtime: 32 send (receive) threadblocks per channel", "[import][msccl-runtime]") {
  // 34 gpus, all pairs: 33 send and 33 receive threadblocks per gpu.
  ImportedSchedule one = import_msccl_xml(allpairs(34, 1), "ap.xml");
  CHECK(failing(one) == std::set<std::string>{"runtime"});
  std::string m = runtime_msg(one);
  CHECK(m.find("MSCCL_MAX_NUM_THREAD_BLOCKS_PER_CHANNEL = 32") != std::string::npos);
  CHECK(m.find("on channel 0") != std::string::npos);
  // Spread over two channels, the same schedule loads.
  CHECK(failing(import_msccl_xml(allpairs(34, 2), "ap.xml")).empty());
  // 33 gpus: 32 of each per channel, the limit itself.
  CHECK(failing(import_msccl_xml(allpairs(33, 1), "ap.xml")).empty());
}

TEST_CASE("runtime: threadblock ids 0..n-1", "[import][msccl-runtime]") {
  std::string gap = replace(allgather2(2), R"(<tb id="1" send="-1" recv="1")",
                            R"(<tb id="2" send="-1" recv="1")");
  ImportedSchedule s = import_msccl_xml(gap, "ag.xml");
  CHECK(failing(s).count("runtime") == 1);
  CHECK(runtime_msg(s).find("no threadblock 1") != std::string::npos);
  CHECK(results(s)["postcondition"].verdict == Verdict::Pass);  // still replayed
}

TEST_CASE("runtime: MAX_NODES XML nodes loaded per rank", "[import][msccl-runtime]") {
  // Threadblocks of nops on gpu 0 (no peers: not counted per channel), 60 steps each.
  auto nops = [](int ntb) {
    std::string x;
    for (int b = 0; b < ntb; ++b) {
      x += fmt::format(R"(    <tb id="{}" send="-1" recv="-1" chan="0">)"
                       "\n",
                       2 + b);
      for (int k = 0; k < 60; ++k) x += step(k, "nop", "o", 0, "o", 0);
      x += "    </tb>\n";
    }
    return x;
  };
  // 1 + 2 gpus + 2 tbs + 4 steps + 66 * 61 = 4035 nodes: loads.
  CHECK(failing(import_msccl_xml(allgather2(2, 1, kHeaderAttrs, nops(66)), "n.xml")).empty());
  // 1 + 2 + 2 + 4 + 67 * 61 = 4096: the parser's array is full.
  ImportedSchedule s = import_msccl_xml(allgather2(2, 1, kHeaderAttrs, nops(67)), "n.xml");
  CHECK(failing(s) == std::set<std::string>{"runtime"});
  CHECK(runtime_msg(s).find("4096 XML nodes") != std::string::npos);
}

TEST_CASE("runtime: coll names each runtime knows", "[import][msccl-runtime]") {
  const auto ex = rt(MscclRuntime::ExecutorNccl), ms = rt(MscclRuntime::Msccl);
  // A 2-gpu reduce-scatter, out of place: each gpu sends the other's chunk and reduces its own.
  auto rs = [](const char* coll) {
    std::string x = fmt::format(
        R"(<algo name="rs" nchannels="1" nchunksperloop="2" ngpus="2" coll="{}" proto="Simple" inplace="0" outofplace="1" minBytes="0" maxBytes="0">)"
        "\n",
        coll);
    for (int r = 0; r < 2; ++r) {
      x += fmt::format(R"(  <gpu id="{}" i_chunks="2" o_chunks="1" s_chunks="0">)"
                       "\n",
                       r);
      x += fmt::format(R"(    <tb id="0" send="{}" recv="{}" chan="0">)"
                       "\n",
                       1 - r, 1 - r);
      x += step(0, "s", "i", 1 - r, "i", 1 - r);
      x += step(1, "rrc", "i", r, "o", 0);
      x += "    </tb>\n  </gpu>\n";
    }
    return x + "</algo>\n";
  };
  CHECK(failing(import_msccl_xml(rs("reducescatter"), "rs.xml", ex)).empty());
  ImportedSchedule s = import_msccl_xml(rs("reduce_scatter"), "rs.xml", ex);
  CHECK(failing(s) == std::set<std::string>{"runtime"});
  CHECK(runtime_msg(s).find("coll=\"reduce_scatter\"") != std::string::npos);
  CHECK(failing(import_msccl_xml(rs("reduce_scatter"), "rs.xml", ms)).empty());
  CHECK(failing(import_msccl_xml(rs("reducescatter"), "rs.xml", ms)) ==
        std::set<std::string>{"runtime"});
  // custom: read and replayed; the executor refuses it, microsoft/msccl loads it; the output is
  // not judged.
  std::string custom = replace(allgather2(2), "coll=\"allgather\"", "coll=\"custom\"");
  s = import_msccl_xml(custom, "c.xml", ex);
  CHECK(failing(s) == std::set<std::string>{"runtime"});
  s = import_msccl_xml(custom, "c.xml", ms);
  CHECK(failing(s).empty());
  CHECK(results(s)["postcondition"].verdict == Verdict::NotChecked);
}

TEST_CASE("runtime: the executor's hand-written XML reader", "[import][msccl-runtime]") {
  std::string good = allgather2(2);
  auto refused = [&](const std::string& text, const std::string& what) {
    INFO(what);
    ImportedSchedule s = import_msccl_xml(text, "x.xml");
    CHECK(failing(s) == std::set<std::string>{"runtime"});
    CHECK(runtime_msg(s).find(what) != std::string::npos);
  };
  refused("<?xml version=\"1.0\"?>\n" + good, "prolog");
  refused(replace(good, "proto=\"Simple\"", "proto='Simple'"), "single quote");
  refused(replace(good, "    <tb id=\"1\"", "\t<tb id=\"1\""), "a tab");
  refused(replace(good, " ngpus=\"2\"", "\n ngpus=\"2\""), "line break inside a tag");
  // What it accepts: doubled spaces, a comment, a space before '>'.
  for (const std::string& ok :
       {replace(good, " ngpus=\"2\"", "  ngpus=\"2\""), "<!-- made by hand -->\n" + good,
        replace(good, "s_chunks=\"0\">", "s_chunks=\"0\" >")})
    CHECK(failing(import_msccl_xml(ok, "x.xml")).empty());
  // The location is the file's.
  ImportedSchedule s = import_msccl_xml("<?xml version=\"1.0\"?>\n" + good, "x.xml");
  CHECK(runtime_msg(s).find("x.xml:1:1:") == 0);
}

TEST_CASE("a dependency on a step that does not signal waits for the next that does",
          "[import][msccl-runtime]") {
  // gpu r: tb0 copies its input to its output chunk (hasdep=0), then into scratch (hasdep=1);
  // tb1 sends after tb0's step 0, which does not signal: the runtime's flag reaches 0 only when
  // step 1 signals (flags only grow), so the send waits for step 1.
  auto file = [](bool later_signal) {
    std::string x =
        R"(<algo name="d" nchannels="1" nchunksperloop="2" ngpus="2" coll="allgather" proto="Simple" inplace="0" outofplace="1" minBytes="0" maxBytes="0">)"
        "\n";
    for (int r = 0; r < 2; ++r) {
      x += fmt::format(R"(  <gpu id="{}" i_chunks="1" o_chunks="2" s_chunks="1">)"
                       "\n",
                       r);
      x += R"(    <tb id="0" send="-1" recv="-1" chan="0">)"
           "\n";
      x += step(0, "cpy", "i", 0, "o", r);
      if (later_signal) x += step(1, "cpy", "i", 0, "s", 0, 1, -1, -1, 1);
      x += "    </tb>\n";
      x += fmt::format(R"(    <tb id="1" send="{}" recv="-1" chan="0">)"
                       "\n",
                       1 - r);
      x += step(0, "s", "i", 0, "i", 0, 1, 0, 0, 0) + "    </tb>\n";
      x += fmt::format(R"(    <tb id="2" send="-1" recv="{}" chan="0">)"
                       "\n",
                       1 - r);
      x += step(0, "r", "o", 1 - r, "o", 1 - r) + "    </tb>\n  </gpu>\n";
    }
    return x + "</algo>\n";
  };
  ImportedSchedule ok = import_msccl_xml(file(true), "d.xml");
  CHECK(failing(ok).empty());
  CHECK(results(ok)["attributes"].note.find("next signalling step") != std::string::npos);
  // No later step signals: the runtime waits for ever, and so does the replay.
  ImportedSchedule stuck = import_msccl_xml(file(false), "d.xml");
  CHECK(failing(stuck).count("deadlock") == 1);
  CHECK(failing(stuck).count("attributes") == 0);
}

TEST_CASE("bounded buffering: a send blocks when its connection's slots are full",
          "[import][msccl-runtime]") {
  // Each gpu: one threadblock with both peers; it sends n chunks, then receives n.
  auto file = [](int n, bool interleave) {
    std::string x = fmt::format(
        R"(<algo name="b" nchannels="1" nchunksperloop="{}" ngpus="2" coll="allgather" {}>)"
        "\n",
        2 * n, kHeaderAttrs);
    for (int r = 0; r < 2; ++r) {
      x += fmt::format(R"(  <gpu id="{}" i_chunks="{}" o_chunks="{}" s_chunks="0">)"
                       "\n",
                       r, n, 2 * n);
      x += fmt::format(R"(    <tb id="0" send="{}" recv="{}" chan="0">)"
                       "\n",
                       1 - r, 1 - r);
      int s = 0;
      if (interleave) {
        for (int k = 0; k < n; ++k) {
          x += step(s++, "s", "o", r * n + k, "o", r * n + k);
          x += step(s++, "r", "o", (1 - r) * n + k, "o", (1 - r) * n + k);
        }
      } else {
        for (int k = 0; k < n; ++k) x += step(s++, "s", "o", r * n + k, "o", r * n + k);
        for (int k = 0; k < n; ++k) x += step(s++, "r", "o", (1 - r) * n + k, "o", (1 - r) * n + k);
      }
      x += "    </tb>\n  </gpu>\n";
    }
    return x + "</algo>\n";
  };
  // proto="Simple": a send takes 4 of the FIFO's 8 steps, so two sends fit (the default).
  ImportedSchedule dl = import_msccl_xml(file(16, false), "b.xml");
  CHECK(dl.trace.failure.kind == RunFailure::Kind::Deadlock);
  CHECK(failing(dl).count("deadlock") == 1);
  const std::string& m = dl.trace.failure.message;
  CHECK(m.find("gpu 0 tb 0 step 2") != std::string::npos);
  CHECK(m.find("waits to send to gpu 1 on channel 0, whose 2 slots") != std::string::npos);
  CHECK(results(dl)["attributes"].note.find("2 unreceived sends (proto=\"Simple\"") !=
        std::string::npos);
  CHECK(failing(import_msccl_xml(file(2, false), "b.xml")).empty());
  CHECK(failing(import_msccl_xml(file(3, false), "b.xml")).count("deadlock") == 1);
  // proto="LL": one step a send, eight fit.
  auto ll = [](std::string x) { return replace(x, "proto=\"Simple\"", "proto=\"LL\""); };
  ImportedSchedule dl8 = import_msccl_xml(ll(file(16, false)), "b.xml");
  CHECK(dl8.trace.failure.message.find("gpu 0 tb 0 step 8") != std::string::npos);
  CHECK(dl8.trace.failure.message.find("whose 8 slots") != std::string::npos);
  CHECK(failing(import_msccl_xml(ll(file(8, false)), "b.xml")).empty());
  CHECK(failing(import_msccl_xml(ll(file(9, false)), "b.xml")).count("deadlock") == 1);
  // The correct twin (a receive after each send) passes; so does the first with room enough.
  CHECK(failing(import_msccl_xml(file(16, true), "b.xml")).empty());
  CHECK(failing(import_msccl_xml(file(16, false), "b.xml", rt(MscclRuntime::ExecutorNccl, 16)))
            .empty());
  CHECK(failing(import_msccl_xml(file(8, false), "b.xml", rt(MscclRuntime::ExecutorNccl, 8)))
            .empty());
  CHECK(failing(import_msccl_xml(file(16, false), "b.xml", rt(MscclRuntime::ExecutorNccl, 0)))
            .empty());
}

TEST_CASE("coll=\"broadcast\" is read, its root the gpu that receives nothing",
          "[import][msccl-runtime]") {
  auto file = [](const char* dstbuf) {
    std::string x = fmt::format(
        R"(<algo name="bc" nchannels="1" nchunksperloop="1" ngpus="3" coll="broadcast" {}>)"
        "\n",
        kHeaderAttrs);
    // root 1 sends to 0 and 2.
    x += R"(  <gpu id="0" i_chunks="1" o_chunks="0" s_chunks="1">)"
         "\n"
         R"(    <tb id="0" send="-1" recv="1" chan="0">)"
         "\n";
    x += step(0, "r", "i", 0, dstbuf, 0) + "    </tb>\n  </gpu>\n";
    x += R"(  <gpu id="1" i_chunks="1" o_chunks="0" s_chunks="0">)"
         "\n"
         R"(    <tb id="0" send="0" recv="-1" chan="0">)"
         "\n";
    x += step(0, "s", "i", 0, "i", 0) + "    </tb>\n";
    x += R"(    <tb id="1" send="2" recv="-1" chan="0">)"
         "\n";
    x += step(0, "s", "i", 0, "i", 0) + "    </tb>\n  </gpu>\n";
    x += R"(  <gpu id="2" i_chunks="1" o_chunks="0" s_chunks="0">)"
         "\n"
         R"(    <tb id="0" send="-1" recv="1" chan="0">)"
         "\n";
    x += step(0, "r", "i", 0, "i", 0) + "    </tb>\n  </gpu>\n";
    return x + "</algo>\n";
  };
  ImportedSchedule s = import_msccl_xml(file("i"), "bc.xml");
  CHECK(s.trace.collective == Collective::Broadcast);
  CHECK(s.trace.root == 1);
  CHECK(failing(s).empty());
  CHECK(results(s)["postcondition"].note.find("root is gpu 1") != std::string::npos);
  // gpu 0 receives into scratch: its output keeps its own input.
  CHECK(failing(import_msccl_xml(file("s"), "bc.xml")).count("postcondition") == 1);
  // The corpus's MSCCLang binomial broadcast.
  CHECK(failing(import_schedule(kCorpus + "msccl-tools/own_programs/broadcast_binomial.xml"))
            .empty());
}

TEST_CASE("msccl-tools' <op> form is read and judged on its data", "[import][msccl-runtime]") {
  auto file = [](int off1) {
    std::string x = fmt::format(
        R"(<algo name="op" proto="LL128" nchannels="1" ngpus="2" coll="allgather" inplace="1" outofplace="0" minBytes="0" maxBytes="0">)"
        "\n");
    for (int r = 0; r < 2; ++r) {
      x += fmt::format(R"(  <gpu id="{}" i_chunks="0" o_chunks="2" s_chunks="0">)"
                       "\n"
                       R"(    <tb id="0" send="{}" recv="{}" chan="0">)"
                       "\n",
                       r, 1 - r, 1 - r);
      x += fmt::format(R"(      <op step="0" type="s" buf="o" off="{}"/>)"
                       "\n"
                       R"(      <op step="1" type="r" buf="o" off="{}"/>)"
                       "\n",
                       r, r == 1 ? off1 : 1 - r);
      x += "    </tb>\n  </gpu>\n";
    }
    return x + "</algo>\n";
  };
  ImportedSchedule s = import_msccl_xml(file(0), "op.xml");
  CHECK(failing(s).empty());
  auto res = results(s);
  CHECK(res["runtime"].verdict == Verdict::NotChecked);
  CHECK(res["runtime"].note.find("MSCCL_MAX_NUM_STEPS") != std::string::npos);
  CHECK(res["runtime"].note.find("read only <step>") != std::string::npos);
  // gpu 1 receives into its own chunk: the data says so.
  CHECK(failing(import_msccl_xml(file(1), "op.xml")).count("postcondition") == 1);
  for (const char* f : {"ag_ring_8.xml", "ar_ring_8.xml"})
    CHECK(failing(import_schedule(kCorpus + "msccl-tools/opformat/" + f)).empty());
}

TEST_CASE("a huge nchunksperloop is refused before allocating", "[import][msccl-runtime]") {
  const std::uint64_t saved = memory_limit();
  // 100 MiB beyond what the process holds now (under AddressSanitizer that is already more than
  // 100 MiB, and every memory estimate would be refused first, for the wrong reason).
  set_memory_limit(resident_bytes() + (100ULL << 20));
  for (const char* f :
       {"turn3-s02-msccl-nchunksperloop-1e7.xml", "turn3-s03-msccl-nchunksperloop-1e8.xml"}) {
    INFO(f);
    std::uint64_t before = resident_bytes();
    try {
      import_schedule(kRepro + f);
      FAIL("no error");
    } catch (const LimitError& e) {
      CHECK(std::string(e.what()).find("chunks per buffer") != std::string::npos);
    }
    CHECK(resident_bytes() < before + (64ULL << 20));
  }
  // Within the chunk bound but beyond --max-memory: refused by the memory estimate.
  std::string big = replace(allgather2(2), "nchunksperloop=\"4\"", "nchunksperloop=\"1000000\"");
  big = replace(big, "coll=\"allgather\"", "coll=\"allreduce\"");
  CHECK_THROWS_AS(import_msccl_xml(big, "big.xml"), LimitError);
  set_memory_limit(saved);
}

namespace {

// The loading rules checked on the text of a written file, independently of collv's reader:
// every <algo> attribute the runtimes read, steps per threadblock, cnt, threadblock ids 0..n-1,
// send (receive) threadblocks per channel.
void check_written_file(const std::string& xml, int max_steps) {
  auto attr = [](const std::string& tag, const std::string& name) -> std::string {
    auto k = tag.find(" " + name + "=\"");
    if (k == std::string::npos) return "<none>";
    k += name.size() + 3;
    return tag.substr(k, tag.find('"', k) - k);
  };
  std::string algo = xml.substr(0, xml.find('>'));
  for (const char* a : {"proto", "nchannels", "nchunksperloop", "ngpus", "coll", "inplace",
                        "outofplace", "minBytes", "maxBytes"}) {
    INFO(a);
    CHECK(attr(algo, a) != "<none>");
  }
  CHECK(attr(algo, "inplace") != attr(algo, "outofplace"));
  std::size_t at = 0;
  int gpus = 0;
  while ((at = xml.find("<gpu ", at)) != std::string::npos) {
    std::size_t end = xml.find("</gpu>", at);
    std::string gpu = xml.substr(at, end - at);
    ++gpus;
    std::map<std::string, int> sends, recvs;
    int expect_id = 0;
    std::size_t t = 0;
    while ((t = gpu.find("<tb ", t)) != std::string::npos) {
      std::size_t tend = gpu.find("</tb>", t);
      std::string tb = gpu.substr(t, tend - t);
      std::string head = tb.substr(0, tb.find('>'));
      CHECK(attr(head, "id") == std::to_string(expect_id++));
      if (attr(head, "send") != "-1") ++sends[attr(head, "chan")];
      if (attr(head, "recv") != "-1") ++recvs[attr(head, "chan")];
      int steps = 0;
      std::size_t s = 0;
      while ((s = tb.find("<step ", s)) != std::string::npos) {
        std::string st = tb.substr(s, tb.find("/>", s) - s);
        CHECK(attr(st, "s") == std::to_string(steps));
        CHECK(std::stoi(attr(st, "cnt")) < 72);
        ++steps;
        ++s;
      }
      CHECK(steps <= max_steps);
      t = tend;
    }
    for (auto& [chan, n] : sends) CHECK(n <= 32);
    for (auto& [chan, n] : recvs) CHECK(n <= 32);
    at = end;
  }
  CHECK(std::to_string(gpus) == attr(algo, "ngpus"));
}

}  // namespace

TEST_CASE("export --msccl-xml: every model that fits loads in the runtime, the others are refused",
          "[export][msccl-runtime][slow]") {
  namespace fs = std::filesystem;
  const std::string root = COLLV_SOURCE_DIR;
  // Refused whatever the size: the collective (the model's `collective` line; the file's name
  // does not say it: MPICH's in-place alltoallv model is an alltoall, its alltoallw one an
  // alltoallv) has no MSCCL layout or no MSCCL collective.
  auto refused_kind = [&root](const std::string& model) -> std::string {
    const std::string text = collv::test::slurp(root + "/models/" + model + ".coll");
    const auto at = text.find("\n  collective ");
    REQUIRE(at != std::string::npos);
    const auto from = at + std::string("\n  collective ").size();
    const std::string coll = text.substr(from, text.find_first_of(" \n", from) - from);
    for (const char* k : {"gather", "scatter"})
      if (coll == k) return "cannot be written for the runtime";
    for (const char* k : {"scan", "exscan", "shift", "barrier", "allgatherv", "gatherv", "scatterv",
                          "alltoallv", "reduce-scatterv"})
      if (coll == k) return "the runtimes load no such collective";
    return "";
  };
  // Refused for one run (the refusal of a sum never stored is in test_machines.cpp). MPICH's
  // nonblocking scatter for a broadcast sends a child bytes the sender never received (its
  // models send identity items there): no MSCCL program carries them, at p = 8 and at p = 5 with
  // root 2, where a subtree ends before the last rank.
  std::map<std::string, std::string> refused_run;
  for (const char* m : {"mpich/bcast_nb_scatter_recursive_doubling_allgather",
                        "mpich/bcast_nb_scatter_ring_allgather"})
    for (const char* a : {"-t nvswitch:8 -c 8", "-t nvswitch:8 -c 8 --out-of-place",
                          "-t nvswitch:5 -c 5 -s 2 --out-of-place"})
      refused_run[std::string(m) + "|" + a] = "a transfer carries the identity";
  struct Case {
    std::string model, args;
    int rc;  // 0 written; 2 refused with the reason
    std::string reason;
  };
  std::vector<Case> cases;
  std::vector<std::string> models;
  for (const auto& e : fs::recursive_directory_iterator(root + "/models"))
    if (e.path().extension() == ".coll")
      models.push_back(fs::relative(e.path(), root + "/models").replace_extension().string());
  std::sort(models.begin(), models.end());
  REQUIRE(models.size() >= 60);
  for (const auto& m : models) {
    std::vector<std::string> argsets = {"", "--out-of-place"};
    if (m.find('/') != std::string::npos)  // library models: a GPU machine, sizes, roots
      argsets = {"-t nvswitch:8 -c 8", "-t nvswitch:8 -c 8 --out-of-place",
                 "-t nvswitch:6 -c 3 -s 4", "-t nvswitch:5 -c 5 -s 2 --out-of-place"};
    for (const auto& a : argsets) {
      std::string why = refused_kind(m);
      if (auto it = refused_run.find(m + "|" + a); it != refused_run.end()) why = it->second;
      // Models whose `requires` does not hold at the size: refused before anything else.
      const bool pow2 = a.find("nvswitch:8") != std::string::npos;
      if (m.find("_two_proc") != std::string::npos)
        why = "requires p = 2, which does not hold";
      else if (!pow2 && (m == "mpich/allgatherv_recursive_doubling" ||
                         m == "mpich/reduce_scatter_block_noncommutative" ||
                         m == "mpich/reduce_scatter_noncommutative"))
        why = "requires (p AND (p - 1)) = 0, which does not hold";
      cases.push_back({m, a, why.empty() ? 0 : 2, why});
    }
  }
  // 64 chunks of NCCL's ring on 8 GPUs: contiguous chunks merge (14 steps per threadblock, not
  // 112); 34 GPUs: 33 peers spread over two channels; 40 GPUs, 80 chunks: 78 steps per
  // threadblock on one channel, so the threadblocks are split over more channels.
  cases.push_back({"nccl/allreduce_ring_nccl", "-t nvswitch:8 -c 64", 0, ""});
  cases.push_back({"mpich/allgather_bruck", "-t nvswitch:34", 0, ""});
  cases.push_back({"nccl/allreduce_ring_nccl", "-t nvswitch:40 -c 80", 0, ""});
  cases.push_back(
      {"nccl/allreduce_ring_nccl", "-t nvswitch:40 -c 80 --msccl-runtime msccl", 0, ""});
  // One message per element: 2100 steps do not fit 64 per threadblock on 32 channels; they fit
  // 256 (msccl, on 9 channels); 4096 are over the parser's MAX_NODES.
  const std::string el = "../tests/data/export/bcast_elementwise";
  cases.push_back({el, "-t complete:2 -c 2100", 2,
                   "needs 66 steps (its chunks do not merge into fewer) even on 32 channels; "
                   "MSCCL_MAX_NUM_STEPS is 64"});
  cases.push_back({el, "-t complete:2 -c 2100 --msccl-runtime msccl", 0, ""});
  cases.push_back({el, "-t complete:2 -c 4096 --msccl-runtime msccl", 2, "MAX_NODES = 4096"});
  int written = 0, refused = 0;
  std::set<std::string> colls;
  for (const Case& c : cases) {
    INFO(c.model << " " << c.args);
    std::string xml = collv::test::unique_temp("export_rt") + ".xml";
    std::string out;
    int rc = collv::test::run_cli(
        fmt::format("export {}/models/{}.coll {} --msccl-xml {}", root, c.model, c.args, xml), out);
    INFO(out);
    CHECK(rc == c.rc);
    if (rc != 0) {
      ++refused;
      CHECK(out.find(c.reason) != std::string::npos);
      CHECK_FALSE(fs::exists(xml));
      continue;
    }
    ++written;
    bool msccl = c.args.find("msccl-runtime msccl") != std::string::npos;
    std::string text = collv::test::slurp(xml);
    check_written_file(text, msccl ? 256 : 64);
    CHECK((c.args.find("--out-of-place") != std::string::npos) ==
          (text.find("outofplace=\"1\"") != std::string::npos));
    auto coll_at = text.find("coll=\"") + 6;
    std::string coll = text.substr(coll_at, text.find('"', coll_at) - coll_at);
    colls.insert(coll);
    // The names each runtime's loader knows.
    CHECK(coll != (msccl ? "reducescatter" : "reduce_scatter"));
    // Re-judged as a user would: the runtime check and the postcondition, at the run's root.
    std::string src;
    if (auto k = c.args.find("-s "); k != std::string::npos) src = " " + c.args.substr(k, 4);
    MscclOptions o = rt(msccl ? MscclRuntime::Msccl : MscclRuntime::ExecutorNccl);
    if (!src.empty()) o.root = static_cast<std::uint32_t>(std::stoi(src.substr(4)));
    ImportedSchedule s = import_schedule(xml, o);
    CHECK(failing(s).empty());
    auto res = results(s);
    CHECK(res["runtime"].verdict == Verdict::Pass);
    CHECK(res["postcondition"].verdict == Verdict::Pass);
    CHECK(collv::test::run_cli(
              fmt::format("verify {}{}{} --quiet", xml, src, msccl ? " --msccl-runtime msccl" : ""),
              out) == 0);
    fs::remove(xml);
  }
  // Every collective the runtimes load and collv replays was written.
  for (const char* k :
       {"allgather", "allreduce", "reducescatter", "alltoall", "broadcast", "reduce"})
    CHECK(colls.count(k) == 1);
  CHECK(written >= 100);
  CHECK(refused >= 20);
}

TEST_CASE("export --msccl-xml: a rooted file is for its root, and verify -s names it",
          "[export][msccl-runtime]") {
  const std::string root = COLLV_SOURCE_DIR;
  std::string xml = collv::test::unique_temp("export_root") + ".xml";
  std::string out;
  // MPICH's scatter + ring allgather broadcast from root 4: every gpu receives in the ring, so
  // the root cannot be inferred; the runtime runs the file for whatever root the call names.
  REQUIRE(collv::test::run_cli(
              fmt::format("export {}/models/mpich/bcast_scatter_ring_allgather.coll -t "
                          "nvswitch:6 -c 3 -s 4 --msccl-xml {}",
                          root, xml),
              out) == 0);
  CHECK(collv::test::run_cli(fmt::format("verify {} -s 4 --quiet", xml), out) == 0);
  CHECK(collv::test::run_cli(fmt::format("verify {} -s 3 --quiet", xml), out) == 1);
  MscclOptions o;
  ImportedSchedule s = import_schedule(xml, o);
  CHECK(results(s)["postcondition"].verdict == Verdict::Fail);
  CHECK(results(s)["postcondition"].note.find("give the root with -s") != std::string::npos);
  o.root = 4;
  CHECK(failing(import_schedule(xml, o)).empty());
  o.root = 6;
  CHECK_THROWS_AS(import_schedule(xml, o), UsageError);
  // A reduce (coll="reduce", read since the exporter writes it): the root's sum is judged. With
  // one reduction turned into a copy, a contribution is lost on the way to the root.
  REQUIRE(collv::test::run_cli(
              fmt::format("export {}/models/mpich/reduce_binomial.coll -t nvswitch:6 -c 3 -s 4 "
                          "--msccl-xml {}",
                          root, xml),
              out) == 0);
  std::string red = collv::test::slurp(xml);
  o.root = 4;
  CHECK(failing(import_msccl_xml(red, "red.xml", o)).empty());
  REQUIRE(red.find("type=\"rrc\"") != std::string::npos);
  std::string lost = replace(red, "type=\"rrc\"", "type=\"r\"");
  CHECK(failing(import_msccl_xml(lost, "red.xml", o)).count("postcondition") == 1);
  std::filesystem::remove(xml);
}

TEST_CASE("export --msccl-proto: the file names the protocol and is replayed with its slots",
          "[export][msccl-runtime]") {
  const std::string root = COLLV_SOURCE_DIR;
  std::string xml = collv::test::unique_temp("export_proto") + ".xml";
  std::string out;
  for (const char* proto : {"Simple", "LL", "LL128"}) {
    INFO(proto);
    REQUIRE(collv::test::run_cli(
                fmt::format("export {}/models/nccl/allreduce_ring_nccl.coll -t nvswitch:8 -c 16 "
                            "--msccl-proto {} --msccl-xml {}",
                            root, proto, xml),
                out) == 0);
    std::string text = collv::test::slurp(xml);
    CHECK(text.find(fmt::format("proto=\"{}\"", proto)) != std::string::npos);
    check_written_file(text, 64);
    // Judged as the runtime would run it: the replay's slots follow the file's protocol.
    CHECK(collv::test::run_cli("verify " + xml + " --quiet", out) == 0);
    auto res = results(import_schedule(xml, rt(MscclRuntime::ExecutorNccl)));
    CHECK(res["attributes"].note.find(std::string("holds ") +
                                      (std::string(proto) == "Simple" ? "2" : "8") +
                                      " unreceived sends") != std::string::npos);
  }
  CHECK(collv::test::run_cli(fmt::format("export {}/models/nccl/allreduce_ring_nccl.coll "
                                         "--msccl-proto LL256 --msccl-xml {}",
                                         root, xml),
                             out) == 2);
  std::filesystem::remove(xml);
}

TEST_CASE("runtime: every refusal of the runtime's loader is reported under runtime",
          "[import][msccl-runtime][strict]") {
  // An offset past the chunks the gpu declares: the loader refuses it (mscclCheckBufferBounds),
  // so runtime fails beside bounds.
  std::string zero = replace(allgather2(1), R"(<gpu id="1" i_chunks="1" o_chunks="2")",
                             R"(<gpu id="1" i_chunks="1" o_chunks="0")");
  for (auto r : {MscclRuntime::ExecutorNccl, MscclRuntime::Msccl}) {
    ImportedSchedule s = import_msccl_xml(zero, "z.xml", rt(r));
    CHECK(failing(s).count("runtime") == 1);
    CHECK(runtime_msg(s).find("which gpu 1 declares with o_chunks=0: the loader refuses it") !=
          std::string::npos);
  }
  CHECK(failing(import_msccl_xml(allgather2(1), "z.xml")).empty());
  // -1 is allowed (msccl-tools writes it for an operand the instruction does not use), and an
  // operand the loader does not check for the instruction (a send's destination) is not judged.
  CHECK(failing(import_msccl_xml(replace(allgather2(1), step(0, "s", "o", 0, "o", 0),
                                         step(0, "s", "o", 0, "i", 9)),
                                 "z.xml"))
            .empty());
  // A step after nops that carry dependencies, without a depid of its own: the runtime ignores
  // the XML ("the last reduction must be a part of the first immediate instruction"): runtime.
  std::string chain =
      replace(allgather2(1), step(0, "s", "o", 0, "o", 0),
              step(0, "nop", "i", -1, "o", -1, 0, 1, 0, 0) + step(1, "s", "o", 0, "o", 0));
  ImportedSchedule s = import_msccl_xml(chain, "c.xml");
  CHECK(failing(s).count("runtime") == 1);
  CHECK(runtime_msg(s).find("first immediate instruction") != std::string::npos);
  const auto chain_results = results(s);  // kept: a range-for over a temporary's member dangles
  if (chain_results.count("attributes"))
    for (const auto& v : chain_results.at("attributes").violations)
      CHECK(v.message.find("first immediate instruction") == std::string::npos);
  // o_chunks that disagree with nchunksperloop: microsoft/msccl's loader refuses the file
  // (runtime fails there); msccl-executor-nccl loads it (attributes only).
  std::string sizes = replace(allgather2(1), R"(<gpu id="1" i_chunks="1" o_chunks="2")",
                              R"(<gpu id="1" i_chunks="1" o_chunks="3")");
  ImportedSchedule m = import_msccl_xml(sizes, "s.xml", rt(MscclRuntime::Msccl));
  CHECK(failing(m) == std::set<std::string>{"attributes", "runtime"});
  CHECK(runtime_msg(m).find("Inconsistency between i_chunks/o_chunks") != std::string::npos);
  CHECK(failing(import_msccl_xml(sizes, "s.xml", rt(MscclRuntime::ExecutorNccl))) ==
        std::set<std::string>{"attributes"});
}

TEST_CASE("msccl-tools' <op> form: a local copy or reduce reads its source",
          "[import][msccl-runtime][strict]") {
  // An out-of-place allgather on 2 gpus: each copies its input to its output chunk, sends its
  // input and receives the other's chunk. `cpy` is the copy's <op>.
  auto file = [](const std::string& cpy) {
    std::string x =
        R"(<algo name="op" proto="LL128" nchannels="1" ngpus="2" coll="allgather" inplace="0" outofplace="1" minBytes="0" maxBytes="0">)"
        "\n";
    for (int r = 0; r < 2; ++r) {
      x += fmt::format(R"(  <gpu id="{}" i_chunks="1" o_chunks="2" s_chunks="0">)"
                       "\n"
                       R"(    <tb id="0" send="{}" recv="{}" chan="0">)"
                       "\n",
                       r, 1 - r, 1 - r);
      x += fmt::format(fmt::runtime(cpy), fmt::arg("r", r), fmt::arg("q", 1 - r)) + "\n";
      x += fmt::format(R"(      <op step="1" type="s" buf="i" off="0"/>)"
                       "\n"
                       R"(      <op step="2" type="r" buf="o" off="{}"/>)"
                       "\n",
                       1 - r);
      x += "    </tb>\n  </gpu>\n";
    }
    return x + "</algo>\n";
  };
  // The source as attributes, as a <src> element, or beside msccl-tools' (buf, off): all pass.
  for (const char* cpy :
       {R"(      <op step="0" type="cpy" srcbuf="i" srcoff="0" dstbuf="o" dstoff="{r}"/>)",
        R"(      <op step="0" type="cpy" buf="o" off="{r}" srcbuf="i" srcoff="0"/>)",
        R"(      <op step="0" type="cpy" buf="o" off="{r}"><src buf="i" off="0"/></op>)",
        R"(      <op step="0" type="cpy"><src buf="i" off="0"/><dst buf="o" off="{r}"/></op>)"}) {
    INFO(cpy);
    CHECK(failing(import_msccl_xml(file(cpy), "op.xml")).empty());
  }
  // The wrong source (the other gpu's chunk, not yet received) fails on the data.
  CHECK(
      failing(
          import_msccl_xml(
              file(
                  R"(      <op step="0" type="cpy" srcbuf="o" srcoff="{q}" dstbuf="o" dstoff="{r}"/>)"),
              "op.xml"))
          .count("postcondition") == 1);
  // msccl-tools' form alone drops a local copy's source: refused, not read as a copy onto itself.
  CHECK_THROWS_WITH(
      import_msccl_xml(file(R"(      <op step="0" type="cpy" buf="o" off="{r}"/>)"), "op.xml"),
      Catch::Contains("<op type=\"cpy\"> without its source"));
  CHECK_THROWS_WITH(
      import_msccl_xml(file(R"(      <op step="0" type="re" buf="o" off="{r}"/>)"), "op.xml"),
      Catch::Contains("<op type=\"re\"> without its source"));
  // The source given twice, or an element <op> does not have, is an error.
  CHECK_THROWS_WITH(
      import_msccl_xml(
          file(
              R"(      <op step="0" type="cpy" buf="o" off="{r}" srcbuf="i" srcoff="0"><src buf="i" off="0"/></op>)"),
          "op.xml"),
      Catch::Contains("gives its source twice"));
  CHECK_THROWS_WITH(
      import_msccl_xml(
          file(R"(      <op step="0" type="cpy" buf="o" off="{r}"><from buf="i" off="0"/></op>)"),
          "op.xml"),
      Catch::Contains("unexpected element <from> in <op>"));
}

TEST_CASE("MSCCL-XML: input quoted in an error is cut to 200 bytes",
          "[import][msccl-runtime][strict]") {
  std::string huge(100000, '7');
  for (const auto& [from, to] :
       {std::pair<std::string, std::string>{R"(cnt="1")", "cnt=\"x" + huge + "\""},
        {R"(type="s")", "type=\"" + huge + "\""},
        {R"(srcbuf="o")", "srcbuf=\"" + huge + "\""}}) {
    INFO(from);
    try {
      import_msccl_xml(replace(allgather2(1), from, to), "q.xml");
      FAIL("no error");
    } catch (const UsageError& e) {
      std::string msg = e.what();
      CHECK(msg.find("7777...") != std::string::npos);
      CHECK(msg.size() < 600);
    }
  }
}
