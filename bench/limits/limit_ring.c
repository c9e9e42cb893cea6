/* The memory-speed limit of a ring all-reduce (the work of Open MPI's
 * ompi_coll_base_allreduce_intra_ring, models/openmpi/allreduce_ring.coll): P ranks, C 64-bit
 * elements each, cut into P segments (the first C mod P of C/P + 1 elements, the others C/P).
 * Reduce-scatter, P - 1 steps k: rank r adds its left neighbour's segment (r - k - 1) mod P into
 * its own. Allgather, P - 1 steps: rank r copies its left neighbour's segment (r - k) mod P over
 * its own. No message buffers: in a step the left neighbour does not write the segment its right
 * one reads (it writes the one before), so each rank reads it in place: the loop does the sums
 * and the copies and nothing else, a strict lower bound of what a simulator of the ring does.
 * Prints seconds and ns per element moved (2 (P - 1) steps of about C/P elements a rank) and
 * checks every rank's sums. Usage: limit_ring [P [C]], default 4096 4096; C >= P >= 2. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int main(int argc, char **argv) {
  long p = argc > 1 ? atol(argv[1]) : 4096, c = argc > 2 ? atol(argv[2]) : 4096;
  if (p < 2 || c < p) { fprintf(stderr, "limit_ring: need C >= P >= 2\n"); return 2; }
  long *off = malloc(sizeof *off * (p + 1));
  uint64_t *buf = malloc(8 * p * c);
  if (!off || !buf) { fprintf(stderr, "limit_ring: out of memory\n"); return 2; }
  off[0] = 0;
  for (long b = 0; b < p; ++b) off[b + 1] = off[b] + c / p + (b < c % p);
  for (long r = 0; r < p; ++r)
    for (long k = 0; k < c; ++k) buf[r * c + k] = (uint64_t)r * 1000003u + k;
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  double moved = 0;
  for (int gather = 0; gather < 2; ++gather) {
    for (long k = 0; k < p - 1; ++k) {
      /* rank 0's segment this step; rank r's is the next one after rank r - 1's */
      long rb = ((gather ? -k : -k - 1) % p + p) % p;
      for (long r = 0; r < p; ++r, rb = rb + 1 == p ? 0 : rb + 1) {
        const uint64_t *in = buf + (r == 0 ? p - 1 : r - 1) * c + off[rb];
        uint64_t *z = buf + r * c + off[rb];
        long n = off[rb + 1] - off[rb];
        if (gather) for (long e = 0; e < n; ++e) z[e] = in[e];
        else for (long e = 0; e < n; ++e) z[e] += in[e];
        moved += (double)n;
      }
    }
  }
  clock_gettime(CLOCK_MONOTONIC, &b);
  double s = (b.tv_sec - a.tv_sec) + 1e-9 * (b.tv_nsec - a.tv_nsec);
  for (long k = 0; k < c; ++k) {
    uint64_t want = 0;
    for (long r = 0; r < p; ++r) want += (uint64_t)r * 1000003u + k;
    for (long r = 0; r < p; ++r)
      if (buf[r * c + k] != want) { printf("wrong sum at rank %ld element %ld\n", r, k); return 1; }
  }
  printf("%.3f s %.2f ns/element moved (%ld steps)\n", s, s * 1e9 / moved, 2 * (p - 1));
  return 0;
}
