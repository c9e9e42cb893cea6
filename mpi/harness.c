/* The harness of `collv mpi` (docs/mpi.md): runs one MPI collective on tagged elements and writes
 * what it observes, one JSON line per event, into OUTDIR/c<N>/rank<R>.jsonl. It judges nothing:
 * collv reads the files and applies its checks. Compiled at run time by the MPI library's own
 * compiler (mpicc), never committed as a binary.
 *
 *   harness OUTDIR COLLECTIVE COUNTS ROOT OP INPLACE INJECT
 *     COLLECTIVE  allreduce reduce bcast allgather gather scatter alltoall reduce_scatter
 *                 reduce_scatter_block scan exscan allgatherv gatherv scatterv alltoallv alltoallw
 *                 barrier, reduce_scatter_equal (MPI_Reduce_scatter with `count` elements for
 *                 every rank), alltoallv_equal, alltoallw_equal (`count` elements for every pair),
 *                 allgatherv_contiguous (allgatherv's blocks with no gap between them),
 *                 or ring_allreduce (the harness's own ring
 *                 all-reduce over point-to-point, the one bugs are injected into), or none
 *                 (no collective: the baseline launch of Open MPI's per-peer message counts)
 *     COUNTS      N or A..B: one collective per count, in one launch (MPI_Init is the slow part)
 *     OP          c (a commutative user operation), n (a non-commutative one) or b (the
 *                 built-in MPI_SUM on MPI_UINT64_T; reductions only, p <= 12)
 *     INPLACE     1: MPI_IN_PLACE where the collective allows it
 *     INJECT      none | off-by-one | double-count | swap-operands (ring_allreduce only)
 *
 * Every count runs the collective CALLS (2) times, each call with fresh tags: an element is
 * {mask, idx, tag}: the set of ranks whose contributions it combines (bit r = rank r, so p <= 64),
 * the position of the input it came from, and tag = the call's number plus 2^30 when a
 * combination out of rank order (below) went into it. Call k (1..CALLS) of count N is numbered
 * c = N * CALLS + k, unique across the counts of a launch (collv's harness_call), so that a
 * result or message of another count's call is told from this one's. Rank r's input element at
 * position k in call c is {1 << r, k, c}. The user operation (MPI_Op_create) does what the real one
 * would do - the union of the sets - and writes every call, at the rank that makes it, with both
 * operands in order:
 *   {"k":"op","n":N,"a":[[idx,mask,tag],...],"b":[[idx,mask,tag],...]}   a = invec, b = inoutvec
 * MPI computes inoutvec = invec (op) inoutvec, so `a` is the left operand. Its result keeps the
 * smaller call number of the two (an operand of another call stays visible) and is marked 2^30
 * when either operand is, or when a is not ranks i..j and b ranks j+1..k (a combination no rank
 * order allows: under a non-commutative operation the value would be wrong if it reached the
 * result; collv judges it so, only where it does). Per call:
 *   {"k":"call","n":C}
 *   ... the op lines of the call ...
 *   {"k":"sendbuf","pos":I,"changed":N,"before":[idx,mask,tag],"after":[idx,mask,tag]}
 *       only when the library changed the send buffer (input-only in MPI): N positions, the
 *       first at I ("before"/"after" only for tagged elements)
 *   {"k":"out","buf":[[idx,mask,tag],...]}   the result region the collective defines here
 * Then, once per count, after both calls and a barrier on a communicator of the harness's own:
 *   {"k":"unmatched","user":[[src,tag,bytes],...],"queue":[n0,n1,...] or null}
 *       user: messages on MPI_COMM_WORLD that no receive matched (found with MPI_Iprobe and
 *       received); queue: per sending rank, the library's own count of unexpected messages on
 *       MPI_COMM_WORLD (Open MPI's MPI_T variable pml_ob1_unexpected_msgq_length; it sees the
 *       collectives' internal messages too), null when the library exports no such variable
 *   {"k":"done","rank":R,"size":P}
 * With COLLV_MPI_NODES=1 (collv sets it for MPICH's smp algorithms) every count's file starts with
 *   {"k":"node","leader":L,"local":N}
 * L the lowest rank of this rank's node and N the node's ranks, as MPI_Comm_split_type
 * (MPI_COMM_TYPE_SHARED) sees them (MPICH's MPIR_CVAR_NUM_CLIQUES splits one machine into
 * several nodes): collv judges an smp run only when the communicator spans several nodes and
 * some node holds two ranks or more (MPICH's node and node-roots communicators exist).
 * What the rank prints on its error and output streams during a count (the library's messages:
 * MPICH's fallback print, an assertion) goes to OUTDIR/c<N>/rank<R>.err (left out when empty).
 * Masks are written in decimal. An element the collective never wrote keeps {-1, 0, 0}.
 * The v-collectives: rank j's block holds vcount(j) = (count + j) mod (count + 1) elements
 * (alltoallv: vpair(i, j) = (count + i + 2 j) mod (count + 1) from i to j), the counts a model's
 * counts(j) / counts(i, j) have at the same count (docs/language.md, so that a model of the
 * library runs with the counts the library ran with), the blocks in rank order with one element
 * between them that no rank sends (it must stay unwritten; allgatherv_contiguous: none, each
 * block at the sum of the counts before it); the result is the whole receive buffer.
 * In place, alltoallv and alltoallw take one set of counts for both directions: spair(i, j) =
 * (count + i + j) mod (count + 1), the same both ways. alltoallw moves the same blocks as
 * alltoallv, its displacements in bytes, each block's datatype either n elements of the element
 * type or one contiguous type of n elements: the two ends of a pair take different ones, and
 * neighbouring pairs too (pair_type).
 * A barrier writes no result but, per call, {"k":"barrier","enter":NS,"leave":NS} (CLOCK_MONOTONIC,
 * one clock for the ranks of one node), the last rank entering 30 ms late.
 *
 * OP b: some algorithms run for built-in operations only (MPICH's Rabenseifner all-reduce). The
 * library calls no user function then, so no combination is seen; each element is one uint64,
 * rank r's input at position k being (k + 1) << (5 r), and the result region is written as
 *   {"k":"outv","buf":[v,...]}
 * in which digit r (5 bits) is k + 1 times the number of times rank r's input at position k
 * was added.
 *
 * OP m: a real non-commutative operation: each element is a 2x2 matrix of uint32 (arithmetic
 * modulo 2^32), the operation the matrix product inoutvec = invec x inoutvec. Rank r's input at
 * position k in call c is the matrix of mix(r, k, c, 0..3) (harness_elems.c; collv computes the
 * same); the result region is written as {"k":"outm","buf":[[a,b,c,d],...]}, to be the product in
 * rank order.
 *
 * The harness is split by concern, every .c file of this directory compiled into one executable
 * (harness.h lists them and what they share; collv's cached build is keyed on all of them). */
