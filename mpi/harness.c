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
 * between them that no rank sends (it must stay unwritten); the result is the whole receive buffer.
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
 * position k in call c is the matrix of mix(r, k, c, 0..3) (below; collv computes the same); the
 * result region is written as {"k":"outm","buf":[[a,b,c,d],...]}, to be the product in rank
 * order. */
#define _GNU_SOURCE /* RTLD_NEXT */
#include <fcntl.h>
#include <mpi.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

typedef struct {
  uint64_t mask;
  int32_t idx;
  int32_t tag; /* the call's number, plus kOutOfOrder */
} elem;

/* MPICH's messages (docs/mpi.md, "Message patterns"): MPICH's collectives send through its
 * internal point-to-point (MPIC_Send and the like, not exported, so PMPI sees nothing), which the
 * ch4:ucx device hands to UCX through the exported functions below, called through libmpich's PLT.
 * The harness defines them (the executable's definitions come first in the lookup), records the
 * endpoint and size of every send made inside the collective, and calls UCX's own (RTLD_NEXT).
 * With COLLV_MPI_TRACE=1 (collv sets it against a model) each call writes, after its result,
 *   {"k":"sent","to":[rank,...],"bytes":[n,...],"lost":L}
 * the messages this rank sent during the call in the order it posted them (rank -1: an endpoint
 * the harness did not map; bytes -1: a datatype whose size the harness cannot tell: a generic
 * one it did not see created, below), L those beyond the
 * harness's log or sent as UCX active messages (not MPICH's tagged point-to-point). Endpoints are
 * mapped to ranks before the first count: each rank sends every rank (itself included) one
 * message on a communicator of its own and notes the endpoint UCX is handed; when a peer's
 * message did not pass through UCX (a build with MPICH's shared-memory transport, another
 * device), nothing is logged and collv says the pattern was not compared. */
#if defined(MPICH_VERSION) && defined(__has_include)
#if __has_include(<ucp/api/ucp.h>) && __has_include(<dlfcn.h>)
#define COLLV_TRACE_UCX 1
#include <dlfcn.h>
#include <ucp/api/ucp.h>
#endif
#endif

enum { kTraceMax = 1 << 16 };
static int trace_enabled;   /* COLLV_MPI_TRACE=1 and the library is MPICH over UCX */
static int trace_on;        /* inside the collective */
static int trace_dest = -1; /* mapping: the rank the harness's own send goes to */
static const void* trace_ep[64];
static int trace_to[kTraceMax];
static long long trace_bytes[kTraceMax];
static int trace_n, trace_lost;

#ifdef COLLV_TRACE_UCX
/* MPICH's derived datatypes (a non-contiguous one: the indexed type of MPICH's recursive-doubling
 * reduce-scatter) reach UCX as generic datatypes, made by ucp_dt_create_generic when the type is
 * committed, with the MPICH datatype object as the context (MPICH's ch4:ucx type commit hook).
 * UCX's datatype value does not show the size, so the harness notes every generic datatype's
 * context when it is created (and forgets it when destroyed); a send of one is count times the
 * MPI type's size. The context begins with the type's MPI handle: MPICH's own pack callbacks
 * read it so (`*(MPI_Datatype *) context`), and so does the harness; the size is then asked of
 * MPI (PMPI_Type_size_x), which checks the handle. A generic datatype the harness did not see
 * created, a table that is full or a handle MPI refuses leave the size unknown (-1): the message
 * is then not compared, never passed. The pack callbacks themselves are not called: MPICH's
 * finish callback releases a reference the send took, which the harness's call did not. */
enum { kGenericMax = 256 };
static ucp_datatype_t gen_dt[kGenericMax];
static const void* gen_ctx[kGenericMax];

static long long generic_bytes(ucp_datatype_t dt, size_t count) {
  for (int i = 0; i < kGenericMax; ++i) {
    if (gen_ctx[i] && gen_dt[i] == dt) {
      MPI_Datatype handle = *(const MPI_Datatype*)gen_ctx[i];
      MPI_Count type_size = -1;
      if (PMPI_Type_size_x(handle, &type_size) != MPI_SUCCESS || type_size < 0) return -1;
      return (long long)count * (long long)type_size;
    }
  }
  return -1;
}

