// collv-mpi's side of verification partitioned over MPI processes (docs/partitioned.md): MPI's
// start and end, and the Partition (verify/partition.hpp) over MPI_COMM_WORLD. Compiled into
// collv-mpi only; nothing else sees MPI.
#pragma once

#include <memory>
#include <string>

#include "verify/partition.hpp"

namespace collv {

class MpiSession {
 public:
  // MPI_Init; on every rank but 0, standard output and error are silenced (rank 0 alone prints).
  MpiSession(int* argc, char*** argv);
  ~MpiSession();  // MPI_Finalize
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;
  Partition& partition() { return *part_; }
  // The processes compare their command lines (without the program's name): 0 when they agree;
  // else rank 0 prints the first difference and every process returns 2 (docs/partitioned.md).
  int agree_arguments(int argc, char** argv);
  // The exit code this process returns. A verdict is rank 0's: the others return 0 (every rank
  // reaches the same verdict, and mpirun reports the first non-zero code). `error` is the error
  // the command stopped with on this process ("" if none): the processes compare where they are
  // first (partition_leave), and when they disagree (one failed alone) rank 0 prints why; an
  // error, this process's own or one the processes agreed on (arguments that differ included),
  // is every process's exit code. With COLLV_PARTITION_STATS=1 each rank prints its peak
  // memory and bytes exchanged on the error stream first.
  int finish(int code, const std::string& error);

 private:
  std::unique_ptr<Partition> part_;
  int saved_err_ = -1;
  bool error_agreed_ = false;  // the processes agreed to stop on an error (finish returns its code)
};

}  // namespace collv
