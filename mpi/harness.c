/* The harness of `collv mpi` (docs/mpi.md): runs one MPI collective on tagged elements and writes
 * what it observes, one JSON line per event, into OUTDIR/c<N>/rank<R>.jsonl. It judges nothing: collv
 * reads the files and applies its checks. Compiled at run time by the MPI library's own compiler
 * (mpicc), never committed as a binary.
 *
 *   harness OUTDIR COLLECTIVE COUNTS ROOT OP INPLACE INJECT
 *     COLLECTIVE  allreduce reduce bcast allgather gather scatter alltoall reduce_scatter
 *                 reduce_scatter_block scan exscan, or ring_allreduce (the harness's own ring
 *                 all-reduce over point-to-point, the one bugs are injected into), or none
 *                 (no collective: the baseline launch of Open MPI's per-peer message counts)
 *     COUNTS      N or A..B: one collective per count, in one launch (MPI_Init is the slow part)
 *     OP          c (a commutative user operation), n (a non-commutative one) or b (the
 *                 built-in MPI_SUM on MPI_UINT64_T; reductions only, p <= 12)
 *     INPLACE     1: MPI_IN_PLACE where the collective allows it
 *     INJECT      none | off-by-one | double-count | swap-operands (ring_allreduce only)
 *
 * An element is {mask, idx}: the set of ranks whose contributions it combines (bit r = rank r,
 * so p <= 64) and the position of the input it came from. Rank r's input element at position k
 * is {1 << r, k}. The user operation (MPI_Op_create) does what the real one would do - the union
 * of the sets - and writes every call, at the rank that makes it, with both operands in order:
 *   {"k":"op","n":N,"a":[[idx,mask],...],"b":[[idx,mask],...]}   a = invec, b = inoutvec
 * MPI computes inoutvec = invec (op) inoutvec, so `a` is the left operand. At the end:
 *   {"k":"out","buf":[[idx,mask],...]}   the result region the collective defines at this rank
 *   {"k":"done","rank":R,"size":P}
 * Masks are written in decimal. An element the collective never wrote keeps {-1, 0}.
 *
 * OP b: some algorithms run for built-in operations only (MPICH's Rabenseifner all-reduce). The
 * library calls no user function then, so no combination is seen; each element is one uint64,
 * rank r's input at position k being (k + 1) << (5 r), and the result region is written as
 *   {"k":"outv","buf":[v,...]}
 * in which digit r (5 bits) is k + 1 times the number of times rank r's input at position k
 * was added. */
#include <mpi.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef struct {
  uint64_t mask;
  int32_t idx;
  int32_t pad;
} elem;

/* An MPI error code as the harness's JSON line {"k":"error","message":...}, quotes, backslashes
   and control characters left out. */
static void write_mpi_error(FILE* out, int code) {
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(code, msg, &len);
  fprintf(out, "{\"k\":\"error\",\"message\":\"");
  for (int i = 0; i < len; ++i)
    if (msg[i] != '"' && msg[i] != '\\' && (unsigned char)msg[i] >= 0x20) fputc(msg[i], out);
  fprintf(out, "\"}\n");
}

static FILE* out;
static MPI_Datatype etype;
static int rank, size;

static void write_elems(const elem* e, int n) {
  fputc('[', out);
  for (int i = 0; i < n; ++i)
    fprintf(out, "%s[%d,%llu]", i ? "," : "", (int)e[i].idx, (unsigned long long)e[i].mask);
  fputc(']', out);
}

/* The user operation: records both operands, then inoutvec = invec (op) inoutvec as a union of
 * the contribution sets (whatever they are: collv judges them). */
static void tag_op(void* invec, void* inoutvec, int* len, MPI_Datatype* dt) {
  (void)dt;
  elem* a = (elem*)invec;
  elem* b = (elem*)inoutvec;
  fprintf(out, "{\"k\":\"op\",\"n\":%d,\"a\":", *len);
  write_elems(a, *len);
  fputs(",\"b\":", out);
  write_elems(b, *len);
  fputs("}\n", out);
  for (int i = 0; i < *len; ++i) {
    b[i].mask |= a[i].mask;
    if (a[i].idx != b[i].idx) b[i].idx = -2; /* mixed positions stay visible in the output */
  }
}

static elem* alloc_elems(long n) {
  elem* e = (elem*)calloc((size_t)(n > 0 ? n : 1) + 1, sizeof(elem));
  if (!e) {
    fprintf(stderr, "harness: out of memory\n");
    MPI_Abort(MPI_COMM_WORLD, 3);
  }
  for (long i = 0; i <= n; ++i) {
    e[i].mask = 0;
    e[i].idx = -1;
  }
  return e;
}

