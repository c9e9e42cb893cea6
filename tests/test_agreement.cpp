// What collv-mpi's processes agree on (verify/agreement.hpp), without MPI: the command lines they
// compare before anything runs, and where each one is before a run and when it leaves.
// Table-driven: each row is every process's input and the error every one of them must report (""
// none). fuzz/fuzz_agreement.cpp feeds the same functions arbitrary bytes.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "verify/agreement.hpp"

using collv::argument_disagreement;
using collv::decode_arguments;
using collv::decode_status;
using collv::encode_arguments;
using collv::encode_status;
using collv::RankStatus;
using collv::status_disagreement;
using Args = std::vector<std::string>;

TEST_CASE("argument vectors travel and come back", "[partitioned][agreement]") {
  for (const Args& a :
       {Args{}, Args{"verify"}, Args{"verify", "", "a b", std::string("x\0y", 3)}}) {
    auto back = decode_arguments(encode_arguments(a));
    REQUIRE(back);
    CHECK(*back == a);
  }
  const std::string e = encode_arguments({"verify", "star:5"});
  // Cut anywhere, or with a byte more, or another protocol's tag: not a command line.
  for (std::size_t n = 0; n < e.size(); ++n) CHECK_FALSE(decode_arguments(e.substr(0, n)));
  CHECK_FALSE(decode_arguments(e + "x"));
  std::string other = e;
  other[0] = 'C';
  CHECK_FALSE(decode_arguments(other));
  // A count past the bound is refused before anything is allocated for it.
  std::string huge = encode_arguments({});
  huge.replace(huge.size() - 4, 4, std::string("\xff\xff\xff\x7f", 4));
  CHECK_FALSE(decode_arguments(huge));
}

TEST_CASE("processes agree on their command lines or all report the first difference",
          "[partitioned][agreement]") {
  struct Row {
    std::vector<Args> ranks;
    std::string error;  // "" when they agree; else a part of the message
  };
  const Args a{"verify", "allreduce_star", "-t", "star:5"};
  const std::vector<Row> rows{
      {{a}, ""},
      {{a, a, a}, ""},
      {{a, Args{"verify", "allreduce_star", "-t", "star:6"}},
       "rank 1 was started with other arguments than rank 0: its argument 4 is 'star:6' where "
       "rank 0's is 'star:5'"},
      // The lowest rank that differs is named, not the last.
      {{a, a, Args{"verify", "x"}, Args{"list"}}, "rank 2 was started with other arguments"},
      {{a, Args{"verify", "allreduce_star", "-t", "star:5", "-q"}},
       "rank 1 was started with other arguments than rank 0: it has 1 argument(s) more, from "
       "argument 5 ('-q')"},
      {{a, Args{"verify", "allreduce_star"}},
       "it has 2 argument(s) fewer: rank 0's argument 3 is '-t'"},
      // Quoted arguments are printable and cut to a readable length.
      {{a, Args{"verify", std::string("a\nb\0", 4)}}, "its argument 2 is 'a\\x0Ab\\x00'"},
      {{a, Args{"verify", std::string(500, 'x')}},
       "its argument 2 is '" + std::string(80, 'x') + "...' where"},
  };
  for (const Row& row : rows) {
    std::vector<std::string> enc;
    for (const auto& r : row.ranks) enc.push_back(encode_arguments(r));
    auto e = argument_disagreement(enc);
    INFO("row with " << row.ranks.size() << " ranks, expecting: " << row.error);
    if (row.error.empty()) {
      CHECK_FALSE(e);
    } else {
      REQUIRE(e);
      CHECK(e->find(row.error) != std::string::npos);
      CHECK(e->find("every process of a partitioned run takes the same command line") !=
            std::string::npos);
    }
  }
  // Bytes that are not a command line (another build) disagree too, with their size.
  auto e = argument_disagreement({encode_arguments(a), "garbage"});
  REQUIRE(e);
  CHECK(e->find("rank 1's command line (7 bytes) is not one collv-mpi compares") !=
        std::string::npos);
  e = argument_disagreement({"", encode_arguments(a)});
  REQUIRE(e);
  CHECK(e->find("rank 0's command line (0 bytes)") != std::string::npos);
}

TEST_CASE("processes agree on where they are, or all report who left", "[partitioned][agreement]") {
  using State = RankStatus::State;
  auto running = [](std::string run) {
    RankStatus s;
    s.run = std::move(run);
    return s;
  };
  auto done = [](int code) {
    RankStatus s;
    s.state = State::Done;
    s.code = code;
    return s;
  };
  auto failed = [](int code, std::string error) {
    RankStatus s;
    s.state = State::Failed;
    s.code = code;
    s.error = std::move(error);
    return s;
  };
  struct Row {
    std::vector<RankStatus> ranks;
    std::string error;  // "" when they agree
    int code = 2;
  };
  const RankStatus r1 = running("allreduce_star on star:5"), r2 = running("allgather on ring:4");
  const std::vector<Row> rows{
      {{r1, r1, r1}, ""},
      {{done(0), done(0)}, ""},
      {{done(1), done(1)}, ""},
      {{failed(2, "bad"), failed(2, "bad")}, ""},  // an error every process shared
      {{r1, r2},
       "rank 1 of 2 is about to run allgather on ring:4 where rank 0 runs allreduce_star on "
       "star:5"},
      {{r1, failed(2, "no model 'x.coll'")},
       "rank 1 of 2 stopped where the others did not: no model 'x.coll'"},
      {{failed(3, "a limit"), r1, r1}, "rank 0 of 3 stopped where the others did not: a limit", 3},
      {{r1, failed(0, "")}, "rank 1 of 2 stopped where the others did not: (no message)"},
      {{failed(2, "a"), failed(2, "b")}, "rank 0 of 2 stopped where the others did not: a"},
      {{done(0), r1}, "rank 0 of 2 finished its command while rank 1 had runs left"},
      {{r1, r1, done(0)}, "rank 2 of 3 finished its command while rank 0 had runs left"},
      {{done(0), failed(2, "late")}, "rank 1 of 2 stopped where the others did not: late"},
  };
  for (const Row& row : rows) {
    std::vector<std::string> enc;
    for (const auto& r : row.ranks) {
      enc.push_back(encode_status(r));
      auto back = decode_status(enc.back());
      REQUIRE(back);
      CHECK(back->state == r.state);
      CHECK(back->code == r.code);
      CHECK(back->error == r.error);
      CHECK(back->run == r.run);
    }
    auto d = status_disagreement(enc);
    INFO("expecting: " << row.error);
    if (row.error.empty()) {
      CHECK_FALSE(d);
    } else {
      REQUIRE(d);
      CHECK(d->message.find(row.error) != std::string::npos);
      CHECK(d->code == row.code);
    }
  }
  // A status that does not decode is a disagreement of its own.
  auto d = status_disagreement({encode_status(r1), "x"});
  REQUIRE(d);
  CHECK(d->message.find("rank 1 sent a status collv-mpi cannot read (1 bytes") !=
        std::string::npos);
  const std::string e = encode_status(failed(2, "bad"));
  for (std::size_t n = 0; n < e.size(); ++n) CHECK_FALSE(decode_status(e.substr(0, n)));
  CHECK_FALSE(decode_status(e + "x"));
  // A long error is cut (collv's own text, kept readable), and the cut form decodes.
  auto cut = decode_status(encode_status(failed(2, std::string(10000, 'e'))));
  REQUIRE(cut);
  CHECK(cut->error.size() == 4096);
}
