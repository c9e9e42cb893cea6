/* The tagged elements (harness.c's format): the user operations, the inputs, the v-collectives'
 * counts and the send buffer's snapshot. */
#include <stdlib.h>
#include <string.h>

#include "harness.h"

/* An MPI error code as the harness's JSON line {"k":"error","message":...}, quotes, backslashes
   and control characters left out. */
void write_mpi_error(FILE* out, int code) {
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(code, msg, &len);
  fprintf(out, "{\"k\":\"error\",\"message\":\"");
  for (int i = 0; i < len; ++i)
    if (msg[i] != '"' && msg[i] != '\\' && (unsigned char)msg[i] >= 0x20) fputc(msg[i], out);
  fprintf(out, "\"}\n");
}

void write_elems(const elem* e, int n) {
  fputc('[', out);
  for (int i = 0; i < n; ++i)
    fprintf(out, "%s[%d,%llu,%d]", i ? "," : "", (int)e[i].idx, (unsigned long long)e[i].mask,
            (int)e[i].tag);
  fputc(']', out);
}

/* Is a ranks i..j and b ranks j+1..k (the only combination a rank order allows)? */
static int adjacent(uint64_t a, uint64_t b) {
  if (a == 0 || b == 0) return 0;
  uint64_t sa = a >> __builtin_ctzll(a), sb = b >> __builtin_ctzll(b);
  if ((sa & (sa + 1)) != 0 || (sb & (sb + 1)) != 0) return 0; /* not intervals */
  return 64 - __builtin_clzll(a) == __builtin_ctzll(b);
}

/* The user operation: records both operands, then inoutvec = invec (op) inoutvec as a union of
 * the contribution sets (whatever they are: collv judges them). */
void tag_op(void* invec, void* inoutvec, int* len, MPI_Datatype* dt) {
  (void)dt;
  elem* a = (elem*)invec;
  elem* b = (elem*)inoutvec;
  fprintf(out, "{\"k\":\"op\",\"n\":%d,\"a\":", *len);
  write_elems(a, *len);
  fputs(",\"b\":", out);
  write_elems(b, *len);
  fputs("}\n", out);
  for (int i = 0; i < *len; ++i) {
    int32_t ca = a[i].tag & ~kOutOfOrder, cb = b[i].tag & ~kOutOfOrder;
    int32_t bad = (a[i].tag | b[i].tag) & kOutOfOrder;
    if (!adjacent(a[i].mask, b[i].mask)) bad = kOutOfOrder;
    b[i].mask |= a[i].mask;
    b[i].tag = (ca < cb ? ca : cb) | bad;
    if (a[i].idx != b[i].idx) b[i].idx = -2; /* mixed positions stay visible in the output */
  }
}

elem* alloc_elems(long n) {
  elem* e = (elem*)calloc((size_t)(n > 0 ? n : 1) + 1, sizeof(elem));
  if (!e) {
    fprintf(stderr, "harness: out of memory\n");
    MPI_Abort(MPI_COMM_WORLD, 3);
  }
  for (long i = 0; i <= n; ++i) {
    e[i].mask = 0;
    e[i].idx = -1;
    e[i].tag = 0;
  }
  return e;
}

void fill_own(elem* e, long n) {
  for (long k = 0; k < n; ++k) {
    e[k].mask = (uint64_t)1 << rank;
    e[k].idx = (int32_t)k;
    e[k].tag = call_no;
  }
}

/* The v-collectives' counts: a model's counts(j) and counts(i, j) (docs/language.md, Per-rank
 * counts), uneven and with zeros: rank 0 count, rank 1 none, rank 2 one, ... */
int vcount(int j, int count) { return (count + j) % (count + 1); }
int vpair(int i, int j, int count) { return (count + i + 2 * j) % (count + 1); }
/* In place (MPI_Alltoallv and MPI_Alltoallw take one set of counts for both directions): counts
 * that are the same both ways, uneven and with zeros. */
