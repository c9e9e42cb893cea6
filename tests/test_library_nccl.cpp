// NCCL's ring broadcast and ring reduce (models/nccl): the models pass on every root, and a
// twin of each with one rule of the source broken fails the check that rule keeps.
#include <catch2/catch.hpp>
#include <fstream>
#include <string>

#include "check/checks.hpp"
#include "exec/executor.hpp"
#include "lang/ast.hpp"
#include "topology/topology.hpp"

using namespace collv;

namespace {

const std::string kRoot = COLLV_SOURCE_DIR;

std::string model_text(const std::string& name) {
  std::ifstream in(kRoot + "/models/nccl/" + name + ".coll");
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The verdict of `check` over p = 2..7, counts 0..5, every root: Pass only if every run passes.
Verdict sweep(const Model& m, const std::string& check) {
  for (std::uint32_t p = 2; p <= 7; ++p)
    for (std::uint32_t count = 0; count <= 5; ++count)
      for (std::uint32_t root = 0; root < p; ++root) {
        RunOptions o;
        o.domain = DomainKind::Exact;
        o.count = count;
        o.root = root;
        Trace t = run_model(m, Topology::parse("ring:" + std::to_string(p)), o);
        for (const auto& c : check_trace(t, CheckOptions{}))
          if ((check.empty() || c.name == check) && c.verdict == Verdict::Fail)
            return Verdict::Fail;
      }
  return Verdict::Pass;
}

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  auto at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

}  // namespace

TEST_CASE("NCCL's ring broadcast and reduce pass at every root, and their broken twins fail",
          "[library][nccl]") {
  const std::string bcast = model_text("broadcast_ring_nccl"),
                    reduce = model_text("reduce_ring_nccl");
  CHECK(sweep(parse_model(bcast, "broadcast_ring_nccl.coll"), "") == Verdict::Pass);
  CHECK(sweep(parse_model(reduce, "reduce_ring_nccl.coll"), "") == Verdict::Pass);
  // The rank before the root passes the chunk on too (no directRecv): a message the root never
  // receives.
  Model extra =
      parse_model(replaced(bcast, "if next <> root then send buf[o .. o + ln - 1] to next; endif;",
                           "send buf[o .. o + ln - 1] to next;"),
                  "bcast_extra.coll");
  CHECK(sweep(extra, "") == Verdict::Fail);
  // The root keeps the received sum without its own contribution (recvCopy for recvReduceCopy).
  Model lost = parse_model(
      replaced(reduce, "x[o .. o + ln - 1] := t + x[o .. o + ln - 1];",
               "if my_id = root then x[o .. o + ln - 1] := t; else x[o .. o + ln - 1] := t + "
               "x[o .. o + ln - 1]; endif;"),
      "reduce_lost.coll");
  CHECK(sweep(lost, "postcondition") == Verdict::Fail);
  // The chain's steps: a claim of one step fewer fails the steps check.
  Model fast =
      parse_model(replaced(reduce, "steps      if count = 0 then 0 else p - 2 + chunks(count)",
                           "steps      if count = 0 then 0 else p - 3 + chunks(count)"),
                  "reduce_fast.coll");
  CHECK(sweep(fast, "steps") == Verdict::Fail);
}
