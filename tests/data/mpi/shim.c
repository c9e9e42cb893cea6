/* Library bugs injected for tests/test_mpi.cpp: an LD_PRELOAD'ed library, built by the test with
 * the MPI compiler (mpicc -shared -fPIC -D<BUG>), that wraps one MPI entry and calls the real one
 * through its PMPI_ name, then does what a buggy library would:
 *   STALE_RESULT     MPI_Allreduce: rank 0 returns the previous call's result (same length)
 *   STALE_COUNT      MPI_Allreduce: rank 0 returns, in the first positions, the result of the
 *                    same call of the previous count (two calls back, a shorter buffer): right
 *                    values at the right positions, of the call that many counts' calls shared
 *                    the number of before the call numbers ran on across counts
 *   OVERWRITE_SEND   MPI_Allreduce: rank 0 overwrites its send buffer's first element
 *   ROOT_ZERO        MPI_Reduce: reduces to rank 0 whatever the root (right only at root 0)
 *   EXTRA_MESSAGE    MPI_Allreduce: rank 0 also sends rank 1 a message nobody receives
 *   BARRIER_EARLY    MPI_Barrier: returns at once, no rank waits for the others
 *   HANG_SECOND      MPI_Allreduce: rank 0 sleeps 60 s after its second call (a launch that
 *                    outlives --timeout, its logs cut short)
 *   ALLTOALLW_PACKED MPI_Alltoallw: ignores the receive displacements and puts the blocks one
 *                    after the other in rank order (right only where the caller's blocks touch)
 *   ABORT_COUNT2     MPI_Allreduce: rank 1 prints a line and aborts in a call with count 2 (a
 *                    library crash in one count of a launch that runs several)
 * Only the harness's collectives are wrapped; the test's launcher wrapper preloads it into the
 * ranks (never into collv). */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#if defined(STALE_RESULT) || defined(OVERWRITE_SEND) || defined(EXTRA_MESSAGE)
int MPI_Allreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype dt, MPI_Op op,
                  MPI_Comm comm) {
  int rc = PMPI_Allreduce(sendbuf, recvbuf, count, dt, op, comm);
  int rank = 0, size = 0, tsize = 0;
  PMPI_Comm_rank(comm, &rank);
  PMPI_Comm_size(comm, &size);
  PMPI_Type_size(dt, &tsize);
  size_t bytes = (size_t)count * (size_t)tsize;
  (void)size;
  (void)bytes;
#if defined(STALE_RESULT)
  static char* prev;
  static size_t prev_bytes;
  if (rank == 0 && bytes > 0) {
    char* now = (char*)malloc(bytes);
    memcpy(now, recvbuf, bytes);
    if (prev && prev_bytes == bytes) memcpy(recvbuf, prev, bytes);
    free(prev);
    prev = now;
    prev_bytes = bytes;
  }
#elif defined(OVERWRITE_SEND)
  if (rank == 0 && bytes > 0 && sendbuf != MPI_IN_PLACE)
    memcpy((void*)sendbuf, recvbuf, (size_t)tsize);
#else
  int x = 42;
  if (rank == 0 && size > 1) PMPI_Send(&x, 1, MPI_INT, 1, 77, comm);
#endif
  return rc;
}
#endif

#if defined(STALE_COUNT)
int MPI_Allreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype dt, MPI_Op op,
                  MPI_Comm comm) {
  static char* kept[2]; /* the results of the last two calls, the older first */
  static size_t kept_bytes[2];
  int rc = PMPI_Allreduce(sendbuf, recvbuf, count, dt, op, comm);
  int rank = 0, tsize = 0;
  PMPI_Comm_rank(comm, &rank);
  PMPI_Type_size(dt, &tsize);
  size_t bytes = (size_t)count * (size_t)tsize;
  if (rank != 0) return rc;
  char* now = (char*)malloc(bytes > 0 ? bytes : 1);
  memcpy(now, recvbuf, bytes);
  if (kept[0] && kept_bytes[0] > 0 && kept_bytes[0] < bytes)
    memcpy(recvbuf, kept[0], kept_bytes[0]); /* the previous count's result, in front */
  free(kept[0]);
  kept[0] = kept[1];
  kept_bytes[0] = kept_bytes[1];
  kept[1] = now;
  kept_bytes[1] = bytes;
  return rc;
}
#endif

#if defined(ROOT_ZERO)
int MPI_Reduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype dt, MPI_Op op, int root,
               MPI_Comm comm) {
  (void)root;
  return PMPI_Reduce(sendbuf, recvbuf, count, dt, op, 0, comm);
}
#endif

#if defined(BARRIER_EARLY)
int MPI_Barrier(MPI_Comm comm) {
  (void)comm;
  return MPI_SUCCESS; /* no synchronization at all */
}
#endif

#if defined(HANG_SECOND)
#include <unistd.h>
int MPI_Allreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype dt, MPI_Op op,
                  MPI_Comm comm) {
  static int calls;
  int rc = PMPI_Allreduce(sendbuf, recvbuf, count, dt, op, comm);
  int rank = 0;
  PMPI_Comm_rank(comm, &rank);
  if (++calls == 2 && rank == 0) sleep(60);
  return rc;
}
#endif

#if defined(ALLTOALLW_PACKED)
int MPI_Alltoallw(const void* sendbuf, const int sendcounts[], const int sdispls[],
                  const MPI_Datatype sendtypes[], void* recvbuf, const int recvcounts[],
                  const int rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm) {
  int size = 0;
  PMPI_Comm_size(comm, &size);
  int* packed = (int*)malloc(sizeof(int) * (size_t)(size > 0 ? size : 1));
  int at = 0;
  for (int j = 0; j < size; ++j) { /* the receive blocks' bytes, one after the other */
    int tsize = 0;
    PMPI_Type_size(recvtypes[j], &tsize);
    packed[j] = at;
    at += recvcounts[j] * tsize;
  }
  (void)rdispls;
  int rc = PMPI_Alltoallw(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, packed,
                          recvtypes, comm);
  free(packed);
  return rc;
}
#endif

#if defined(ABORT_COUNT2)
#include <stdio.h>
int MPI_Allreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype dt, MPI_Op op,
                  MPI_Comm comm) {
  int rank = 0;
  PMPI_Comm_rank(comm, &rank);
  if (count == 2 && rank == 1) {
    fprintf(stderr, "shim: rank 1 aborts at count 2\n");
    abort();
  }
  return PMPI_Allreduce(sendbuf, recvbuf, count, dt, op, comm);
}
#endif
