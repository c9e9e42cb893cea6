// The streamed executor against the machine's limit (issue 25): in ONE run, per star size,
//   limit  - a hand-written C++ loop doing the star all-reduce of models/allreduce_star.coll
//            (Oh, Choi and Primeaux, Fig. 2): the same schedule, the same transfers (p per step,
//            n(n-1)/2 steps), fingerprint arithmetic (an item is a 64-bit sum), neighbours from
//            the same Topology object collv uses (a table up to star:10, computed from the ranks
//            from star:11), three 8-byte words per node;
//   run    - collv's streamed run of the model (run_model, --stream on, fingerprint domain);
//   verify - the same run and every check on it (check_trace), as `collv verify` does;
// each in a child process of its own (its peak memory is its own), and prints CPU nanoseconds per
// transfer, peak bytes per node above an idle child's, and the ratio collv/limit. The machine is
// shared and noisy: the ratios, measured side by side in one run, are the numbers to read (each
// case is run `reps` times, the fastest kept). Not a test: it asserts nothing about time, but exits
// 1 if a case computes a wrong result (every node must end with the sum of all inputs, and collv's
// final buffers must equal the hand-written loop's).
//
//   build/release/bench_stream              # star:7 .. star:10
//   build/release/bench_stream 9            # one size
//   build/release/bench_stream 8 10 3       # star:8 .. star:10, best of 3
//   nice -n 10 build/release/bench_stream 11 11 1   # star:11: about 6 GB; check `free -g` first
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench_cli.hpp"
#include "check/checks.hpp"
#include "exec/executor.hpp"

using namespace collv;
using Clock = std::chrono::steady_clock;

namespace {

// What a child reports through its pipe.
struct Outcome {
  double cpu = 0, wall = 0;  // seconds
  double peak_kb = 0;        // ru_maxrss
  std::uint64_t transfers = 0;
  std::uint64_t result = 0;  // node 0's final item
  int ok = 0;
};

double cpu_seconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

double peak_kb() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_maxrss);
}

// The hand-written star all-reduce: models/allreduce_star.coll with every node's variables as
// plain arrays and every transfer a load from the sender's word and an add at the receiver. With
// `tables`, each link's neighbours are listed before the clock starts (4 bytes a node and link,
// not counted in the time: memory speed); without, they come from Topology::neighbor as collv
// gets them (a table lookup up to star:10, arithmetic on the ranks from star:11).
Outcome limit(int n, bool tables) {
  Topology topo = Topology::parse("star:" + std::to_string(n));
  const auto p = static_cast<NodeId>(topo.num_processors());
  auto dom = make_domain(DomainKind::Fingerprint, p, 1, RunOptions{}.seed);
  std::vector<std::vector<NodeId>> nb(static_cast<std::size_t>(n) + 1);
  if (tables)
    for (int k = 2; k <= n; ++k) {
      nb[k].resize(p);
      for (NodeId v = 0; v < p; ++v) nb[k][v] = *topo.neighbor(v, k);
    }
  auto nbr = [&](NodeId v, int k) { return tables ? nb[k][v] : *topo.neighbor(v, k); };
  const double c0 = cpu_seconds();
  const auto w0 = Clock::now();
  std::vector<std::uint64_t> local(p), result(p), outgoing(p);
  for (NodeId v = 0; v < p; ++v) local[v] = dom->leaf(v, 0);
  std::uint64_t transfers = 0;
  for (int k = 2; k <= n; ++k) {
    // send local along link k; result := local; receive outgoing along link k
    for (NodeId v = 0; v < p; ++v) {
      outgoing[v] = local[nbr(v, k)];
      result[v] = local[v];
    }
    transfers += p;
    for (int j = k - 1; j >= 2; --j) {
      // send outgoing along link j; receive number along link j; result := result + number
      for (NodeId v = 0; v < p; ++v) result[v] += outgoing[nbr(v, j)];
      transfers += p;
    }
    for (NodeId v = 0; v < p; ++v) local[v] = result[v] + outgoing[v];  // local := result + out
  }
  Outcome o;
  o.cpu = cpu_seconds() - c0;
  o.wall = std::chrono::duration<double>(Clock::now() - w0).count();
  o.peak_kb = peak_kb();
  o.transfers = transfers;
  o.result = local[0];
  std::uint64_t all = 0;
  for (NodeId v = 0; v < p; ++v) all += dom->leaf(v, 0);
  o.ok = 1;
  for (NodeId v = 0; v < p; ++v) o.ok &= local[v] == all;
  return o;
}

// collv's streamed run (and, if `checks`, every check on it).
Outcome collv_case(int n, bool checks) {
  Model m = parse_model_file(std::string(COLLV_SOURCE_DIR) + "/models/allreduce_star.coll");
  Topology topo = Topology::parse("star:" + std::to_string(n));
  RunOptions o;
  o.domain = DomainKind::Fingerprint;
  o.stream = RunOptions::Stream::On;
  o.max_memory = 20ULL << 30;
  const double c0 = cpu_seconds();
  const auto w0 = Clock::now();
  Trace tr = run_model(m, topo, o);
  bool ok = tr.failure.kind == RunFailure::Kind::None;
  if (checks)
    for (const auto& c : check_trace(tr, CheckOptions{})) ok = ok && c.verdict != Verdict::Fail;
  Outcome out;
  out.cpu = cpu_seconds() - c0;
  out.wall = std::chrono::duration<double>(Clock::now() - w0).count();
  out.peak_kb = peak_kb();
  out.transfers = tr.streamed_transfers;
  out.result = tr.final_output.empty() || tr.final_output[0].empty() ? 0 : tr.final_output[0][0];
  out.ok = ok;
  return out;
}

