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
#include <limits>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "util/error.hpp"

namespace collv {

namespace {

int to_int(std::size_t n) {
  if (n > static_cast<std::size_t>(std::numeric_limits<int>::max()))
    throw LimitError(fmt::format(
        "a partitioned run would exchange {} bytes with one process in one round; MPI counts "
        "take at most 2^31-1 (use more processes)",
        n));
  return static_cast<int>(n);
}

class MpiPartition : public Partition {
 public:
  MpiPartition() {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }

  Received alltoall(std::vector<std::string>& out) override {
    COLLV_ASSERT(out.size() == static_cast<std::size_t>(size_));
    std::vector<int> scount(size_), rcount(size_), sdispl(size_), rdispl(size_);
    std::size_t total = 0;
    for (int r = 0; r < size_; ++r) {
      scount[r] = to_int(out[r].size());
      sdispl[r] = to_int(total);
      total += out[r].size();
      if (r != rank_) bytes_sent += out[r].size();
    }
    // One copy of the round's messages at a time: each part is freed once it is in `send`, and
    // `send` once MPI has sent it; what arrives stays in one buffer (no copy per process).
    std::string send;
    send.reserve(total);
    for (auto& s : out) {
      send += s;
      std::string().swap(s);
    }
    MPI_Alltoall(scount.data(), 1, MPI_INT, rcount.data(), 1, MPI_INT, MPI_COMM_WORLD);
    Received in;
    in.at.assign(size_ + 1, 0);
    std::size_t rtotal = 0;
    for (int r = 0; r < size_; ++r) {
      rdispl[r] = to_int(rtotal);
      in.at[r] = rtotal;
      rtotal += static_cast<std::size_t>(rcount[r]);
    }
    in.at[size_] = rtotal;
    in.data.assign(rtotal, '\0');
    MPI_Alltoallv(send.data(), scount.data(), sdispl.data(), MPI_BYTE, in.data.data(),
                  rcount.data(), rdispl.data(), MPI_BYTE, MPI_COMM_WORLD);
    ++rounds;
    return in;
  }

  std::vector<std::string> allgather(const std::string& mine) override {
    int n = to_int(mine.size());
    std::vector<int> counts(size_), displ(size_);
    MPI_Allgather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, MPI_COMM_WORLD);
    std::size_t total = 0;
    for (int r = 0; r < size_; ++r) {
      displ[r] = to_int(total);
      total += static_cast<std::size_t>(counts[r]);
    }
    std::string all(total, '\0');
    MPI_Allgatherv(mine.data(), n, MPI_BYTE, all.data(), counts.data(), displ.data(), MPI_BYTE,
                   MPI_COMM_WORLD);
    std::vector<std::string> out(size_);
    for (int r = 0; r < size_; ++r) out[r] = all.substr(displ[r], counts[r]);
    return out;
  }

  void allreduce(std::vector<std::uint64_t>& v, bool max) override {
    if (v.empty()) return;
    MPI_Allreduce(MPI_IN_PLACE, v.data(), to_int(v.size()), MPI_UINT64_T, max ? MPI_MAX : MPI_SUM,
                  MPI_COMM_WORLD);
  }

 private:
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
    }
  }
  if (const char* s = std::getenv("COLLV_PARTITION_STATS"); s && std::string(s) == "1") {
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    std::string line = fmt::format(
        "collv-mpi: rank {} of {}: peak memory {} MiB, {} bytes sent to other ranks in {} "
        "rounds, timing window {} MiB, senders' sides spanning at most {} transfers\n",
        part_->rank(), part_->size(), ru.ru_maxrss / 1024, part_->bytes_sent, part_->rounds,
        part_->window_bytes >> 20, part_->remote_span);
    int fd = saved_err_ >= 0 ? saved_err_ : 2;
    if (write(fd, line.data(), line.size()) < 0) {
    }
  }
  return part_->rank() == 0 ? code : 0;
}

}  // namespace collv
