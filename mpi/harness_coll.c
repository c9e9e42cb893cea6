/* The collective calls: one collective at one count on tagged elements (run_one), on plain values
 * (run_values: OP b and m), and the harness's own ring all-reduce. */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

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

/* A reduction on plain values (OP b: the built-in MPI_SUM on uint64; OP m: the matrix product,
 * a user operation on 2x2 uint32 matrices). Returns 2 for a collective that is no reduction. */
int run_values(const char* coll, int count, int root, int inplace, int matrix,
                      MPI_Datatype mtype, MPI_Op mop) {
  long p = size, total = count, n_out = count;
  int* rc = NULL;
  const size_t w = matrix ? 16 : 8;
  MPI_Datatype dt = matrix ? mtype : MPI_UINT64_T;
  MPI_Op op = matrix ? mop : MPI_SUM;
  if (strcmp(coll, "reduce_scatter_block") == 0) {
    total = p * count;
  } else if (strcmp(coll, "reduce_scatter") == 0) {
    rc = (int*)malloc(sizeof(int) * (size_t)p);
    total = 0;
    for (int i = 0; i < size; ++i) total += rc[i] = rs_count(i, count);
    n_out = rc[rank];
  }
  unsigned char* s = (unsigned char*)calloc((size_t)total + 1, w);
  unsigned char* r = (unsigned char*)calloc((size_t)total + 1, w);
  if (!s || !r) MPI_Abort(MPI_COMM_WORLD, 3);
  for (long k = 0; k < total; ++k) {
    if (matrix) {
      for (int e = 0; e < 4; ++e)
        ((uint32_t*)s)[4 * k + e] =
            mix((uint32_t)rank, (uint32_t)k, (uint32_t)call_no, (uint32_t)e);
    } else {
      ((uint64_t*)s)[k] = (uint64_t)(k + 1) << (5 * rank);
    }
  }
  int ip = inplace && (strcmp(coll, "reduce") != 0 || rank == root);
  if (ip) memcpy(r, s, w * (size_t)total);
  void* sb = ip ? MPI_IN_PLACE : (void*)s;
  snap(ip ? NULL : s, total, w);
  int ok;
  if (strcmp(coll, "allreduce") == 0) {
    ok = MPI_Allreduce(sb, r, count, dt, op, MPI_COMM_WORLD);
  } else if (strcmp(coll, "reduce") == 0) {
    ok = MPI_Reduce(sb, r, count, dt, op, root, MPI_COMM_WORLD);
    if (rank != root) n_out = -1;
  } else if (strcmp(coll, "scan") == 0) {
    ok = MPI_Scan(sb, r, count, dt, op, MPI_COMM_WORLD);
  } else if (strcmp(coll, "exscan") == 0) {
    ok = MPI_Exscan(sb, r, count, dt, op, MPI_COMM_WORLD);
    if (rank == 0) n_out = -1;
  } else if (rc) {
    ok = MPI_Reduce_scatter(sb, r, rc, dt, op, MPI_COMM_WORLD);
  } else if (strcmp(coll, "reduce_scatter_block") == 0) {
    ok = MPI_Reduce_scatter_block(sb, r, count, dt, op, MPI_COMM_WORLD);
  } else {
    if (rank == 0) fprintf(stderr, "harness: OP b and m: '%s' is no reduction\n", coll);
    free(s);
    free(r);
    return 2;
  }
  check_sendbuf(0);
  if (ok != MPI_SUCCESS) {
    write_mpi_error(out, ok);
  } else if (n_out >= 0 && matrix) {
    fputs("{\"k\":\"outm\",\"buf\":[", out);
    for (long i = 0; i < n_out; ++i) {
      const uint32_t* m = (const uint32_t*)r + 4 * i;
      fprintf(out, "%s[%u,%u,%u,%u]", i ? "," : "", m[0], m[1], m[2], m[3]);
    }
    fputs("]}\n", out);
  } else if (n_out >= 0) {
    fputs("{\"k\":\"outv\",\"buf\":[", out);
    for (long i = 0; i < n_out; ++i)
      fprintf(out, "%s%llu", i ? "," : "", (unsigned long long)((uint64_t*)r)[i]);
    fputs("]}\n", out);
  }
  free(s);
  free(r);
  free(rc);
  return 0;
}

/* One collective at one count, its observations written to `out`. Returns 2 for an unknown
 * collective. (Buffers are not freed: a launch runs a few counts, then exits.) */
