// Streamed runs (RunOptions::stream, exec/timing.hpp StreamTiming): the verdicts and
// counterexamples of a run judged as it goes, keeping no trace, against the same run with its
// trace kept.
#include <catch2/catch.hpp>

#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "app/verify_cmd.hpp"
#include "check/checks.hpp"
#include "cli.hpp"
#include "exec/executor.hpp"
#include "exec/timing.hpp"
#include "lang/check.hpp"
#include "topology/topology.hpp"

// AddressSanitizer in this build: GCC defines __SANITIZE_ADDRESS__, clang answers
// __has_feature(address_sanitizer) (scripts/test.sh builds the sanitizer phase with clang).
#if defined(__SANITIZE_ADDRESS__)
#define COLLV_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define COLLV_TEST_ASAN 1
#endif
#endif
#ifndef COLLV_TEST_ASAN
#define COLLV_TEST_ASAN 0
#endif

using namespace collv;

namespace {

const std::string kRoot = COLLV_SOURCE_DIR;

VerifyReport verify_streamed(std::vector<std::string> targets, RunOptions::Stream s,
                             std::pair<std::int64_t, std::int64_t> sizes) {
  VerifyOptions o;
  o.targets = std::move(targets);
  o.models_dir = kRoot + "/models";
  o.quiet = true;
  o.domain = "fingerprint";
  o.sizes = sizes;
  o.run.stream = s;
  std::ostringstream err;
  return verify(o, nullptr, err);
}

// The transfer checks a streamed run judges from what it saw; nodup and dataflow it does not.
bool judged_when_streamed(const std::string& check) {
  return check != "nodup" && check != "dataflow";
}

Verdict check_named_verdict(const VerifyRun& r, const std::string& name) {
  for (const auto& c : r.checks)
    if (c.name == name) return c.verdict;
  return Verdict::NotChecked;
}

struct Agreement {
  std::size_t compared = 0, refused = 0, incomplete = 0, failing = 0;
};

// Run by run: the same status, and per check the same verdict and the same counterexamples,
// except where the streamed run says it cannot judge (a refusal; transfers never received or
// waiting on a port cycle, which --stream auto then runs again with the trace kept).
void compare(const VerifyReport& on, const VerifyReport& off, Agreement& a) {
  REQUIRE(on.runs.size() == off.runs.size());
  for (std::size_t i = 0; i < on.runs.size(); ++i) {
    const VerifyRun& s = on.runs[i];
    const VerifyRun& k = off.runs[i];
    INFO(s.model << " on " << s.topology << " source " << s.source.value_or(0) << ": " << s.status
                 << " / " << k.status << " " << s.error);
    REQUIRE(s.model == k.model);
    REQUIRE(s.topology == k.topology);
    if (s.status == "error" && k.status != "error") {
      // Refused: only for routed transfers, bandwidths, --port all, the barrier or a
      // nonblocking model (its irecvs' port order is settled at the end of the run).
      bool known = s.error.find("not its neighbour") != std::string::npos ||
                   s.error.find("bandwidths") != std::string::npos ||
                   s.error.find("barrier") != std::string::npos ||
                   s.error.find("a nonblocking model needs the stored trace") != std::string::npos;
      CHECK(known);
      ++a.refused;
      continue;
    }
    bool incomplete = false;
    for (const auto& x : s.checks)
      incomplete =
          incomplete || (x.verdict == Verdict::Unknown && x.note.find("streamed run:") == 0);
    // A streamed run that cannot judge its transfers is never a pass.
    if (incomplete)
      CHECK((s.status == k.status || s.status == "inconclusive"));
    else
      CHECK(s.status == k.status);
    CHECK(s.steps == k.steps);
    CHECK(s.cost_ts == k.cost_ts);
    CHECK(s.cost_tw == k.cost_tw);
    if (s.status == "error") {
      CHECK(s.error == k.error);
      continue;
    }
    CHECK(s.streamed);
    REQUIRE(s.checks.size() == k.checks.size());
    for (std::size_t c = 0; c < s.checks.size(); ++c) {
      const CheckResult& x = s.checks[c];
      const CheckResult& y = k.checks[c];
      REQUIRE(x.name == y.name);
      INFO("check " << x.name << ": " << x.note << " / " << y.note);
      if (!judged_when_streamed(x.name) && x.verdict == Verdict::NotChecked) continue;
      if (x.verdict == Verdict::Unknown && x.note.find("streamed run:") == 0) continue;
      CHECK(verdict_name(x.verdict) == std::string(verdict_name(y.verdict)));
      CHECK(x.violation_count == y.violation_count);
      REQUIRE(x.violations.size() == y.violations.size());
      for (std::size_t v = 0; v < x.violations.size(); ++v)
        CHECK(x.violations[v].message == y.violations[v].message);
      if (x.name == "congestion") CHECK(x.note == y.note);
    }
    if (incomplete) {
      // Only when the stored run shows why: a transfer never received, or a port deadlock.
      bool why = check_named_verdict(k, "match") == Verdict::Fail ||
                 check_named_verdict(k, "deadlock") == Verdict::Fail;
      CHECK(why);
      ++a.incomplete;
    }
    if (k.status == "fail") ++a.failing;
    ++a.compared;
  }
}

}  // namespace