#define _GNU_SOURCE /* RTLD_NEXT */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

int call_no = 1; /* harness.h */
FILE* out;
MPI_Datatype etype;
int rank, size;

/* The harness's own synchronization: the minimum of one int over every rank, by point-to-point
 * messages through rank 0 on the harness's communicator. Never a collective: MPICH applies the
 * algorithm selected for the collective under test (MPIR_CVAR_<COLL>_INTRA_ALGORITHM) to every
 * call of that collective, the harness's own included, and a fallback there ("... cannot be
 * applied") would read as the library refusing the algorithm for the run (an MPI_Allreduce of
 * one int under the Rabenseifner all-reduce, which needs count >= pof2, did). */
int own_min(int v, MPI_Comm comm) {
  if (rank == 0) {
    for (int q = 1; q < size; ++q) {
      int x = 0;
      MPI_Recv(&x, 1, MPI_INT, q, 11, comm, MPI_STATUS_IGNORE);
      if (x < v) v = x;
    }
    for (int q = 1; q < size; ++q) MPI_Send(&v, 1, MPI_INT, q, 12, comm);
  } else {
    MPI_Send(&v, 1, MPI_INT, 0, 11, comm);
    MPI_Recv(&v, 1, MPI_INT, 0, 12, comm, MPI_STATUS_IGNORE);
  }
  return v;
}

/* The node this rank is on (COLLV_MPI_NODES=1): its lowest rank and its size, -1 when not asked
 * for or not known. MPI_Comm_split_type runs before the first count, outside every call. */
static int node_leader = -1, node_local = -1;

static void find_node(void) {
  const char* want = getenv("COLLV_MPI_NODES");
  if (!want || strcmp(want, "1") != 0) return;
  MPI_Comm node;
  if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) !=
      MPI_SUCCESS)
    return;
  MPI_Group wg, ng;
  int first = 0, lead = -1;
  MPI_Comm_size(node, &node_local);
  MPI_Comm_group(MPI_COMM_WORLD, &wg);
  MPI_Comm_group(node, &ng);
  MPI_Group_translate_ranks(ng, 1, &first, wg, &lead);
  node_leader = lead;
  MPI_Group_free(&wg);
  MPI_Group_free(&ng);
  MPI_Comm_free(&node);
}

