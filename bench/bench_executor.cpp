// Executor benchmark: the star all-reduce at the sizes the README reports. Each case runs in a
// child process so its peak memory (ru_maxrss) is its own. Not a test: it asserts nothing about
// time; it prints the numbers.
//
//   build/release/bench_executor            # every case
//   build/release/bench_executor star8      # one case
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "bench_cli.hpp"
#include "exec/executor.hpp"

using namespace collv;

namespace {

struct Case {
  const char* name;
  const char* topology;
  DomainKind domain;
  const char* goal;
};

const Case kCases[] = {
    {"star7", "star:7", DomainKind::Exact, "-"},
    {"star8", "star:8", DomainKind::Exact, "<= 10 s, <= 2 GiB"},
    {"star9", "star:9", DomainKind::Exact, "-"},
    {"star10fp", "star:10", DomainKind::Fingerprint, "<= 60 s"},
};

int run_case(const Case& c) {
  Model m = parse_model_file(std::string(COLLV_SOURCE_DIR) + "/models/allreduce_star.coll");
  auto t0 = std::chrono::steady_clock::now();
  Topology topo = Topology::parse(c.topology);
  auto t1 = std::chrono::steady_clock::now();
  RunOptions o;
  o.domain = c.domain;
  o.max_memory = 20ULL << 30;
  Trace tr = run_model(m, topo, o);
  auto t2 = std::chrono::steady_clock::now();
  bool ok = tr.failure.kind == RunFailure::Kind::None && tr.steps == *tr.claimed_steps;
  // Every processor must hold the same value, the sum of all inputs (checked, not assumed).
  Item want = tr.final_output.empty() ? 0 : tr.final_output[0][0];
  for (const auto& b : tr.final_output) ok = ok && b.size() == 1 && b[0] == want;
  std::printf("%-9s %-8s %-11s nodes=%-8zu steps=%-3u transfers=%-10zu build=%.2fs run=%.2fs %s\n",
              c.name, c.topology, domain_name(c.domain), topo.num_nodes(), tr.steps,
              tr.transfers.size(), std::chrono::duration<double>(t1 - t0).count(),
              std::chrono::duration<double>(t2 - t1).count(), ok ? "ok" : "WRONG");
  std::fflush(stdout);
  return ok ? 0 : 1;
}

}  // namespace

int run_cases(int argc, char** argv);

const char kUsage[] =
    "usage: bench_executor [CASE]   (CASE: star7, star8, star9, ...; default every case)\n";

int main(int argc, char** argv) {
  return bench::guarded_main(argc, argv, kUsage, [&](const bench::Args& a) {
    std::string known;
    bool found = a.empty();
    for (const Case& c : kCases) {
      known += (known.empty() ? "" : ", ") + std::string(c.name);
      found = found || a[0] == c.name;
    }
    if (a.size() > 1 || !found)
      throw UsageError("unknown case '" + a.back() + "' (cases: " + known + ")");
    return run_cases(argc, argv);
  });
}

int run_cases(int argc, char** argv) {
  int status = 0;
  for (const Case& c : kCases) {
    if (argc > 1 && std::strcmp(argv[1], c.name) != 0) continue;
    auto t0 = std::chrono::steady_clock::now();
    std::fflush(stdout);  // or the child would print the parent's buffered lines again
    pid_t pid = fork();
    if (pid == 0) _exit(run_case(c));
    int st = 0;
    struct rusage ru {};
    wait4(pid, &st, 0, &ru);
    double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("%-9s total %.2f s wall, peak %.0f MiB (goal %s)\n", c.name, wall,
                ru.ru_maxrss / 1024.0, c.goal);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) status = 1;
  }
  return status;
}