TEST_CASE("streamed and stored runs agree on every model and every mutant", "[stream]") {
  Agreement a;
  for (auto dir : {"/models", "/tests/mutants", "/proofs/mutants"}) {
    std::vector<std::string> t{kRoot + dir};
    compare(verify_streamed(t, RunOptions::Stream::On, {2, 4}),
            verify_streamed(t, RunOptions::Stream::Off, {2, 4}), a);
  }
  INFO(a.compared << " compared, " << a.refused << " refused, " << a.incomplete << " incomplete, "
                  << a.failing << " failing");
  // Routed algorithms (rings and meshes running hypercube schedules, the route mutants) are
  // refused; every model whose transfers go to neighbours is compared.
  CHECK(a.compared > 400);
  CHECK(a.failing > 50);  // the mutants: streamed verdicts that fail, with the same counterexamples
  CHECK(a.incomplete > 5);
  CHECK(a.refused > 0);
}

TEST_CASE("verify streams a run whose trace would take over a quarter of --max-memory",
          "[stream][cli]") {
  // allreduce_star on star:8 keeps about 40 MiB of trace: streamed under --max-memory 100.
  // Under AddressSanitizer the process's resident size (shadow memory, redzones) passes 100 MiB
  // by itself, so that build asks for streaming by name; the release build tests the choice.
#if COLLV_TEST_ASAN
  const std::string how = "--stream on";
#else
  const std::string how = "--max-memory 100";
#endif
  std::string out;
  const std::string star = kRoot + "/models/allreduce_star.coll";
  int rc = collv::test::run_cli("verify " + star + " -t star:8 -d fingerprint " + how + " --json -",
                                out);
  INFO(out);
  CHECK(rc == 0);
  auto j = nlohmann::json::parse(out);
  CHECK(j["results"][0]["streamed"] == true);
  CHECK(j["results"][0]["steps"] == 28);
  CHECK(j["results"][0]["checks"]["postcondition"] == "pass");
  CHECK(j["results"][0]["checks"]["single-port"] == "pass");
  // --stream off keeps the trace, with the same verdicts.
  rc = collv::test::run_cli("verify " + star + " -t star:8 -d fingerprint --stream off --json -",
                            out);
  CHECK(rc == 0);
  j = nlohmann::json::parse(out);
  CHECK(!j["results"][0].contains("streamed"));
  CHECK(j["results"][0]["steps"] == 28);
  // A wrong model fails streamed as it does stored: the final buffers are judged the same way.
  rc = collv::test::run_cli("verify " + kRoot +
                                "/proofs/mutants/skip_link2.coll -t star:7 -d fingerprint "
                                "--stream on --json -",
                            out);
  CHECK(rc == 1);
  j = nlohmann::json::parse(out);
  CHECK(j["results"][0]["streamed"] == true);
  CHECK(j["results"][0]["checks"]["postcondition"] == "fail");
}

TEST_CASE("the stored trace's estimate counts a whole buffer per message of one", "[stream][cli]") {
  // MPICH's recursive doubling sends its whole buffer: at p = 512, count = 2,048 the trace holds
  // 512 x 9 messages of 2,048 items (75 MB), over a quarter of --max-memory 100, so verify
  // streams it. Counting one item a message (the estimate before) kept the trace.
#if COLLV_TEST_ASAN
  // Under AddressSanitizer the process's resident size passes 100 MiB by itself (shadow memory),
  // so the run stops at the limit before the estimate matters: the release build tests it.
  WARN("skipped under AddressSanitizer: the release build tests the estimate");
  return;
#endif
  std::string out;
  int rc = collv::test::run_cli("verify " + kRoot +
                                    "/models/mpich/allreduce_recursive_doubling.coll -t "
                                    "complete:512 -c 2048 -d fingerprint --max-memory 100 --json -",
                                out);
  INFO(out);
  CHECK(rc == 0);
  auto j = nlohmann::json::parse(out);
  CHECK(j["results"][0]["streamed"] == true);
  CHECK(j["results"][0]["checks"]["postcondition"] == "pass");
  // At count 2 the messages are small: the trace (under 1 MB) is kept.
  rc = collv::test::run_cli("verify " + kRoot +
                                "/models/mpich/allreduce_recursive_doubling.coll -t complete:512 "
                                "-c 2 -d fingerprint --max-memory 100 --json -",
                            out);
  CHECK(rc == 0);
  j = nlohmann::json::parse(out);
  CHECK(!j["results"][0].contains("streamed"));
}