typedef ucs_status_t (*dt_create_generic_fn)(const ucp_generic_dt_ops_t*, void*, ucp_datatype_t*);
ucs_status_t ucp_dt_create_generic(const ucp_generic_dt_ops_t* ops, void* context,
                                   ucp_datatype_t* datatype_p) {
  static dt_create_generic_fn real;
  if (!real) real = (dt_create_generic_fn)dlsym(RTLD_NEXT, "ucp_dt_create_generic");
  ucs_status_t status = real(ops, context, datatype_p);
  if (status != UCS_OK || !context) return status;
  int slot = -1;
  for (int i = 0; i < kGenericMax && slot < 0; ++i)
    if (gen_ctx[i] && gen_dt[i] == *datatype_p) slot = i; /* a value UCX gives again */
  for (int i = 0; i < kGenericMax && slot < 0; ++i)
    if (!gen_ctx[i]) slot = i;
  if (slot >= 0) {
    gen_dt[slot] = *datatype_p;
    gen_ctx[slot] = context;
  }
  return status;
}

typedef void (*dt_destroy_fn)(ucp_datatype_t);
void ucp_dt_destroy(ucp_datatype_t datatype) {
  static dt_destroy_fn real;
  if (!real) real = (dt_destroy_fn)dlsym(RTLD_NEXT, "ucp_dt_destroy");
  for (int i = 0; i < kGenericMax; ++i)
    if (gen_ctx[i] && gen_dt[i] == datatype) gen_ctx[i] = NULL;
  real(datatype);
}

static void trace_send(ucp_ep_h ep, const void* buffer, size_t count,
                       const ucp_request_param_t* param) {
  if (trace_dest >= 0 && trace_dest < 64) trace_ep[trace_dest] = ep;
  if (!trace_on) return;
  if (trace_n >= kTraceMax) {
    ++trace_lost;
    return;
  }
  int to = -1;
  for (int i = 0; i < 64; ++i)
    if (trace_ep[i] && trace_ep[i] == ep) to = i;
  long long bytes = (long long)count; /* UCX's default datatype: bytes */
  if (param && (param->op_attr_mask & UCP_OP_ATTR_FIELD_DATATYPE)) {
    ucp_datatype_t dt = param->datatype;
    if ((dt & UCP_DATATYPE_CLASS_MASK) == UCP_DATATYPE_CONTIG) {
      bytes = (long long)(count * (size_t)(dt >> UCP_DATATYPE_SHIFT));
    } else if ((dt & UCP_DATATYPE_CLASS_MASK) == UCP_DATATYPE_IOV) {
      const ucp_dt_iov_t* iov = (const ucp_dt_iov_t*)buffer; /* count entries */
      bytes = 0;
      for (size_t i = 0; i < count; ++i) bytes += (long long)iov[i].length;
    } else if ((dt & UCP_DATATYPE_CLASS_MASK) == UCP_DATATYPE_GENERIC) {
      bytes = generic_bytes(dt, count);
    } else {
      bytes = -1;
    }
  }
  trace_to[trace_n] = to;
  trace_bytes[trace_n] = bytes;
  ++trace_n;
}

typedef ucs_status_ptr_t (*send_nbx_fn)(ucp_ep_h, const void*, size_t, ucp_tag_t,
                                        const ucp_request_param_t*);
ucs_status_ptr_t ucp_tag_send_nbx(ucp_ep_h ep, const void* buffer, size_t count, ucp_tag_t tag,
                                  const ucp_request_param_t* param) {
  static send_nbx_fn real;
  if (!real) real = (send_nbx_fn)dlsym(RTLD_NEXT, "ucp_tag_send_nbx");
  trace_send(ep, buffer, count, param);
  return real(ep, buffer, count, tag, param);
}
ucs_status_ptr_t ucp_tag_send_sync_nbx(ucp_ep_h ep, const void* buffer, size_t count, ucp_tag_t tag,
                                       const ucp_request_param_t* param) {
  static send_nbx_fn real;
  if (!real) real = (send_nbx_fn)dlsym(RTLD_NEXT, "ucp_tag_send_sync_nbx");
  trace_send(ep, buffer, count, param);
  return real(ep, buffer, count, tag, param);
}
typedef ucs_status_ptr_t (*am_send_nb_fn)(ucp_ep_h, uint16_t, const void*, size_t, ucp_datatype_t,
                                          ucp_send_callback_t, unsigned);
ucs_status_ptr_t ucp_am_send_nb(ucp_ep_h ep, uint16_t id, const void* buffer, size_t count,
                                ucp_datatype_t datatype, ucp_send_callback_t cb, unsigned flags) {
  static am_send_nb_fn real;
  if (!real) real = (am_send_nb_fn)dlsym(RTLD_NEXT, "ucp_am_send_nb");
  if (trace_on) ++trace_lost; /* not a tagged message: its peer and size are not logged */
  return real(ep, id, buffer, count, datatype, cb, flags);
}
#endif

