#define _GNU_SOURCE /* RTLD_NEXT */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

/* MPICH's messages (docs/mpi.md, "Message patterns"): MPICH's collectives send through its
 * internal point-to-point (MPIC_Send and the like, not exported, so PMPI sees nothing), which the
 * ch4:ucx device hands to UCX through the exported functions below, called through libmpich's PLT.
 * The harness defines them (the executable's definitions come first in the lookup), records the
 * endpoint and size of every send made inside the collective, and calls UCX's own (RTLD_NEXT).
 * With COLLV_MPI_TRACE=1 (collv sets it against a model) each call writes, after its result,
 *   {"k":"sent","to":[rank,...],"bytes":[n,...],"lost":L,"tag":[t,...],"ns":[n,...],"host":H}
 * the messages this rank sent during the call in the order it posted them (rank -1: an endpoint
 * the harness did not map; bytes -1: a datatype whose size the harness cannot tell: a generic
 * one it did not see created, below), L those beyond the
 * harness's log or sent as UCX active messages (not MPICH's tagged point-to-point); "tag" the UCX
 * tag of each message (MPICH puts the MPI tag in its low bits, so a schedule's messages to one peer
 * sort in the order it took their tags) and "ns" when the send was posted (CLOCK_MONOTONIC, one
 * clock for every process of the machine: collv orders the sends of different ranks by it, for
 * models whose messages may leave in any order their dependencies allow), H a hash of the
 * machine's name (the times of ranks on different machines are not compared). Endpoints are
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

int trace_enabled;   /* harness.h */
int trace_on;        /* harness.h */
static int trace_dest = -1; /* mapping: the rank the harness's own send goes to */
static const void* trace_ep[64];
static int trace_to[kTraceMax];
static long long trace_bytes[kTraceMax];
static unsigned long long trace_tag[kTraceMax]; /* UCX's tag; 0 under Open MPI's monitoring */
static long long trace_ns[kTraceMax];           /* CLOCK_MONOTONIC at the send */
static int trace_has_tag;                       /* the sends carried UCX tags */

__attribute__((unused)) static long long now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000000000LL + (long long)ts.tv_nsec;
}
int trace_n, trace_lost;

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

static void trace_send(ucp_ep_h ep, const void* buffer, size_t count, ucp_tag_t tag,
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
  trace_tag[trace_n] = (unsigned long long)tag;
  trace_ns[trace_n] = now_ns();
  trace_has_tag = 1;
  ++trace_n;
}

typedef ucs_status_ptr_t (*send_nbx_fn)(ucp_ep_h, const void*, size_t, ucp_tag_t,
                                        const ucp_request_param_t*);
ucs_status_ptr_t ucp_tag_send_nbx(ucp_ep_h ep, const void* buffer, size_t count, ucp_tag_t tag,
                                  const ucp_request_param_t* param) {
  static send_nbx_fn real;
  if (!real) real = (send_nbx_fn)dlsym(RTLD_NEXT, "ucp_tag_send_nbx");
  trace_send(ep, buffer, count, tag, param);
  return real(ep, buffer, count, tag, param);
}
ucs_status_ptr_t ucp_tag_send_sync_nbx(ucp_ep_h ep, const void* buffer, size_t count, ucp_tag_t tag,
                                       const ucp_request_param_t* param) {
  static send_nbx_fn real;
  if (!real) real = (send_nbx_fn)dlsym(RTLD_NEXT, "ucp_tag_send_sync_nbx");
  trace_send(ep, buffer, count, tag, param);
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
      trace_tag[trace_n] = 0;
      trace_ns[trace_n] = now_ns();
      ++trace_n;
    }
  }
  if (real) real(world_rank, data_size, tag);
}
#endif
#endif

/* Maps UCX endpoints to ranks (COLLV_MPI_TRACE=1, MPICH over UCX): every rank sends every
 * rank one message on the harness's own communicator, a shift at a time, and notes the endpoint
 * UCX is handed for it. Tracing stays off unless every peer's endpoint was seen (another device,
 * or a build without the interposer, logs nothing, which would read as "no message"). Under
 * Open MPI the same messages show that its monitoring pml records through the harness (the
 * "endpoint" is the rank itself): without monitoring, nothing is logged. */
void map_endpoints(MPI_Comm comm) {
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

void write_sent(void) {
  fputs("{\"k\":\"sent\",\"to\":[", out);
  for (int i = 0; i < trace_n; ++i) fprintf(out, "%s%d", i ? "," : "", trace_to[i]);
  fputs("],\"bytes\":[", out);
  for (int i = 0; i < trace_n; ++i) fprintf(out, "%s%lld", i ? "," : "", trace_bytes[i]);
  fprintf(out, "],\"lost\":%d", trace_lost);
  if (trace_has_tag) {
    fputs(",\"tag\":[", out);
    for (int i = 0; i < trace_n; ++i) fprintf(out, "%s%llu", i ? "," : "", trace_tag[i]);
    fputs("]", out);
  }
  fputs(",\"ns\":[", out);
  for (int i = 0; i < trace_n; ++i) fprintf(out, "%s%lld", i ? "," : "", trace_ns[i]);
  /* The machine: FNV-1a over its name (0 when it has none). */
  char name[256] = {0};
  unsigned long host = 0;
  if (gethostname(name, sizeof name - 1) == 0) {
    host = 2166136261ul;
    for (const char* c = name; *c; ++c)
      host = ((host ^ (unsigned char)*c) * 16777619ul) & 0xfffffffful;
  }
  fprintf(out, "],\"host\":%lu}\n", host);
}