/* Messages sent and never received: those on MPI_COMM_WORLD that a receive of any source and
 * tag matches (received here, so that the next count starts clean), and the library's own count
 * of unexpected messages per sender where it exports one (Open MPI). Run between two barriers on
 * the harness's own communicator, so that no message of the next count is in flight. */
static int uq_index = -2; /* -2: not looked up yet; -1: the library has no such variable */
static int t_initialized;
static MPI_T_pvar_session uq_session;
static MPI_T_pvar_handle uq_handle;
static int uq_count;

static void check_unmatched(MPI_Comm sync) {
  own_min(0, sync); /* a barrier */
  if (uq_index == -2) {
    uq_index = -1;
    int idx = -1, n = 0, prov;
    if (MPI_T_init_thread(MPI_THREAD_SINGLE, &prov) == MPI_SUCCESS && (t_initialized = 1) &&
        MPI_T_pvar_get_index("pml_ob1_unexpected_msgq_length", MPI_T_PVAR_CLASS_SIZE, &idx) ==
            MPI_SUCCESS &&
        MPI_T_pvar_session_create(&uq_session) == MPI_SUCCESS) {
      MPI_Comm world = MPI_COMM_WORLD;
      if (MPI_T_pvar_handle_alloc(uq_session, idx, &world, &uq_handle, &n) == MPI_SUCCESS &&
          n == size)
        uq_index = idx, uq_count = n;
    }
  }
  fputs("{\"k\":\"unmatched\",\"user\":[", out);
  int found = 0;
  for (int round = 0; round < 5; ++round) { /* a message still in transit gets a few chances */
    int flag = 1;
    while (flag) {
      MPI_Status st;
      MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st);
      if (!flag) break;
      int bytes = 0;
      MPI_Get_count(&st, MPI_BYTE, &bytes);
      char* buf = (char*)malloc((size_t)bytes + 1);
      MPI_Recv(buf, bytes, MPI_BYTE, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      free(buf);
      if (found++ < 16)
        fprintf(out, "%s[%d,%d,%d]", found > 1 ? "," : "", st.MPI_SOURCE, st.MPI_TAG, bytes);
    }
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
  fputs("],\"queue\":", out);
  unsigned int* q =
      uq_index >= 0 ? (unsigned int*)calloc((size_t)uq_count, sizeof(unsigned)) : NULL;
  if (q && MPI_T_pvar_read(uq_session, uq_handle, q) == MPI_SUCCESS) {
    fputc('[', out);
    for (int i = 0; i < uq_count; ++i) fprintf(out, "%s%u", i ? "," : "", q[i]);
    fputc(']', out);
  } else {
    fputs("null", out);
  }
  free(q);
  fputs("}\n", out);
  own_min(0, sync); /* a barrier */
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc != 8) {
    if (rank == 0)
      fprintf(stderr, "usage: harness OUTDIR COLLECTIVE COUNTS ROOT OP INPLACE INJECT\n");
    MPI_Finalize();
    return 2;
  }
  const char* dir = argv[1];
  const char* coll = argv[2];
  /* COUNTS: N or A..B, each count a collective of its own, written into OUTDIR/c<N>/. */
  int lo = atoi(argv[3]), hi = lo;
  const char* dots = strstr(argv[3], "..");
  if (dots) hi = atoi(dots + 2);
  int root = atoi(argv[4]);
  int commute = strcmp(argv[5], "c") == 0;
  int builtin = strcmp(argv[5], "b") == 0;
  int matrix = strcmp(argv[5], "m") == 0;
  int inplace = atoi(argv[6]) != 0;
  const char* inject = argv[7];
  if (builtin && (size > 12 || hi > 30)) {
    if (rank == 0) fprintf(stderr, "harness: OP b needs p <= 12 and counts <= 30\n");
    MPI_Finalize();
    return 2;
  }
  if (size > 64 || lo < 0 || hi > 65536 || lo > hi || root < 0 || root >= size) {
    if (rank == 0) fprintf(stderr, "harness: p <= 64, 0 <= A <= B <= 65536, 0 <= root < p\n");
    MPI_Finalize();
    return 2;
  }

  /* The element type: a struct of a 64-bit mask and two 32-bit integers. */
  int blocks[2] = {1, 2};
  MPI_Aint disps[2] = {offsetof(elem, mask), offsetof(elem, idx)};
  MPI_Datatype types[2] = {MPI_UINT64_T, MPI_INT32_T};
  MPI_Datatype raw, mtype;
  MPI_Type_create_struct(2, blocks, disps, types, &raw);
  MPI_Type_create_resized(raw, 0, sizeof(elem), &etype);
  MPI_Type_commit(&etype);
  MPI_Type_contiguous(4, MPI_UINT32_T, &mtype);
  MPI_Type_commit(&mtype);
  MPI_Op op, mop;
  MPI_Op_create(tag_op, commute, &op);
  MPI_Op_create(matmul_op, 0, &mop);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm sync; /* the harness's own barriers: no message on the collective's communicator */
  MPI_Comm_dup(MPI_COMM_WORLD, &sync);
  map_endpoints(sync);
  find_node();

  int rc = 0;
  /* The rank's own error and output streams, restored after each count (below). */
  fflush(stdout);
  fflush(stderr);
  int saved_out = dup(1), saved_err = dup(2);
  for (int count = lo; count <= hi && rc == 0; ++count) {
    char path[4096];
    snprintf(path, sizeof path, "%s/c%d", dir, count);
    mkdir(path, 0777); /* every rank tries; EEXIST is fine */
    snprintf(path, sizeof path, "%s/c%d/rank%d.jsonl", dir, count, rank);
    out = fopen(path, "w");
    if (!out) {
      fprintf(stderr, "harness: cannot write %s\n", path);
      MPI_Abort(MPI_COMM_WORLD, 3);
    }
    if (node_leader >= 0)
      fprintf(out, "{\"k\":\"node\",\"leader\":%d,\"local\":%d}\n", node_leader, node_local);
    /* What the library prints during this count (MPICH's "... cannot be applied" fallback
     * message, an assertion before an abort) goes to OUTDIR/c<N>/rank<R>.err: the rank's error
     * and output streams point there until the count is done, so one launch runs many counts and
     * collv still knows which count, and which rank, a message belongs to. An abort leaves them
     * pointing there. An empty file is removed. */
    char err_path[4096];
    snprintf(err_path, sizeof err_path, "%s/c%d/rank%d.err", dir, count, rank);
    int err_fd = saved_err >= 0 && saved_out >= 0
                     ? open(err_path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644)
                     : -1;
    if (err_fd >= 0) {
      dup2(err_fd, 1);
      dup2(err_fd, 2);
    }
    for (call_no = count * CALLS + 1; call_no <= count * CALLS + CALLS && rc == 0; ++call_no) {
      fprintf(out, "{\"k\":\"call\",\"n\":%d}\n", call_no);
      trace_n = trace_lost = 0;
      trace_on = trace_enabled;
      rc = builtin || matrix ? run_values(coll, count, root, inplace, matrix, mtype, mop)
                             : run_one(coll, count, root, inplace, inject, op);
      trace_on = 0;
      if (trace_enabled && rc == 0) write_sent();
    }
    if (rc == 0) check_unmatched(sync);
    fprintf(out, "{\"k\":\"done\",\"rank\":%d,\"size\":%d}\n", rank, size);
    fclose(out);
    if (err_fd >= 0) {
      fflush(stdout);
      fflush(stderr);
      dup2(saved_out, 1);
      dup2(saved_err, 2);
      struct stat st;
      if (fstat(err_fd, &st) == 0 && st.st_size == 0) unlink(err_path);
      close(err_fd);
    }
    /* No rank starts the next count before every rank closed this one's files: a rank that
     * aborts in count N+1 then leaves count N whole (collv judges it, and runs N+1 again). */
    if (rc == 0 && count < hi) own_min(0, sync);
  }
  if (uq_index >= 0) {
    MPI_T_pvar_handle_free(uq_session, &uq_handle);
    MPI_T_pvar_session_free(&uq_session);
  }
  if (t_initialized) MPI_T_finalize();
  MPI_Comm_free(&sync);
  MPI_Op_free(&op);
  MPI_Op_free(&mop);
  MPI_Type_free(&mtype);
  MPI_Type_free(&etype);
  MPI_Type_free(&raw);
  MPI_Finalize();
  return rc;
}

