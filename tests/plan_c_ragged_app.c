/* An MPI application in C through meshtune's C API (meshtune/meshtune.h) at a shape whose
 * blocks do not divide evenly: C[m,n] += A[m,k] * B[k,n] with m=300, n=200, k=100 planned
 * in MESHTUNE_ESTIMATE mode on however many ranks it runs on (3 in the test). The
 * application opts in to provide the storage (meshtune_plan_provide_storage): each shard is
 * allocated at meshtune_plan_shard_storage's extents, the schedule runs on it in place, and
 * it is filled where meshtune_plan_shard says (its extents: the elements held, fewer on the
 * last block; its strides then the storage's), executed twice, and checked against a serial
 * reference on every rank that holds C. Rank 0 prints "c ragged plan MESH verified (held:
 * E0 E1 ...)" with each rank's element count of C, or an error; exit 0 when verified.
 * (tests/plan_c_extents_app.c is the default contract: arrays of the extents alone.) */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "meshtune/meshtune.h"

enum { kM = 300, kN = 200, kK = 100 };

static float value(char tensor, long i, long j) {
  long h = ((tensor * 5) * 7 + i * 3) * 7 + j * 3;
  return (float)(((h % 11) + 11) % 11 - 5) / 4.0f;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1, bad = 0, any = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  meshtune_plan* plan = NULL;
  int status = meshtune_plan_create("C[m,n] += A[m,k] * B[k,n]", "m=300,n=200,k=100", NULL,
                                    MPI_COMM_WORLD, MESHTUNE_ESTIMATE, NULL, NULL, &plan);
  if (status != 0) {
    if (rank == 0) printf("c ragged plan error %d: %s\n", status, meshtune_last_error());
    MPI_Finalize();
    return 1;
  }
  if (meshtune_plan_provide_storage(plan, 1) != 0) bad = 1;
  const int n = meshtune_plan_num_tensors(plan);
  float* shards[8];
  int64_t start[8][8], extents[8][8], strides[8][8], storage[8][8];
  long held_c = 0;
  for (int t = 0; t < n; ++t) {
    const char* name = meshtune_plan_tensor(plan, t);
    if (meshtune_plan_shard(plan, name, start[t], extents[t], strides[t]) != 2) bad = 1;
    if (meshtune_plan_shard_storage(plan, name, storage[t]) != 2) bad = 1;
    if (extents[t][0] > storage[t][0] || extents[t][1] > storage[t][1]) bad = 1;
    if (strides[t][0] != storage[t][1] || strides[t][1] != 1) bad = 1; /* the storage's */
    if (name[0] == 'C') held_c = (long)(extents[t][0] * extents[t][1]);
    shards[t] = calloc((size_t)(storage[t][0] * storage[t][1]) + 1, sizeof(float));
    for (long i = 0; i < extents[t][0]; ++i)
      for (long j = 0; j < extents[t][1]; ++j)
        shards[t][i * strides[t][0] + j] = value(name[0], start[t][0] + i, start[t][1] + j);
  }
  for (int call = 1; call <= 2 && !bad; ++call) {
    if (meshtune_plan_execute(plan, (void* const*)shards) != 0) bad = 1;
    for (int t = 0; t < n && !bad; ++t) {
      if (meshtune_plan_tensor(plan, t)[0] != 'C' || meshtune_plan_holds(plan, "C") != 1) continue;
      for (long i = 0; i < extents[t][0]; ++i) {
        for (long j = 0; j < extents[t][1]; ++j) {
          const long gi = start[t][0] + i, gj = start[t][1] + j;
          double p = 0;
          for (long k = 0; k < kK; ++k) p += value('A', gi, k) * value('B', k, gj);
          const double expected = value('C', gi, gj) + call * p;
          if (fabs(shards[t][i * strides[t][0] + j] - expected) > 1e-3 * (1 + fabs(expected)))
            bad = 1;
        }
      }
    }
  }
  MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  long* held = malloc(sizeof(long) * (size_t)size);
  MPI_Gather(&held_c, 1, MPI_LONG, held, 1, MPI_LONG, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    if (any) {
      printf("c ragged plan MISMATCH (%s)\n", meshtune_last_error());
    } else {
      printf("c ragged plan %s verified (held:", meshtune_plan_mesh(plan));
      for (int r = 0; r < size; ++r) printf(" %ld", held[r]);
      printf(")\n");
    }
  }
  free(held);
  for (int t = 0; t < n; ++t) free(shards[t]);
  meshtune_plan_destroy(plan);
  MPI_Finalize();
  return any;
}