TEST_CASE("a chunked timing window holds what it spans, not a second copy", "[stream]") {
  // 8-byte entries: a chunk is 2^13 of them. A window sliding over ten chunks' ids with a span of
  // two chunks and a bit keeps every live entry and never holds more than the chunks its span
  // touches (four) and one spare.
  ChunkWindow<std::uint64_t> w;
  constexpr std::uint32_t kChunk = ChunkWindow<std::uint64_t>::kMask + 1;
  constexpr std::uint32_t kSpan = 2 * kChunk + 100;
  bool kept = true;
  for (std::uint32_t id = 0; id < 10 * kChunk; ++id) {
    w.open(id);
    w[id] = 3 * std::uint64_t{id} + 1;
    if (id + 1 >= kSpan) {
      const std::uint32_t lo = id + 1 - kSpan;
      w.release_below(lo);
      kept = kept && w[lo] == 3 * std::uint64_t{lo} + 1 && w[id] == 3 * std::uint64_t{id} + 1;
    }
  }
  CHECK(kept);
  const std::uint64_t chunk = kChunk * sizeof(std::uint64_t), table = 10 * 8 + 64;
  CHECK(w.peak_bytes() >= 4 * chunk);
  CHECK(w.peak_bytes() <= 5 * chunk + table);
  // Everything done with: the spare chunk is all it keeps.
  w.release_below(10 * kChunk);
  CHECK(w.bytes() <= chunk + table);
  CHECK(w.bytes() >= chunk);
}

TEST_CASE("a streamed receive along a link takes the message sent along that link", "[stream]") {
  // Each node sends along link 2, then link 3, and receives along link 2, then link 3 (the other
  // order is a deadlock of the single ports). A streamed send along a link carries the link's
  // number, which a star's receive along the same number trusts without asking the topology
  // again (Topology::links_symmetric); the stored run asks every time.
  const std::string body =
      "  send x along link 2;\n  send x along link 3;\n  receive a along link 2;\n"
      "  receive b along link 3;\n  x := a \xE2\x88\xAA b;\n";
  const std::string text =
      "model t\n  collective allgather\n  input x\n  output x\nprocedure P\nbegin\n" + body +
      "end P\n";
  Model m = parse_model(text, "t.coll");
  const Topology star = Topology::parse("star:3");
  RunOptions on, off;
  on.stream = RunOptions::Stream::On;
  off.stream = RunOptions::Stream::Off;
  Trace s = run_model(m, star, on), k = run_model(m, star, off);
  REQUIRE(s.failure.kind == RunFailure::Kind::None);
  REQUIRE(k.failure.kind == RunFailure::Kind::None);
  CHECK(s.steps == k.steps);
  for (NodeId v = 0; v < 6; ++v) {
    INFO("node " << v);
    REQUIRE(s.final_output[v].size() == 2);
    REQUIRE(k.final_output[v].size() == 2);
    // a: node v's neighbour along link 2 (swap positions 1 and 2), b: along link 3.
    CHECK(s.domain->describe(s.final_output[v][0]) == "x" + std::to_string(*star.neighbor(v, 2)));
    CHECK(s.domain->describe(s.final_output[v][1]) == "x" + std::to_string(*star.neighbor(v, 3)));
    for (int i = 0; i < 2; ++i)
      CHECK(s.domain->describe(s.final_output[v][i]) == k.domain->describe(k.final_output[v][i]));
  }
  // A receive along a link no message came along waits (a deadlock naming its neighbour there),
  // and one along a link the node does not have is a runtime error, streamed as stored.
  for (const char* bad : {"  send x along link 2;\n  receive a along link 3;\n",
                          "  send x along link 2;\n  receive a along link 5;\n"}) {
    INFO(bad);
    Model b =
        parse_model("model t\n  collective allgather\n  input x\n  output x\nprocedure P\nbegin\n" +
                        std::string(bad) + "end P\n",
                    "t.coll");
    Trace bs = run_model(b, star, on), bk = run_model(b, star, off);
    CHECK(bs.failure.kind != RunFailure::Kind::None);
    CHECK(bs.failure.kind == bk.failure.kind);
    CHECK(bs.failure.message == bk.failure.message);
  }
}
