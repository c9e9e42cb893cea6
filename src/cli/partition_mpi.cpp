// The Partition over MPI_COMM_WORLD (see partition_mpi.hpp).
#include "cli/partition_mpi.hpp"

#include <fcntl.h>
#include <malloc.h>
#include <mpi.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <limits>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "util/error.hpp"

namespace collv {

namespace {

constexpr std::uint64_t kMaxCount = static_cast<std::uint64_t>(std::numeric_limits<int>::max());

// Waits for a nonblocking operation without spinning: MPI's blocking calls poll (Open MPI's and
// MPICH's defaults busy-wait), so a process that waits for a slower peer would burn a core the
// peer needs on a shared machine. A few tests at once, then sleeps growing from 20 us to 200 us
// between tests (each test drives MPI's progress): a round waits at most that much longer.
void wait_idle(MPI_Request& req) {
  int done = 0;
  for (int i = 0; i < 64 && !done; ++i) MPI_Test(&req, &done, MPI_STATUS_IGNORE);
  long ns = 20'000;
  while (!done) {
    timespec ts{0, ns};
    nanosleep(&ts, nullptr);
    ns = std::min(ns * 2, 200'000L);
    MPI_Test(&req, &done, MPI_STATUS_IGNORE);
  }
}

class MpiPartition : public Partition {
 public:
  MpiPartition() {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }

  Received exchange(std::string& send, const std::vector<std::size_t>& counts,
                    std::vector<std::uint64_t>& sums) override {
    COLLV_ASSERT(counts.size() == static_cast<std::size_t>(size_));
    // Every process's counts and sums in one gather: each then knows what it receives, whether
    // a count would overflow MPI's ints (they refuse the round together: none is left waiting in
    // the exchange), the sums, and whether anything moves at all.
    const std::size_t k = static_cast<std::size_t>(size_), w = k + sums.size();
    std::vector<std::uint64_t> mine(w), all(w * k);
    std::uint64_t total = 0;
    for (std::size_t r = 0; r < k; ++r) {
      mine[r] = counts[r];
      total += counts[r];
    }
    COLLV_ASSERT(total == send.size());
    std::copy(sums.begin(), sums.end(), mine.begin() + static_cast<std::ptrdiff_t>(k));
    MPI_Request req;
    MPI_Iallgather(mine.data(), static_cast<int>(w), MPI_UINT64_T, all.data(), static_cast<int>(w),
                   MPI_UINT64_T, MPI_COMM_WORLD, &req);
    wait(req);
    ++rounds;
    for (std::size_t i = 0; i < sums.size(); ++i) {
      sums[i] = 0;
      for (std::size_t q = 0; q < k; ++q) sums[i] += all[q * w + k + i];
    }
    Received in;
    in.at.assign(k + 1, 0);
    std::uint64_t most = 0, moved = 0;
    for (std::size_t q = 0; q < k; ++q) {
      std::uint64_t out_q = 0, in_q = 0;
      for (std::size_t r = 0; r < k; ++r) {
        out_q += all[q * w + r];
        in_q += all[r * w + q];
      }
      most = std::max({most, out_q, in_q});
      moved += out_q;
    }
    if ((!sums.empty() && sums[0] != 0) || moved == 0) {
      give_back(std::move(send));
      return in;
    }
    if (most > kMaxCount)
      throw LimitError(fmt::format(
          "a partitioned run would exchange {} bytes with one process in one round; MPI counts "
          "take at most 2^31-1 (use more processes)",
          most));
    std::vector<int> sc(k), rc(k), sd(k), rd(k);
    std::uint64_t s_at = 0, r_at = 0;
    for (std::size_t r = 0; r < k; ++r) {
      const std::uint64_t from_r = all[r * w + static_cast<std::size_t>(rank_)];
      sc[r] = static_cast<int>(counts[r]);
      rc[r] = static_cast<int>(from_r);
      sd[r] = static_cast<int>(s_at);
      rd[r] = static_cast<int>(r_at);
      in.at[r] = r_at;
      s_at += counts[r];
      r_at += from_r;
      if (static_cast<int>(r) != rank_) bytes_sent += counts[r];
    }
    in.at[k] = r_at;
    // One copy of the round's messages at a time: `send` is freed once MPI has sent it; what
    // arrives stays in one buffer (no copy per process).
    in.data = buffer();
    in.data.resize(r_at);
    MPI_Ialltoallv(send.data(), sc.data(), sd.data(), MPI_BYTE, in.data.data(), rc.data(),
                   rd.data(), MPI_BYTE, MPI_COMM_WORLD, &req);
    wait(req);
    give_back(std::move(send));
    ++moved_rounds;
    return in;
  }

  std::vector<std::string> allgather(const std::string& mine) override {
    std::uint64_t n = mine.size();
    std::vector<std::uint64_t> counts(size_);
    MPI_Request req;
    MPI_Iallgather(&n, 1, MPI_UINT64_T, counts.data(), 1, MPI_UINT64_T, MPI_COMM_WORLD, &req);
    wait(req);
    std::uint64_t total = 0;
    for (auto c : counts) total += c;
    // Every process sees every count: they refuse together.
    if (total > kMaxCount)
      throw LimitError(fmt::format(
          "a partitioned run would gather {} bytes in one exchange; MPI counts take at most "
          "2^31-1",
          total));
    std::vector<int> c(size_), displ(size_);
    std::uint64_t at = 0;
    for (int r = 0; r < size_; ++r) {
      c[r] = static_cast<int>(counts[r]);
      displ[r] = static_cast<int>(at);
      at += counts[r];
    }
    std::string all(total, '\0');
    MPI_Iallgatherv(mine.data(), c[rank_], MPI_BYTE, all.data(), c.data(), displ.data(), MPI_BYTE,
                    MPI_COMM_WORLD, &req);
    wait(req);
    std::vector<std::string> out(size_);
    for (int r = 0; r < size_; ++r) out[r] = all.substr(displ[r], c[r]);
    return out;
  }

  void allreduce(std::vector<std::uint64_t>& v, bool max) override {
    if (v.empty()) return;
    if (v.size() > kMaxCount)
      throw InternalError("internal error: an allreduce of more than 2^31-1 numbers");
    MPI_Request req;
    MPI_Iallreduce(MPI_IN_PLACE, v.data(), static_cast<int>(v.size()), MPI_UINT64_T,
                   max ? MPI_MAX : MPI_SUM, MPI_COMM_WORLD, &req);
    wait(req);
  }

 private:
  void wait(MPI_Request& req) {
    ++collectives;
    wait_idle(req);
  }

  int rank_ = 0, size_ = 1;
};

}  // namespace

MpiSession::MpiSession(int* argc, char*** argv) {
  MPI_Init(argc, argv);
  part_ = std::make_unique<MpiPartition>();
#if defined(__GLIBC__)
  // A round's exchange buffers (megabytes, a different size every round) are mapped and given
  // back whole: glibc's default raises its mapping threshold after the first such buffer is
  // freed, and the later ones then fragment the heap, which keeps the freed memory (star:10,
  // K = 4: 347-368 MiB a process with the default, 313-346 MiB with this; one process's peak is
  // the same either way: docs/benchmarks.md).
  if (part_->size() > 1) mallopt(M_MMAP_THRESHOLD, 1 << 20);
#endif
  if (part_->rank() != 0) {
    // Rank 0 prints the report and the errors: every rank reaches the same ones.
    std::fflush(stdout);
    std::fflush(stderr);
    saved_err_ = dup(2);
    int null = open("/dev/null", O_WRONLY);
    if (null >= 0) {
      dup2(null, 1);
      dup2(null, 2);
      close(null);
    }
  }
}

MpiSession::~MpiSession() { MPI_Finalize(); }

int MpiSession::agree_arguments(int argc, char** argv) {
  if (part_->size() < 2) return 0;
  std::vector<std::string> args(argv + std::min(argc, 1), argv + argc);
  auto e = partition_agree_arguments(*part_, args);
  if (!e) return 0;
  if (part_->rank() == 0) std::fprintf(stderr, "collv-mpi: error: %s\n", e->c_str());
  error_agreed_ = true;
  return 2;
}

int MpiSession::finish(int code, const std::string& error) {
  if (part_->size() > 1 && !part_->settled) {
    RankStatus mine;
    mine.state = error.empty() ? RankStatus::State::Done : RankStatus::State::Failed;
    mine.code = code;
    mine.error = error;
    if (auto d = partition_leave(*part_, mine)) {
      // Rank 0 printed its own error already when it is the one that failed.
      if (part_->rank() == 0 && mine.state != RankStatus::State::Failed)
        std::fprintf(stderr, "collv-mpi: error: %s\n", d->message.c_str());
      if (mine.state != RankStatus::State::Failed) code = d->code;
      error_agreed_ = true;
    }
  }
  if (const char* s = std::getenv("COLLV_PARTITION_STATS"); s && std::string(s) == "1") {
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    std::string line = fmt::format(
        "collv-mpi: rank {} of {}: peak memory {} MiB, CPU {:.2f} s user {:.2f} s system, {} "
        "bytes sent to other ranks in {} of {} exchanges ({} collective operations), timing "
        "window {} MiB, senders' sides spanning at most {} transfers\n",
        part_->rank(), part_->size(), ru.ru_maxrss / 1024,
        static_cast<double>(ru.ru_utime.tv_sec) + 1e-6 * static_cast<double>(ru.ru_utime.tv_usec),
        static_cast<double>(ru.ru_stime.tv_sec) + 1e-6 * static_cast<double>(ru.ru_stime.tv_usec),
        part_->bytes_sent, part_->moved_rounds, part_->rounds, part_->collectives,
        part_->window_bytes >> 20, part_->remote_span);
    int fd = saved_err_ >= 0 ? saved_err_ : 2;
    if (write(fd, line.data(), line.size()) < 0) {
    }
  }
  // A verdict is rank 0's to give (the others return 0); an error every process ended with, its
  // own or one they agreed on, is every process's exit code.
  return part_->rank() == 0 || error_agreed_ || !error.empty() ? code : 0;
}

}  // namespace collv