int spair(int i, int j, int count) { return (count + i + j) % (count + 1); }
/* MPI_Alltoallw's datatype for a block of n elements: one contiguous type of n elements (count
 * 1) when `block`, else n of the element type. The two ends of a pair take different ones, and
 * so do neighbouring pairs at one rank, so a library that mixes up whose count, datatype or
 * displacement it uses writes the wrong elements (or a wrong number of them). */
void pair_type(int n, int block, int* count_out, MPI_Datatype* type_out) {
  *count_out = n;
  *type_out = etype;
  if (block && n > 0) {
    MPI_Type_contiguous(n, etype, type_out);
    MPI_Type_commit(type_out);
    *count_out = 1;
  }
}
/* reduce_scatter's per-rank counts: uneven on purpose, a `reduce-scatterv` model's counts(j). */
int rs_count(int r, int count) { return vcount(r, count); }

/* OP m's matrices: entry e of rank r's input at position k in call c (collv computes the same). */
uint32_t mix(uint32_t r, uint32_t k, uint32_t c, uint32_t e) {
  uint32_t x = r * 0x9E3779B1u ^ (k + 1) * 0x85EBCA77u ^ c * 0xC2B2AE3Du ^ (e + 1) * 0x27D4EB2Fu;
  x ^= x >> 16;
  x *= 0x7FEB352Du;
  x ^= x >> 15;
  x *= 0x846CA68Bu;
  x ^= x >> 16;
  return x;
}

/* inoutvec = invec x inoutvec, 2x2 matrices [a b; c d] modulo 2^32. */
void matmul_op(void* invec, void* inoutvec, int* len, MPI_Datatype* dt) {
  (void)dt;
  const uint32_t* x = (const uint32_t*)invec;
  uint32_t* y = (uint32_t*)inoutvec;
  for (int i = 0; i < *len; ++i, x += 4, y += 4) {
    uint32_t a = x[0] * y[0] + x[1] * y[2], b = x[0] * y[1] + x[1] * y[3];
    uint32_t c = x[2] * y[0] + x[3] * y[2], d = x[2] * y[1] + x[3] * y[3];
    y[0] = a;
    y[1] = b;
    y[2] = c;
    y[3] = d;
  }
}

/* The send buffer (input-only in MPI) as it was before the call, compared after it. */
static const void* snap_buf;
static void* snap_copy;
static size_t snap_bytes, snap_elem;

void snap(const void* buf, long n, size_t elem_bytes) {
  free(snap_copy);
  snap_copy = NULL;
  snap_buf = buf;
  snap_elem = elem_bytes;
  snap_bytes = (size_t)(n > 0 ? n : 0) * elem_bytes;
  if (!buf || snap_bytes == 0) return;
  snap_copy = malloc(snap_bytes);
  if (!snap_copy) MPI_Abort(MPI_COMM_WORLD, 3);
  memcpy(snap_copy, buf, snap_bytes);
}

/* Writes a "sendbuf" line when the library changed the send buffer (tagged: with the first
 * changed element before and after). */
void check_sendbuf(int tagged) {
  if (!snap_copy) return;
  const char* now = (const char*)snap_buf;
  const char* was = (const char*)snap_copy;
  long first = -1, changed = 0;
  for (size_t i = 0; i < snap_bytes / snap_elem; ++i)
    if (memcmp(now + i * snap_elem, was + i * snap_elem, snap_elem) != 0) {
      if (first < 0) first = (long)i;
      ++changed;
    }
  if (changed > 0) {
    fprintf(out, "{\"k\":\"sendbuf\",\"pos\":%ld,\"changed\":%ld", first, changed);
    if (tagged) {
      fputs(",\"before\":", out);
      write_elems((const elem*)was + first, 1);
      fputs(",\"after\":", out);
      write_elems((const elem*)now + first, 1);
    }
    fputs("}\n", out);
  }
  free(snap_copy);
  snap_copy = NULL;
}

