// libFuzzer harness: `collv mpi`'s reading of the harness's output (judge_mpi_text, the same
// function that judges the files a launch wrote). The first bytes choose the run (collective, p,
// count, root, operation); the rest is split at 0x1E into the ranks' files (a rank with no part
// wrote no file). Any input must end in verdicts or a UsageError/LimitError naming the line.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "app/mpi_cmd.hpp"
#include "util/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 4 || size > 256 * 1024) return 0;
  static const char* const kColls[] = {"allreduce", "reduce",         "bcast",
                                       "allgather", "gather",         "scatter",
                                       "alltoall",  "reduce_scatter", "reduce_scatter_block",
                                       "scan",      "exscan",         "ring_allreduce"};
  collv::MpiCase c;
  c.collective = kColls[data[0] % 12];
  c.p = 1 + data[1] % 8;
  c.count = data[2] % 8;
  c.root = (data[3] >> 2) % c.p;
  const int op = data[3] & 3;  // commutative, non-commutative, builtin, matrix
  c.commutative = op == 0 || op == 2;
  c.builtin = op == 2;
  c.matrix = op == 3;
  std::vector<std::optional<std::string>> texts;
  std::string cur;
  for (std::size_t i = 4; i < size; ++i) {
    if (data[i] == 0x1E) {
      texts.emplace_back(cur);
      cur.clear();
    } else {
      cur += static_cast<char>(data[i]);
    }
  }
  texts.emplace_back(cur);
  try {
    collv::judge_mpi_text(c, texts, "fuzz");
  } catch (const collv::UsageError&) {  // includes LimitError
  }
  return 0;
}
