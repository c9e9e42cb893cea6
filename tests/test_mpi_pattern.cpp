// The message pattern of `collv mpi --model` (src/app/mpi_pattern.cpp): the harness's "sent"
// lines read back, and compared with a model's sends rank by rank, in order. No MPI needed.
#include <catch2/catch.hpp>
#include <filesystem>
#include <string>

#include "app/mpi_cmd.hpp"
#include "mpi_util.hpp"
#include "util/error.hpp"

using namespace collv;
namespace fs = std::filesystem;

namespace {

const auto rank_file = test::sent_rank_file;

const std::string kNone = R"({"k":"sent","to":[],"bytes":[],"lost":0})";

}  // namespace

TEST_CASE("mpi pattern: the library's messages against the model's, per rank and in order",
          "[mpi][mpi-pattern]") {
  // Rank 0 sends 32 bytes to rank 2, then to rank 1 (a binomial broadcast at p = 3).
  const std::string dir =
      test::write_ranks({rank_file(0, 3, R"({"k":"sent","to":[2,1],"bytes":[32,32],"lost":0})"),
                         rank_file(1, 3, kNone), rank_file(2, 3, kNone)});
  std::string why;
  auto lib = library_sends(dir, 3, 1, why);
  REQUIRE(lib);
  REQUIRE(lib->size() == static_cast<std::size_t>(kHarnessCalls));
  CHECK((*lib)[1][0] == std::vector<SentMessage>{{2, 32}, {1, 32}});
  SentMessages model{{{2, 32}, {1, 32}}, {}, {}};
  CHECK(compare_sends(*lib, model).verdict == Verdict::Pass);
  // The same messages in another order: fails, naming the rank, call and message.
  SentMessages swapped{{{1, 32}, {2, 32}}, {}, {}};
  auto res = compare_sends(*lib, swapped);
  CHECK(res.verdict == Verdict::Fail);
  REQUIRE(!res.violations.empty());
  CHECK_THAT(res.violations[0].message,
             Catch::Contains("rank 0, call 1, message 1: the library sends 32 bytes to rank 2, "
                             "the model sends 32 bytes to rank 1"));
  // Another size, one message more, one less.
  CHECK(compare_sends(*lib, SentMessages{{{2, 32}, {1, 16}}, {}, {}}).verdict == Verdict::Fail);
  CHECK(compare_sends(*lib, SentMessages{{{2, 32}, {1, 32}}, {{0, 16}}, {}}).verdict ==
        Verdict::Fail);
  CHECK(compare_sends(*lib, SentMessages{{{2, 32}}, {}, {}}).verdict == Verdict::Fail);
  fs::remove_all(dir);

  // A message to itself is left out (a model's send to itself is no transfer), and said.
  const std::string self =
      test::write_ranks({rank_file(0, 2, R"({"k":"sent","to":[0,1],"bytes":[16,16],"lost":0})"),
                         rank_file(1, 2, kNone)});
  lib = library_sends(self, 2, 1, why);
  REQUIRE(lib);
  res = compare_sends(*lib, SentMessages{{{1, 16}}, {}});
  CHECK(res.verdict == Verdict::Pass);
  CHECK_THAT(res.note, Catch::Contains("2 messages a rank sent to itself left out"));
  fs::remove_all(self);

  // A message that splits an element (MPICH's byte-wise scatter): not compared, inconclusive.
  const std::string part = test::write_ranks(
      {rank_file(0, 2, R"({"k":"sent","to":[1],"bytes":[8],"lost":0})"), rank_file(1, 2, kNone)});
  lib = library_sends(part, 2, 1, why);
  REQUIRE(lib);
  res = compare_sends(*lib, SentMessages{{{1, 16}}, {}});
  CHECK(res.verdict == Verdict::Unknown);
  CHECK_THAT(res.note, Catch::Contains("8 bytes, part of an element"));
  fs::remove_all(part);
}

TEST_CASE("mpi pattern: a pattern the harness could not log is not compared",
          "[mpi][mpi-pattern]") {
  std::string why;
  auto no_pattern = [&](const std::string& rank0) {
    const std::string dir = test::write_ranks({rank0, rank_file(1, 2, kNone)});
    why.clear();
    auto lib = library_sends(dir, 2, 1, why);
    fs::remove_all(dir);
    return !lib.has_value();
  };
  // No "sent" line (a library over another transport): nothing to compare.
  CHECK(no_pattern(rank_file(0, 2, "")));
  CHECK_THAT(why, Catch::Contains("rank 0 logged no message pattern for call 1"));
  // An endpoint the harness did not map, a size it could not tell, messages it did not log.
  CHECK(no_pattern(rank_file(0, 2, R"({"k":"sent","to":[-1],"bytes":[16],"lost":0})")));
  CHECK_THAT(why, Catch::Contains("an endpoint of no rank"));
  CHECK(no_pattern(rank_file(0, 2, R"({"k":"sent","to":[1],"bytes":[-1],"lost":0})")));
  CHECK_THAT(why, Catch::Contains("a datatype of unknown size"));
  CHECK(no_pattern(rank_file(0, 2, R"({"k":"sent","to":[],"bytes":[],"lost":2})")));
  CHECK_THAT(why, Catch::Contains("2 messages not logged"));
  // And a right one is read.
  CHECK_FALSE(no_pattern(rank_file(0, 2, R"({"k":"sent","to":[1],"bytes":[16],"lost":0})")));
}

TEST_CASE("mpi judge: a sent line not in the harness's form is the run's error",
          "[mpi][mpi-pattern]") {
  MpiCase c{"bcast", 2, 1, 0, true, false};
  auto judge = [&](const std::string& sent) {
    // Count 1's calls are 3 and 4 (harness_call).
    std::string r0 = "{\"k\":\"call\",\"n\":3}\n{\"k\":\"out\",\"buf\":[[0,1,3]]}\n" + sent +
                     "\n{\"k\":\"call\",\"n\":4}\n{\"k\":\"out\",\"buf\":[[0,1,4]]}\n" +
                     test::done(0, 2);
    std::string r1 =
        "{\"k\":\"call\",\"n\":3}\n{\"k\":\"out\",\"buf\":[[0,1,3]]}\n"
        "{\"k\":\"call\",\"n\":4}\n{\"k\":\"out\",\"buf\":[[0,1,4]]}\n" +
        test::done(1, 2);
    return judge_mpi_text(c, {r0, r1}, "d");
  };
  CHECK(test::all_pass(judge(R"({"k":"sent","to":[1],"bytes":[16],"lost":0})")));
  CHECK_THROWS_AS(judge(R"({"k":"sent","to":[1,0],"bytes":[16],"lost":0})"), UsageError);
  CHECK_THROWS_WITH(judge(R"({"k":"sent","to":[1],"bytes":[16],"lost":0})"
                          "\n"
                          R"({"k":"sent","to":"x","bytes":[16],"lost":0})"),
                    Catch::Contains("sent: expected to: [rank, ...]"));
  CHECK_THROWS_AS(judge(R"({"k":"sent","to":[-5],"bytes":[16],"lost":0})"), UsageError);
}
