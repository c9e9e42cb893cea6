// What the processes of a partitioned run (collv-mpi, docs/partitioned.md) agree on before and
// between runs, as pure functions of bytes so that tests and fuzz/fuzz_agreement.cpp can drive
// them without MPI:
//
// - the command line: every process sends its arguments (encode_arguments) to every other; each
//   computes the same verdict from the same bytes (argument_disagreement), so all of them stop
//   together with one message (exit 2) when two differ, before any of them reads a file;
// - where each process is: before each run every process says it is running, and a process that
//   leaves (its command finished, or it failed alone: a file it could not read) says so with its
//   error (encode_status); status_disagreement gives every process the same error when they are
//   not all at the same place, so none waits for a peer that has left.
//
//   std::vector<std::string> all = part.allgather(collv::encode_arguments(args));
//   if (auto e = collv::argument_disagreement(all)) ...   // *e on rank 0, exit 2 everywhere
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace collv {

// The most arguments and bytes of a command line the processes compare (a longer one is refused
// as a disagreement of its own, with its size).
inline constexpr std::size_t kMaxAgreedArgs = 4096;
inline constexpr std::size_t kMaxAgreedBytes = std::size_t{1} << 20;

// A command line on the wire: a tag naming collv-mpi's protocol (processes of different builds
// disagree on it), the count, then each argument with its length (32-bit little-endian numbers).
std::string encode_arguments(const std::vector<std::string>& args);
// The arguments back; nullopt when `bytes` is not what encode_arguments writes (bounded: no
// more than kMaxAgreedArgs arguments, no length past the bytes given).
std::optional<std::vector<std::string>> decode_arguments(std::string_view bytes);

// Every process's encode_arguments, in rank order: nullopt when they are all the same, else the
// error every process reports ("rank 1 was started with other arguments than rank 0: its argument 4
// is 'star:6' where rank 0's is 'star:5'; ..."), naming the lowest rank that differs from rank 0
// and its first differing argument, quoted with printable() (cut to a readable length).
std::optional<std::string> argument_disagreement(const std::vector<std::string>& encoded);

// Where a process is when the processes compare notes.
struct RankStatus {
  enum class State : std::uint8_t {
    Running = 0,  // at the start of a run, with the others
    Done = 1,     // its command finished (exit code `code`)
    Failed = 2,   // it stopped with `error` (exit code `code`)
  };
  State state = State::Running;
  std::int32_t code = 0;
  std::string error;
  std::string run;  // Running: the run it is about to start (model, file, topology, options)
};
std::string encode_status(const RankStatus& s);
std::optional<RankStatus> decode_status(std::string_view bytes);

// What the processes disagree on, and the exit code every one of them ends with.
struct Disagreement {
  std::string message;
  int code = 2;
};
// Every process's encode_status, in rank order. nullopt when every process is Running the same
// run, or every one is Done, or every one Failed with the same error (they all reached the same
// end); else the error every process reports: the lowest rank that failed where another did not,
// with its error (and its exit code), or the lowest rank that finished while another still had
// runs, or the lowest rank about to start another run than rank 0 (exit 2). Bytes that do not
// decode are a disagreement of their own.
std::optional<Disagreement> status_disagreement(const std::vector<std::string>& encoded);

}  // namespace collv
