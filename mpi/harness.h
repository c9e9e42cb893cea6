/* The harness's parts (docs/mpi.md, "How it works"): what its files share. The format of what it
 * writes is at the top of harness.c. The parts, each compiled by mpicc into one executable:
 *   harness.c        main: the options, the counts and their files, the harness's own barriers,
 *                    the node lines and the messages never received ("unmatched")
 *   harness_elems.c  the tagged elements: the user operations (tag_op, matmul_op), the inputs,
 *                    the v-collectives' counts, the send buffer's snapshot ("sendbuf")
 *   harness_coll.c   the collective calls (run_one, run_values) and the harness's own ring
 *   harness_trace.c  the message pattern: the UCX (MPICH) and pml monitoring (Open MPI)
 *                    interposers, the endpoint mapping and the "sent" lines
 * Everything declared here is hidden: an executable's exported symbol would take the place of a
 * library's of the same name (the interposers in harness_trace.c are exported on purpose, and
 * are declared nowhere else). */
#ifndef COLLV_HARNESS_H
#define COLLV_HARNESS_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#pragma GCC visibility push(hidden)

typedef struct {
  uint64_t mask;
  int32_t idx;
  int32_t tag; /* the call's number, plus kOutOfOrder */
} elem;

#define CALLS 2
static const int32_t kOutOfOrder = 1 << 30;
enum { kTraceMax = 1 << 16 };

/* The run's state (harness.c). */
extern int call_no; /* the call being run */
extern FILE* out;   /* the count's rank<R>.jsonl */
extern MPI_Datatype etype;
extern int rank, size;

/* harness_elems.c */
void write_mpi_error(FILE* out, int code);
void write_elems(const elem* e, int n);
void tag_op(void* invec, void* inoutvec, int* len, MPI_Datatype* dt);
elem* alloc_elems(long n);
void fill_own(elem* e, long n);
int vcount(int j, int count);
int vpair(int i, int j, int count);
int spair(int i, int j, int count);
void pair_type(int n, int block, int* count_out, MPI_Datatype* type_out);
int rs_count(int r, int count);
uint32_t mix(uint32_t r, uint32_t k, uint32_t c, uint32_t e);
void matmul_op(void* invec, void* inoutvec, int* len, MPI_Datatype* dt);
void snap(const void* buf, long n, size_t elem_bytes);
void check_sendbuf(int tagged);

/* harness_coll.c */
int run_one(const char* coll, int count, int root, int inplace, const char* inject, MPI_Op op);
int run_values(const char* coll, int count, int root, int inplace, int matrix, MPI_Datatype mtype,
               MPI_Op mop);

/* harness_trace.c */
extern int trace_enabled; /* COLLV_MPI_TRACE=1 and every peer's message seen */
extern int trace_on;      /* inside the collective */
extern int trace_n, trace_lost;
void map_endpoints(MPI_Comm comm);
void write_sent(void);

/* harness.c */
int own_min(int v, MPI_Comm comm);

#pragma GCC visibility pop

#endif