// Runs f in a child and returns what it reports (ok = 0 if the child failed).
template <class F>
Outcome in_child(F f) {
  int fds[2];
  if (pipe(fds) != 0) return {};
  std::fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    Outcome o = f();
    _exit(write(fds[1], &o, sizeof o) == sizeof o ? 0 : 2);
  }
  close(fds[1]);
  Outcome o;
  if (read(fds[0], &o, sizeof o) != sizeof o) o = Outcome{};
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) o.ok = 0;
  return o;
}

Outcome best(const std::vector<Outcome>& v) {
  Outcome b = v.front();
  for (const auto& o : v) {
    if (o.cpu < b.cpu) {
      b.cpu = o.cpu;
      b.wall = o.wall;
    }
    b.peak_kb = std::min(b.peak_kb, o.peak_kb);
    b.ok = b.ok && o.ok;
  }
  return b;
}

int one_size(int n, int reps) {
  const double idle_kb = in_child([] {
                           Outcome o;
                           o.peak_kb = peak_kb();
                           o.ok = 1;
                           return o;
                         }).peak_kb;
  std::vector<Outcome> tab, lim, run, ver;
  for (int r = 0; r < reps; ++r) {  // interleaved, so that a burst of load hits every case
    tab.push_back(in_child([n] { return limit(n, true); }));
    lim.push_back(in_child([n] { return limit(n, false); }));
    run.push_back(in_child([n] { return collv_case(n, false); }));
    ver.push_back(in_child([n] { return collv_case(n, true); }));
  }
  const Outcome T = best(tab), L = best(lim), R = best(run), V = best(ver);
  const double p =
      static_cast<double>(Topology::parse("star:" + std::to_string(n)).num_processors());
  const double t = static_cast<double>(L.transfers);
  bool ok = T.ok && T.result == L.result && L.ok && R.ok && V.ok && R.transfers == L.transfers &&
            V.transfers == L.transfers && R.result == L.result && V.result == L.result;
  auto ns = [&](const Outcome& o) { return o.cpu * 1e9 / t; };
  auto bytes = [&](const Outcome& o) { return std::max(0.0, o.peak_kb - idle_kb) * 1024 / p; };
  std::printf("star:%d  %.0f nodes, %.0f transfers, best of %d (CPU time; wall in brackets)\n", n,
              p, t, reps);
  std::printf("  %-24s %8.1f ns/transfer [%7.2f s]  %7.1f B/node  %9.0f MiB\n",
              "limit, neighbour tables", ns(T), T.wall, bytes(T), T.peak_kb / 1024);
  std::printf("  %-24s %8.1f ns/transfer [%7.2f s]  %7.1f B/node  %9.0f MiB\n",
              "limit, Topology::neighbor", ns(L), L.wall, bytes(L), L.peak_kb / 1024);
  for (const auto& [name, o] : {std::pair<const char*, const Outcome&>{"collv run (streamed)", R},
                                {"collv verify (streamed)", V}})
    std::printf(
        "  %-24s %8.1f ns/transfer [%7.2f s]  %7.1f B/node  %9.0f MiB   collv/limit: time %.1f "
        "(%.1f against the tables), memory %.1f\n",
        name, ns(o), o.wall, bytes(o), o.peak_kb / 1024, ns(o) / std::max(ns(L), 1e-9),
        ns(o) / std::max(ns(T), 1e-9), bytes(o) / std::max(bytes(L), 1e-9));
  std::printf("  verify/run %.2f   %s\n", V.cpu / std::max(R.cpu, 1e-9), ok ? "ok" : "WRONG");
  std::fflush(stdout);
  return ok ? 0 : 1;
}

}  // namespace

const char kUsage[] = "usage: bench_stream [FIRST [LAST [REPS]]]  (star sizes 3..11)\n";

int main(int argc, char** argv) {
  return bench::guarded_main(argc, argv, kUsage, [](const bench::Args& a) {
    if (a.size() > 3) throw UsageError("at most three arguments");
    const int first = a.size() >= 1 ? static_cast<int>(bench::number_arg(a[0], "FIRST", 3, 11)) : 7;
    const int last = a.size() >= 2   ? static_cast<int>(bench::number_arg(a[1], "LAST", 3, 11))
                     : a.size() >= 1 ? first
                                     : 10;
    const int reps = a.size() >= 3 ? static_cast<int>(bench::number_arg(a[2], "REPS", 1, 100)) : 2;
    if (first > last) throw UsageError("FIRST is above LAST");
    int rc = 0;
    for (int n = first; n <= last; ++n) rc |= one_size(n, n >= 11 ? 1 : reps);
    return rc;
  });
}