int run_one(const char* coll, int count, int root, int inplace, const char* inject,
                   MPI_Op op) {
  long p = size;
  long n_out = 0; /* elements of the result region at this rank; -1: none */
  elem* result = NULL;
  int ok = MPI_SUCCESS;

  if (strcmp(coll, "none") == 0) {
    n_out = -1; /* the baseline launch of per-peer message counts: no collective */
    snap(NULL, 0, sizeof(elem));
  } else if (strcmp(coll, "allreduce") == 0 || strcmp(coll, "scan") == 0 ||
             strcmp(coll, "exscan") == 0) {
    elem* s = alloc_elems(count);
    elem* r = alloc_elems(count);
    fill_own(s, count);
    if (inplace) fill_own(r, count);
    void* sb = inplace ? MPI_IN_PLACE : (void*)s;
    snap(inplace ? NULL : s, count, sizeof(elem));
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
    snap(s, count, sizeof(elem));
    ring_allreduce(s, r, count, inject);
    result = r;
    n_out = count;
  } else if (strcmp(coll, "reduce") == 0) {
    elem* s = alloc_elems(count);
    elem* r = alloc_elems(count);
    fill_own(s, count);
    int ip = inplace && rank == root;
    if (ip) fill_own(r, count);
    snap(ip ? NULL : s, count, sizeof(elem));
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
    snap(ip ? NULL : s, count, sizeof(elem));
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
    snap(rank == root ? s : NULL, p * count, sizeof(elem));
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
    snap(inplace ? NULL : s, p * count, sizeof(elem));
    ok = MPI_Alltoall(inplace ? MPI_IN_PLACE : (void*)s, count, etype, r, count, etype,
                      MPI_COMM_WORLD);
    result = r;
    n_out = p * count;
  } else if (strcmp(coll, "reduce_scatter_block") == 0) {
    elem* s = alloc_elems(p * count);
    elem* r = alloc_elems(p * count);
    fill_own(s, p * count);
    if (inplace) fill_own(r, p * count);
    snap(inplace ? NULL : s, p * count, sizeof(elem));
    ok = MPI_Reduce_scatter_block(inplace ? MPI_IN_PLACE : (void*)s, r, count, etype, op,
                                  MPI_COMM_WORLD);
    result = r;
    n_out = count;
  } else if (strcmp(coll, "reduce_scatter") == 0 || strcmp(coll, "reduce_scatter_equal") == 0) {
    /* reduce_scatter_equal: every rank's count is `count` (a `collective reduce-scatter`
     * model's equal blocks), on MPI_Reduce_scatter. */
    int equal = coll[14] == '_';
    int* rc = (int*)malloc(sizeof(int) * (size_t)p);
    long total = 0;
    for (int i = 0; i < size; ++i) total += rc[i] = equal ? count : rs_count(i, count);
    elem* s = alloc_elems(total);
    elem* r = alloc_elems(total);
    fill_own(s, total);
    if (inplace) fill_own(r, total);
    snap(inplace ? NULL : s, total, sizeof(elem));
    ok = MPI_Reduce_scatter(inplace ? MPI_IN_PLACE : (void*)s, r, rc, etype, op, MPI_COMM_WORLD);
    result = r;
    n_out = rc[rank];
  } else if (strcmp(coll, "allgatherv") == 0 || strcmp(coll, "gatherv") == 0 ||
             strcmp(coll, "allgatherv_contiguous") == 0) {
    /* Rank j's block: vcount(j) elements at vdispl(j), one unwritten element after each block
     * (a library that ignores the displacements writes there); allgatherv_contiguous: no gap,
     * each displacement the sum of the counts before it (MPICH's recexch allgatherv schedules
     * run only then: MPII_Iallgatherv_is_displs_ordered). */
    int all = coll[1] == 'l';
    int gap = strcmp(coll, "allgatherv_contiguous") == 0 ? 0 : 1;
    int *rc = (int*)malloc(sizeof(int) * (size_t)p), *rd = (int*)malloc(sizeof(int) * (size_t)p);
    long total = 0;
    for (int j = 0; j < size; ++j) {
      rc[j] = vcount(j, count);
      rd[j] = (int)total;
      total += rc[j] + gap;
    }
    elem* s = alloc_elems(rc[rank]);
    elem* r = alloc_elems(total);
    fill_own(s, rc[rank]);
    int ip = inplace && (all || rank == root);
    if (ip) memcpy(r + rd[rank], s, sizeof(elem) * (size_t)rc[rank]);
    void* sb = ip ? MPI_IN_PLACE : (void*)s;
    snap(ip ? NULL : s, rc[rank], sizeof(elem));
    if (all)
      ok = MPI_Allgatherv(sb, rc[rank], etype, r, rc, rd, etype, MPI_COMM_WORLD);
    else
      ok = MPI_Gatherv(sb, rc[rank], etype, r, rc, rd, etype, root, MPI_COMM_WORLD);
    result = r;
    n_out = all || rank == root ? total : -1;
  } else if (strcmp(coll, "scatterv") == 0) {
    int *sc = (int*)malloc(sizeof(int) * (size_t)p), *sd = (int*)malloc(sizeof(int) * (size_t)p);
    long total = 0;
    for (int j = 0; j < size; ++j) {
      sc[j] = vcount(j, count);
      sd[j] = (int)total;
      total += sc[j] + 1;
    }
    elem* s = alloc_elems(total);
    elem* r = alloc_elems(sc[rank]);
    if (rank == root) fill_own(s, total);
    int ip = inplace && rank == root;
    snap(rank == root ? s : NULL, total, sizeof(elem));
    ok = MPI_Scatterv(s, sc, sd, etype, ip ? MPI_IN_PLACE : (void*)r, sc[rank], etype, root,
                      MPI_COMM_WORLD);
    if (ip) memcpy(r, s + sd[rank], sizeof(elem) * (size_t)sc[rank]);
    result = r;
    n_out = sc[rank];
  } else if (strncmp(coll, "alltoallv", 9) == 0 || strncmp(coll, "alltoallw", 9) == 0) {
    /* Rank i sends rank j pc(i, j) elements; blocks in rank order, one element apart (none with
     * equal counts). alltoallw: the same elements, its displacements in bytes and the pair's
     * datatypes mixed (pair_types). In place, one set of counts serves both directions, so the
     * counts are symmetric (spair), or all `count` (the _equal kinds). */
    int w = coll[8] == 'w', equal = strcmp(coll + 9, "_equal") == 0;
    if (coll[9] != '\0' && !equal) {
      if (rank == 0) fprintf(stderr, "harness: unknown collective '%s'\n", coll);
      return 2;
    }
    int gap = equal ? 0 : 1;
    int *sc = (int*)malloc(sizeof(int) * (size_t)p), *sd = (int*)malloc(sizeof(int) * (size_t)p);
    int *rc = (int*)malloc(sizeof(int) * (size_t)p), *rd = (int*)malloc(sizeof(int) * (size_t)p);
    long st = 0, rt = 0;
    for (int j = 0; j < size; ++j) {
      sc[j] = equal ? count : inplace ? spair(rank, j, count) : vpair(rank, j, count);
      sd[j] = (int)st;
      st += sc[j] + gap;
      rc[j] = equal ? count : inplace ? spair(j, rank, count) : vpair(j, rank, count);
      rd[j] = (int)rt;
      rt += rc[j] + gap;
    }
    elem* s = alloc_elems(st);
    elem* r = alloc_elems(rt);
    fill_own(s, st);
    if (inplace) /* the blocks only (rd = sd: symmetric counts); the gaps stay unwritten */
      for (int j = 0; j < size; ++j) memcpy(r + rd[j], s + sd[j], sizeof(elem) * (size_t)rc[j]);
    snap(inplace ? NULL : s, st, sizeof(elem));
    void* sb = inplace ? MPI_IN_PLACE : (void*)s;
    if (!w) {
      ok = MPI_Alltoallv(sb, sc, sd, etype, r, rc, rd, etype, MPI_COMM_WORLD);
    } else {
      MPI_Datatype* stp = (MPI_Datatype*)malloc(sizeof(MPI_Datatype) * (size_t)p);
      MPI_Datatype* rtp = (MPI_Datatype*)malloc(sizeof(MPI_Datatype) * (size_t)p);
      for (int j = 0; j < size; ++j) {
        pair_type(sc[j], (rank + j) % 2 == 0, &sc[j], &stp[j]);
        pair_type(rc[j], (rank + j) % 2 == (inplace ? 0 : 1), &rc[j], &rtp[j]);
        sd[j] *= (int)sizeof(elem);
        rd[j] *= (int)sizeof(elem);
      }
      ok = MPI_Alltoallw(sb, sc, sd, stp, r, rc, rd, rtp, MPI_COMM_WORLD);
      for (int j = 0; j < size; ++j) {
        if (stp[j] != etype) MPI_Type_free(&stp[j]);
        if (rtp[j] != etype) MPI_Type_free(&rtp[j]);
      }
    }
    result = r;
    n_out = rt;
  } else if (strcmp(coll, "barrier") == 0) {
    /* The last rank enters 30 ms late: no rank may leave before it entered. */
    struct timespec t0, t1, late = {0, 30000000};
    snap(NULL, 0, sizeof(elem));
    if (rank == size - 1) nanosleep(&late, NULL);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    ok = MPI_Barrier(MPI_COMM_WORLD);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    fprintf(out, "{\"k\":\"barrier\",\"enter\":%lld,\"leave\":%lld}\n",
            (long long)t0.tv_sec * 1000000000LL + t0.tv_nsec,
            (long long)t1.tv_sec * 1000000000LL + t1.tv_nsec);
    n_out = -1;
  } else {
    if (rank == 0) fprintf(stderr, "harness: unknown collective '%s'\n", coll);
    return 2;
  }
  check_sendbuf(1);
  if (ok != MPI_SUCCESS) {
    write_mpi_error(out, ok);
  } else if (n_out >= 0) {
    fputs("{\"k\":\"out\",\"buf\":", out);
    write_elems(result, (int)n_out);
    fputs("}\n", out);
  }
  return 0;
}