/* Open MPI's messages (docs/mpi.md, "Per-peer message counts"): with its pml monitoring on
 * (OMPI_MCA_pml_monitoring_enable=2), the monitoring pml calls mca_common_monitoring_record_pml
 * (libmca_common_monitoring, exported) once per message a rank posts, with the receiver's rank in
 * MPI_COMM_WORLD, the bytes and the tag: the very count its monitoring files hold. The harness
 * defines that function (exported from the executable: collv links it with
 * -Wl,--export-dynamic-symbol, so the monitoring pml's call resolves to it), logs the message
 * in the same "sent" lines as MPICH's, and calls Open MPI's own (found in the library that
 * defines it). Messages are logged inside the collective only, per call, so one launch serves
 * many counts and the harness's own messages never enter them. Tracing is on only when the
 * endpoint mapping (below) saw every peer's message pass through it. */
#if defined(OPEN_MPI) && defined(__has_include)
#if __has_include(<dlfcn.h>)
#define COLLV_TRACE_OMPI 1
#include <dlfcn.h>
typedef void (*record_pml_fn)(int, size_t, int);
void mca_common_monitoring_record_pml(int world_rank, size_t data_size, int tag) {
  static record_pml_fn real;
  static int looked;
  if (!looked) {
    looked = 1;
    real = (record_pml_fn)dlsym(RTLD_NEXT, "mca_common_monitoring_record_pml");
    if (!real) {
      void* lib = dlopen("libmca_common_monitoring.so.50", RTLD_LAZY | RTLD_NOLOAD);
      if (!lib) lib = dlopen("libmca_common_monitoring.so", RTLD_LAZY | RTLD_NOLOAD);
      if (lib) real = (record_pml_fn)dlsym(lib, "mca_common_monitoring_record_pml");
    }
    if (real == mca_common_monitoring_record_pml) real = NULL;
  }
  if (trace_dest >= 0 && trace_dest < 64 && world_rank == trace_dest)
    trace_ep[trace_dest] = (const void*)(intptr_t)(world_rank + 1); /* one "endpoint" per rank */
  if (trace_on) {
    if (trace_n >= kTraceMax) {
      ++trace_lost;
    } else {
      trace_to[trace_n] = world_rank >= 0 && world_rank < 64 ? world_rank : -1;
      trace_bytes[trace_n] = (long long)data_size;
      ++trace_n;
    }
  }
  if (real) real(world_rank, data_size, tag);
}
#endif
#endif

#define CALLS 2
static const int32_t kOutOfOrder = 1 << 30;
static int call_no = 1; /* the call being run */

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
    int32_t ca = a[i].tag & ~kOutOfOrder, cb = b[i].tag & ~kOutOfOrder;
    int32_t bad = (a[i].tag | b[i].tag) & kOutOfOrder;
    if (!adjacent(a[i].mask, b[i].mask)) bad = kOutOfOrder;
    b[i].mask |= a[i].mask;
    b[i].tag = (ca < cb ? ca : cb) | bad;
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
    e[i].tag = 0;
  }
  return e;
}

static void fill_own(elem* e, long n) {
  for (long k = 0; k < n; ++k) {
    e[k].mask = (uint64_t)1 << rank;
    e[k].idx = (int32_t)k;
    e[k].tag = call_no;
  }
}

/* The v-collectives' counts: a model's counts(j) and counts(i, j) (docs/language.md, Per-rank
 * counts), uneven and with zeros: rank 0 count, rank 1 none, rank 2 one, ... */
static int vcount(int j, int count) { return (count + j) % (count + 1); }
static int vpair(int i, int j, int count) { return (count + i + 2 * j) % (count + 1); }
/* In place (MPI_Alltoallv and MPI_Alltoallw take one set of counts for both directions): counts
 * that are the same both ways, uneven and with zeros. */
static int spair(int i, int j, int count) { return (count + i + j) % (count + 1); }
/* MPI_Alltoallw's datatype for a block of n elements: one contiguous type of n elements (count
 * 1) when `block`, else n of the element type. The two ends of a pair take different ones, and
 * so do neighbouring pairs at one rank, so a library that mixes up whose count, datatype or
 * displacement it uses writes the wrong elements (or a wrong number of them). */
static void pair_type(int n, int block, int* count_out, MPI_Datatype* type_out) {
  *count_out = n;
  *type_out = etype;
  if (block && n > 0) {
    MPI_Type_contiguous(n, etype, type_out);
    MPI_Type_commit(type_out);
    *count_out = 1;
  }
}
/* reduce_scatter's per-rank counts: uneven on purpose, a `reduce-scatterv` model's counts(j). */
static int rs_count(int r, int count) { return vcount(r, count); }

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

