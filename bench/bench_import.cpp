// Reading and judging schedule files from other tools: every real file in
// ../shared/data/schedules (or the files given), read and checked as `collv verify FILE` does,
// and once more under a machine (`-t nvswitch:N`), in one process (docs/benchmarks.md).
//
//   bench_import                 # every real file; goal: the largest well under a second
//   bench_import FILE...         # these files
//
// Prints per file its size, the median wall time of read + checks over repetitions and the
// transfers it holds. Exit 1 when a file takes a second or more (the goal of the issue).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "bench_cli.hpp"
#include "import/import.hpp"

using namespace collv;
using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

int run_bench(const std::vector<std::string>& args);

const char kUsage[] =
    "usage: bench_import [FILE...]   (default: every file of ../shared/data/schedules)\n";

int main(int argc, char** argv) {
  return bench::guarded_main(argc, argv, kUsage, [](const bench::Args& a) { return run_bench(a); });
}

int run_bench(const std::vector<std::string>& args) {
  std::vector<std::string> files = args;
  for (const auto& f : files)
    if (!fs::is_regular_file(f)) throw UsageError("'" + f + "' is not a schedule file");
  if (files.empty()) {
    const std::string root = COLLV_SOURCE_DIR "/../shared/data/schedules";
    for (const auto& e : fs::recursive_directory_iterator(root))
      if (e.is_regular_file()) files.push_back(e.path().string());
    std::sort(files.begin(), files.end());
  }
  bool ok = true;
  std::printf("%-48s %9s %10s %10s %12s\n", "file", "bytes", "transfers", "ms", "ms machine");
  for (const auto& f : files) {
    auto time_one = [&](bool machine) {
      std::vector<double> ms;
      std::size_t transfers = 0;
      for (int rep = 0; rep < 7; ++rep) {
        auto t0 = Clock::now();
        ImportedSchedule s = import_schedule(f);
        if (machine) {
          s.trace.topology =
              Topology::parse(fmt::format("nvswitch:{}", s.trace.topology.num_processors()));
          s.congestion_note =
              fmt::format("{} steps level-synchronous", level_synchronous_steps(s.trace));
        }
        auto checks = check_imported(s, CheckOptions{});
        ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
        transfers = s.trace.transfers.size();
      }
      std::sort(ms.begin(), ms.end());
      return std::make_pair(ms[ms.size() / 2], transfers);
    };
    auto [plain, n] = time_one(false);
    auto [under, n2] = time_one(true);
    (void)n2;
    std::printf("%-48s %9ju %10zu %10.2f %12.2f\n", fs::path(f).filename().string().c_str(),
                static_cast<std::uintmax_t>(fs::file_size(f)), n, plain, under);
    if (plain >= 1000 || under >= 1000) ok = false;
  }
  std::printf("goal: every file read and judged in well under a second: %s\n",
              ok ? "met" : "MISSED");
  return ok ? 0 : 1;
}