static void fill_own(elem* e, long n) {
  for (long k = 0; k < n; ++k) {
    e[k].mask = (uint64_t)1 << rank;
    e[k].idx = (int32_t)k;
  }
}

/* reduce_scatter's per-rank counts: uneven on purpose (odd ranks get count / 2). */
static int rs_count(int r, int count) { return r % 2 == 0 ? count : count / 2; }

/* ---- The harness's own ring all-reduce over point-to-point, with injectable bugs. ----
 * Chunk c (count split as evenly as possible, the first count % p chunks one larger) is reduced
 * along the chain c+1, c+2, ..., c (mod p), ending at rank c. So that a non-commutative operation
 * is applied in rank order, the message carries two partial results: A (ranks c+1..p-1) and
 * B (ranks 0..k); rank c computes B (op) A. Then a ring all-gather of the chunks. */
static int chunk_size(int c, int count) { return count / size + (c < count % size ? 1 : 0); }
static int chunk_off(int c, int count) {
  return c * (count / size) + (c < count % size ? c : count % size);
}

static void combine(elem* left, elem* right_inout, int n) {
  int len = n;
  if (n > 0) tag_op(left, right_inout, &len, &etype);
}

static void ring_allreduce(const elem* own, elem* res, int count, const char* inject) {
  if (size == 1) {
    memcpy(res, own, sizeof(elem) * (size_t)count);
    return;
  }
  int maxc = count / size + 1;
  elem* msg = alloc_elems(2L * maxc);
  elem* in = alloc_elems(2L * maxc);
  elem* tmp = alloc_elems(maxc);
  int right = (rank + 1) % size, left = (rank + size - 1) % size;
  int off_by_one = strcmp(inject, "off-by-one") == 0;
  int dbl = strcmp(inject, "double-count") == 0;
  int swap = strcmp(inject, "swap-operands") == 0;
  /* Step 0: start chunk rank-1 with the own contribution (A if rank > c, else B). */
  int c = (rank + size - 1) % size;
  int n = chunk_size(c, count);
  for (int i = 0; i < 2 * maxc; ++i) msg[i] = (elem){0, -1, 0};
  memcpy(rank > c ? msg : msg + n, own + chunk_off(c, count), sizeof(elem) * (size_t)n);
  for (int s = 0; s <= size - 2; ++s) {
    int rc = ((rank - 2 - s) % size + size) % size; /* the chunk received at this step */
    int rn = chunk_size(rc, count);
    MPI_Sendrecv(msg, 2 * n, etype, right, s, in, 2 * rn, etype, left, s, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    c = rc;
    n = rn;
    int off = chunk_off(c, count);
    /* The bug "a segment off by one": rank 1 takes its contribution one element too far on. */
    if (off_by_one && rank == 1 && n > 0) off += 1;
    elem* A = in;
    elem* B = in + n;
    /* Is A (B) non-empty when it arrives? The chain so far is c+1 .. rank-1 (mod p). */
    int a_full = rank > c ? rank > c + 1 : c < size - 1;
    int b_full = rank <= c && rank > 0;
    elem* mine = rank > c ? A : B;
    int full = rank > c ? a_full : b_full;
    memcpy(tmp, own + off, sizeof(elem) * (size_t)n);
    if (full) {
      combine(mine, tmp, n); /* mine (op) own */
      memcpy(mine, tmp, sizeof(elem) * (size_t)n);
    } else {
      memcpy(mine, tmp, sizeof(elem) * (size_t)n);
    }
    /* The bug "a contribution added twice": rank 1 adds its own once more at its first step. */
    if (dbl && rank == 1 && s == 0 && n > 0) {
      memcpy(tmp, own + off, sizeof(elem) * (size_t)n);
      combine(mine, tmp, n);
      memcpy(mine, tmp, sizeof(elem) * (size_t)n);
    }
    if (s < size - 2) {
      memcpy(msg, in, sizeof(elem) * 2 * (size_t)n);
    } else {
      /* The chunk is complete at its owner: B (op) A, or A alone when c = p-1... no: B is
       * empty only when no rank <= c passed, which cannot happen here (rank = c <= c). */
      int has_a = c < size - 1;
      elem* dst = res + chunk_off(c, count);
      if (has_a) {
        if (swap) {
          combine(A, B, n); /* the bug: A (op) B */
          memcpy(dst, B, sizeof(elem) * (size_t)n);
        } else {
          combine(B, A, n); /* B (op) A */
          memcpy(dst, A, sizeof(elem) * (size_t)n);
        }
      } else {
        memcpy(dst, B, sizeof(elem) * (size_t)n);
      }
    }
  }
  /* All-gather: rank k owns chunk k; at step s it sends chunk k - s, receives chunk k - 1 - s. */
  for (int s = 0; s <= size - 2; ++s) {
    int sc = ((rank - s) % size + size) % size;
    int rc = ((rank - 1 - s) % size + size) % size;
    MPI_Sendrecv(res + chunk_off(sc, count), chunk_size(sc, count), etype, right, 1000 + s,
                 res + chunk_off(rc, count), chunk_size(rc, count), etype, left, 1000 + s,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  }
  free(msg);
  free(in);
  free(tmp);
}

/* A reduction under the built-in MPI_SUM on plain uint64 values (OP b). Returns 2 for a
 * collective that is no reduction. */
static int run_builtin(const char* coll, int count, int root, int inplace) {
  long p = size, total = count, n_out = count;
  int* rc = NULL;
  if (strcmp(coll, "reduce_scatter_block") == 0) {
    total = p * count;
  } else if (strcmp(coll, "reduce_scatter") == 0) {
    rc = (int*)malloc(sizeof(int) * (size_t)p);
    total = 0;
    for (int i = 0; i < size; ++i) total += rc[i] = rs_count(i, count);
    n_out = rc[rank];
  }
  uint64_t* s = (uint64_t*)calloc((size_t)total + 1, sizeof(uint64_t));
  uint64_t* r = (uint64_t*)calloc((size_t)total + 1, sizeof(uint64_t));
  if (!s || !r) MPI_Abort(MPI_COMM_WORLD, 3);
  for (long k = 0; k < total; ++k) s[k] = (uint64_t)(k + 1) << (5 * rank);
  int ip = inplace && (strcmp(coll, "reduce") != 0 || rank == root);
  if (ip) memcpy(r, s, sizeof(uint64_t) * (size_t)total);
  void* sb = ip ? MPI_IN_PLACE : (void*)s;
  int ok;
  if (strcmp(coll, "allreduce") == 0) {
    ok = MPI_Allreduce(sb, r, count, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
  } else if (strcmp(coll, "reduce") == 0) {
    ok = MPI_Reduce(sb, r, count, MPI_UINT64_T, MPI_SUM, root, MPI_COMM_WORLD);
    if (rank != root) n_out = -1;
  } else if (strcmp(coll, "scan") == 0) {
    ok = MPI_Scan(sb, r, count, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
  } else if (strcmp(coll, "exscan") == 0) {
    ok = MPI_Exscan(sb, r, count, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) n_out = -1;
  } else if (rc) {
    ok = MPI_Reduce_scatter(sb, r, rc, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
  } else if (strcmp(coll, "reduce_scatter_block") == 0) {
    ok = MPI_Reduce_scatter_block(sb, r, count, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
  } else {
    if (rank == 0) fprintf(stderr, "harness: OP b: '%s' is no reduction\n", coll);
    return 2;
  }
  if (ok != MPI_SUCCESS) {
    write_mpi_error(out, ok);
  } else if (n_out >= 0) {
    fputs("{\"k\":\"outv\",\"buf\":[", out);
    for (long i = 0; i < n_out; ++i)
      fprintf(out, "%s%llu", i ? "," : "", (unsigned long long)r[i]);
    fputs("]}\n", out);
  }
  fprintf(out, "{\"k\":\"done\",\"rank\":%d,\"size\":%d}\n", rank, size);
  return 0;
}

/* One collective at one count, its observations written to `out`. Returns 2 for an unknown
 * collective. (Buffers are not freed: a launch runs a few counts, then exits.) */
static int run_one(const char* coll, int count, int root, int inplace, const char* inject,
                   MPI_Op op) {
  long p = size;
  long n_out = 0; /* elements of the result region at this rank; -1: none */
  elem* result = NULL;
  int ok = MPI_SUCCESS;

  if (strcmp(coll, "none") == 0) {
    n_out = -1; /* the baseline launch of per-peer message counts: no collective */
  } else if (strcmp(coll, "allreduce") == 0 || strcmp(coll, "scan") == 0 ||
      strcmp(coll, "exscan") == 0) {
    elem* s = alloc_elems(count);
    elem* r = alloc_elems(count);
    fill_own(s, count);
    if (inplace) fill_own(r, count);
    void* sb = inplace ? MPI_IN_PLACE : (void*)s;
    if (coll[0] == 'a')
      ok = MPI_Allreduce(sb, r, count, etype, op, MPI_COMM_WORLD);
    else if (coll[0] == 's')
      ok = MPI_Scan(sb, r, count, etype, op, MPI_COMM_WORLD);
    else
      ok = MPI_Exscan(sb, r, count, etype, op, MPI_COMM_WORLD);
    result = r;
    n_out = coll[0] == 'e' && rank == 0 ? -1 : count;
  } else if (strcmp(coll, "ring_allreduce") == 0) {
    elem* s = alloc_elems(count);
    elem* r = alloc_elems(count);
    fill_own(s, count);
    ring_allreduce(s, r, count, inject);
    result = r;
    n_out = count;
  } else if (strcmp(coll, "reduce") == 0) {
    elem* s = alloc_elems(count);
    elem* r = alloc_elems(count);
    fill_own(s, count);
    int ip = inplace && rank == root;
    if (ip) fill_own(r, count);
    ok = MPI_Reduce(ip ? MPI_IN_PLACE : (void*)s, r, count, etype, op, root, MPI_COMM_WORLD);
    result = r;
    n_out = rank == root ? count : -1;
  } else if (strcmp(coll, "bcast") == 0) {
    elem* b = alloc_elems(count);
    if (rank == root) fill_own(b, count);
    ok = MPI_Bcast(b, count, etype, root, MPI_COMM_WORLD);
    result = b;
    n_out = count;
  } else if (strcmp(coll, "allgather") == 0 || strcmp(coll, "gather") == 0) {
    int all = coll[1] == 'l';
    elem* s = alloc_elems(count);
    elem* r = alloc_elems(p * count);
    fill_own(s, count);
    int ip = inplace && (all || rank == root);
    if (ip)
      for (long i = 0; i < count; ++i) r[rank * (long)count + i] = s[i];
    void* sb = ip ? MPI_IN_PLACE : (void*)s;
    if (all)
      ok = MPI_Allgather(sb, count, etype, r, count, etype, MPI_COMM_WORLD);
    else
      ok = MPI_Gather(sb, count, etype, r, count, etype, root, MPI_COMM_WORLD);
    result = r;
    n_out = all || rank == root ? p * count : -1;
  } else if (strcmp(coll, "scatter") == 0) {
    elem* s = alloc_elems(p * count);
    elem* r = alloc_elems(count);
    if (rank == root) fill_own(s, p * count);
    int ip = inplace && rank == root;
    ok = MPI_Scatter(s, count, etype, ip ? MPI_IN_PLACE : (void*)r, count, etype, root,
                     MPI_COMM_WORLD);
    if (ip) memcpy(r, s + rank * (long)count, sizeof(elem) * (size_t)count);
    result = r;
    n_out = count;
  } else if (strcmp(coll, "alltoall") == 0) {
    elem* s = alloc_elems(p * count);
    elem* r = alloc_elems(p * count);
    fill_own(s, p * count);
    if (inplace) memcpy(r, s, sizeof(elem) * (size_t)(p * count));
    ok = MPI_Alltoall(inplace ? MPI_IN_PLACE : (void*)s, count, etype, r, count, etype,
                      MPI_COMM_WORLD);
    result = r;
    n_out = p * count;
  } else if (strcmp(coll, "reduce_scatter_block") == 0) {
    elem* s = alloc_elems(p * count);
    elem* r = alloc_elems(p * count);
    fill_own(s, p * count);
    if (inplace) fill_own(r, p * count);
    ok = MPI_Reduce_scatter_block(inplace ? MPI_IN_PLACE : (void*)s, r, count, etype, op,
                                  MPI_COMM_WORLD);
    result = r;
    n_out = count;
  } else if (strcmp(coll, "reduce_scatter") == 0) {
    int* rc = (int*)malloc(sizeof(int) * (size_t)p);
    long total = 0;
    for (int i = 0; i < size; ++i) total += rc[i] = rs_count(i, count);
    elem* s = alloc_elems(total);
    elem* r = alloc_elems(total);
    fill_own(s, total);
    if (inplace) fill_own(r, total);
    ok = MPI_Reduce_scatter(inplace ? MPI_IN_PLACE : (void*)s, r, rc, etype, op, MPI_COMM_WORLD);
    result = r;
    n_out = rc[rank];
  } else {
    if (rank == 0) fprintf(stderr, "harness: unknown collective '%s'\n", coll);
    return 2;
  }
  if (ok != MPI_SUCCESS) {
    write_mpi_error(out, ok);
  } else if (n_out >= 0) {
    fputs("{\"k\":\"out\",\"buf\":", out);
    write_elems(result, (int)n_out);
    fputs("}\n", out);
  }
  fprintf(out, "{\"k\":\"done\",\"rank\":%d,\"size\":%d}\n", rank, size);
  return 0;
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
  MPI_Datatype raw;
  MPI_Type_create_struct(2, blocks, disps, types, &raw);
  MPI_Type_create_resized(raw, 0, sizeof(elem), &etype);
  MPI_Type_commit(&etype);
  MPI_Op op;
  MPI_Op_create(tag_op, commute, &op);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

  int rc = 0;
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
    rc = builtin ? run_builtin(coll, count, root, inplace)
                 : run_one(coll, count, root, inplace, inject, op);
    fclose(out);
  }
  MPI_Op_free(&op);
  MPI_Type_free(&etype);
  MPI_Type_free(&raw);
  MPI_Finalize();
  return rc;
}