static void snap(const void* buf, long n, size_t elem_bytes);
static void check_sendbuf(int tagged);

/* OP m's matrices: entry e of rank r's input at position k in call c (collv computes the same). */
static uint32_t mix(uint32_t r, uint32_t k, uint32_t c, uint32_t e) {
  uint32_t x = r * 0x9E3779B1u ^ (k + 1) * 0x85EBCA77u ^ c * 0xC2B2AE3Du ^ (e + 1) * 0x27D4EB2Fu;
  x ^= x >> 16;
  x *= 0x7FEB352Du;
  x ^= x >> 15;
  x *= 0x846CA68Bu;
  x ^= x >> 16;
  return x;
}

/* inoutvec = invec x inoutvec, 2x2 matrices [a b; c d] modulo 2^32. */
static void matmul_op(void* invec, void* inoutvec, int* len, MPI_Datatype* dt) {
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

/* A reduction on plain values (OP b: the built-in MPI_SUM on uint64; OP m: the matrix product,
 * a user operation on 2x2 uint32 matrices). Returns 2 for a collective that is no reduction. */
static int run_values(const char* coll, int count, int root, int inplace, int matrix,
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

/* The send buffer (input-only in MPI) as it was before the call, compared after it. */
static const void* snap_buf;
static void* snap_copy;
static size_t snap_bytes, snap_elem;

static void snap(const void* buf, long n, size_t elem_bytes) {
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
static void check_sendbuf(int tagged) {
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
  } else if (strcmp(coll, "allgatherv") == 0 || strcmp(coll, "gatherv") == 0) {
    /* Rank j's block: vcount(j) elements at vdispl(j), one unwritten element after each block
     * (a library that ignores the displacements writes there). */
    int all = coll[1] == 'l';
    int *rc = (int*)malloc(sizeof(int) * (size_t)p), *rd = (int*)malloc(sizeof(int) * (size_t)p);
    long total = 0;
    for (int j = 0; j < size; ++j) {
      rc[j] = vcount(j, count);
      rd[j] = (int)total;
      total += rc[j] + 1;
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

/* The harness's own synchronization: the minimum of one int over every rank, by point-to-point
 * messages through rank 0 on the harness's communicator. Never a collective: MPICH applies the
 * algorithm selected for the collective under test (MPIR_CVAR_<COLL>_INTRA_ALGORITHM) to every
 * call of that collective, the harness's own included, and a fallback there ("... cannot be
 * applied") would read as the library refusing the algorithm for the run (an MPI_Allreduce of
 * one int under the Rabenseifner all-reduce, which needs count >= pof2, did). */
static int own_min(int v, MPI_Comm comm) {
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

/* Maps UCX endpoints to ranks (COLLV_MPI_TRACE=1, MPICH over UCX): every rank sends every
 * rank one message on the harness's own communicator, a shift at a time, and notes the endpoint
 * UCX is handed for it. Tracing stays off unless every peer's endpoint was seen (another device,
 * or a build without the interposer, logs nothing, which would read as "no message"). Under
 * Open MPI the same messages show that its monitoring pml records through the harness (the
 * "endpoint" is the rank itself): without monitoring, nothing is logged. */
static void map_endpoints(MPI_Comm comm) {
  const char* want = getenv("COLLV_MPI_TRACE");
  if (!want || strcmp(want, "1") != 0) return;
  for (int k = 0; k < size; ++k) {
    int to = (rank + k) % size, from = (rank - k + size) % size, x = rank, y = -1;
    trace_dest = to;
    MPI_Sendrecv(&x, 1, MPI_INT, to, 7, &y, 1, MPI_INT, from, 7, comm, MPI_STATUS_IGNORE);
    trace_dest = -1;
  }
  int seen = 1;
  for (int d = 0; d < size && d < 64; ++d)
    if (d != rank && !trace_ep[d]) seen = 0;
  for (int a = 0; a < size && a < 64; ++a)
    for (int b = a + 1; b < size && b < 64; ++b)
      if (trace_ep[a] && trace_ep[a] == trace_ep[b]) seen = 0; /* one endpoint, two ranks */
  trace_enabled = own_min(seen, comm);
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

static void write_sent(void) {
  fputs("{\"k\":\"sent\",\"to\":[", out);
  for (int i = 0; i < trace_n; ++i) fprintf(out, "%s%d", i ? "," : "", trace_to[i]);
  fputs("],\"bytes\":[", out);
  for (int i = 0; i < trace_n; ++i) fprintf(out, "%s%lld", i ? "," : "", trace_bytes[i]);
  fprintf(out, "],\"lost\":%d}\n", trace_lost);
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
